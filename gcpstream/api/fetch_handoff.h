#ifndef GCPSTREAM_API_FETCH_HANDOFF_H_
#define GCPSTREAM_API_FETCH_HANDOFF_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace gcpstream {

// The bounded hand-off between a stream thread that reads one split and the SplitReader's
// fetch() on the fetcher thread: the shape of a source whose client delivers rows through a
// blocking stream. It holds at most one fetch's worth — `max_elements` elements or
// `max_bytes` of their estimated size, whichever comes first, but always one element when it is
// empty, so an element larger than the byte bound still gets through alone. While it is full
// the stream thread waits in push(), and the transport's flow control holds the service back.
//
// take() hands over at most one fetch's worth (at least one element when there is one) and
// says when the stream ended and how. wake_up() makes a waiting take() return early, empty.
// close() releases a waiting push() for good (it returns false) until reset(). Thread-safe.
template <typename E>
class FetchHandoff {
 public:
  FetchHandoff(std::size_t max_elements, std::size_t max_bytes)
      : max_elements_(max_elements == 0 ? 1 : max_elements), max_bytes_(max_bytes) {}

  // Stream thread: waits for room, then adds. False (the element dropped) once closed.
  bool push(E element, std::size_t bytes) {
    return add([&] {
      buffered_bytes_ += bytes;
      items_.emplace_back(std::move(element), bytes);
    });
  }

  // Stream thread: adds several elements at once (what one response message carried), after
  // waiting for room as push() does; they may take the hand-off past its bounds by that one
  // group. One wake-up for the group instead of one per element. False once closed.
  bool push_all(std::vector<std::pair<E, std::size_t>>& elements) {
    if (elements.empty()) return true;
    return add([&] {
      for (auto& [element, bytes] : elements) {
        buffered_bytes_ += bytes;
        items_.emplace_back(std::move(element), bytes);
      }
      elements.clear();
    });
  }

  // Stream thread: the stream ended with `status` (OK: read to its end).
  void finish(absl::Status status) {
    {
      std::lock_guard lock(mu_);
      done_ = true;
      status_ = std::move(status);
    }
    not_empty_.notify_all();
  }

  struct Taken {
    std::vector<E> elements;
    // The stream ended and everything it produced has now been taken.
    bool finished = false;
    absl::Status status;  // how it ended, when finished
  };

  // Fetcher thread: waits for an element, the stream's end or a wake_up().
  Taken take() {
    Taken out;
    bool wake_pusher = false;
    {
      std::unique_lock lock(mu_);
      if (items_.empty() && !done_ && !woken_ && !closed_) {
        ++takers_waiting_;
        not_empty_.wait(lock, [&] { return !items_.empty() || done_ || woken_ || closed_; });
        --takers_waiting_;
      }
      woken_ = false;
      std::size_t taken_bytes = 0;
      while (!items_.empty() && out.elements.size() < max_elements_ &&
             (out.elements.empty() || taken_bytes + items_.front().second <= max_bytes_)) {
        taken_bytes += items_.front().second;
        buffered_bytes_ -= items_.front().second;
        out.elements.push_back(std::move(items_.front().first));
        items_.pop_front();
      }
      if (items_.empty() && done_) {
        out.finished = true;
        out.status = status_;
      }
      wake_pusher = pushers_waiting_ > 0 && !out.elements.empty();
    }
    if (wake_pusher) not_full_.notify_all();
    return out;
  }

  void wake_up() {
    {
      std::lock_guard lock(mu_);
      woken_ = true;
    }
    not_empty_.notify_all();
  }

  // Releases push() for good (and a waiting take()); elements held are kept until reset().
  void close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
    }
    not_full_.notify_all();
    not_empty_.notify_all();
  }

  // For the next stream: empty, not ended, not closed.
  void reset() {
    std::lock_guard lock(mu_);
    items_.clear();
    buffered_bytes_ = 0;
    done_ = false;
    status_ = absl::OkStatus();
    closed_ = false;
  }

 private:
  // Waits for room, then runs `append` under the lock; only the first elements wake a waiting
  // take(): it takes everything there when it runs, so waking it for every element would cost a
  // context switch per element.
  template <typename Append>
  bool add(Append&& append) {
    std::unique_lock lock(mu_);
    if (!room()) {
      ++pushers_waiting_;
      not_full_.wait(lock, [&] { return room(); });
      --pushers_waiting_;
    }
    if (closed_) return false;
    const bool was_empty = items_.empty();
    append();
    const bool wake = was_empty && takers_waiting_ > 0;
    lock.unlock();
    if (wake) not_empty_.notify_one();
    return true;
  }

  // Under mu_: whether push() may add now (or must return because the hand-off closed).
  bool room() const {
    return closed_ || items_.empty() ||
           (items_.size() < max_elements_ && buffered_bytes_ < max_bytes_);
  }

  const std::size_t max_elements_;
  const std::size_t max_bytes_;
  std::mutex mu_;
  std::condition_variable not_empty_;  // take() waits here
  std::condition_variable not_full_;   // push() waits here
  int takers_waiting_ = 0;
  int pushers_waiting_ = 0;
  std::deque<std::pair<E, std::size_t>> items_;
  std::size_t buffered_bytes_ = 0;
  bool done_ = false;
  absl::Status status_;
  bool woken_ = false;
  bool closed_ = false;
};

}  // namespace gcpstream

#endif  // GCPSTREAM_API_FETCH_HANDOFF_H_
