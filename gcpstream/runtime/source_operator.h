#ifndef GCPSTREAM_RUNTIME_SOURCE_OPERATOR_H_
#define GCPSTREAM_RUNTIME_SOURCE_OPERATOR_H_

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gcpstream/api/source.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/api/watermark.h"
#include "gcpstream/runtime/alignment_coordinator.h"
#include "gcpstream/runtime/input_processor.h"
#include "gcpstream/runtime/job_services.h"
#include "gcpstream/runtime/mailbox.h"
#include "gcpstream/runtime/output.h"
#include "gcpstream/runtime/source_coordinator.h"
#include "gcpstream/runtime/stream_operator.h"
#include "gcpstream/runtime/watermark_valve.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::runtime {

inline constexpr char kReaderSplitsList[] = "splits";

// Runs one SourceReader at the head of a chain: polls it as the subtask's default action,
// assigns timestamps, generates per-split watermarks (combined by a WatermarkValve), talks to
// the source's coordinator, and applies watermark alignment.
template <typename T, typename SplitT, typename EnumT>
class SourceOperator final : public StreamOperator, public InputProcessor {
 public:
  using SourceT = Source<T, SplitT, EnumT>;
  using Coordinator = SourceCoordinator<T, SplitT, EnumT>;

  SourceOperator(std::shared_ptr<const SourceT> source, WatermarkStrategy<T> strategy,
                 Coordinator* coordinator, Output<T>* head, OperatorContext& ctx,
                 MailboxProcessor& mailbox, JobServices& services)
      : source_(std::move(source)),
        strategy_(std::move(strategy)),
        coordinator_(coordinator),
        head_(head),
        ctx_(ctx),
        mailbox_(mailbox),
        services_(services),
        reader_context_(this),
        output_(this),
        records_out_(ctx.metric_group->counter(metric_names::kNumRecordsOut)),
        watermarks_enabled_(strategy_.generates_watermarks() || strategy_.idleness()) {
    ctx.metric_group->gauge(metric_names::kCurrentEmitEventTimeLag, [this] {
      const std::int64_t ts = last_emit_timestamp_.load(std::memory_order_relaxed);
      if (ts == kNoTimestamp) return 0.0;
      const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
      return static_cast<double>(now - ts);
    });
    ctx.metric_group->gauge(metric_names::kCurrentOutputWatermark, [this] {
      return static_cast<double>(output_watermark_.load(std::memory_order_relaxed));
    });
  }

  // --- StreamOperator ---
  absl::Status initialize_state(const OperatorStateReader& restored) override {
    const auto& serializer = source_->split_serializer();
    for (const auto& element : restored.list(kReaderSplitsList)) {
      GCP_ASSIGN_OR_RETURN(SplitT split, serializer.deserialize(element.version, element.bytes));
      restored_splits_.push_back(std::move(split));
    }
    return absl::OkStatus();
  }

  absl::Status open() override {
    // Flink's order: create the reader, register it with the coordinator (so a split request
    // made by start() finds it registered), hand it its restored splits, then start it.
    GCP_ASSIGN_OR_RETURN(reader_, source_->create_reader(reader_context_));
    gateway_ = std::make_shared<Gateway>(mailbox_.shared_mailbox(), this);
    const int index = ctx_.subtask_index;
    services_.coordinator->execute(
        [c = coordinator_, index, g = gateway_]() mutable { c->register_reader(index, g); });
    if (!restored_splits_.empty()) {
      GCP_RETURN_IF_ERROR(reader_->add_splits(std::move(restored_splits_)));
      restored_splits_.clear();
    }
    GCP_RETURN_IF_ERROR(reader_->start());
    if (watermarks_enabled_) schedule_periodic_emit();
    if (strategy_.alignment()) {
      const auto& a = *strategy_.alignment();
      alignment_id_ = fmt::format("{}#{}", ctx_.operator_uid, ctx_.subtask_index);
      std::weak_ptr<TaskMailbox> weak = mailbox_.shared_mailbox();
      auto announce = [weak, this](std::int64_t max_allowed) {
        if (auto mb = weak.lock()) {
          mb->put({TaskMailbox::kTaskPriority,
                   [this, max_allowed]() { return on_max_allowed(max_allowed); },
                   "watermark alignment"});
        }
      };
      services_.coordinator->execute(
          [al = services_.alignment, a, id = alignment_id_, announce]() mutable {
            al->register_reader(a.group, a.max_drift, a.update_interval, id, announce);
          });
      schedule_alignment_report();
    }
    return absl::OkStatus();
  }

