#ifndef GCPSTREAM_BIGTABLE_SOURCE_BIGTABLE_SOURCE_H_
#define GCPSTREAM_BIGTABLE_SOURCE_BIGTABLE_SOURCE_H_

#include <spdlog/spdlog.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gcpstream/api/collector.h"
#include "gcpstream/api/deserialize.h"
#include "gcpstream/api/lineage.h"
#include "gcpstream/api/pull_source_reader.h"
#include "gcpstream/api/source.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/bigtable/admin/resource_names.h"
#include "gcpstream/bigtable/client/blocking_stub.h"
#include "gcpstream/bigtable/client/row_key_range.h"
#include "gcpstream/bigtable/client/row_mutation_entry.h"
#include "gcpstream/bigtable/source/bigtable_scan_enumerator.h"
#include "gcpstream/bigtable/source/bigtable_scan_reader.h"
#include "gcpstream/bigtable/source/bigtable_scan_split.h"
#include "gcpstream/bigtable/source/read_rows_assembler.h"
#include "gcpstream/connector/client_options_builder.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/lineage.h"

namespace gcpstream::bigtable {

// Turns one row into zero or more records through `out`, synchronously (never keep `out`).
// Emitting nothing skips the row (recordsSkipped) and still counts as progress. A failure fails
// the job, and the split's position does not move past the row, so a restore reads it again.
template <typename T>
using BigtableRowDeserializer =
    std::function<absl::Status(const BigtableRow& row, Collector<T>& out)>;

// The largest filter the service takes, serialized (the Bigtable client libraries' bound: 20 KB).
inline constexpr std::size_t kMaxRowFilterBytes = 20 * 1024;

// Reads the rows of a Bigtable table once and finishes: a bounded source, which also runs
// inside a streaming job (to join a table against a stream, for example).
//
//   auto source = BigtableSource<Order>::builder()
//       .table(connector::TableDestination::of("p", "i", "orders"))
//       .prefix("2026-08-")
//       .deserializer([](const BigtableRow& row, Collector<Order>& out) -> absl::Status { ... })
//       .build();
//   env.from_source(*source, WatermarkStrategy<Order>::no_watermarks(), "orders");
//
// What is read: the union of every row_range / prefix / row_key added (overlapping and touching
// ones merged, so no row is read twice; none added ⇒ the whole table), through one server-side
// RowFilter applied to every split. A range that can hold nothing is refused at build().
//
// Splits: the coordinator asks SampleRowKeys where the table's sections begin and cuts each
// range at every sampled key strictly inside it; a reader takes one split at a time and asks for
// the next when done. Parallelism beyond the number of sections leaves subtasks idle (logged).
//
// Delivery: at least once. A split's state is what is left of its range, starting just past the
// last row emitted downstream (including a row the deserializer emitted nothing for), so a
// restore resumes there; rows emitted after the last completed checkpoint come again. A restore
// never samples the table again.
//
// Records carry no timestamp: assign a WatermarkStrategy over them if event time is needed.
//
// Metrics (each reader): rowsRead, recordsSkipped; the coordinator's: rowKeySamplesTaken,
// splitsAssigned, splitsReturned, unassignedSplits. Lineage: the table (kind bigtable-table).
// docs/bigtable.md, "The scan source". Immutable once built; thread-safe.
template <typename T>
class BigtableSource final : public Source<T, BigtableScanSplit, BigtableScanEnumState>,
                             public LineageVertexProvider {
 public:
  class Builder : public connector::ClientOptionsBuilder<Builder> {
   public:
    Builder& table(connector::TableDestination table) {
      table_ = std::move(table);
      return *this;
    }
    Builder& deserializer(BigtableRowDeserializer<T> deserializer) {
      deserializer_ = std::move(deserializer);
      return *this;
    }
    // Adds the rows from `start` (inclusive) to `end` (exclusive); an empty `start` is the
    // beginning of the table and an empty `end` its end. Repeatable.
    Builder& row_range(std::string start, std::string end) {
      ranges_.push_back(RowKeyRange{std::move(start), std::move(end)});
      return *this;
    }
    Builder& row_range(RowKeyRange range) {
      ranges_.push_back(std::move(range));
      return *this;
    }
    // Adds every row whose key starts with `prefix` (see PrefixRange). Repeatable. At most
    // kMaxRowKeyBytes (a longer prefix matches no key).
    Builder& prefix(std::string_view prefix) {
      if (prefix.size() > static_cast<std::size_t>(kMaxRowKeyBytes)) {
        this->note(absl::InvalidArgumentError(
            absl::StrCat("BigtableSource: a prefix of ", prefix.size(),
                         " bytes matches no row (keys are at most ", kMaxRowKeyBytes, " bytes)")));
      }
      ranges_.push_back(PrefixRange(prefix));
      return *this;
    }
    // Adds the one row `key`. Repeatable. Not empty, at most kMaxRowKeyBytes (Bigtable's row-key
    // rules: such a key names no row).
    Builder& row_key(std::string_view key) {
      if (key.empty()) {
        this->note(absl::InvalidArgumentError(
            "BigtableSource: row_key(\"\") names no row (Bigtable row keys are never empty)"));
      } else {
        this->note(ValidateRowKey(std::string(key)));
      }
      ranges_.push_back(SingleKeyRange(key));
      return *this;
    }
    // One server-side filter for every split; the last call wins. At most kMaxRowFilterBytes
    // serialized. A family the table does not have fails the read with NOT_FOUND (the service
    // checks it; the source does not look at the schema first).
    Builder& filter(google::bigtable::v2::RowFilter filter) {
      filter_ = std::move(filter);
      return *this;
    }
    // The app profile every call routes through (a Data Boost profile is named here too).
    // Unset: the instance's default profile.
    Builder& app_profile_id(std::string id) {
      app_profile_ = std::move(id);
      return *this;
    }
    // Fetch bounds: rows [1,000] and estimated bytes [8 MiB] handed over per fetch.
    Builder& max_rows_per_fetch(int rows) {
      request_.max_rows_per_fetch = rows;
      return *this;
    }
    Builder& max_bytes_per_fetch(std::int64_t bytes) {
      max_bytes_ = bytes;
      return *this;
    }
    // Tests: the stub every coordinator and reader uses instead of a gRPC channel.
    Builder& stub_factory(BigtableStubFactory stubs) {
      stubs_ = std::move(stubs);
      return *this;
    }
    // Tests: how soon a transient ReadRows failure is tried again (100 ms otherwise).
    Builder& initial_backoff_for_tests(std::chrono::milliseconds backoff) {
      request_.initial_backoff = backoff;
      return *this;
    }

    // INVALID_ARGUMENT naming what is missing or out of range.
    absl::StatusOr<std::shared_ptr<BigtableSource>> build() const {
      constexpr char kWho[] = "BigtableSource";
      GCP_RETURN_IF_ERROR(this->builder_error());
      GCP_RETURN_IF_ERROR(ValidateTableDestination(kWho, table_));
      if (!deserializer_) {
        return absl::InvalidArgumentError(std::string(kWho) + " needs deserializer(...)");
      }
      for (const RowKeyRange& range : ranges_) {
        if (IsEmptyRange(range)) {
          return absl::InvalidArgumentError(absl::StrCat(
              kWho, ": the row range ", FormatRowRange(range),
              " holds no row (its end is not after its start); a range that reads nothing "
              "would look like a table with nothing in it"));
        }
      }
      if (!app_profile_.empty()) GCP_RETURN_IF_ERROR(ValidateAppProfileId(kWho, app_profile_));
      if (filter_ && filter_->ByteSizeLong() > kMaxRowFilterBytes) {
        return absl::InvalidArgumentError(
            absl::StrCat(kWho, ": the filter is ", filter_->ByteSizeLong(),
                         " bytes serialized; Bigtable takes at most ", kMaxRowFilterBytes));
      }
      if (request_.max_rows_per_fetch < 1) {
        return absl::InvalidArgumentError(std::string(kWho) + ": max_rows_per_fetch must be >= 1");
      }
      if (max_bytes_ < 1) {
        return absl::InvalidArgumentError(std::string(kWho) + ": max_bytes_per_fetch must be >= 1");
      }
      return std::shared_ptr<BigtableSource>(new BigtableSource(*this));
    }

   private:
    friend class BigtableSource;
    std::optional<connector::TableDestination> table_;
    BigtableRowDeserializer<T> deserializer_;
    std::vector<RowKeyRange> ranges_;
    std::optional<google::bigtable::v2::RowFilter> filter_;
    std::string app_profile_;
    std::int64_t max_bytes_ = 8 << 20;
    BigtableScanRequest request_;
    BigtableStubFactory stubs_;
  };

  static Builder builder() { return Builder(); }

  Boundedness boundedness() const override { return Boundedness::kBounded; }

  using EnumeratorPtr = std::unique_ptr<SplitEnumerator<BigtableScanSplit, BigtableScanEnumState>>;
  absl::StatusOr<EnumeratorPtr> create_enumerator(
      SplitEnumeratorContext<BigtableScanSplit>& context) const override {
    return EnumeratorPtr(std::make_unique<BigtableScanEnumerator>(
        context, stubs_, request_.table_name, request_.app_profile_id, ranges_));
  }
  absl::StatusOr<EnumeratorPtr> restore_enumerator(
      SplitEnumeratorContext<BigtableScanSplit>& context,
      BigtableScanEnumState state) const override {
    return EnumeratorPtr(std::make_unique<BigtableScanEnumerator>(
        context, stubs_, request_.table_name, request_.app_profile_id, ranges_, std::move(state)));
  }
  absl::StatusOr<std::unique_ptr<SourceReader<T, BigtableScanSplit>>> create_reader(
      SourceReaderContext& context) const override {
    return std::unique_ptr<SourceReader<T, BigtableScanSplit>>(
        std::make_unique<Reader>(std::make_unique<BigtableScanReader>(stubs_, request_),
                                 std::make_unique<Emitter>(b_.deserializer_, context), context));
  }
  const VersionedSerializer<BigtableScanSplit>& split_serializer() const override {
    return split_serializer_;
  }
  const VersionedSerializer<BigtableScanEnumState>& enumerator_state_serializer() const override {
    return state_serializer_;
  }

  LineageVertex lineage_vertex() const override {
    LineageVertex v;
    v.role = LineageVertex::Role::kSource;
    v.connector = "bigtable";
    v.bounded = true;
    v.datasets.push_back(connector::BigtableDataset(*b_.table_));
    return v;
  }

  // The ranges read, normalized (what the splits were planned from).
  const std::vector<RowKeyRange>& ranges() const { return ranges_; }

 private:
  class Emitter final : public RecordEmitter<BigtableRow, T, BigtableScanSplit> {
   public:
    Emitter(BigtableRowDeserializer<T> deserializer, SourceReaderContext& context)
        : deserializer_(std::move(deserializer)),
          rows_read_(context.metric_group().counter("rowsRead")),
          skipped_(context.metric_group().counter(metric_names::kRecordsSkipped)) {}

    absl::Status emit_record(BigtableRow row, SourceOutput<T>& output,
                             BigtableScanSplit& split) override {
      rows_read_.inc_single_writer();
      GCP_RETURN_IF_ERROR(RunDeserializer(
          records_, [&](Collector<T>& out) { return deserializer_(row, out); },
          [&] {
            return absl::StrCat("BigtableSource: the deserializer failed on row ",
                                FormatRowRange(SingleKeyRange(row.key)), " of ", split.id);
          }));
      if (records_.empty()) skipped_.inc_single_writer();
      for (T& record : records_) GCP_RETURN_IF_ERROR(output.collect(std::move(record)));
      // Only now is the row behind us: the state resumes past it.
      split.range = RangeAfter(split.range, row.key);
      return absl::OkStatus();
    }

   private:
    BigtableRowDeserializer<T> deserializer_;
    std::vector<T> records_;  // reused: one row's records
    Counter& rows_read_;
    Counter& skipped_;
  };

  using Reader = PullSourceReader<BigtableRow, T, BigtableScanSplit>;

  explicit BigtableSource(Builder b) : b_(std::move(b)) {
    ranges_ =
        b_.ranges_.empty() ? std::vector<RowKeyRange>{RowKeyRange{}} : NormalizeRanges(b_.ranges_);
    stubs_ = b_.stubs_ ? b_.stubs_ : MakeBlockingBigtableStubFactory(b_.client());
    request_ = b_.request_;
    request_.table_name = absl::StrCat("projects/", b_.table_->project, "/instances/",
                                       b_.table_->instance, "/tables/", b_.table_->table);
    request_.app_profile_id = b_.app_profile_;
    request_.filter = b_.filter_;
    request_.max_bytes_per_fetch = static_cast<std::size_t>(b_.max_bytes_);
  }

  Builder b_;
  std::vector<RowKeyRange> ranges_;
  BigtableStubFactory stubs_;
  BigtableScanRequest request_;
  BigtableScanSplitSerializer split_serializer_;
  BigtableScanEnumStateSerializer state_serializer_;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_SOURCE_BIGTABLE_SOURCE_H_
