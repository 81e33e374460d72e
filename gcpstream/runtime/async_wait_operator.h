#ifndef GCPSTREAM_RUNTIME_ASYNC_WAIT_OPERATOR_H_
#define GCPSTREAM_RUNTIME_ASYNC_WAIT_OPERATOR_H_

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gcpstream/api/async_function.h"
#include "gcpstream/api/value_codec.h"
#include "gcpstream/runtime/basic_operators.h"
#include "gcpstream/util/bytes.h"

namespace gcpstream::runtime {

// The state list holding an async operator's inputs still in flight at a checkpoint.
inline constexpr char kAsyncInputsList[] = "async-inputs";
inline constexpr int kAsyncInputsVersion = 1;

// How the async operator orders what it emits.
enum class AsyncOutputMode {
  // Results leave in input order: a slow input holds back the ones behind it.
  kOrdered,
  // Results leave as they complete, but never across a watermark: every result of an input
  // that arrived before a watermark is emitted before that watermark, and none after it.
  kUnordered,
};

struct AsyncWaitConfig {
  AsyncOutputMode mode = AsyncOutputMode::kUnordered;
  // Per input, from the first call to the outcome, across retries and backoffs; 0: none.
  std::chrono::milliseconds timeout{0};
  // Inputs (and watermarks waiting behind them) the operator holds at once; at the cap the
  // subtask stops taking input (back-pressure) until one leaves.
  int capacity = 100;
  // Whether the job takes periodic checkpoints (set by AsyncDataStream from the job's
  // configuration): an input type without a ValueCodec is then refused when the operator opens.
  bool checkpointing = false;
};

// The operator behind AsyncDataStream (Flink's AsyncWaitOperator).
//
// Each input record gets an entry in a queue and a call to the function's async_invoke(); the
// ResultFuture's outcome comes back as a mail at this operator's priority, so results are
// emitted on the subtask thread, between records. At `capacity` entries, collect() yields to
// the mailbox (running those completions) until an entry leaves: the back-pressure reaches
// the input channel. Watermarks take a place in the queue so that no result overtakes one.
//
// Failure: an input completed exceptionally (after any retries its strategy allows) fails the
// subtask with the function's status code and a message naming the operator.
//
// Checkpoints store the inputs still in the queue (completed but not yet emitted ones too:
// their results were not sent) through ValueCodec<In>; a restore calls the function again for
// each of them, so the operator is at-least-once towards the service and exactly-once towards
// a transactional sink. Watermarks in the queue are not stored (the source emits them again).
// An input type without a ValueCodec can be used only while the queue is empty at every
// checkpoint; otherwise the checkpoint fails naming the type.
template <typename In, typename Out>
class AsyncWaitOperator final : public OneInputOperator<In, Out> {
 public:
  AsyncWaitOperator(std::unique_ptr<AsyncFunction<In, Out>> fn, AsyncWaitConfig config,
                    AsyncRetryStrategy<Out> retry, Output<Out>* out, OperatorContext& ctx)
      : OneInputOperator<In, Out>(out, ctx),
        fn_(std::move(fn)),
        config_(config),
        retry_(std::move(retry)),
        ctx_(ctx),
        mailman_(std::make_shared<Mailman>(ctx.mailbox, ctx.priority)),
        retries_(ctx.metric_group->counter("asyncRetries")),
        timeouts_(ctx.metric_group->counter("asyncTimeouts")) {
    mailman_->op = this;
    if (config_.capacity < 1) config_.capacity = 1;
    auto in_flight = in_flight_;
    ctx.metric_group->gauge("asyncInFlight", [in_flight] {
      return static_cast<double>(in_flight->load(std::memory_order_relaxed));
    });
  }
  ~AsyncWaitOperator() override { mailman_->op = nullptr; }

  absl::Status initialize_state(const OperatorStateReader& restored) override {
    const auto& elements = restored.list(kAsyncInputsList);
    if constexpr (Encodable<In>) {
      for (const auto& e : elements) {
        if (e.version != kAsyncInputsVersion) {
          return util::UnknownVersion("async operator input", e.version, kAsyncInputsVersion);
        }
        util::ByteReader r(e.bytes);
        GCP_ASSIGN_OR_RETURN(std::int64_t timestamp, r.i64());
        GCP_ASSIGN_OR_RETURN(In value, ValueCodec<In>::decode(r));
        restored_.push_back(StreamRecord<In>{std::move(value), timestamp});
      }
      return absl::OkStatus();
    } else {
      if (elements.empty()) return absl::OkStatus();
      return absl::FailedPreconditionError(
          fmt::format("'{}' restored in-flight async inputs of a type with no ValueCodec ({})",
                      ctx_.operator_name, typeid(In).name()));
    }
  }

