#ifndef GCPSTREAM_TESTS_SUPPORT_CLOUD_TASKS_SINK_HARNESS_H_
#define GCPSTREAM_TESTS_SUPPORT_CLOUD_TASKS_SINK_HARNESS_H_

#include <fmt/format.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gcpstream/tasks/sink/cloud_tasks_sink.h"
#include "tests/support/fake_cloud_tasks.h"
#include "tests/support/sink_harness.h"

namespace gcpstream::testing {

// The Cloud Tasks sink over a FakeCloudTasksStub, for the sink conformance suite. A record is
// (destination, key), created in queue "projects/p/locations/l/queues/q-<destination>"; the
// task's HTTP body is the key. The client's own retry budgets are set to one attempt: the suite
// pins the shared core, and the retries are pinned by cloud_tasks_writer_test.cc.
//
// Cloud Tasks sends one task per request and never creates a queue, so batches() and
// creates_destinations() are false. A client's shutdown is observed as its in-flight creates
// being cancelled (the suite's close test has one in flight per destination).
struct CloudTasksSinkRecord {
  std::string destination;
  std::string key;
};

class CloudTasksSinkHarness final : public SinkHarnessBase<CloudTasksSinkRecord> {
 public:
  using Record = CloudTasksSinkRecord;
  using Task = google::cloud::tasks::v2::Task;

  std::string name() const override { return "cloudtasks"; }
  std::string connector() const override { return "Cloud Tasks"; }
  std::string in_flight_gauge() const override { return "inFlightTasks"; }
  bool batches() const override { return false; }
  bool creates_destinations() const override { return false; }
  std::string missing_destination_words() const override { return "never creates queues"; }

  absl::Status open(const SinkHarnessOptions& o) override {
    tasks::CloudTasksWriterOptions options;
    options.max_in_flight_tasks = o.max_in_flight_count;
    options.max_in_flight_bytes = o.max_in_flight_bytes;
    options.max_consecutive_rejections = o.max_consecutive_rejections;
    options.stall_warning_interval = o.stall_warning_interval;
    options.retry_max_attempts = 1;
    options.not_found_max_attempts = 1;
    auto b = tasks::CloudTasksSink<Record>::builder();
    b.destination_resolver([](const Record& r, const SinkWriterContext&) {
       return std::optional<connector::QueueDestination>(
           connector::QueueDestination::of("p", "l", "q-" + r.destination));
     })
        .serializer(tasks::CloudTasksSerializationSchema<Record>::of(
            [](const Record& r, const SinkWriterContext&) -> std::optional<Task> {
              if (r.key == "<skip>") return std::nullopt;
              if (r.key == "<throw>") throw std::runtime_error("cannot encode");
              Task t;
              t.mutable_http_request()->set_url("https://example.com/h");
              t.mutable_http_request()->set_body(r.key);
              return t;
            }))
        .writer_options(options)
        .stub(stub_);
    if (o.handler) b.failed_task_handler(o.handler);
    auto sink = b.build();
    if (!sink.ok()) return sink.status();
    return open_writer(std::shared_ptr<Sink<Record>>(*sink));
  }

  static std::string QueueOf(const std::string& d) {
    return "projects/p/locations/l/queues/q-" + d;
  }

  std::size_t submitted(const std::string& d) override { return stub_->size(QueueOf(d)); }
  std::string key(const std::string& d, std::size_t i) override {
    return stub_->call(QueueOf(d), i).request.task().http_request().body();
  }
  bool solo(const std::string&, std::size_t) override { return false; }
  void complete(const std::string& d, std::size_t i, absl::Status status) override {
    stub_->complete(QueueOf(d), i, std::move(status));
  }
  void respond(SinkResponder responder) override {
    auto attempts = std::make_shared<std::map<std::string, int>>();
    stub_->on_create = [responder, attempts](std::size_t, const FakeCloudTasksStub::Call& c) {
      const std::string key = c.request.task().http_request().body();
      return responder(key, false, (*attempts)[key]++);
    };
  }
  // One CreateTask per task: nothing is ever held back, so there is nothing to flush.
  int client_flushes(const std::string&) override { return 0; }
  int client_shutdowns(const std::string& d) override {
    return stub_->cancelled(QueueOf(d)) > 0 ? 1 : 0;
  }
  std::vector<std::string> created() override { return {}; }
  std::string fail_everything_pending(absl::Status status) override {
    std::string seen;
    for (const auto& q : stub_->queues()) {
      seen += fmt::format(" {}: {} creates, {} pending;", q, stub_->size(q), stub_->pending(q));
      for (std::size_t i = 0; i < stub_->size(q); ++i) stub_->complete(q, i, status);
    }
    return seen;
  }

 protected:
  Record make(const std::string& destination, const std::string& key) const override {
    return {destination, key};
  }

 private:
  std::shared_ptr<FakeCloudTasksStub> stub_ = std::make_shared<FakeCloudTasksStub>();
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_SUPPORT_CLOUD_TASKS_SINK_HARNESS_H_
