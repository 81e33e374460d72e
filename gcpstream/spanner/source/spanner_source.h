#ifndef GCPSTREAM_SPANNER_SOURCE_SPANNER_SOURCE_H_
#define GCPSTREAM_SPANNER_SOURCE_SPANNER_SOURCE_H_

#include <spdlog/spdlog.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
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
#include "gcpstream/spanner/client/make_stub.h"
#include "gcpstream/spanner/client/row.h"
#include "gcpstream/spanner/source/spanner_partition_reader.h"
#include "gcpstream/spanner/source/spanner_partition_split.h"
#include "gcpstream/spanner/source/spanner_read_operation.h"
#include "gcpstream/spanner/source/spanner_source_builder.h"
#include "gcpstream/spanner/source/spanner_split_enumerator.h"

namespace gcpstream::spanner {

// Turns one row into zero or more records, through `out`, synchronously (never keep `out`).
// Emitting nothing skips the row (counted by recordsSkipped); a row that cannot be read is an
// error to return, which fails the job — never a silent skip.
template <typename T>
using SpannerRowDeserializer = std::function<absl::Status(const Row& row, Collector<T>& out)>;

// Reads a Spanner database at one snapshot and finishes (a bounded source, usable in a
// streaming job). The enumerator opens one batch read-only transaction, Spanner partitions the
// read in it, and each partition is a split every subtask rejoins the transaction to stream, so
// every row comes from the same snapshot.
//
//   auto source = SpannerSource<Flight>::builder()
//       .database(connector::DatabaseDestination::of("p", "i", "flights"))
//       .read_operation(SpannerReadOperation::query("SELECT Id, Origin FROM Flights"))
//       .deserializer([](const Row& row, Collector<Flight>& out) -> absl::Status {
//         GCP_ASSIGN_OR_RETURN(Value id, row.get("Id"));
//         ...
//         out.collect(std::move(flight));
//         return absl::OkStatus();
//       })
//       .build();
//   env.from_source(*source, WatermarkStrategy<Flight>::no_watermarks(), "flights");
//
// Delivery: at least once, with a duplicate window of one partition — a restore reads each
// partition a reader still held again from its start, in the same transaction (counted by
// partitionsReread). The snapshot lives only as long as the database's
// version_retention_period (1 h by default); a restore past it fails with an error naming both.
// Metrics: rowsRead, recordsSkipped, partitionsFinished, partitionsReread on each reader;
// partitionsPlanned, splitsAssigned, splitsReturned on the enumerator. docs/spanner.md, "The
// snapshot source". Immutable once built; thread-safe.
template <typename T>
class SpannerSource final : public Source<T, SpannerPartitionSplit, SpannerSourceEnumState>,
                            public LineageVertexProvider {
 public:
  class Builder : public SpannerSourceBuilderBase<Builder> {
   public:
    Builder& read_operation(SpannerReadOperation op) {
      op_ = std::move(op);
      return *this;
    }
    Builder& deserializer(SpannerRowDeserializer<T> deserializer) {
      deserializer_ = std::move(deserializer);
      return *this;
    }
    // [strong()] Only strong(), read_timestamp(...) and exact_staleness(...) build.
    Builder& timestamp_bound(TimestampBound bound) {
      options_.timestamp_bound = std::move(bound);
      return *this;
    }
    // Everything else (hints, Data Boost, priority, fetch bounds); replaces the bound too.
    Builder& options(SpannerSourceOptions options) {
      options_ = std::move(options);
      return *this;
    }
    // INVALID_ARGUMENT naming what is missing or out of range.
    absl::StatusOr<std::shared_ptr<SpannerSource>> build() const {
      GCP_RETURN_IF_ERROR(this->validate_client("SpannerSource"));
      if (!op_) return absl::InvalidArgumentError("SpannerSource needs read_operation(...)");
      if (!deserializer_)
        return absl::InvalidArgumentError("SpannerSource needs deserializer(...)");
      GCP_RETURN_IF_ERROR(op_->validate());
      GCP_RETURN_IF_ERROR(options_.validate());
      return std::shared_ptr<SpannerSource>(new SpannerSource(*this));
    }

   private:
    friend class SpannerSource;
    std::optional<SpannerReadOperation> op_;
    SpannerRowDeserializer<T> deserializer_;
    SpannerSourceOptions options_;
  };

  static Builder builder() { return Builder(); }

  Boundedness boundedness() const override { return Boundedness::kBounded; }

  absl::StatusOr<std::unique_ptr<SplitEnumerator<SpannerPartitionSplit, SpannerSourceEnumState>>>
  create_enumerator(SplitEnumeratorContext<SpannerPartitionSplit>& context) const override {
    return std::unique_ptr<SplitEnumerator<SpannerPartitionSplit, SpannerSourceEnumState>>(
        std::make_unique<SpannerSplitEnumerator>(context, client_factory(), *b_.op_, b_.options_));
  }
  absl::StatusOr<std::unique_ptr<SplitEnumerator<SpannerPartitionSplit, SpannerSourceEnumState>>>
  restore_enumerator(SplitEnumeratorContext<SpannerPartitionSplit>& context,
                     SpannerSourceEnumState state) const override {
    return std::unique_ptr<SplitEnumerator<SpannerPartitionSplit, SpannerSourceEnumState>>(
        std::make_unique<SpannerSplitEnumerator>(context, client_factory(), *b_.op_, b_.options_,
                                                 std::move(state)));
  }
  absl::StatusOr<std::unique_ptr<SourceReader<T, SpannerPartitionSplit>>> create_reader(
      SourceReaderContext& context) const override {
    GCP_ASSIGN_OR_RETURN(std::shared_ptr<SpannerReadClient> client, client_factory()());
    auto split_reader =
        std::make_unique<SpannerPartitionReader>(std::move(client), *b_.op_, b_.options_);
    return std::unique_ptr<SourceReader<T, SpannerPartitionSplit>>(std::make_unique<Reader>(
        std::move(split_reader), std::make_unique<Emitter>(b_.deserializer_, context), context));
  }
  const VersionedSerializer<SpannerPartitionSplit>& split_serializer() const override {
    return split_serializer_;
  }
  const VersionedSerializer<SpannerSourceEnumState>& enumerator_state_serializer() const override {
    return state_serializer_;
  }

  LineageVertex lineage_vertex() const override {
    LineageVertex v;
    v.role = LineageVertex::Role::kSource;
    v.connector = "spanner";
    v.bounded = true;
    if (b_.op_->kind() == SpannerReadOperation::Kind::kRead) {
      v.datasets.push_back(connector::SpannerDataset(*b_.database_, b_.op_->table()));
    } else {
      v.datasets.push_back(connector::SpannerDatabaseDataset(*b_.database_));
    }
    return v;
  }

 private:
  class Emitter final : public RecordEmitter<Row, T, SpannerPartitionSplit> {
   public:
    Emitter(SpannerRowDeserializer<T> deserializer, SourceReaderContext& context)
        : deserializer_(std::move(deserializer)),
          rows_read_(context.metric_group().counter("rowsRead")),
          skipped_(context.metric_group().counter(metric_names::kRecordsSkipped)) {}
    absl::Status emit_record(Row row, SourceOutput<T>& output,
                             SpannerPartitionSplit& split) override {
      rows_read_.inc_single_writer();
      split.started = true;
      GCP_RETURN_IF_ERROR(RunDeserializer(
          records_, [&](Collector<T>& out) { return deserializer_(row, out); },
          [&] {
            return absl::StrCat("SpannerSource: the deserializer failed on a row of ",
                                split.split_id());
          }));
      if (records_.empty()) skipped_.inc_single_writer();
      for (T& record : records_) GCP_RETURN_IF_ERROR(output.collect(std::move(record)));
      return absl::OkStatus();
    }

   private:
    SpannerRowDeserializer<T> deserializer_;
    std::vector<T> records_;  // reused: one row's records
    Counter& rows_read_;
    Counter& skipped_;
  };

  class Reader final
      : public SourceReaderBase<Row, T, SpannerPartitionSplit, SpannerPartitionSplit> {
   public:
    Reader(std::unique_ptr<SpannerPartitionReader> split_reader, std::unique_ptr<Emitter> emitter,
           SourceReaderContext& context)
        : SourceReaderBase<Row, T, SpannerPartitionSplit, SpannerPartitionSplit>(
              std::move(split_reader), std::move(emitter), context),
          finished_(context.metric_group().counter("partitionsFinished")),
          reread_(context.metric_group().counter("partitionsReread")) {}

    absl::Status start() override {
      GCP_RETURN_IF_ERROR(
          (SourceReaderBase<Row, T, SpannerPartitionSplit, SpannerPartitionSplit>::start()));
      this->context().send_split_request();
      return absl::OkStatus();
    }

   protected:
    SpannerPartitionSplit initialized_state(const SpannerPartitionSplit& split) override {
      if (split.started) {
        reread_.inc();
        spdlog::warn(
            "SpannerSource: {} was being read when the restored checkpoint was taken; it is read "
            "again from its start, so its rows emitted before are emitted again",
            split.split_id());
      }
      // `started` stays set: those rows were emitted before any later checkpoint too.
      return split;
    }
    SpannerPartitionSplit to_split_type(const std::string&,
                                        const SpannerPartitionSplit& state) override {
      return state;
    }
    absl::Status on_split_finished(
        const std::map<std::string, SpannerPartitionSplit>& finished) override {
      finished_.inc(static_cast<std::int64_t>(finished.size()));
      if (this->assigned_split_count() == 0) this->context().send_split_request();
      return absl::OkStatus();
    }

   private:
    Counter& finished_;
    Counter& reread_;
  };

  explicit SpannerSource(Builder b) : b_(std::move(b)) {}

  SpannerReadClientFactory client_factory() const { return b_.client_factory(); }

  Builder b_;
  SpannerPartitionSplitSerializer split_serializer_;
  SpannerSourceEnumStateSerializer state_serializer_;
};

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_SOURCE_SPANNER_SOURCE_H_