  absl::Status finish() override { return absl::OkStatus(); }

  absl::Status close() override {
    if (periodic_timer_) periodic_timer_->cancel();
    if (report_timer_) report_timer_->cancel();
    if (gateway_) {
      const int index = ctx_.subtask_index;
      services_.coordinator->execute([c = coordinator_, index] { c->unregister_reader(index); });
    }
    if (strategy_.alignment()) {
      services_.coordinator->execute([al = services_.alignment, g = strategy_.alignment()->group,
                                      id = alignment_id_] { al->unregister_reader(g, id); });
    }
    if (!reader_) return absl::OkStatus();
    absl::Status s = reader_->close();
    return s;
  }

  absl::Status snapshot_state(std::int64_t checkpoint_id, OperatorStateWriter& state) override {
    state.declare(kReaderSplitsList);
    GCP_ASSIGN_OR_RETURN(std::vector<SplitT> splits, reader_->snapshot_state(checkpoint_id));
    const auto& serializer = source_->split_serializer();
    for (const auto& split : splits) {
      GCP_ASSIGN_OR_RETURN(std::string bytes, serializer.serialize(split));
      state.add(kReaderSplitsList, serializer.version(), std::move(bytes));
    }
    return absl::OkStatus();
  }
  absl::Status notify_checkpoint_complete(std::int64_t checkpoint_id) override {
    return reader_->notify_checkpoint_complete(checkpoint_id);
  }
  absl::Status notify_checkpoint_aborted(std::int64_t checkpoint_id) override {
    return reader_->notify_checkpoint_aborted(checkpoint_id);
  }

  // --- InputProcessor ---
  absl::StatusOr<MailboxProcessor::ActionResult> process_input() override {
    if (subtask_blocked_by_alignment_) return MailboxProcessor::ActionResult::kNothingAvailable;
    GCP_ASSIGN_OR_RETURN(InputStatus status, reader_->poll_next(output_));
    // Watermarks the reader emitted itself go out now, whatever the strategy.
    if (!pending_.empty()) GCP_RETURN_IF_ERROR(flush_pending());
    switch (status) {
      case InputStatus::kMoreAvailable:
        return MailboxProcessor::ActionResult::kMore;
      case InputStatus::kNothingAvailable:
        return MailboxProcessor::ActionResult::kNothingAvailable;
      case InputStatus::kEndOfInput:
        finished_ = true;
        GCP_RETURN_IF_ERROR(head_->emit_watermark(kMaxWatermark));
        output_watermark_.store(kMaxWatermark, std::memory_order_relaxed);
        return MailboxProcessor::ActionResult::kEndOfInput;
    }
    return absl::InternalError("unknown input status");
  }

  SourceReader<T, SplitT>* reader() { return reader_.get(); }

