#ifndef GCPSTREAM_UTIL_WAIT_NOTICE_H_
#define GCPSTREAM_UTIL_WAIT_NOTICE_H_

#include <string>
#include <thread>

namespace gcpstream::util {

// What a thread is blocked on, in words, for messages written by other threads: a checkpoint
// that times out names the wait each missing subtask is in ("Bigtable sink: flushing for a
// checkpoint; 37 entries in flight, pending: ... (awaiting MutateRows responses)").
//
// A long wait publishes its description with set() (cheap enough to refresh every few
// seconds, not per record) and removes it with clear() when it ends. Thread-safe.
class WaitNotice {
 public:
  // Describes the calling thread's current wait (replacing any earlier description).
  static void set(std::string description);
  // The calling thread is no longer waiting.
  static void clear();
  // The description `thread` published, or "" when it is not in a described wait.
  static std::string of(std::thread::id thread);
};

// Publishes the calling thread's wait for as long as it lives, and puts back what was there
// before (an outer wait's description, or none) when it ends, however it ends (a return, an
// exception). Not thread-safe: one thread's stack object.
class ScopedWaitNotice {
 public:
  ScopedWaitNotice() = default;
  ScopedWaitNotice(const ScopedWaitNotice&) = delete;
  ScopedWaitNotice& operator=(const ScopedWaitNotice&) = delete;
  ~ScopedWaitNotice();

  // Publishes (or replaces) this wait's description.
  void update(std::string description);

 private:
  bool active_ = false;
  std::string previous_;
};

}  // namespace gcpstream::util

#endif  // GCPSTREAM_UTIL_WAIT_NOTICE_H_
