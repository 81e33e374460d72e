#ifndef GCPSTREAM_CONNECTOR_BOUNDED_SHUTDOWN_H_
#define GCPSTREAM_CONNECTOR_BOUNDED_SHUTDOWN_H_

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "gcpstream/api/metrics.h"

namespace gcpstream::connector {

// Counters that outlive any one writer or job attempt: a teardown that gave up is a fact about
// the process (threads and channels it left behind), and a writer's metric group is gone when
// its close() would report it. Thread-safe; the counter lives until the process exits.
Counter& ProcessCounter(std::string_view name);

struct ShutdownTask {
  std::string name;                     // for the WARN, e.g. "publisher for projects/p/topics/t"
  std::function<absl::Status()> close;  // may block; runs on a thread of its own
};

struct ShutdownResult {
  std::vector<std::string> abandoned;  // tasks still running at the deadline
  absl::Status error;                  // the first error a finished task returned
};

// Runs every task's close() concurrently, each on its own thread, and waits for all of them
// under one deadline (`timeout` in total, however many tasks): a release costs one timeout, not
// one per client. Tasks still running at the deadline are abandoned (their threads finish on
// their own), logged at WARN and counted in ProcessCounter(abandoned_counter).
ShutdownResult BoundedShutdown(std::vector<ShutdownTask> tasks, std::chrono::milliseconds timeout,
                               std::string_view abandoned_counter);

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_BOUNDED_SHUTDOWN_H_
