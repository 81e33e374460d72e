#ifndef GCPSTREAM_BIGTABLE_CHANGESTREAM_BIGTABLE_CHANGE_STREAM_SOURCE_H_
#define GCPSTREAM_BIGTABLE_CHANGESTREAM_BIGTABLE_CHANGE_STREAM_SOURCE_H_

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gcpstream/api/collector.h"
#include "gcpstream/api/deserialize.h"
#include "gcpstream/api/lineage.h"
#include "gcpstream/api/source.h"
#include "gcpstream/api/source_reader_base.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/bigtable/admin/resource_names.h"
#include "gcpstream/bigtable/changestream/change_stream_element.h"
#include "gcpstream/bigtable/changestream/change_stream_entry_filter.h"
#include "gcpstream/bigtable/changestream/change_stream_enumerator.h"
#include "gcpstream/bigtable/changestream/change_stream_events.h"
#include "gcpstream/bigtable/changestream/change_stream_options.h"
#include "gcpstream/bigtable/changestream/change_stream_split.h"
#include "gcpstream/bigtable/changestream/change_stream_stream_reader.h"
#include "gcpstream/bigtable/client/blocking_stub.h"
#include "gcpstream/connector/client_options.h"
#include "gcpstream/connector/client_options_builder.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/lineage.h"

