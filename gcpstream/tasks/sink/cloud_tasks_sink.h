#ifndef GCPSTREAM_TASKS_SINK_CLOUD_TASKS_SINK_H_
#define GCPSTREAM_TASKS_SINK_CLOUD_TASKS_SINK_H_

#include <fmt/format.h>

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "gcpstream/api/lineage.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/connector/async_sink_writer_front.h"
#include "gcpstream/connector/client_options.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/failure_handler.h"
#include "gcpstream/connector/lineage.h"
#include "gcpstream/connector/serialization.h"
#include "gcpstream/tasks/admin/resource_names.h"
#include "gcpstream/tasks/sink/cloud_tasks_serialization_schema.h"
#include "gcpstream/tasks/sink/cloud_tasks_sink_adapter.h"
#include "gcpstream/tasks/sink/cloud_tasks_writer_options.h"

namespace gcpstream::tasks {

// The client a Cloud Tasks sink writer uses, made when the writer starts (credentials are read
// then): one stub over `channel_pool_size` channels (one for an emulator). Tests pass a fake.
absl::StatusOr<std::shared_ptr<CloudTasksStub>> MakeCloudTasksStub(
    const connector::ClientOptions& client, const CloudTasksWriterOptions& options);

// Turns records into Cloud Tasks tasks, one CreateTask per record, at-least-once: flush() at
// each checkpoint waits for every create (retries included), so a completed checkpoint means
// Cloud Tasks stored a task for every record before the barrier, except those the serializer
// skipped or a dropping failure handler received.
//
// With task_id_extractor(key_of) each task is named by the SHA-256 of its key within the queue,
// so a replayed record answers ALREADY_EXISTS while Cloud Tasks remembers the name (about an
// hour after the task ran or was deleted) and counts as success: bounded effectively-once task
// creation. The handler behind the queue still runs at least once.
//
//   auto sink = CloudTasksSink<Order>::builder()
//                   .queue(QueueDestination::of("my-project", "us-central1", "orders"))
//                   .serializer(*http_target<Order>("https://example.com/orders")
//                                    .with_body(encode).build())
//                   .task_id_extractor([](const Order& o) { return o.id; })
//                   .build();
//
// The sink never creates a queue. See docs/cloud-tasks.md for every option and failure class.
template <typename T>
class CloudTasksSink final : public Sink<T>, public LineageVertexProvider {
 public:
  using Task = google::cloud::tasks::v2::Task;

  class Builder {
   public:
    // Every record to one queue. Replaces a destination resolver set before (last wins).
    Builder& queue(connector::QueueDestination queue) {
      fixed_ = queue;
      resolver_ = connector::FixedDestination<T>(std::move(queue));
      return *this;
    }
    // The queue per record; returning nothing fails the job. One client serves every queue.
    Builder& destination_resolver(
        connector::DestinationResolver<T, connector::QueueDestination> r) {
      fixed_.reset();
      resolver_ = std::move(r);
      return *this;
    }
    Builder& serializer(CloudTasksSerializationSchema<T> schema) {
      serializer_ = std::move(schema);
      return *this;
    }
    // Names every task by the SHA-256 of the key this returns. An empty key fails the job (a
    // configuration error: every record would fail alike); a throw is a failure of that record.
    Builder& task_id_extractor(std::function<std::string(const T&)> extract) {
      extractor_ = std::move(extract);
      return *this;
    }
    Builder& writer_options(CloudTasksWriterOptions options) {
      options_ = std::move(options);
      return *this;
    }
    // What receives a task that terminally fails [fail the job].
    Builder& failed_task_handler(std::shared_ptr<connector::FailureHandler> handler) {
      handler_ = std::move(handler);
      return *this;
    }
    Builder& service_account_key_file(std::string path) {
      note(client_.set_service_account_key_file(std::move(path)));
      return *this;
    }
    // host:port of an emulator or the in-repo fake; malformed values are reported by build().
    Builder& emulator_endpoint(std::string_view host_port) {
      note(client_.set_emulator_endpoint(host_port));
      return *this;
    }
    // Test seam: the stub to use instead of a gRPC one.
    Builder& stub(std::shared_ptr<CloudTasksStub> stub) {
      stub_ = std::move(stub);
      return *this;
    }
    // Test seam: the jitter's random source.
    Builder& uniform01(std::function<double()> uniform01) {
      uniform01_ = std::move(uniform01);
      return *this;
    }