 private:
  // One per split (and one unnamed for records emitted without a split output).
  class SplitChannel final : public SourceOutput<T>, public WatermarkOutput {
   public:
    SplitChannel(SourceOperator* op, std::string id, int valve_input)
        : op_(op),
          id_(std::move(id)),
          valve_input_(valve_input),
          generator_(op->strategy_.create_generator()) {}
    absl::Status collect(T value) override {
      return op_->emit(*this, std::move(value), kNoTimestamp);
    }
    absl::Status collect(T value, std::int64_t ts) override {
      return op_->emit(*this, std::move(value), ts);
    }
    void emit_watermark(std::int64_t wm) override {
      if (wm > watermark_) watermark_ = wm;
      op_->pending_.push_back(op_->valve_.on_watermark(valve_input_, wm));
    }
    void mark_idle() override {
      if (idle_) return;
      idle_ = true;
      op_->pending_.push_back(op_->valve_.on_status(valve_input_, true));
    }
    void mark_active() override {
      if (!idle_) return;
      idle_ = false;
      op_->pending_.push_back(op_->valve_.on_status(valve_input_, false));
    }

    SourceOperator* op_;
    std::string id_;
    int valve_input_;
    std::unique_ptr<WatermarkGenerator<T>> generator_;
    std::int64_t watermark_ = kMinWatermark;
    std::uint64_t events_ = 0;
    std::uint64_t events_at_check_ = 0;
    SteadyTime last_active_ = std::chrono::steady_clock::now();
    bool idle_ = false;
    bool paused_ = false;
  };

  class ReaderOutputImpl final : public ReaderOutput<T> {
   public:
    explicit ReaderOutputImpl(SourceOperator* op) : op_(op) {}
    absl::Status collect(T value) override { return main().collect(std::move(value)); }
    absl::Status collect(T value, std::int64_t ts) override {
      return main().collect(std::move(value), ts);
    }
    void emit_watermark(std::int64_t wm) override { main().emit_watermark(wm); }
    void mark_idle() override { main().mark_idle(); }
    void mark_active() override { main().mark_active(); }
    SourceOutput<T>& create_output_for_split(const std::string& split_id) override {
      return op_->channel(split_id);
    }
    void release_output_for_split(const std::string& split_id) override {
      op_->release_channel(split_id);
    }

   private:
    SplitChannel& main() {
      if (main_ == nullptr) main_ = &op_->channel("");
      return *main_;
    }
    SourceOperator* op_;
    SplitChannel* main_ = nullptr;
  };

  class Context final : public SourceReaderContext {
   public:
    explicit Context(SourceOperator* op) : op_(op) {}
    int subtask_index() const override { return op_->ctx_.subtask_index; }
    int parallelism() const override { return op_->ctx_.parallelism; }
    void send_split_request() override {
      const int index = op_->ctx_.subtask_index;
      op_->services_.coordinator->execute(
          [c = op_->coordinator_, index] { c->handle_split_request(index); });
    }
    void send_source_event_to_coordinator(std::shared_ptr<const SourceEvent> event) override {
      const int index = op_->ctx_.subtask_index;
      op_->services_.coordinator->execute(
          [c = op_->coordinator_, index, event = std::move(event)]() mutable {
            c->handle_event(index, std::move(event));
          });
    }
    void signal_available() override { op_->mailbox_.resume_default_action(); }
    MetricGroup& metric_group() override { return *op_->ctx_.metric_group; }
    MailboxExecutor& mailbox_executor() override { return *op_->ctx_.mailbox_executor; }
    ProcessingTimeService& processing_time_service() override { return *op_->ctx_.timer_service; }
    const SourceReaderOptions& options() const override {
      return op_->services_.config.source_reader;
    }
    std::chrono::milliseconds checkpoint_interval() const override {
      return op_->services_.config.checkpointing.interval;
    }

   private:
    SourceOperator* op_;
  };

  class Gateway final : public ReaderGateway<SplitT> {
   public:
    Gateway(std::shared_ptr<TaskMailbox> mailbox, SourceOperator* op)
        : mailbox_(std::move(mailbox)), op_(op) {}
    void deliver_splits(std::vector<SplitT> splits) override {
      post([op = op_, splits = std::move(
                          splits)]() mutable { return op->reader_->add_splits(std::move(splits)); },
           "assign splits");
    }
    void deliver_no_more_splits() override {
      post([op = op_]() { return op->reader_->notify_no_more_splits(); }, "no more splits");
    }
    void deliver_event(std::shared_ptr<const SourceEvent> event) override {
      post(
          [op = op_, event = std::move(event)]() mutable {
            return op->reader_->handle_source_event(std::move(event));
          },
          "source event");
    }

