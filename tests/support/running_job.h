#ifndef GCPSTREAM_TESTS_SUPPORT_RUNNING_JOB_H_
#define GCPSTREAM_TESTS_SUPPORT_RUNNING_JOB_H_

#include <memory>
#include <thread>

#include "gcpstream/runtime/job_runner.h"

namespace gcpstream::testing {

// A job running on its own thread (for unbounded sources): start() runs it, finish() waits for
// its result; destroying a job still running cancels it first.
struct RunningJob {
  std::unique_ptr<runtime::JobRunner> runner;
  std::thread thread;
  runtime::JobResult result;
  ~RunningJob() {
    if (thread.joinable()) {
      runner->cancel();
      thread.join();
    }
  }
  void start() {
    thread = std::thread([this] { result = runner->run(); });
  }
  runtime::JobResult finish() {
    if (thread.joinable()) thread.join();
    return result;
  }
  // The id of the latest completed checkpoint; 0 before the first.
  std::int64_t latest_checkpoint() {
    auto c = runner->latest_checkpoint();
    return c ? c->id : 0;
  }
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_SUPPORT_RUNNING_JOB_H_
