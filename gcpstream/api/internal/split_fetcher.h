#ifndef GCPSTREAM_API_INTERNAL_SPLIT_FETCHER_H_
#define GCPSTREAM_API_INTERNAL_SPLIT_FETCHER_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "gcpstream/api/split_reader.h"

namespace gcpstream::internal {

// Runs a SplitReader on a thread of its own and hands its batches to the subtask through a
// bounded queue (capacity in batches). When the queue is full the fetcher holds its batch and
// stops fetching: that is how a slow subtask backpressures the external reads.
//
// Subtask-thread API: add_splits, pause_or_resume, run_on_fetcher, poll, error, shutdown.
template <typename E, typename SplitT>
class SplitFetcher {
 public:
  using Batch = RecordsWithSplitIds<E>;

  SplitFetcher(std::unique_ptr<SplitReader<E, SplitT>> reader, int queue_capacity,
               std::function<void()> signal_available)
      : reader_(std::move(reader)),
        capacity_(queue_capacity < 1 ? 1 : static_cast<std::size_t>(queue_capacity)),
        signal_available_(std::move(signal_available)) {}

  ~SplitFetcher() { (void)shutdown(); }

  void start() {
    thread_ = std::thread([this] { loop(); });
  }

  void add_splits(std::vector<SplitT> splits) {
    run_on_fetcher([this, splits = std::move(splits)]() mutable -> absl::Status {
      assigned_ += static_cast<int>(splits.size());
      return reader_->handle_splits_addition(SplitsAddition<SplitT>{std::move(splits)});
    });
  }

  void pause_or_resume(std::vector<std::string> to_pause, std::vector<std::string> to_resume) {
    run_on_fetcher([this, p = std::move(to_pause), r = std::move(to_resume)]() -> absl::Status {
      return reader_->pause_or_resume_splits(p, r);
    });
  }

  // Runs `task` on the fetcher thread before its next fetch (waking a blocked fetch).
  void run_on_fetcher(absl::AnyInvocable<absl::Status() &&> task) {
    {
      std::lock_guard lock(mu_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_all();
    reader_->wake_up();
  }

  // Non-blocking: the next fetched batch, if any. Subtask thread.
  std::optional<Batch> poll() {
    std::optional<Batch> batch;
    {
      std::lock_guard lock(mu_);
      if (queue_.empty()) return std::nullopt;
      batch = std::move(queue_.front());
      queue_.pop_front();
    }
    cv_.notify_all();  // room for a held batch
    return batch;
  }

  // The fetcher's failure, once it has one (it stops fetching then).
  absl::Status error() const {
    std::lock_guard lock(mu_);
    return error_;
  }

  // Stops the thread, closes the split reader on it, and returns the close status (or the
  // fetch error if it had failed). Idempotent.
  absl::Status shutdown() {
    {
      std::lock_guard lock(mu_);
      if (shutdown_requested_ && !thread_.joinable()) return close_status_;
      shutdown_requested_ = true;
    }
    cv_.notify_all();
    reader_->wake_up();
    if (thread_.joinable()) {
      thread_.join();
    } else if (!closed_) {
      closed_ = true;
      close_status_ = reader_->close();
    }
    return close_status_;
  }

  SplitReader<E, SplitT>& split_reader() { return *reader_; }

 private:
  void fail(absl::Status status) {
    {
      std::lock_guard lock(mu_);
      if (error_.ok()) error_ = std::move(status);
    }
    signal_available_();
  }

  // Runs queued tasks; false when one failed (the fetcher stops).
  bool run_tasks(std::unique_lock<std::mutex>& lock) {
    while (!tasks_.empty()) {
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      absl::Status status = std::move(task)();
      lock.lock();
      if (!status.ok()) {
        if (error_.ok()) error_ = std::move(status);
        lock.unlock();
        signal_available_();
        lock.lock();
        return false;
      }
    }
    return true;
  }

  void loop() {
    std::unique_lock lock(mu_);
    std::optional<Batch> held;
    while (!shutdown_requested_) {
      if (!run_tasks(lock)) break;
      if (shutdown_requested_) break;
      if (held) {
        if (queue_.size() < capacity_) {
          queue_.push_back(std::move(*held));
          held.reset();
          lock.unlock();
          signal_available_();
          lock.lock();
        } else {
          cv_.wait(lock, [&] {
            return shutdown_requested_ || !tasks_.empty() || queue_.size() < capacity_;
          });
        }
        continue;
      }
      if (assigned_ <= 0) {
        // No split to read: idle until a task (an assignment) or shutdown arrives.
        cv_.wait(lock, [&] { return shutdown_requested_ || !tasks_.empty(); });
        continue;
      }
      lock.unlock();
      absl::StatusOr<Batch> fetched = reader_->fetch();
      lock.lock();
      if (!fetched.ok()) {
        if (error_.ok()) error_ = fetched.status();
        lock.unlock();
        signal_available_();
        lock.lock();
        break;
      }
      assigned_ -= static_cast<int>(fetched->finished_splits.size());
      if (!fetched->empty()) held = std::move(*fetched);
    }
    // Stay until shut down so a failure does not race the subtask's own teardown.
    cv_.wait(lock, [&] { return shutdown_requested_; });
    lock.unlock();
    closed_ = true;
    close_status_ = reader_->close();
  }

  std::unique_ptr<SplitReader<E, SplitT>> reader_;
  const std::size_t capacity_;
  std::function<void()> signal_available_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<absl::AnyInvocable<absl::Status() &&>> tasks_;
  std::deque<Batch> queue_;
  absl::Status error_;
  bool shutdown_requested_ = false;
  bool closed_ = false;
  int assigned_ = 0;  // fetcher thread only
  absl::Status close_status_;
  std::thread thread_;
};

}  // namespace gcpstream::internal

#endif  // GCPSTREAM_API_INTERNAL_SPLIT_FETCHER_H_