  absl::Status open() override {
    if constexpr (!Encodable<In>) {
      if (config_.checkpointing) {
        return absl::FailedPreconditionError(fmt::format(
            "'{}' keeps its in-flight inputs in checkpoints, and its input type has no "
            "ValueCodec ({}); specialize gcpstream::ValueCodec for it, or run the job without "
            "checkpoints",
            ctx_.operator_name, typeid(In).name()));
      }
    }
    AsyncFunctionContext context{ctx_.operator_name, ctx_.subtask_index, ctx_.parallelism,
                                 ctx_.attempt_number, ctx_.metric_group};
    GCP_RETURN_IF_ERROR(fn_->open(context));
    opened_ = true;
    // Restored inputs are called again at once, even beyond the capacity (a restore at a
    // lower parallelism can hand one subtask more than that); new input waits for room.
    auto restored = std::move(restored_);
    restored_.clear();
    for (auto& record : restored) start(std::move(record));
    return absl::OkStatus();
  }

  absl::Status collect(StreamRecord<In>&& record) override {
    this->records_in_.inc_single_writer();
    GCP_RETURN_IF_ERROR(await_room());
    start(std::move(record));
    return absl::OkStatus();
  }

  absl::Status emit_watermark(std::int64_t watermark_ms) override {
    if (queue_.empty()) return this->out_->emit_watermark(watermark_ms);
    GCP_RETURN_IF_ERROR(await_room());
    if (queue_.empty()) return this->out_->emit_watermark(watermark_ms);
    Entry entry;
    entry.id = next_id_++;
    entry.watermark = watermark_ms;
    queue_.push_back(std::move(entry));
    return absl::OkStatus();
  }

  // From here to snapshot_state() nothing is emitted: a barrier may already be on its way
  // downstream (another output of this subtask yields while sending it, running this
  // operator's completions), and a result sent after it must not leave the queue the snapshot
  // stores.
  absl::Status prepare_snapshot_pre_barrier(std::int64_t) override {
    holding_ = true;
    return absl::OkStatus();
  }

  absl::Status finish() override {
    // End of input: every input still in flight completes (or times out) before the
    // downstream finishes.
    return ctx_.mailbox_executor->yield_until([this] { return queue_.empty() || !failure_.ok(); });
  }

  absl::Status close() override {
    mailman_->op = nullptr;  // outcomes and timers arriving from now on are dropped
    for (auto& entry : queue_) cancel_timers(entry);
    queue_.clear();
    index_.clear();
    in_flight_->store(0, std::memory_order_relaxed);
    if (!opened_) return absl::OkStatus();
    opened_ = false;
    return fn_->close();
  }

  absl::Status snapshot_state(std::int64_t, OperatorStateWriter& state) override {
    if constexpr (Encodable<In>) {
      state.declare(kAsyncInputsList);
      for (const auto& entry : queue_) {
        if (!entry.input) continue;  // a watermark
        util::ByteWriter w;
        w.put_i64(entry.input->timestamp_ms);
        ValueCodec<In>::encode(entry.input->value, w);
        state.add(kAsyncInputsList, kAsyncInputsVersion, w.take());
      }
      release_hold();
      return absl::OkStatus();
    } else {
      if (in_flight_->load(std::memory_order_relaxed) == 0) {
        release_hold();
        return absl::OkStatus();
      }
      return absl::FailedPreconditionError(fmt::format(
          "'{}' holds async inputs in flight at a checkpoint, and their type has no "
          "ValueCodec ({}); specialize gcpstream::ValueCodec to make them checkpointable",
          ctx_.operator_name, typeid(In).name()));
    }
  }

  // Entries in the queue (inputs and watermarks). Subtask thread only.
  std::size_t queued() const { return queue_.size(); }

 private:
  struct Entry {
    std::uint64_t id = 0;
    std::optional<StreamRecord<In>> input;  // empty: a watermark entry
    std::int64_t watermark = 0;
    int attempt = 0;  // generation of the outcome that counts (retries and the timeout bump it)
    int calls = 0;    // async_invoke() calls made for the input
    bool done = false;
    bool timed_out = false;
    std::vector<Out> results;
    std::shared_ptr<ProcessingTimeService::Timer> timeout_timer;
    std::shared_ptr<ProcessingTimeService::Timer> retry_timer;
  };
  using Queue = std::list<Entry>;

