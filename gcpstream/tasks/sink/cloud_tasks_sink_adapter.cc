#include "gcpstream/tasks/sink/cloud_tasks_sink_adapter.h"

#include <fmt/format.h>

#include <array>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "gcpstream/connector/failure_router.h"
#include "gcpstream/connector/status_classifier.h"
#include "gcpstream/tasks/admin/resource_names.h"
#include "gcpstream/tasks/client/task_creator.h"
#include "gcpstream/tasks/sink/task_fields.h"
#include "gcpstream/util/absl_fmt.h"
#include "gcpstream/util/timer_thread.h"
#include "gcpstream/util/utf8.h"

namespace gcpstream::tasks {
namespace {

using connector::QueueDestination;
using Task = google::cloud::tasks::v2::Task;

constexpr char kAbandonedCounter[] = "tasksShutdownsAbandoned";
// The quotas page's task size limit, the larger of the two documented figures.
constexpr std::size_t kMaxTaskBytesAnySource = 1024 * 1024;
// Every queue shares the writer's one client.
constexpr char kOneGroup[] = "cloudtasks";

// Creates waiting out a backoff, over every queue of a writer (the parkedTasks gauge).
struct WaitingCount {
  std::mutex mu;
  std::vector<std::weak_ptr<TaskCreator>> creators;
  std::int64_t sum() {
    std::lock_guard lock(mu);
    std::int64_t n = 0;
    for (const auto& w : creators) {
      if (auto c = w.lock()) n += c->waiting_retry();
    }
    return n;
  }
};

// One queue's creator as the core drives it. Named tasks arrive with the hashed id as their
// name; the full name is composed here, where the queue is known.
class QueueClient final : public connector::DestinationClient<Task> {
 public:
  QueueClient(std::string prefix, std::shared_ptr<TaskCreator> creator)
      : prefix_(std::move(prefix)), creator_(std::move(creator)) {}
  void submit(Task&& task, std::uint64_t token) override {
    if (!task.name().empty() && task.name().find('/') == std::string::npos) {
      task.set_name(prefix_ + task.name());
    }
    creator_->create(std::move(task), token);
  }
  void submit_solo(Task&& task, std::uint64_t token) override { submit(std::move(task), token); }
  void flush() override {}
  absl::Status shutdown() override { return creator_->shutdown(); }

 private:
  std::string prefix_;
  std::shared_ptr<TaskCreator> creator_;
};

class CloudTasksSinkAdapter final : public connector::AsyncSinkAdapter<QueueDestination, Task> {
 public:
  CloudTasksSinkAdapter(CloudTasksWriterConfig config, WriterInitContext& context,
                        std::shared_ptr<WaitingCount> waiting)
      : config_(std::move(config)),
        metrics_(context.metric_group()),
        deduplicated_(context.metric_group().counter("tasksDeduplicated")),
        timers_(std::make_shared<util::TimerThread>()),
        waiting_(std::move(waiting)) {
    // errorClass counters of the retried codes, made here: attempts fail on gRPC threads.
    for (auto code : {absl::StatusCode::kUnavailable, absl::StatusCode::kDeadlineExceeded,
                      absl::StatusCode::kResourceExhausted, absl::StatusCode::kNotFound}) {
      retried_[static_cast<int>(code)] = &metrics_.add_group("errorClass")
                                              .add_group(connector::ErrorClassName(code))
                                              .counter("errors");
    }
  }

  std::string describe(const QueueDestination& q) const override { return q.resource_name(); }
  std::string metric_scope(const QueueDestination& q) const override { return q.queue; }
  std::string group_of(const QueueDestination&) const override { return kOneGroup; }

  absl::StatusOr<std::shared_ptr<connector::DestinationClient<Task>>> open(
      const QueueDestination& q,
      std::shared_ptr<connector::SinkOutcomeListener<Task>> listener) override {
    if (absl::Status s = ValidateQueueDestination(q); !s.ok()) {
      // A configuration error, found once per queue: never a record failure.
      return absl::FailedPreconditionError(
          fmt::format("the Cloud Tasks sink's destination resolver returned {}: {}",
                      q.resource_name(), s.message()));
    }
    CreateTaskHooks hooks;
    // The hooks hold the metric group's counters, never the adapter.
    hooks.on_deduplicated = [c = &deduplicated_] { c->inc(); };
    hooks.on_retried_failure = [counters = retried_](absl::StatusCode code) {
      const auto i = static_cast<std::size_t>(code);
      if (i < counters.size() && counters[i] != nullptr) counters[i]->inc();
    };
    hooks.uniform01 = config_.uniform01;
    auto creator = std::make_shared<TaskCreator>(q.resource_name(), config_.stub, timers_,
                                                 config_.options.retry_settings(), std::move(hooks),
                                                 std::move(listener));
    {
      std::lock_guard lock(waiting_->mu);
      std::erase_if(waiting_->creators, [](const auto& w) { return w.expired(); });
      waiting_->creators.push_back(creator);
    }
    return std::shared_ptr<connector::DestinationClient<Task>>(
        std::make_shared<QueueClient>(q.resource_name() + "/tasks/", std::move(creator)));
  }

  std::int64_t size_of(const Task& t) const override {
    return static_cast<std::int64_t>(t.ByteSizeLong());
  }

