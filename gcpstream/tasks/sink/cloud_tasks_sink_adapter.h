#ifndef GCPSTREAM_TASKS_SINK_CLOUD_TASKS_SINK_ADAPTER_H_
#define GCPSTREAM_TASKS_SINK_CLOUD_TASKS_SINK_ADAPTER_H_

#include <memory>

#include "gcpstream/api/sink.h"
#include "gcpstream/connector/async_sink_writer.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/failure_handler.h"
#include "gcpstream/tasks/client/cloud_tasks_stub.h"
#include "gcpstream/tasks/sink/cloud_tasks_writer_options.h"
#include "google/cloud/tasks/v2/task.pb.h"

namespace gcpstream::tasks {

struct CloudTasksWriterConfig {
  CloudTasksWriterOptions options;
  std::shared_ptr<connector::FailureHandler> failure_handler;
  // One stub (one channel pool) serves every queue.
  std::shared_ptr<CloudTasksStub> stub;
  // Tests pin the jitter; empty = random.
  std::function<double()> uniform01;
};

// The Cloud Tasks sink's writer: the shared asynchronous core over one TaskCreator per queue,
// all on one client. Elements are Tasks whose name, when the sink names them, holds the hashed
// task id only; the queue's client composes the full name. What is Cloud Tasks' own:
//  - one CreateTask per task, so an INVALID_ARGUMENT is routed as it comes (no isolation
//    resend);
//  - retries are the client's (two budgets, see CreateTaskRetrySettings); what it gives up on
//    fails the job naming the queue, and NOT_FOUND says the sink never creates queues;
//  - ALREADY_EXISTS for a named task is success (tasksDeduplicated); for an unnamed one it is
//    unexpected and fails the job;
//  - metrics inFlightTasks, parkedTasks (waiting out a backoff), tasksDeduplicated,
//    errorClass.<CODE>.errors for every failed attempt, tasksShutdownsAbandoned.
using CloudTasksWriterCore =
    connector::AsyncSinkWriter<connector::QueueDestination, google::cloud::tasks::v2::Task>;

std::unique_ptr<CloudTasksWriterCore> MakeCloudTasksWriterCore(CloudTasksWriterConfig config,
                                                               WriterInitContext& context);

}  // namespace gcpstream::tasks

#endif  // GCPSTREAM_TASKS_SINK_CLOUD_TASKS_SINK_ADAPTER_H_