  // Receives outcomes on any thread and posts them to the subtask's mailbox. Outlives the
  // operator when futures do; `op` is cleared (on the subtask thread) when the operator closes.
  class Mailman final : public internal::AsyncResultSink<Out>,
                        public std::enable_shared_from_this<Mailman> {
   public:
    Mailman(std::weak_ptr<TaskMailbox> mailbox, int priority)
        : mailbox_(std::move(mailbox)), priority_(priority) {}
    void deliver(std::uint64_t entry, int attempt,
                 absl::StatusOr<std::vector<Out>> outcome) override {
      auto mailbox = mailbox_.lock();
      if (!mailbox) return;
      std::weak_ptr<Mailman> self = this->shared_from_this();
      mailbox->put(TaskMailbox::Letter{
          priority_,
          [self, entry, attempt, outcome = std::move(outcome)]() mutable -> absl::Status {
            auto m = self.lock();
            if (!m || m->op == nullptr) return absl::OkStatus();
            return m->op->on_outcome(entry, attempt, std::move(outcome));
          },
          "async function outcome"});
    }
    AsyncWaitOperator* op = nullptr;  // subtask thread only

   private:
    std::weak_ptr<TaskMailbox> mailbox_;
    int priority_;
  };

  // After a snapshot: what completed meanwhile leaves, in a mail of its own.
  void release_hold() {
    if (!holding_) return;
    holding_ = false;
    std::weak_ptr<Mailman> weak = mailman_;
    ctx_.mailbox_executor->execute(
        [weak]() -> absl::Status {
          auto m = weak.lock();
          if (!m || m->op == nullptr) return absl::OkStatus();
          return m->op->emit_ready();
        },
        "async operator: emit after a checkpoint");
  }

  absl::Status await_room() {
    if (queue_.size() < static_cast<std::size_t>(config_.capacity)) return absl::OkStatus();
    // Holding for a checkpoint, nothing can leave: take the record beyond the capacity rather
    // than wait for room that cannot come before the snapshot.
    if (holding_) return absl::OkStatus();
    GCP_RETURN_IF_ERROR(ctx_.mailbox_executor->yield_until([this] {
      return queue_.size() < static_cast<std::size_t>(config_.capacity) || !failure_.ok();
    }));
    return failure_;
  }

  void start(StreamRecord<In> record) {
    Entry entry;
    entry.id = next_id_++;
    entry.input = std::move(record);
    queue_.push_back(std::move(entry));
    auto it = std::prev(queue_.end());
    index_.emplace(it->id, it);
    in_flight_->fetch_add(1, std::memory_order_relaxed);
    if (config_.timeout.count() > 0) {
      it->timeout_timer =
          schedule(ctx_.timer_service->now() + config_.timeout, it->id,
                   [](AsyncWaitOperator* op, std::uint64_t id) { return op->on_timeout(id); });
    }
    invoke(*it);
  }

  void invoke(Entry& entry) {
    ++entry.calls;
    fn_->async_invoke(entry.input->value,
                      ResultFuture<Out>(std::weak_ptr<internal::AsyncResultSink<Out>>(mailman_),
                                        entry.id, entry.attempt));
  }

  template <typename Fire>
  std::shared_ptr<ProcessingTimeService::Timer> schedule(SteadyTime when, std::uint64_t id,
                                                         Fire fire) {
    std::weak_ptr<Mailman> weak = mailman_;
    return ctx_.timer_service->register_timer(when, [weak, id, fire]() -> absl::Status {
      auto m = weak.lock();
      if (!m || m->op == nullptr) return absl::OkStatus();
      return fire(m->op, id);
    });
  }

  static void cancel_timers(Entry& entry) {
    if (entry.timeout_timer) entry.timeout_timer->cancel();
    if (entry.retry_timer) entry.retry_timer->cancel();
    entry.timeout_timer.reset();
    entry.retry_timer.reset();
  }