   private:
    void post(Mail mail, const char* what) {
      if (auto mb = mailbox_.lock()) {
        // The action may unblock a suspended reader (e.g. a new split).
        mb->put({TaskMailbox::kTaskPriority,
                 [op = op_, mail = std::move(mail)]() mutable -> absl::Status {
                   absl::Status s = std::move(mail)();
                   op->mailbox_.resume_default_action();
                   return s;
                 },
                 what});
      }
    }
    std::weak_ptr<TaskMailbox> mailbox_;
    SourceOperator* op_;
  };

  SplitChannel& channel(const std::string& id) {
    auto it = channels_.find(id);
    if (it != channels_.end()) return *it->second;
    const int input = valve_.add_input();
    if (idle_without_splits_) {
      idle_without_splits_ = false;
      WatermarkValve::Change active;
      active.idle = false;
      pending_.push_back(active);
    }
    auto [pos, inserted] = channels_.emplace(id, std::make_unique<SplitChannel>(this, id, input));
    return *pos->second;
  }
  void release_channel(const std::string& id) {
    auto it = channels_.find(id);
    if (it == channels_.end()) return;
    pending_.push_back(valve_.on_finished(it->second->valve_input_));
    channels_.erase(it);
    (void)flush_pending();
  }

  absl::Status emit(SplitChannel& ch, T value, std::int64_t ts) {
    const auto& assigner = strategy_.timestamp_assigner();
    if (assigner) ts = assigner(value, ts);
    if (watermarks_enabled_) {
      ++ch.events_;
      if (ch.idle_) ch.mark_active();
      if (ch.generator_) ch.generator_->on_event(value, ts, ch);
      if (!pending_.empty()) GCP_RETURN_IF_ERROR(flush_pending());
    }
    records_out_.inc_single_writer();
    last_emit_timestamp_.store(ts, std::memory_order_relaxed);
    return head_->collect(StreamRecord<T>{std::move(value), ts});
  }

  absl::Status emit_combined(const WatermarkValve::Change& change) {
    if (change.idle) GCP_RETURN_IF_ERROR(head_->emit_watermark_status(*change.idle));
    if (change.watermark) {
      output_watermark_.store(*change.watermark, std::memory_order_relaxed);
      GCP_RETURN_IF_ERROR(head_->emit_watermark(*change.watermark));
    }
    return absl::OkStatus();
  }

  absl::Status flush_pending() {
    auto pending = std::move(pending_);
    pending_.clear();
    for (const auto& change : pending) GCP_RETURN_IF_ERROR(emit_combined(change));
    return absl::OkStatus();
  }

  absl::Status periodic_emit() {
    if (finished_) return absl::OkStatus();
    const auto now = std::chrono::steady_clock::now();
    if (channels_.empty() && strategy_.idleness() && !idle_without_splits_ &&
        now - opened_at_ >= *strategy_.idleness()) {
      // A reader with nothing to read must not hold the job's watermark back.
      idle_without_splits_ = true;
      GCP_RETURN_IF_ERROR(head_->emit_watermark_status(true));
    }
    for (auto& [id, ch] : channels_) {
      if (ch->generator_) ch->generator_->on_periodic_emit(*ch);
      if (const auto& idleness = strategy_.idleness()) {
        if (ch->events_ != ch->events_at_check_) {
          ch->events_at_check_ = ch->events_;
          ch->last_active_ = now;
        } else if (!ch->idle_ && now - ch->last_active_ >= *idleness) {
          ch->mark_idle();
        }
      }
    }
    GCP_RETURN_IF_ERROR(flush_pending());
    schedule_periodic_emit();
    return absl::OkStatus();
  }

