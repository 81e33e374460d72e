#ifndef GCPSTREAM_SPANNER_CHANGESTREAM_SPANNER_CHANGE_STREAM_SOURCE_H_
#define GCPSTREAM_SPANNER_CHANGESTREAM_SPANNER_CHANGE_STREAM_SOURCE_H_

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
#include "gcpstream/connector/client_options.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/lineage.h"
#include "gcpstream/spanner/changestream/change_stream_enumerator.h"
#include "gcpstream/spanner/changestream/change_stream_events.h"
#include "gcpstream/spanner/changestream/change_stream_filter.h"
#include "gcpstream/spanner/changestream/change_stream_options.h"
#include "gcpstream/spanner/changestream/change_stream_query_reader.h"
#include "gcpstream/spanner/changestream/change_stream_record.h"
#include "gcpstream/spanner/changestream/change_stream_split.h"
#include "gcpstream/spanner/source/spanner_source_builder.h"

namespace gcpstream::spanner {

// Turns one data-change record into zero or more records through `out`, synchronously (never
// keep `out`). Emitting nothing skips the record (recordsSkipped). A failure fails the job and
// the partition's progress does not move, so a restore reads the record again.
template <typename T>
using DataChangeRecordDeserializer =
    std::function<absl::Status(const DataChangeRecord& record, Collector<T>& out)>;

// Reads a Spanner change stream, for ever (an unbounded source), in either dialect.
//
//   auto source = SpannerChangeStreamSource<Change>::builder()
//       .database(connector::DatabaseDestination::of("p", "i", "orders"))
//       .change_stream_name("order_changes")
//       .deserializer([](const DataChangeRecord& r, Collector<Change>& out) { ... })
//       .build();
//   env.from_source(*source, WatermarkStrategy<Change>::no_watermarks(), "changes");
//
// Partitions: the coordinator starts the initial query (null partition token) at the start
// position and schedules each child partition once every parent it names has finished; the
// partition lineage lives in the coordinator's checkpoint, no metadata table is written.
// Each subtask runs up to max_concurrent_queries_per_subtask partition queries at once and
// keeps further splits in a checkpointed FIFO.
//
// Delivery: at least once. A checkpoint keeps each partition at the greatest commit or
// heartbeat timestamp consumed, and a restore reads from that timestamp inclusively (several
// records can share a commit timestamp): records at the boundary may come again, none is lost.
// Deduplicate downstream on (server_transaction_id, record_sequence, table, keys) if needed.
//
// Event time: each output record carries its commit timestamp (ms). The watermark is the
// coordinator's minimum position over every unfinished partition, less 1 ms, sent to every
// reader and never moving back; heartbeats advance it on quiet partitions. Use
// WatermarkStrategy::no_watermarks() to keep it.
//
// Metrics (each reader): recordsSkipped, changeStreamColumnOccurrencesFiltered,
// changeStreamRecordsFiltered, changeStreamQueryRestarts, activeChangeStreamQueries,
// queuedChangeStreamPartitions, queuedPartitionLagMs; the coordinator's are listed at
// ChangeStreamEnumerator. docs/spanner.md, "The change stream source". Immutable once built;
// thread-safe.
template <typename T>
class SpannerChangeStreamSource final
    : public Source<T, ChangeStreamPartitionSplit, ChangeStreamEnumState>,
      public LineageVertexProvider {
 public:
  class Builder : public SpannerSourceBuilderBase<Builder> {
   public:
    Builder& change_stream_name(std::string name) {
      stream_ = std::move(name);
      return *this;
    }
    Builder& deserializer(DataChangeRecordDeserializer<T> deserializer) {
      deserializer_ = std::move(deserializer);
      return *this;
    }
    Builder& start_position(ChangeStreamStartPosition position) {
      options_.start_position = std::move(position);
      return *this;
    }
    // Everything else (fallbacks, heartbeat, priority, capacity, filters); replaces the start
    // position too.
    Builder& options(SpannerChangeStreamOptions options) {
      options_ = std::move(options);
      return *this;
    }
    // Tests: the coordinator's clock.
    Builder& clock(ChangeStreamEnumerator::Clock clock) {
      clock_ = std::move(clock);
      return *this;
    }
    // INVALID_ARGUMENT naming what is missing or out of range.
    absl::StatusOr<std::shared_ptr<SpannerChangeStreamSource>> build() const {
      GCP_RETURN_IF_ERROR(this->validate_client("SpannerChangeStreamSource"));
      if (stream_.empty()) {
        return absl::InvalidArgumentError(
            "SpannerChangeStreamSource needs change_stream_name(...)");
      }
      GCP_RETURN_IF_ERROR(ValidateChangeStreamName(stream_));
      if (!deserializer_) {
        return absl::InvalidArgumentError("SpannerChangeStreamSource needs deserializer(...)");
      }
      GCP_RETURN_IF_ERROR(options_.validate());
      GCP_ASSIGN_OR_RETURN(std::shared_ptr<const ChangeStreamFilter> filter,
                           ChangeStreamFilter::Create(options_.filters));
      return std::shared_ptr<SpannerChangeStreamSource>(
          new SpannerChangeStreamSource(*this, std::move(filter)));
    }

   private:
    friend class SpannerChangeStreamSource;
    std::string stream_;
    DataChangeRecordDeserializer<T> deserializer_;
    SpannerChangeStreamOptions options_;
    ChangeStreamEnumerator::Clock clock_;
  };

  static Builder builder() { return Builder(); }

  Boundedness boundedness() const override { return Boundedness::kContinuousUnbounded; }

  using EnumeratorPtr =
      std::unique_ptr<SplitEnumerator<ChangeStreamPartitionSplit, ChangeStreamEnumState>>;
  absl::StatusOr<EnumeratorPtr> create_enumerator(
      SplitEnumeratorContext<ChangeStreamPartitionSplit>& context) const override {
    return EnumeratorPtr(std::make_unique<ChangeStreamEnumerator>(
        context, client_factory(), b_.stream_, b_.options_, std::nullopt, b_.clock_));
  }
  absl::StatusOr<EnumeratorPtr> restore_enumerator(
      SplitEnumeratorContext<ChangeStreamPartitionSplit>& context,
      ChangeStreamEnumState state) const override {
    return EnumeratorPtr(std::make_unique<ChangeStreamEnumerator>(
        context, client_factory(), b_.stream_, b_.options_, std::move(state), b_.clock_));
  }
  absl::StatusOr<std::unique_ptr<SourceReader<T, ChangeStreamPartitionSplit>>> create_reader(
      SourceReaderContext& context) const override {
    GCP_ASSIGN_OR_RETURN(std::shared_ptr<SpannerReadClient> client, client_factory()());
    auto dialect = std::make_shared<std::atomic<int>>(static_cast<int>(Dialect::kGoogleSql));
    auto split_reader = std::make_unique<ChangeStreamQueryReader>(
        std::move(client), b_.stream_, b_.options_, dialect,
        context.metric_group().counter("changeStreamQueryRestarts"));
    auto emitter = std::make_unique<Emitter>(b_.deserializer_, filter_, context);
    Emitter* emitter_view = emitter.get();  // owned by the reader's base from here on
    return std::unique_ptr<SourceReader<T, ChangeStreamPartitionSplit>>(std::make_unique<Reader>(
        std::move(split_reader), std::move(emitter), emitter_view, context,
        b_.options_.max_concurrent_queries_per_subtask, std::move(dialect)));
  }
  const VersionedSerializer<ChangeStreamPartitionSplit>& split_serializer() const override {
    return split_serializer_;
  }
  const VersionedSerializer<ChangeStreamEnumState>& enumerator_state_serializer() const override {
    return state_serializer_;
  }

  LineageVertex lineage_vertex() const override {
    LineageVertex v;
    v.role = LineageVertex::Role::kSource;
    v.connector = "spanner";
    v.bounded = false;
    v.datasets.push_back(connector::SpannerChangeStreamDataset(*b_.database_, b_.stream_));
    return v;
  }

 private:
  class Emitter final : public RecordEmitter<ChangeStreamRecord, T, ChangeStreamPartitionSplit> {
   public:
    Emitter(DataChangeRecordDeserializer<T> deserializer,
            std::shared_ptr<const ChangeStreamFilter> filter, SourceReaderContext& context)
        : deserializer_(std::move(deserializer)),
          filter_(std::move(filter)),
          context_(context),
          skipped_(context.metric_group().counter(metric_names::kRecordsSkipped)),
          filtered_(context.metric_group().counter("changeStreamRecordsFiltered")),
          columns_filtered_(
              context.metric_group().counter("changeStreamColumnOccurrencesFiltered")) {}

    absl::Status emit_record(ChangeStreamRecord record, SourceOutput<T>& output,
                             ChangeStreamPartitionSplit& split) override {
      const std::string id = split.split_id();
      if (auto* data = std::get_if<DataChangeRecord>(&record)) {
        GCP_RETURN_IF_ERROR(emit_data(*data, output, id));
        advance(split, data->commit_timestamp, /*always=*/false);
      } else if (auto* beat = std::get_if<HeartbeatRecord>(&record)) {
        advance(split, beat->timestamp, /*always=*/true);
      } else if (auto* children = std::get_if<ChildPartitionsRecord>(&record)) {
        // The position stays: a restore from here reads this record again.
        auto event = std::make_shared<ChangeStreamChildrenReported>();
        event->split_id = id;
        event->record = *children;
        context_.send_source_event_to_coordinator(std::move(event));
      }
      return absl::OkStatus();
    }

    // A finished split's progress bookkeeping goes (one entry per partition ever read
    // otherwise).
    void forget(const std::string& split_id) { reported_.erase(split_id); }

   private:
    absl::Status emit_data(DataChangeRecord& data, SourceOutput<T>& output, const std::string& id) {
      if (filter_->active()) {
        GCP_ASSIGN_OR_RETURN(ChangeStreamFilter::Outcome outcome, filter_->apply(data));
        if (outcome.kind != ChangeStreamFilter::Outcome::kKeep) {
          filtered_.inc_single_writer();
          return absl::OkStatus();
        }
        columns_filtered_.inc_single_writer(outcome.columns_removed);
      }
      GCP_RETURN_IF_ERROR(RunDeserializer(
          records_, [&](Collector<T>& out) { return deserializer_(data, out); },
          [&] {
            return absl::StrCat(
                "SpannerChangeStreamSource: the deserializer failed on a record of table ",
                data.table_name, " at ", FormatTimestamp(data.commit_timestamp), " (partition ", id,
                ")");
          }));
      if (records_.empty()) skipped_.inc_single_writer();
      const std::int64_t ts = absl::ToUnixMillis(data.commit_timestamp);
      for (T& r : records_) GCP_RETURN_IF_ERROR(output.collect(std::move(r), ts));
      return absl::OkStatus();
    }

    // Moves the split's position and tells the coordinator (heartbeats at once, records at
    // most every 500 ms per partition).
    void advance(ChangeStreamPartitionSplit& split, absl::Time to, bool always) {
      if (to > split.position) split.position = to;
      const auto now = std::chrono::steady_clock::now();
      auto& last = reported_[split.split_id()];
      if (!always && now - last < std::chrono::milliseconds(500)) return;
      last = now;
      auto event = std::make_shared<ChangeStreamProgress>();
      event->split_id = split.split_id();
      event->position = split.position;
      context_.send_source_event_to_coordinator(std::move(event));
    }

    DataChangeRecordDeserializer<T> deserializer_;
    std::shared_ptr<const ChangeStreamFilter> filter_;
    SourceReaderContext& context_;
    std::vector<T> records_;
    std::map<std::string, std::chrono::steady_clock::time_point> reported_;
    Counter& skipped_;
    Counter& filtered_;
    Counter& columns_filtered_;
  };

  using ReaderBase = SourceReaderBase<ChangeStreamRecord, T, ChangeStreamPartitionSplit,
                                      ChangeStreamPartitionSplit>;

  // Holds restored splits until the coordinator's release, runs at most `max_queries` splits in
  // the fetcher and queues the rest (FIFO, checkpointed), asks for one split per free slot, and
  // emits the coordinator's watermark.
  class Reader final : public ReaderBase {
   public:
    Reader(std::unique_ptr<ChangeStreamQueryReader> split_reader, std::unique_ptr<Emitter> emitter,
           Emitter* emitter_view, SourceReaderContext& context, int max_queries,
           std::shared_ptr<std::atomic<int>> dialect)
        : ReaderBase(std::move(split_reader), std::move(emitter), context,
                     /*per_split_outputs=*/false),
          emitter_(emitter_view),
          max_queries_(max_queries),
          dialect_(std::move(dialect)) {
      auto g = gauges_;
      MetricGroup& m = context.metric_group();
      m.gauge("activeChangeStreamQueries", [g] { return static_cast<double>(g->active.load()); });
      m.gauge("queuedChangeStreamPartitions",
              [g] { return static_cast<double>(g->queued.load()); });
      m.gauge("queuedPartitionLagMs", [g] {
        const std::int64_t oldest = g->oldest_queued_ms.load();
        if (oldest <= 0) return 0.0;
        return static_cast<double>(absl::ToUnixMillis(absl::Now()) - oldest);
      });
    }

    absl::Status start() override {
      GCP_RETURN_IF_ERROR(ReaderBase::start());
      auto hello = std::make_shared<ChangeStreamReaderHello>();
      hello->held = held_;
      this->context().send_source_event_to_coordinator(std::move(hello));
      return absl::OkStatus();
    }

    absl::Status add_splits(std::vector<ChangeStreamPartitionSplit> splits) override {
      if (!released_) {
        for (auto& s : splits) held_.push_back(std::move(s));
        return absl::OkStatus();
      }
      requested_ = std::max(0, requested_ - static_cast<int>(splits.size()));
      for (auto& s : splits) {
        if (holds(s.split_id())) continue;  // already running or queued here
        fifo_.push_back(std::move(s));
      }
      GCP_RETURN_IF_ERROR(admit());
      request_more();
      return absl::OkStatus();
    }

    absl::Status handle_source_event(std::shared_ptr<const SourceEvent> event) override {
      if (auto* release = dynamic_cast<const ChangeStreamRelease*>(event.get())) {
        if (released_) return absl::OkStatus();
        released_ = true;
        dialect_->store(static_cast<int>(release->dialect));
        if (release->discard_held) {
          spdlog::warn(
              "SpannerChangeStreamSource: subtask {} drops its {} restored partitions "
              "(resume_fallback)",
              this->context().subtask_index(), held_.size());
        } else {
          for (auto& s : held_) fifo_.push_back(std::move(s));
        }
        held_.clear();
        GCP_RETURN_IF_ERROR(admit());
        request_more();
      } else if (auto* wm = dynamic_cast<const ChangeStreamWatermark*>(event.get())) {
        if (!pending_watermark_ || wm->watermark_ms > *pending_watermark_) {
          pending_watermark_ = wm->watermark_ms;
        }
        this->context().signal_available();
      }
      return absl::OkStatus();
    }

    absl::StatusOr<InputStatus> poll_next(ReaderOutput<T>& output) override {
      if (pending_watermark_) {
        output.emit_watermark(*pending_watermark_);
        pending_watermark_.reset();
      }
      return ReaderBase::poll_next(output);
    }

    absl::StatusOr<std::vector<ChangeStreamPartitionSplit>> snapshot_state(
        std::int64_t checkpoint_id) override {
      GCP_ASSIGN_OR_RETURN(std::vector<ChangeStreamPartitionSplit> splits,
                           ReaderBase::snapshot_state(checkpoint_id));
      for (const auto& s : fifo_) splits.push_back(s);
      for (const auto& s : held_) splits.push_back(s);
      return splits;
    }

   protected:
    ChangeStreamPartitionSplit initialized_state(const ChangeStreamPartitionSplit& split) override {
      return split;
    }
    ChangeStreamPartitionSplit to_split_type(const std::string&,
                                             const ChangeStreamPartitionSplit& state) override {
      return state;
    }
    absl::Status on_split_finished(
        const std::map<std::string, ChangeStreamPartitionSplit>& finished) override {
      for (const auto& [id, split] : finished) {
        emitter_->forget(id);
        running_.erase(id);
        auto event = std::make_shared<ChangeStreamPartitionFinished>();
        event->split_id = id;
        this->context().send_source_event_to_coordinator(std::move(event));
      }
      active_ -= static_cast<int>(finished.size());
      GCP_RETURN_IF_ERROR(admit());
      request_more();
      return absl::OkStatus();
    }

   private:
    absl::Status admit() {
      while (active_ < max_queries_ && !fifo_.empty()) {
        std::vector<ChangeStreamPartitionSplit> one;
        running_.insert(fifo_.front().split_id());
        one.push_back(std::move(fifo_.front()));
        fifo_.pop_front();
        ++active_;
        GCP_RETURN_IF_ERROR(ReaderBase::add_splits(std::move(one)));
      }
      update_gauges();
      return absl::OkStatus();
    }
    bool holds(const std::string& id) const {
      if (running_.count(id) > 0) return true;
      for (const auto& s : fifo_) {
        if (s.split_id() == id) return true;
      }
      return false;
    }
    void request_more() {
      const int free = max_queries_ - active_ - static_cast<int>(fifo_.size()) - requested_;
      for (int i = 0; i < free; ++i) {
        ++requested_;
        this->context().send_split_request();
      }
    }
    void update_gauges() {
      gauges_->active.store(active_);
      gauges_->queued.store(static_cast<int>(fifo_.size()));
      std::int64_t oldest = 0;
      for (const auto& s : fifo_) {
        const std::int64_t ms = absl::ToUnixMillis(s.position);
        if (oldest == 0 || ms < oldest) oldest = ms;
      }
      gauges_->oldest_queued_ms.store(oldest);
    }

    Emitter* emitter_;
    const int max_queries_;
    std::shared_ptr<std::atomic<int>> dialect_;
    std::set<std::string> running_;  // split ids handed to the fetcher
    bool released_ = false;
    std::vector<ChangeStreamPartitionSplit> held_;
    std::deque<ChangeStreamPartitionSplit> fifo_;
    int active_ = 0;
    int requested_ = 0;
    std::optional<std::int64_t> pending_watermark_;
    struct Gauges {
      std::atomic<int> active{0}, queued{0};
      std::atomic<std::int64_t> oldest_queued_ms{0};
    };
    std::shared_ptr<Gauges> gauges_ = std::make_shared<Gauges>();
  };

  SpannerChangeStreamSource(Builder b, std::shared_ptr<const ChangeStreamFilter> filter)
      : b_(std::move(b)), filter_(std::move(filter)) {}

  // A partition query sends a heartbeat every heartbeat interval: one silent for several of
  // them (at least 30 s) is stalled, and is cut and resumed instead of waiting forever.
  SpannerReadClientFactory client_factory() const {
    return b_.client_factory(
        std::max(std::chrono::milliseconds(30'000), 4 * b_.options_.heartbeat_interval));
  }

  Builder b_;
  std::shared_ptr<const ChangeStreamFilter> filter_;
  ChangeStreamSplitSerializer split_serializer_;
  ChangeStreamEnumStateSerializer state_serializer_;
};

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_CHANGESTREAM_SPANNER_CHANGE_STREAM_SOURCE_H_
