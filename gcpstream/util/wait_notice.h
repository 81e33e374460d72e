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

}  // namespace gcpstream::util

#endif  // GCPSTREAM_UTIL_WAIT_NOTICE_H_