  void schedule_periodic_emit() {
    periodic_timer_ = ctx_.timer_service->register_timer(
        std::chrono::steady_clock::now() + services_.config.auto_watermark_interval,
        [this]() { return periodic_emit(); });
  }

  // The watermark this reader reports for alignment: kMaxWatermark when idle or finished (so
  // it does not hold the group back).
  std::int64_t alignment_watermark() const {
    if (finished_ || valve_.idle()) return kMaxWatermark;
    return valve_.current();
  }

  void schedule_alignment_report() {
    const auto interval = strategy_.alignment()->update_interval;
    report_timer_ =
        ctx_.timer_service->register_timer(std::chrono::steady_clock::now() + interval, [this]() {
          services_.coordinator->execute([al = services_.alignment,
                                          g = strategy_.alignment()->group, id = alignment_id_,
                                          wm = alignment_watermark()] { al->report(g, id, wm); });
          if (!finished_) schedule_alignment_report();
          return absl::OkStatus();
        });
  }

  absl::Status on_max_allowed(std::int64_t max_allowed) {
    if (finished_ || !reader_) return absl::OkStatus();
    if (services_.config.allow_unaligned_source_splits) {
      const bool block = valve_.current() > max_allowed && !valve_.idle();
      if (subtask_blocked_by_alignment_ && !block) mailbox_.resume_default_action();
      subtask_blocked_by_alignment_ = block;
      return absl::OkStatus();
    }
    std::vector<std::string> to_pause;
    std::vector<std::string> to_resume;
    for (auto& [id, ch] : channels_) {
      if (id.empty()) continue;
      const bool ahead = ch->watermark_ > max_allowed;
      if (ahead && !ch->paused_) {
        ch->paused_ = true;
        to_pause.push_back(id);
      } else if (!ahead && ch->paused_) {
        ch->paused_ = false;
        to_resume.push_back(id);
      }
    }
    if (to_pause.empty() && to_resume.empty()) return absl::OkStatus();
    absl::Status s = reader_->pause_or_resume_splits(to_pause, to_resume);
    if (s.code() == absl::StatusCode::kUnimplemented) {
      return absl::FailedPreconditionError(fmt::format(
          "source '{}' uses watermark alignment but its reader cannot pause splits ({}); set "
          "allow_unaligned_source_splits to align whole subtasks instead",
          ctx_.operator_name, s.message()));
    }
    mailbox_.resume_default_action();
    return s;
  }

  std::shared_ptr<const SourceT> source_;
  WatermarkStrategy<T> strategy_;
  Coordinator* coordinator_;
  Output<T>* head_;
  OperatorContext& ctx_;
  MailboxProcessor& mailbox_;
  JobServices& services_;
  Context reader_context_;
  ReaderOutputImpl output_;
  Counter& records_out_;
  const bool watermarks_enabled_;
  std::unique_ptr<SourceReader<T, SplitT>> reader_;
  std::vector<SplitT> restored_splits_;
  std::shared_ptr<Gateway> gateway_;
  std::map<std::string, std::unique_ptr<SplitChannel>> channels_;
  WatermarkValve valve_{0};
  std::vector<WatermarkValve::Change> pending_;
  std::shared_ptr<ProcessingTimeService::Timer> periodic_timer_;
  std::shared_ptr<ProcessingTimeService::Timer> report_timer_;
  std::string alignment_id_;
  bool subtask_blocked_by_alignment_ = false;
  bool idle_without_splits_ = false;
  SteadyTime opened_at_ = std::chrono::steady_clock::now();
  bool finished_ = false;
  std::atomic<std::int64_t> last_emit_timestamp_{kNoTimestamp};
  std::atomic<std::int64_t> output_watermark_{kMinWatermark};
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_SOURCE_OPERATOR_H_
