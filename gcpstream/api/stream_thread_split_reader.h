#ifndef GCPSTREAM_API_STREAM_THREAD_SPLIT_READER_H_
#define GCPSTREAM_API_STREAM_THREAD_SPLIT_READER_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gcpstream/api/fetch_handoff.h"
#include "gcpstream/api/split_reader.h"

namespace gcpstream {

// The shape of a split reader whose client delivers a split's elements through one blocking
// server stream at a time (a scan, a ReadRows): a stream thread, started at the first fetch()
// and kept for the reader's life, reads the assigned splits one after the other (read_split())
// and hands their elements to fetch() through a FetchHandoff bounded by one fetch's worth, so it
// moves on to the next split while fetch() still drains the previous one. A stall watchdog
// cancels the open call when a read waits longer than `stall_timeout` (see read_call()), so a
// silent connection cannot hang the source.
//
// A subclass implements open() (on the fetcher thread, before the stream thread starts: make
// the stub) and read_split() (on the stream thread), using the protected helpers, and calls
// stop() in its destructor (read_split() is virtual). Thread-safety as SplitReader's.
template <typename E, typename SplitT>
class StreamThreadSplitReader : public SplitReader<E, SplitT> {
 public:
  StreamThreadSplitReader(std::size_t max_elements, std::size_t max_bytes,
                          std::chrono::milliseconds stall_timeout)
      : handoff_(max_elements, max_bytes), stall_timeout_(stall_timeout) {}
  ~StreamThreadSplitReader() override { stop(); }

  absl::StatusOr<RecordsWithSplitIds<E>> fetch() override {
    RecordsWithSplitIds<E> batch;
    if (!started_) {
      if (absl::Status opened = open(); !opened.ok()) return opened;
      started_ = true;
      stream_thread_ = std::thread([this] { run(); });
      watchdog_ = std::thread([this] { watch(); });
    }
    typename FetchHandoff<Item>::Taken taken = handoff_.take();
    for (Item& item : taken.elements) {
      if (item.element) {
        batch.add(item.split_id, *std::move(item.element));
      } else if (item.end.ok()) {
        batch.finish_split(item.split_id);
      } else {
        // The elements taken before it are dropped with the batch: the job fails, and a
        // restore reads them again from the checkpointed split state.
        return item.end;
      }
    }
    return batch;
  }

  absl::Status handle_splits_addition(SplitsAddition<SplitT> addition) override {
    {
      std::lock_guard lock(mu_);
      for (auto& split : addition.splits) pending_.push_back(std::move(split));
    }
    cv_.notify_all();
    return absl::OkStatus();
  }

  void wake_up() override { handoff_.wake_up(); }

  absl::Status close() override {
    stop();
    return absl::OkStatus();
  }

 protected:
  // One element of a split, or the end of a split (no element) with how its read ended.
  struct Item {
    std::string split_id;
    std::optional<E> element;
    absl::Status end;
  };
  using Elements = std::vector<std::pair<Item, std::size_t>>;  // with their estimated bytes

  // Fetcher thread, once, before the stream thread starts. A failure fails the fetch.
  virtual absl::Status open() = 0;
  // Stream thread: reads `split` to its end and hands over its elements and then its end
  // (push_end). False when the reader is closing (or the split failed: the reader stops).
  virtual bool read_split(const SplitT& split) = 0;

  // Hands over a group of elements (one response's worth), waiting for room. False: closing.
  bool push(Elements& elements) { return handoff_.push_all(elements); }
  // Hands over the end of a split. False: closing.
  bool push_end(const std::string& split_id, absl::Status status) {
    return handoff_.push(Item{split_id, std::nullopt, std::move(status)}, 0);
  }

  // Registers the open call's cancellation (called by close() and the watchdog); false, and
  // nothing registered, when the reader is closing. clear_call() when the call is finished.
  bool set_call(std::function<void()> cancel) {
    std::lock_guard lock(mu_);
    if (closing_) return false;
    cancel_ = std::move(cancel);
    return true;
  }
  // Unregisters the call; true when the watchdog cancelled it for a stall.
  bool clear_call() {
    std::lock_guard lock(mu_);
    cancel_ = nullptr;
    return std::exchange(stalled_, false);
  }
  // One blocking read of the open call, watched for stalls.
  template <typename Read>
  bool read_call(Read&& read) {
    {
      std::lock_guard lock(mu_);
      reading_since_ = std::chrono::steady_clock::now();
    }
    const bool got = read();
    std::lock_guard lock(mu_);
    reading_since_.reset();
    return got;
  }
  bool closing() const {
    std::lock_guard lock(mu_);
    return closing_;
  }
  // Waits `delay` unless the reader closes first; true when it is closing.
  bool sleep_unless_closing(std::chrono::milliseconds delay) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, delay, [&] { return closing_; });
  }
  std::chrono::milliseconds stall_timeout() const { return stall_timeout_; }

  // Ends the stream thread and the watchdog (idempotent).
  void stop() {
    {
      std::lock_guard lock(mu_);
      closing_ = true;
      if (cancel_) cancel_();
    }
    cv_.notify_all();
    handoff_.close();
    if (stream_thread_.joinable()) stream_thread_.join();
    if (watchdog_.joinable()) watchdog_.join();
  }

 private:
  void run() {
    while (true) {
      SplitT split;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return closing_ || !pending_.empty(); });
        if (closing_) return;
        split = std::move(pending_.front());
        pending_.pop_front();
      }
      if (!read_split(split)) return;
    }
  }

  void watch() {
    const auto tick = std::min<std::chrono::milliseconds>(
        std::chrono::milliseconds(1000), stall_timeout_ / 4 + std::chrono::milliseconds(1));
    std::unique_lock lock(mu_);
    while (!closing_) {
      cv_.wait_for(lock, tick, [&] { return closing_; });
      if (closing_ || !cancel_ || !reading_since_) continue;
      if (std::chrono::steady_clock::now() - *reading_since_ >= stall_timeout_) {
        stalled_ = true;
        reading_since_.reset();
        cancel_();
      }
    }
  }

  FetchHandoff<Item> handoff_;
  const std::chrono::milliseconds stall_timeout_;
  bool started_ = false;  // fetcher thread only
  std::thread stream_thread_;
  std::thread watchdog_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<SplitT> pending_;  // assigned, not yet read by the stream thread
  bool closing_ = false;
  std::function<void()> cancel_;  // the open call's cancellation
  std::optional<std::chrono::steady_clock::time_point> reading_since_;
  bool stalled_ = false;
};

}  // namespace gcpstream

#endif  // GCPSTREAM_API_STREAM_THREAD_SPLIT_READER_H_