namespace gcpstream::bigtable {

// Turns one mutation into zero or more records through `out`, synchronously (never keep `out`).
// Emitting nothing skips the mutation (recordsSkipped). A failure fails the job; the partition's
// position does not move past the mutation, so a restore reads it again.
template <typename T>
using ChangeStreamMutationDeserializer =
    std::function<absl::Status(const BigtableChangeStreamMutation& mutation, Collector<T>& out)>;

// The table admin stub a change-stream coordinator reads the retention with.
BigtableAdminStubFactory MakeChangeStreamAdminStubFactory(connector::ClientOptions client);

// Reads a Bigtable table's change stream (ReadChangeStream): unbounded, or bounded by an end
// time.
//
//   auto source = BigtableChangeStreamSource<Change>::builder()
//       .table(connector::TableDestination::of("p", "i", "orders"))
//       .app_profile_id("orders-change-stream")
//       .deserializer([](const BigtableChangeStreamMutation& m, Collector<Change>& out) { ... })
//       .build();
//   env.from_source(*source, WatermarkStrategy<Change>::no_watermarks(), "changes");
//
// Partitions: the coordinator lists the table's partitions and hands them out as splits; a
// split's state is its partition's continuation tokens (or its start time before the first
// one) and the service's estimated low watermark. A CloseStream hands the partition's range
// over to successor partitions with a token per piece: a split releases its successors at once,
// a merge only when every parent's token arrived, so no change is lost or read twice by the
// topology change. Each subtask keeps at most max_concurrent_streams_per_subtask calls open;
// further partitions wait in a checkpointed queue and take turns: while one waits, an open
// call ends at its next heartbeat (every 5 s) and goes to the back of the queue.
//
// Delivery: at least once. A restore resumes every partition at its checkpointed token; the
// mutations between that token and the failure come again. A position that fell out of the
// table's change stream retention fails the restore unless resume_fallback is set. Within a
// partition the service's commit order is kept; partitions have no order between them.
//
// Event time: each record carries its mutation's commit time (ms). The source emits no
// watermark of its own: the service's low watermark is an estimate that a later mutation may
// undercut, so it is kept as checkpoint progress and the partitionLowWatermarkMillis gauge only;
// bring your own WatermarkStrategy over the commit times.
//
// Metrics (each reader; gauges refreshed every 200 ms): changeStreamMutationsRead,
// changeStreamHeartbeatsRead, changeStreamReadsStarted, activeChangeStreamReads,
// queuedChangeStreamPartitions, queuedChangeStreamPartitionLagMillis, missedHeartbeatIntervals,
// changeStreamCloseStreamsRead, changeStreamUserMutationsRead,
// changeStreamGarbageCollectionMutationsRead, changeStreamMutationEntriesFiltered,
// changeStreamRecordsSkippedWithoutChange, partitionLowWatermarkMillis, recordsSkipped; the
// coordinator's are listed at BigtableChangeStreamEnumerator. docs/bigtable.md, "The change stream
// source". Immutable once built; thread-safe.
template <typename T>
class BigtableChangeStreamSource final
    : public Source<T, BigtableChangeStreamSplit, BigtableChangeStreamEnumState>,
      public LineageVertexProvider {
 public:
  class Builder : public connector::ClientOptionsBuilder<Builder> {
   public:
    Builder& table(connector::TableDestination table) {
      table_ = std::move(table);
      return *this;
    }
    // Required: a single-cluster-routing app profile used by every change-stream call.
    Builder& app_profile_id(std::string id) {
      app_profile_ = std::move(id);
      return *this;
    }
    Builder& deserializer(ChangeStreamMutationDeserializer<T> deserializer) {
      deserializer_ = std::move(deserializer);
      return *this;
    }
    Builder& start_position(connector::StartPosition position) {
      options_.start_position = std::move(position);
      return *this;
    }
    Builder& end_time(absl::Time end) {
      options_.end_time = end;
      return *this;
    }
    // Where restored partitions whose position fell out of the retention start over (see
    // BigtableChangeStreamOptions::resume_fallback). Unset: such a restore fails.
    Builder& resume_fallback(connector::StartPosition position) {
      options_.resume_fallback = std::move(position);
      return *this;
    }
    Builder& max_concurrent_streams_per_subtask(int n) {
      options_.max_concurrent_streams_per_subtask = n;
      return *this;
    }
    Builder& filters(ChangeStreamEntryFilterOptions filters) {
      options_.filters = std::move(filters);
      return *this;
    }
    // Everything at once (replaces the four setters above).
    Builder& options(BigtableChangeStreamOptions options) {
      options_ = std::move(options);
      return *this;
    }
    // (service_account_key_file and emulator_endpoint come from ClientOptionsBuilder. The
    // Bigtable emulator cannot serve change streams: emulator_endpoint is for the in-repo fake,
    // bigtable_change_streams_fake.)
    // Tests: the stub every coordinator and reader uses instead of a gRPC channel.
    Builder& stub_factory(BigtableStubFactory stubs) {
      stubs_ = std::move(stubs);
      return *this;
    }
    // Tests: the table admin stub the coordinator reads the retention with.
    Builder& admin_stub_factory(BigtableAdminStubFactory admin) {
      admin_ = std::move(admin);
      return *this;
    }
    // Tests: the coordinator's clock (start positions, the retention check).
    Builder& clock(BigtableChangeStreamEnumerator::Clock clock) {
      clock_ = std::move(clock);
      return *this;
    }
    // Tests: the heartbeat every call asks for (5 s otherwise; not a user option).
    Builder& heartbeat_for_tests(std::chrono::milliseconds heartbeat) {
      heartbeat_ = heartbeat;
      return *this;
    }
    // INVALID_ARGUMENT naming what is missing or out of range.
    absl::StatusOr<std::shared_ptr<BigtableChangeStreamSource>> build() const {
      constexpr char kWho[] = "BigtableChangeStreamSource";
      GCP_RETURN_IF_ERROR(this->builder_error());
      GCP_RETURN_IF_ERROR(ValidateTableDestination(kWho, table_));
      if (app_profile_.empty()) {
        return absl::InvalidArgumentError(
            std::string(kWho) +
            " needs app_profile_id(...): change streams read through a single-cluster-routing "
            "app profile");
      }
      GCP_RETURN_IF_ERROR(ValidateAppProfileId(kWho, app_profile_));
      if (!deserializer_) {
        return absl::InvalidArgumentError(std::string(kWho) + " needs deserializer(...)");
      }
      GCP_RETURN_IF_ERROR(options_.validate());
      GCP_ASSIGN_OR_RETURN(std::shared_ptr<const ChangeStreamEntryFilter> filter,
                           ChangeStreamEntryFilter::Create(options_.filters));
      return std::shared_ptr<BigtableChangeStreamSource>(
          new BigtableChangeStreamSource(*this, std::move(filter)));
    }

   private:
    friend class BigtableChangeStreamSource;
    std::optional<connector::TableDestination> table_;
    std::string app_profile_;
    ChangeStreamMutationDeserializer<T> deserializer_;
    BigtableChangeStreamOptions options_;
    BigtableStubFactory stubs_;
    BigtableAdminStubFactory admin_;
    BigtableChangeStreamEnumerator::Clock clock_;
    std::chrono::milliseconds heartbeat_ = kChangeStreamHeartbeat;
  };

  static Builder builder() { return Builder(); }

  Boundedness boundedness() const override {
    return b_.options_.end_time ? Boundedness::kBounded : Boundedness::kContinuousUnbounded;
  }

  using EnumeratorPtr =
      std::unique_ptr<SplitEnumerator<BigtableChangeStreamSplit, BigtableChangeStreamEnumState>>;
  absl::StatusOr<EnumeratorPtr> create_enumerator(
      SplitEnumeratorContext<BigtableChangeStreamSplit>& context) const override {
    return EnumeratorPtr(std::make_unique<BigtableChangeStreamEnumerator>(
        context, stubs_, admin_, request_, b_.options_, std::nullopt, b_.clock_));
  }
  absl::StatusOr<EnumeratorPtr> restore_enumerator(
      SplitEnumeratorContext<BigtableChangeStreamSplit>& context,
      BigtableChangeStreamEnumState state) const override {
    return EnumeratorPtr(std::make_unique<BigtableChangeStreamEnumerator>(
        context, stubs_, admin_, request_, b_.options_, std::move(state), b_.clock_));
  }
  absl::StatusOr<std::unique_ptr<SourceReader<T, BigtableChangeStreamSplit>>> create_reader(
      SourceReaderContext& context) const override {
    auto liveness = std::make_shared<ChangeStreamStreamReader::Liveness>();
    auto split_reader = std::make_unique<ChangeStreamStreamReader>(
        stubs_, request_, context.metric_group().counter("changeStreamReadsStarted"), liveness);
    auto emitter = std::make_unique<Emitter>(b_.deserializer_, filter_, context);
    Emitter* emitter_view = emitter.get();                   // owned by the reader's base from here
    ChangeStreamStreamReader* streams = split_reader.get();  // likewise
    return std::unique_ptr<SourceReader<T, BigtableChangeStreamSplit>>(std::make_unique<Reader>(
        std::move(split_reader), streams, std::move(emitter), emitter_view, context,
        b_.options_.max_concurrent_streams_per_subtask, std::move(liveness), request_.heartbeat));
  }
  const VersionedSerializer<BigtableChangeStreamSplit>& split_serializer() const override {
    return split_serializer_;
  }
  const VersionedSerializer<BigtableChangeStreamEnumState>& enumerator_state_serializer()
      const override {
    return state_serializer_;
  }

  LineageVertex lineage_vertex() const override {
    LineageVertex v;
    v.role = LineageVertex::Role::kSource;
    v.connector = "bigtable";
    v.bounded = b_.options_.end_time.has_value();
    v.datasets.push_back(connector::BigtableDataset(*b_.table_));
    return v;
  }

 private:
  class Emitter final : public RecordEmitter<ChangeStreamElement, T, BigtableChangeStreamSplit> {
   public:
    Emitter(ChangeStreamMutationDeserializer<T> deserializer,
            std::shared_ptr<const ChangeStreamEntryFilter> filter, SourceReaderContext& context)
        : deserializer_(std::move(deserializer)),
          filter_(std::move(filter)),
          context_(context),
          mutations_(context.metric_group().counter("changeStreamMutationsRead")),
          user_(context.metric_group().counter("changeStreamUserMutationsRead")),
          gc_(context.metric_group().counter("changeStreamGarbageCollectionMutationsRead")),
          heartbeats_(context.metric_group().counter("changeStreamHeartbeatsRead")),
          closes_(context.metric_group().counter("changeStreamCloseStreamsRead")),
          filtered_(context.metric_group().counter("changeStreamMutationEntriesFiltered")),
          skipped_without_change_(
              context.metric_group().counter("changeStreamRecordsSkippedWithoutChange")),
          skipped_(context.metric_group().counter(metric_names::kRecordsSkipped)) {}

    absl::Status emit_record(ChangeStreamElement element, SourceOutput<T>& output,
                             BigtableChangeStreamSplit& split) override {
      switch (element.kind) {
        case ChangeStreamElement::Kind::kMutation:
          GCP_RETURN_IF_ERROR(emit_mutation(element.mutation, output, split));
          advance(split, std::move(element.tokens), element.low_watermark, /*always=*/false);
          break;
        case ChangeStreamElement::Kind::kHeartbeat:
          heartbeats_.inc_single_writer();
          advance(split, std::move(element.tokens), element.low_watermark, /*always=*/true);
          break;
        case ChangeStreamElement::Kind::kClose: {
          closes_.inc_single_writer();
          const absl::StatusCode code = element.close_status.code();
          if (code != absl::StatusCode::kOk && code != absl::StatusCode::kOutOfRange) {
            return absl::Status(
                code,
                "BigtableChangeStreamSource: partition " + FormatRowRange(split.partition) +
                    " was closed by the service: " + std::string(element.close_status.message()));
          }
          split.closed = true;
          reported_.erase(split.id);
          auto event = std::make_shared<BigtableChangeStreamClosed>();
          event->split_id = split.id;
          event->close.tokens = std::move(element.tokens);
          event->close.new_partitions = std::move(element.new_partitions);
          event->close.low_watermark = split.low_watermark;
          context_.send_source_event_to_coordinator(std::move(event));
          break;
        }
      }
      low_watermarks_[split.id] = split.low_watermark;
      return absl::OkStatus();
    }

    void forget(const std::string& id) {
      reported_.erase(id);
      low_watermarks_.erase(id);
    }
    const std::map<std::string, absl::Time>& low_watermarks() const { return low_watermarks_; }

   private:
    absl::Status emit_mutation(std::optional<BigtableChangeStreamMutation>& mutation,
                               SourceOutput<T>& output, const BigtableChangeStreamSplit& split) {
      mutations_.inc_single_writer();
      if (mutation->type() == ChangeStreamMutationType::kUser) {
        user_.inc_single_writer();
      } else {
        gc_.inc_single_writer();
      }
      const ChangeStreamEntryFilter::Outcome outcome = filter_->apply(mutation);
      filtered_.inc_single_writer(outcome.entries_removed);
      if (outcome.skip) {
        skipped_without_change_.inc_single_writer();
        return absl::OkStatus();
      }
      GCP_RETURN_IF_ERROR(RunDeserializer(
          records_, [&](Collector<T>& out) { return deserializer_(*mutation, out); },
          [&] {
            return "BigtableChangeStreamSource: the deserializer failed on a mutation committed "
                   "at " +
                   absl::FormatTime(absl::RFC3339_full, mutation->commit_timestamp(),
                                    absl::UTCTimeZone()) +
                   " in partition " + FormatRowRange(split.partition);
          }));
      if (records_.empty()) skipped_.inc_single_writer();
      const std::int64_t ts = absl::ToUnixMillis(mutation->commit_timestamp());
      for (T& r : records_) GCP_RETURN_IF_ERROR(output.collect(std::move(r), ts));
      return absl::OkStatus();
    }

    // Moves the split's position and tells the coordinator (heartbeats at once, mutations at
    // most every 500 ms per partition).
    void advance(BigtableChangeStreamSplit& split, std::vector<PartitionToken> tokens,
                 absl::Time low_watermark, bool always) {
      if (!tokens.empty()) split.tokens = std::move(tokens);
      split.low_watermark = std::max(split.low_watermark, low_watermark);
      const auto now = std::chrono::steady_clock::now();
      auto& last = reported_[split.id];
      if (!always && now - last < std::chrono::milliseconds(500)) return;
      last = now;
      auto event = std::make_shared<BigtableChangeStreamProgress>();
      event->split_id = split.id;
      event->tokens = split.tokens;
      event->low_watermark = split.low_watermark;
      context_.send_source_event_to_coordinator(std::move(event));
    }

    ChangeStreamMutationDeserializer<T> deserializer_;
    std::shared_ptr<const ChangeStreamEntryFilter> filter_;
    SourceReaderContext& context_;
    std::vector<T> records_;
    std::map<std::string, std::chrono::steady_clock::time_point> reported_;
    std::map<std::string, absl::Time> low_watermarks_;
    Counter& mutations_;
    Counter& user_;
    Counter& gc_;
    Counter& heartbeats_;
    Counter& closes_;
    Counter& filtered_;
    Counter& skipped_without_change_;
    Counter& skipped_;
  };

  using ReaderBase = SourceReaderBase<ChangeStreamElement, T, BigtableChangeStreamSplit,
                                      BigtableChangeStreamSplit>;

  // Holds restored splits until the coordinator's release, keeps at most `max_streams` splits
  // in the fetcher and queues the rest (FIFO, checkpointed), and lets open streams rotate at a
  // heartbeat while partitions wait. The coordinator assigns without being asked.
  class Reader final : public ReaderBase {
   public:
    Reader(std::unique_ptr<ChangeStreamStreamReader> split_reader,
           ChangeStreamStreamReader* streams, std::unique_ptr<Emitter> emitter,
           Emitter* emitter_view, SourceReaderContext& context, int max_streams,
           std::shared_ptr<ChangeStreamStreamReader::Liveness> liveness,
           std::chrono::milliseconds heartbeat)
        : ReaderBase(std::move(split_reader), std::move(emitter), context,
                     /*per_split_outputs=*/false),
          streams_(streams),
          emitter_(emitter_view),
          max_streams_(max_streams),
          slice_(2 * heartbeat) {
      auto g = gauges_;
      MetricGroup& m = context.metric_group();
      m.gauge("activeChangeStreamReads",
              [liveness] { return static_cast<double>(liveness->open_calls.load()); });
      m.gauge("queuedChangeStreamPartitions",
              [g] { return static_cast<double>(g->queued.load()); });
      m.gauge("queuedChangeStreamPartitionLagMillis", [g] {
        const std::int64_t oldest = g->oldest_queued_ms.load();
        if (oldest <= 0) return 0.0;
        return static_cast<double>(absl::ToUnixMillis(absl::Now()) - oldest);
      });
      m.gauge("partitionLowWatermarkMillis",
              [g] { return static_cast<double>(g->low_watermark_ms.load()); });
      m.gauge("missedHeartbeatIntervals", [liveness] {
        return static_cast<double>(liveness->missed_heartbeat_intervals.load());
      });
    }

    ~Reader() override {
      if (reservation_timer_) reservation_timer_->cancel();
    }

    absl::Status start() override {
      GCP_RETURN_IF_ERROR(ReaderBase::start());
      auto hello = std::make_shared<BigtableChangeStreamHello>();
      hello->held = held_;
      this->context().send_source_event_to_coordinator(std::move(hello));
      return absl::OkStatus();
    }

    absl::Status add_splits(std::vector<BigtableChangeStreamSplit> splits) override {
      if (!released_) {
        for (auto& s : splits) held_.push_back(std::move(s));
        return absl::OkStatus();
      }
      for (auto& split : splits) {
        if (running_.count(split.id) > 0 || queued(split.id)) continue;
        if (reserved_ > 0 && std::chrono::steady_clock::now() < reserved_until_) {
          // The successor of a partition that just closed continues its turn in its slot.
          --reserved_;
          const auto turn = reserved_turns_.front();
          reserved_turns_.pop_front();
          GCP_RETURN_IF_ERROR(run(std::move(split), turn));
        } else {
          fifo_.push_back(std::move(split));
        }
      }
      return admit();
    }

    absl::Status handle_source_event(std::shared_ptr<const SourceEvent> event) override {
      auto* release = dynamic_cast<const BigtableChangeStreamRelease*>(event.get());
      if (release == nullptr || released_) return absl::OkStatus();
      released_ = true;
      for (auto& s : held_) {
        if (release->drop.count(s.id) == 0) fifo_.push_back(std::move(s));
      }
      held_.clear();
      return admit();
    }

    absl::StatusOr<InputStatus> poll_next(ReaderOutput<T>& output) override {
      const auto now = std::chrono::steady_clock::now();
      if (now - gauges_refreshed_ >= std::chrono::milliseconds(200)) {
        gauges_refreshed_ = now;
        update_gauges();
      }
      return ReaderBase::poll_next(output);
    }

    absl::StatusOr<std::vector<BigtableChangeStreamSplit>> snapshot_state(
        std::int64_t checkpoint_id) override {
      GCP_ASSIGN_OR_RETURN(std::vector<BigtableChangeStreamSplit> running,
                           ReaderBase::snapshot_state(checkpoint_id));
      std::vector<BigtableChangeStreamSplit> splits;
      // A closed partition is the coordinator's business from its CloseStream on.
      for (auto& s : running) {
        if (!s.closed) splits.push_back(std::move(s));
      }
      for (const auto& s : fifo_) splits.push_back(s);
      for (const auto& s : held_) splits.push_back(s);
      return splits;
    }

   protected:
    BigtableChangeStreamSplit initialized_state(const BigtableChangeStreamSplit& split) override {
      return split;
    }
    BigtableChangeStreamSplit to_split_type(const std::string&,
                                            const BigtableChangeStreamSplit& state) override {
      return state;
    }
    absl::Status on_split_finished(
        const std::map<std::string, BigtableChangeStreamSplit>& finished) override {
      const auto now = std::chrono::steady_clock::now();
      for (const auto& [id, split] : finished) {
        running_.erase(id);
        started_at_.erase(id);
        const auto turn = turn_started_[id];
        turn_started_.erase(id);
        --active_;
        if (split.closed) {
          emitter_->forget(id);
          // Keep the slot a moment for the successor the coordinator is about to send, so a
          // partition is followed through a topology change — unless its turn is over and
          // others wait (a partition changing faster than turns rotate must not keep the slot).
          // A timer frees it if none comes (a merge's successor goes to its last parent's
          // reader).
          if (fifo_.empty() || now - turn < slice_) {
            ++reserved_;
            reserved_turns_.push_back(turn);
            reserved_until_ = now + std::chrono::milliseconds(200);
            auto& timers = this->context().processing_time_service();
            // One timer at a time: the deadline just moved to this one's.
            if (reservation_timer_) reservation_timer_->cancel();
            reservation_timer_ =
                timers.register_timer(timers.now() + std::chrono::milliseconds(200),
                                      [this]() -> absl::Status { return admit(); });
          }
        } else {
          fifo_.push_back(split);  // rotated out at a heartbeat: back in line
        }
      }
      return admit();
    }

   private:
    // Hands `split` to the fetcher; its turn at the slot began at `turn`.
    absl::Status run(BigtableChangeStreamSplit split, std::chrono::steady_clock::time_point turn) {
      running_.insert(split.id);
      started_at_[split.id] = split.low_watermark;
      turn_started_[split.id] = turn;
      ++active_;
      std::vector<BigtableChangeStreamSplit> one;
      one.push_back(std::move(split));
      return ReaderBase::add_splits(std::move(one));
    }

    absl::Status admit() {
      const auto now = std::chrono::steady_clock::now();
      if (reserved_ > 0 && now >= reserved_until_) {
        reserved_ = 0;
        reserved_turns_.clear();
      }
      while (active_ + reserved_ < max_streams_ && !fifo_.empty()) {
        BigtableChangeStreamSplit next = std::move(fifo_.front());
        fifo_.pop_front();
        GCP_RETURN_IF_ERROR(run(std::move(next), now));
      }
      // Each waiting partition may take one open stream's place at its next heartbeat.
      streams_->request_rotation(static_cast<int>(fifo_.size()));
      update_gauges();
      return absl::OkStatus();
    }
    bool queued(const std::string& id) const {
      return std::any_of(fifo_.begin(), fifo_.end(), [&](const auto& s) { return s.id == id; });
    }
    void update_gauges() {
      gauges_->queued.store(static_cast<int>(fifo_.size()));
      std::int64_t oldest = 0;
      std::int64_t low = 0;
      auto consider = [&](std::int64_t ms, std::int64_t& into) {
        if (into == 0 || ms < into) into = ms;
      };
      for (const auto& s : fifo_) {
        consider(absl::ToUnixMillis(s.low_watermark), oldest);
        consider(absl::ToUnixMillis(s.low_watermark), low);
      }
      // A running split that emitted nothing yet is at its starting position.
      for (const auto& id : running_) {
        auto it = emitter_->low_watermarks().find(id);
        if (it != emitter_->low_watermarks().end()) {
          consider(absl::ToUnixMillis(it->second), low);
        } else if (auto start = started_at_.find(id); start != started_at_.end()) {
          consider(absl::ToUnixMillis(start->second), low);
        }
      }
      gauges_->oldest_queued_ms.store(oldest);
      gauges_->low_watermark_ms.store(low);
    }

    ChangeStreamStreamReader* streams_;
    Emitter* emitter_;
    const int max_streams_;
    std::set<std::string> running_;                 // split ids handed to the fetcher
    std::map<std::string, absl::Time> started_at_;  // their low watermark when admitted
    std::chrono::steady_clock::time_point gauges_refreshed_;
    bool released_ = false;
    std::vector<BigtableChangeStreamSplit> held_;
    std::deque<BigtableChangeStreamSplit> fifo_;
    int active_ = 0;
    int reserved_ = 0;  // slots kept for successors about to arrive
    std::chrono::steady_clock::time_point reserved_until_;
    std::deque<std::chrono::steady_clock::time_point> reserved_turns_;  // of the closed parents
    std::shared_ptr<ProcessingTimeService::Timer> reservation_timer_;
    std::map<std::string, std::chrono::steady_clock::time_point> turn_started_;  // running
    const std::chrono::milliseconds slice_;  // a turn: two heartbeat intervals
    struct Gauges {
      std::atomic<int> queued{0};
      std::atomic<std::int64_t> oldest_queued_ms{0}, low_watermark_ms{0};
    };
    std::shared_ptr<Gauges> gauges_ = std::make_shared<Gauges>();
  };

  BigtableChangeStreamSource(Builder b, std::shared_ptr<const ChangeStreamEntryFilter> filter)
      : b_(std::move(b)), filter_(std::move(filter)) {
    stubs_ = b_.stubs_ ? b_.stubs_ : MakeBlockingBigtableStubFactory(b_.client());
    admin_ = b_.admin_ ? b_.admin_ : MakeChangeStreamAdminStubFactory(b_.client());
    request_.table_name = b_.table_->resource_name();
    request_.app_profile_id = b_.app_profile_;
    request_.end_time = b_.options_.end_time;
    request_.heartbeat = b_.heartbeat_;
  }

  Builder b_;
  std::shared_ptr<const ChangeStreamEntryFilter> filter_;
  BigtableStubFactory stubs_;
  BigtableAdminStubFactory admin_;
  ChangeStreamRequestBase request_;
  BigtableChangeStreamSplitSerializer split_serializer_;
  BigtableChangeStreamEnumStateSerializer state_serializer_;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_CHANGESTREAM_BIGTABLE_CHANGE_STREAM_SOURCE_H_