  absl::Status on_outcome(std::uint64_t id, int attempt, absl::StatusOr<std::vector<Out>> outcome) {
    auto found = index_.find(id);
    // An answer to an attempt the operator gave up on (a retry or the timeout handler took
    // over), or to an input already emitted: dropped.
    if (found == index_.end()) return absl::OkStatus();
    Entry& entry = *found->second;
    if (entry.done || entry.attempt != attempt) return absl::OkStatus();
    const bool retry_wanted =
        outcome.ok() ? retry_.retries_result(*outcome) : retry_.retries_error(outcome.status());
    if (retry_wanted && !entry.timed_out && retry_.can_retry(entry.attempt)) {
      ++entry.attempt;
      retries_.inc_single_writer();
      entry.retry_timer = schedule(
          ctx_.timer_service->now() + retry_.backoff(entry.attempt), id,
          [](AsyncWaitOperator* op, std::uint64_t entry_id) { return op->on_retry(entry_id); });
      return absl::OkStatus();
    }
    if (!outcome.ok()) {
      const absl::Status& error = outcome.status();
      failure_ = absl::Status(
          error.code(),
          fmt::format("async operator '{}' failed an input (after {} call{}{}): {}",
                      ctx_.operator_name, entry.calls, entry.calls == 1 ? "" : "s",
                      entry.timed_out ? " and the operator timeout" : "", error.message()));
      return failure_;
    }
    entry.done = true;
    entry.results = std::move(*outcome);
    cancel_timers(entry);
    return emit_ready();
  }

  absl::Status on_retry(std::uint64_t id) {
    auto found = index_.find(id);
    if (found == index_.end()) return absl::OkStatus();
    Entry& entry = *found->second;
    entry.retry_timer.reset();
    if (entry.done || entry.timed_out) return absl::OkStatus();
    invoke(entry);
    return absl::OkStatus();
  }

  absl::Status on_timeout(std::uint64_t id) {
    auto found = index_.find(id);
    if (found == index_.end()) return absl::OkStatus();
    Entry& entry = *found->second;
    entry.timeout_timer.reset();
    if (entry.done) return absl::OkStatus();
    timeouts_.inc_single_writer();
    entry.timed_out = true;
    if (entry.retry_timer) {
      // Between attempts: nothing is in flight; no further attempt starts.
      entry.retry_timer->cancel();
      entry.retry_timer.reset();
    }
    // The handler's outcome is the outcome: the attempt in flight is abandoned.
    ++entry.attempt;
    fn_->timeout(entry.input->value,
                 ResultFuture<Out>(std::weak_ptr<internal::AsyncResultSink<Out>>(mailman_),
                                   entry.id, entry.attempt));
    return absl::OkStatus();
  }

  // Emits what the ordering allows, from the head of the queue.
  absl::Status emit_ready() {
    if (holding_) return absl::OkStatus();
    auto it = queue_.begin();
    while (it != queue_.end()) {
      if (!it->input) {  // a watermark: only once everything before it left
        if (it != queue_.begin()) break;
        const std::int64_t watermark = it->watermark;
        it = queue_.erase(it);
        GCP_RETURN_IF_ERROR(this->out_->emit_watermark(watermark));
        continue;
      }
      if (!it->done) {
        if (config_.mode == AsyncOutputMode::kOrdered) break;
        ++it;
        continue;
      }
      Entry entry = std::move(*it);
      index_.erase(entry.id);
      it = queue_.erase(it);
      in_flight_->fetch_sub(1, std::memory_order_relaxed);
      for (auto& value : entry.results) {
        GCP_RETURN_IF_ERROR(
            this->forward(StreamRecord<Out>{std::move(value), entry.input->timestamp_ms}));
      }
    }
    return absl::OkStatus();
  }

  std::unique_ptr<AsyncFunction<In, Out>> fn_;
  AsyncWaitConfig config_;
  AsyncRetryStrategy<Out> retry_;
  OperatorContext& ctx_;
  std::shared_ptr<Mailman> mailman_;
  Counter& retries_;
  Counter& timeouts_;
  std::shared_ptr<std::atomic<std::int64_t>> in_flight_ =
      std::make_shared<std::atomic<std::int64_t>>(0);
  Queue queue_;
  absl::flat_hash_map<std::uint64_t, typename Queue::iterator> index_;
  std::vector<StreamRecord<In>> restored_;
  std::uint64_t next_id_ = 0;
  bool opened_ = false;
  bool holding_ = false;  // between prepare_snapshot_pre_barrier and snapshot_state
  absl::Status failure_;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_ASYNC_WAIT_OPERATOR_H_