    // INVALID_ARGUMENT naming the option(s) of the first problem.
    absl::StatusOr<std::shared_ptr<CloudTasksSink>> build() const {
      GCP_RETURN_IF_ERROR(error_);
      if (!resolver_) {
        return absl::InvalidArgumentError(
            "CloudTasksSink needs a destination: set queue(...) or destination_resolver(...)");
      }
      if (!serializer_.valid()) {
        return absl::InvalidArgumentError("CloudTasksSink needs serializer(...)");
      }
      GCP_RETURN_IF_ERROR(client_.validate());
      GCP_RETURN_IF_ERROR(options_.validate());
      if (fixed_) GCP_RETURN_IF_ERROR(ValidateQueueDestination(*fixed_));
      if (options_.channel_pool_size && client_.emulator_endpoint()) {
        return absl::InvalidArgumentError(
            "channel_pool_size cannot be combined with emulator_endpoint: an emulator always "
            "gets one plaintext channel, so the pool would be ignored");
      }
      return std::shared_ptr<CloudTasksSink>(new CloudTasksSink(*this));
    }

   private:
    friend class CloudTasksSink;
    void note(absl::Status s) {
      if (error_.ok() && !s.ok()) error_ = std::move(s);
    }
    std::optional<connector::QueueDestination> fixed_;
    connector::DestinationResolver<T, connector::QueueDestination> resolver_;
    CloudTasksSerializationSchema<T> serializer_;
    std::function<std::string(const T&)> extractor_;
    CloudTasksWriterOptions options_;
    std::shared_ptr<connector::FailureHandler> handler_;
    connector::ClientOptions client_;
    std::shared_ptr<CloudTasksStub> stub_;
    std::function<double()> uniform01_;
    absl::Status error_;
  };

  static Builder builder() { return Builder(); }

  absl::StatusOr<std::unique_ptr<SinkWriter<T>>> create_writer(
      WriterInitContext& context) const override {
    CloudTasksWriterConfig config;
    config.options = b_.options_;
    config.failure_handler = b_.handler_ ? b_.handler_ : connector::FailureHandler::fail_job();
    config.uniform01 = b_.uniform01_;
    if (b_.stub_) {
      config.stub = b_.stub_;
    } else {
      GCP_ASSIGN_OR_RETURN(config.stub, MakeCloudTasksStub(b_.client_, b_.options_));
    }
    auto serialize = [serializer = b_.serializer_, extractor = b_.extractor_](
                         const T& element,
                         const SinkWriterContext& context) -> absl::StatusOr<std::optional<Task>> {
      absl::StatusOr<std::optional<Task>> task =
          connector::CallSerializer<Task>([&] { return serializer.serialize(element, context); });
      if (!task.ok() || !task->has_value()) return task;
      if (!(*task)->name().empty()) {
        return connector::ConfigurationError(absl::FailedPreconditionError(
            "the Cloud Tasks serializer returned a task with a name; names are the sink's "
            "(set task_id_extractor to deduplicate), so the serializer must leave it empty"));
      }
      if (extractor) GCP_RETURN_IF_ERROR(NameTask(extractor, element, **task));
      return task;
    };
    auto writer = std::make_unique<Writer>(b_.resolver_, std::move(serialize),
                                           MakeCloudTasksWriterCore(std::move(config), context));
    GCP_RETURN_IF_ERROR(writer->open());
    return std::unique_ptr<SinkWriter<T>>(std::move(writer));
  }

  LineageVertex lineage_vertex() const override {
    LineageVertex v;
    v.role = LineageVertex::Role::kSink;
    v.connector = "cloudtasks";
    if (b_.fixed_) v.datasets.push_back(connector::CloudTasksDataset(*b_.fixed_));
    return v;
  }

  const CloudTasksWriterOptions& options() const { return b_.options_; }

 private:
  using Writer = connector::AsyncSinkWriterFront<T, connector::QueueDestination, Task>;

  // The hashed id of the record's key as the task's name (the queue's client adds the queue).
  static absl::Status NameTask(const std::function<std::string(const T&)>& extractor,
                               const T& element, Task& task) {
    std::string key;
    try {
      key = extractor(element);
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(std::string("the task id extractor threw: ") + e.what());
    } catch (...) {
      return absl::InvalidArgumentError("the task id extractor threw a non-standard exception");
    }
    if (key.empty()) {
      return connector::ConfigurationError(absl::FailedPreconditionError(
          "the Cloud Tasks task id extractor returned an empty key; every record needs a "
          "stable, non-empty key to be deduplicated by"));
    }
    task.set_name(HashedTaskId(key));
    return absl::OkStatus();
  }

  explicit CloudTasksSink(Builder b) : b_(std::move(b)) {}
  Builder b_;
};

}  // namespace gcpstream::tasks

#endif  // GCPSTREAM_TASKS_SINK_CLOUD_TASKS_SINK_H_
