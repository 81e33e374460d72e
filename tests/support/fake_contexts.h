#ifndef GCPSTREAM_TESTS_SUPPORT_FAKE_CONTEXTS_H_
#define GCPSTREAM_TESTS_SUPPORT_FAKE_CONTEXTS_H_

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gcpstream/api/sink.h"
#include "gcpstream/api/source_reader.h"
#include "gcpstream/runtime/mailbox.h"
#include "gcpstream/runtime/metric_registry.h"
#include "gcpstream/runtime/timer_service.h"

namespace gcpstream::testing {

// A real mailbox (bound to the test thread), timers and metrics for unit-testing readers and
// writers outside a job. Use executor().yield_until(...) with a deadline to wait.
class TestMailbox {
 public:
  TestMailbox() : timer_service_(&timers_, processor_.shared_mailbox(), 1) {
    processor_.bind_to_current_thread();
    executor_ = processor_.executor(1);
  }
  runtime::MailboxProcessor& processor() { return processor_; }
  MailboxExecutor& executor() { return *executor_; }
  ProcessingTimeService& timers() { return timer_service_; }
  // Runs every queued mail of any priority (task-level ones included) without blocking.
  absl::Status drain() {
    while (auto letter = processor_.mailbox().try_take(runtime::TaskMailbox::kTaskPriority)) {
      absl::Status s = processor_.run_letter(*letter);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

 private:
  runtime::MailboxProcessor processor_;
  runtime::TimerThread timers_;
  runtime::MailboxTimerService timer_service_;
  std::unique_ptr<MailboxExecutor> executor_;
};

class FakeReaderContext final : public SourceReaderContext {
 public:
  explicit FakeReaderContext(TestMailbox& mailbox, int index = 0, int parallelism = 1)
      : mailbox_(mailbox),
        index_(index),
        parallelism_(parallelism),
        group_(&registry_.group({{"test", "reader"}})) {}
  int subtask_index() const override { return index_; }
  int parallelism() const override { return parallelism_; }
  void send_split_request() override { split_requests++; }
  void send_source_event_to_coordinator(std::shared_ptr<const SourceEvent> event) override {
    std::lock_guard lock(events_mu);
    events.push_back(std::move(event));
  }
  void signal_available() override {
    available_signals++;
    // Post a no-op so a test yielding on the mailbox wakes up.
    mailbox_.executor().execute([] { return absl::OkStatus(); }, "available");
  }
  MetricGroup& metric_group() override { return *group_; }
  MailboxExecutor& mailbox_executor() override { return mailbox_.executor(); }
  ProcessingTimeService& processing_time_service() override { return mailbox_.timers(); }
  const SourceReaderOptions& options() const override { return options_; }

  SourceReaderOptions options_;
  std::atomic<int> split_requests{0};
  std::atomic<int> available_signals{0};
  std::mutex events_mu;  // events arrive from client threads
  std::vector<std::shared_ptr<const SourceEvent>> events;
  std::size_t event_count() {
    std::lock_guard lock(events_mu);
    return events.size();
  }
  runtime::MetricRegistry& registry() { return registry_; }

 private:
  TestMailbox& mailbox_;
  int index_;
  int parallelism_;
  runtime::MetricRegistry registry_;
  MetricGroup* group_;
};

// Records what a reader emits, per split.
template <typename T>
class RecordingReaderOutput final : public ReaderOutput<T> {
 public:
  struct Emitted {
    std::string split;
    T value;
    std::int64_t timestamp_ms;
  };
  class Split final : public SourceOutput<T> {
   public:
    Split(RecordingReaderOutput* owner, std::string id) : owner_(owner), id_(std::move(id)) {}
    absl::Status collect(T value) override { return collect(std::move(value), kNoTimestamp); }
    absl::Status collect(T value, std::int64_t ts) override {
      if (!owner_->fail_next.ok()) return std::exchange(owner_->fail_next, absl::OkStatus());
      owner_->emitted.push_back({id_, std::move(value), ts});
      return absl::OkStatus();
    }
    void emit_watermark(std::int64_t wm) override { owner_->watermarks[id_] = wm; }
    void mark_idle() override {}
    void mark_active() override {}

   private:
    RecordingReaderOutput* owner_;
    std::string id_;
  };

  absl::Status collect(T value) override { return main().collect(std::move(value)); }
  absl::Status collect(T value, std::int64_t ts) override {
    return main().collect(std::move(value), ts);
  }
  void emit_watermark(std::int64_t wm) override { main().emit_watermark(wm); }
  void mark_idle() override {}
  void mark_active() override {}
  SourceOutput<T>& create_output_for_split(const std::string& id) override {
    auto& slot = splits_[id];
    if (!slot) slot = std::make_unique<Split>(this, id);
    return *slot;
  }
  void release_output_for_split(const std::string& id) override {
    released.push_back(id);
    splits_.erase(id);
  }

  std::vector<Emitted> emitted;
  std::vector<std::string> released;
  std::map<std::string, std::int64_t> watermarks;
  absl::Status fail_next;  // the next collect() returns this once

 private:
  Split& main() { return static_cast<Split&>(create_output_for_split("")); }
  std::map<std::string, std::unique_ptr<Split>> splits_;
};

class FakeWriterInitContext final : public WriterInitContext {
 public:
  explicit FakeWriterInitContext(TestMailbox& mailbox, int index = 0, int parallelism = 1)
      : mailbox_(mailbox),
        index_(index),
        parallelism_(parallelism),
        group_(&registry_.group({{"test", "writer"}})) {}
  int subtask_index() const override { return index_; }
  int parallelism() const override { return parallelism_; }
  int attempt_number() const override { return 0; }
  const std::string& task_name() const override { return name_; }
  std::optional<std::int64_t> restored_checkpoint_id() const override { return std::nullopt; }
  MailboxExecutor& mailbox_executor() override { return mailbox_.executor(); }
  ProcessingTimeService& processing_time_service() override { return mailbox_.timers(); }
  MetricGroup& metric_group() override { return *group_; }
  runtime::MetricRegistry& registry() { return registry_; }
  // The value of a counter or gauge registered on the writer's group.
  double metric(const std::string& name) const {
    for (const auto& s : registry_.snapshot()) {
      if (s.name == name) return s.value;
    }
    return -1;
  }

 private:
  TestMailbox& mailbox_;
  int index_;
  int parallelism_;
  std::string name_ = "Sink: test (1/1)#0";
  runtime::MetricRegistry registry_;
  MetricGroup* group_;
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_SUPPORT_FAKE_CONTEXTS_H_