  absl::Status precheck(const QueueDestination& q, const Task& t) override {
    // Every Google source refuses a task this large (the CreateTask reference says 100 KB, the
    // quotas page 1 MiB): it is a failure of the record, known before any RPC. Tasks between
    // the two figures go to the service, which decides.
    if (const std::size_t bytes = t.ByteSizeLong(); bytes > kMaxTaskBytesAnySource) {
      return absl::InvalidArgumentError(fmt::format(
          "a task of {} bytes for {} is over the largest size Cloud Tasks documents (1 MiB; the "
          "CreateTask reference says 100 KB)",
          bytes, q.resource_name()));
    }
    if (!t.has_http_request() && !t.has_app_engine_http_request()) {
      return absl::InvalidArgumentError(
          fmt::format("a task for {} has no target: set an HTTP request or an App Engine request",
                      q.resource_name()));
    }
    // Strings of the request that are not UTF-8 make a request the service cannot parse: the
    // task fails here, alone, before any RPC.
    auto not_utf8 = [&](std::string_view what, std::string_view bytes) -> absl::Status {
      auto at = util::InvalidUtf8At(bytes);
      if (!at) return absl::OkStatus();
      return absl::InvalidArgumentError(fmt::format(
          "a task for {} has {} that is not valid UTF-8 (byte {})", q.resource_name(), what, *at));
    };
    const auto& headers =
        t.has_http_request() ? t.http_request().headers() : t.app_engine_http_request().headers();
    for (const auto& [k, v] : headers) {
      if (absl::Status s = not_utf8("a header name", k); !s.ok()) return s;
      if (absl::Status s = not_utf8(fmt::format("the value of header '{}'", k), v); !s.ok()) {
        return s;
      }
      if (absl::Status s = ValidateHeaderName(k); !s.ok()) return s;
      if (absl::Status s = ValidateHeaderValue(k, v); !s.ok()) return s;
    }
    if (absl::Status s =
            not_utf8("a URL", t.has_http_request() ? t.http_request().url()
                                                   : t.app_engine_http_request().relative_uri());
        !s.ok()) {
      return s;
    }
    return absl::OkStatus();
  }

  connector::FailureClass classify(const absl::Status& status) const override {
    return connector::Classify(status, rules_);
  }

  connector::RepairResult repair(const QueueDestination& q,
                                 const std::vector<const Task*>&) override {
    // Unreachable: NOT_FOUND is never repairable here (the sink never creates queues).
    return {absl::FailedPreconditionError(
                fmt::format("the Cloud Tasks sink never creates queues ({})", q.resource_name())),
            true};
  }

  absl::Status fatal_failure(const QueueDestination& q, const absl::Status& cause) const override {
    switch (cause.code()) {
      case absl::StatusCode::kNotFound:
        return absl::NotFoundError(fmt::format(
            "Cloud Tasks queue {} was not found: {}. The sink never creates queues (a created "
            "queue would carry default rate limits); create and configure it, or fix the "
            "project, location or queue id",
            q.resource_name(), cause.message()));
      case absl::StatusCode::kAlreadyExists:
        return absl::AlreadyExistsError(fmt::format(
            "Cloud Tasks answered ALREADY_EXISTS for an unnamed task in {} ({}); only named "
            "tasks (task_id_extractor) can collide",
            q.resource_name(), cause.message()));
      default:
        return absl::Status(cause.code(), fmt::format("creating a task in {} failed: {}",
                                                      q.resource_name(), cause.message()));
    }
  }

  std::unique_ptr<connector::FailedElement> failed_element(const QueueDestination& q,
                                                           std::optional<Task> task,
                                                           absl::Status status,
                                                           bool service_rejection) const override {
    return std::make_unique<connector::BasicFailedElement>(
        "cloudtasks", q.resource_name(), task ? task->SerializeAsString() : std::string(),
        std::move(status), service_rejection);
  }

 private:
  CloudTasksWriterConfig config_;
  MetricGroup& metrics_;
  Counter& deduplicated_;
  std::shared_ptr<util::TimerThread> timers_;
  std::shared_ptr<WaitingCount> waiting_;
  std::array<Counter*, 17> retried_{};
  connector::ClassifierRules rules_;
};

connector::AsyncSinkWriterSettings Settings(const CloudTasksWriterOptions& o) {
  connector::AsyncSinkWriterSettings s;
  s.words = {.connector = "Cloud Tasks",
             .metric_connector = "cloudtasks",
             .element = "task",
             .elements = "tasks",
             .element_metric = "Tasks",
             .destination = "queue",
             .client = "task creator",
             .live_destinations = "queues",
             .request = "CreateTask"};
  s.max_in_flight_count = o.max_in_flight_tasks;
  s.max_in_flight_bytes = o.max_in_flight_bytes;
  s.progress.connector = "Cloud Tasks";
  s.progress.completion = "task creation";
  s.progress.stall_warning_interval = o.stall_warning_interval;
  s.max_consecutive_rejections = o.max_consecutive_rejections;
  s.shutdown_timeout = o.shutdown_timeout;
  s.per_destination_metrics = o.per_destination_metrics;
  s.abandoned_counter = kAbandonedCounter;
  s.one_element_per_request = true;
  return s;
}

}  // namespace

std::unique_ptr<CloudTasksWriterCore> MakeCloudTasksWriterCore(CloudTasksWriterConfig config,
                                                               WriterInitContext& context) {
  connector::AsyncSinkWriterSettings settings = Settings(config.options);
  auto waiting = std::make_shared<WaitingCount>();
  settings.client_parked = [waiting] { return waiting->sum(); };
  std::shared_ptr<connector::FailureHandler> handler = config.failure_handler;
  return std::make_unique<CloudTasksWriterCore>(
      std::move(settings),
      std::make_unique<CloudTasksSinkAdapter>(std::move(config), context, std::move(waiting)),
      std::move(handler), context);
}

}  // namespace gcpstream::tasks
