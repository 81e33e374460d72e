#include "gcpstream/util/timer_thread.h"

#include <atomic>

namespace gcpstream::util {

struct TimerThread::Entry final : TimerHandle {
  Time when;
  std::function<void()> fire;
  std::atomic<bool> cancelled{false};
  std::uint64_t sequence = 0;
  void cancel() override { cancelled.store(true, std::memory_order_release); }
};

namespace {
struct Later {
  template <typename E>
  bool operator()(const std::shared_ptr<E>& a, const std::shared_ptr<E>& b) const {
    if (a->when != b->when) return a->when > b->when;
    return a->sequence > b->sequence;
  }
};
}  // namespace

// Everything the loop touches; shared by the TimerThread and its thread, so a thread detached
// by a destructor running on it still has its state.
struct TimerThread::State {
  std::mutex mu;
  std::condition_variable cv;
  std::priority_queue<std::shared_ptr<Entry>, std::vector<std::shared_ptr<Entry>>, Later> queue;
  bool stop = false;
};

TimerThread::TimerThread()
    : state_(std::make_shared<State>()), thread_([state = state_] { loop(state); }) {}

TimerThread::~TimerThread() {
  {
    std::lock_guard lock(state_->mu);
    state_->stop = true;
  }
  state_->cv.notify_all();
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();  // destroyed from one of its own callbacks
  } else {
    thread_.join();
  }
}

std::shared_ptr<TimerHandle> TimerThread::schedule(Time when, std::function<void()> fire) {
  static std::atomic<std::uint64_t> sequence{0};
  auto entry = std::make_shared<Entry>();
  entry->when = when;
  entry->fire = std::move(fire);
  entry->sequence = sequence.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(state_->mu);
    state_->queue.push(entry);
  }
  state_->cv.notify_all();
  return entry;
}

void TimerThread::loop(std::shared_ptr<State> state) {
  std::unique_lock lock(state->mu);
  while (!state->stop) {
    if (state->queue.empty()) {
      state->cv.wait(lock);
      continue;
    }
    const Time when = state->queue.top()->when;
    if (when > std::chrono::steady_clock::now()) {
      state->cv.wait_until(lock, when);
      continue;
    }
    std::shared_ptr<Entry> next = state->queue.top();
    state->queue.pop();
    lock.unlock();
    if (!next->cancelled.load(std::memory_order_acquire)) next->fire();
    // The callback's captures may own this TimerThread: release them without the lock held.
    next.reset();
    lock.lock();
  }
}

}  // namespace gcpstream::util
