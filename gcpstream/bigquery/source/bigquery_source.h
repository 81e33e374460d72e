#ifndef GCPSTREAM_BIGQUERY_SOURCE_BIGQUERY_SOURCE_H_
#define GCPSTREAM_BIGQUERY_SOURCE_BIGQUERY_SOURCE_H_

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
#include "gcpstream/api/metrics.h"
#include "gcpstream/api/pull_source_reader.h"
#include "gcpstream/api/source.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/bigquery/admin/table_admin_factory.h"
#include "gcpstream/bigquery/client/read_stub.h"
#include "gcpstream/bigquery/source/bigquery_read_options.h"
#include "gcpstream/bigquery/source/bigquery_read_row.h"
#include "gcpstream/bigquery/source/read_session_enumerator.h"
#include "gcpstream/bigquery/source/read_stream_reader.h"
#include "gcpstream/bigquery/source/read_stream_split.h"
#include "gcpstream/connector/client_options_builder.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/lineage.h"

namespace gcpstream::bigquery {

// Turns one row into zero or more records through `out`, synchronously (never keep `out`).
// Emitting nothing skips the row (recordsSkipped) and still consumes it. A failure fails the job
// and the split's offset stays before the row, so a restore reads it again (a record the row
// emitted before the failure can then come twice).
template <typename T>
using BigQueryReadRowDeserializer =
    std::function<absl::Status(const BigQueryReadRow& row, Collector<T>& out)>;

// Reads a BigQuery table once through the Storage Read API and finishes: a bounded source,
// which also runs inside a streaming job (a dimension table joined against a stream).
//
//   auto source = BigQuerySource<Flight>::builder()
//       .table(connector::BigQueryTableDestination::of("p", "d", "flights"))
//       .selected_fields({"origin", "delay"})
//       .row_restriction("delay > 10")
//       .deserializer([](const BigQueryReadRow& row, Collector<Flight>& out) -> absl::Status {...})
//       .build();
//   env.from_source(*source, WatermarkStrategy<Flight>::no_watermarks(), "flights");
//
// The query route (.query("SELECT ...").parent_project("p")) runs the query as a BigQuery job
// first and reads its result table; see BigQueryReadOptions::query for what it costs and
// ReadSessionEnumerator for when it runs. A view cannot be read as a table (the Storage Read API
// refuses it): read it through a query, or set materialize_views() and name it as table(...).
//
// Plan: the coordinator creates one read session (Avro rows), exactly once — the checkpointed
// enumerator state says it exists, and a restore adopts it instead of pinning a second snapshot.
// BigQuery decides how many streams the session has (max_stream_count caps it,
// preferred_min_stream_count asks for more, best effort); each stream is a split, handed to a
// reader that asks for one (pull-based: a reader done with a small stream takes the next).
//
// Delivery: a split is its stream plus the rows consumed from it, and a restore resumes each
// stream at that offset (ReadRows' own offset), so every row reaches downstream at least once,
// and exactly once for a job whose sink commits on checkpoints. Rows come in BigQuery's storage
// order, not the table's.
//
// Records carry no timestamp: assign a WatermarkStrategy over them if event time is needed.
//
// Metrics (each reader): numRecordsIn (the runtime's), rowsRead, bytesRead (Avro bytes as they
// arrived), recordsSkipped, readRetries; the coordinator's: readSessionsCreated (1 fresh, 0
// restored: any other value means a second snapshot), queryJobsSubmitted, queryJobsReattached,
// splitsAssigned, splitsReturned, unassignedSplits. Lineage: the table (kind bigquery-table); a
// query source names none.
// docs/bigquery.md, "The source". Immutable once built; thread-safe.
template <typename T>
class BigQuerySource final : public Source<T, ReadStreamSplit, BigQueryReadEnumState>,
                             public LineageVertexProvider {
 public:
  class Builder : public connector::ClientOptionsBuilder<Builder> {
   public:
    Builder& table(connector::BigQueryTableDestination table) {
      table_ = std::move(table);
      return *this;
    }
    // The query route instead of table(...): runs this GoogleSQL query as a job once, from the
    // coordinator's planning call, then reads the table its result landed in. Needs
    // parent_project, and with emulator_endpoint also emulator_rest_endpoint (the job is REST).
    Builder& query(std::string sql) {
      options_.query = std::move(sql);
      return *this;
    }
    // Table route: when the table turns out to be a view (logical or materialized; one
    // tables.get when the read is planned), read it through a query job selecting from it, with
    // the selected fields folded into the SELECT when they are plain column names and there
    // is no row_restriction (which stays on the session and may name other columns); an ordinary
    // table is read directly [off: a view fails at session creation]. The query options below
    // apply to that job (run and billed in parent_project, else the view's project). Needs
    // emulator_rest_endpoint beside emulator_endpoint; refused with snapshot_time.
    Builder& materialize_views(bool on = true) {
      options_.materialize_views = on;
      return *this;
    }
    // Query route: the location the job runs in [inferred by BigQuery from the query's tables].
    Builder& query_location(std::string location) {
      options_.query_location = std::move(location);
      return *this;
    }
    // Query route: a dataset of parent_project for the result (a table expiring after 24 h)
    // [BigQuery's anonymous dataset].
    Builder& query_result_dataset(std::string dataset) {
      options_.query_result_dataset = std::move(dataset);
      return *this;
    }
    // Query route: attempts named `job_name` with the same query configuration inside `window`
    // (at most 24 h) share one query job, found again under an id derived from both
    // (ReusableQueryJobId) [off]. Needs query_location. A redeploy under the same name inside
    // the window reads the earlier result too: rename the job to force a fresh query.
    Builder& reuse_query_result_within(std::chrono::milliseconds window, std::string job_name) {
      options_.reuse_query_result_within = window;
      options_.job_name = std::move(job_name);
      return *this;
    }
    // The REST half of emulator_endpoint (http://host:port), for the query job.
    Builder& emulator_rest_endpoint(std::string url) {
      emulator_rest_ = std::move(url);
      return *this;
    }
    // Tests: the query job's poll backoff (1 s rising to 30 s otherwise).
    Builder& query_poll_backoff_for_tests(std::chrono::milliseconds initial,
                                          std::chrono::milliseconds max) {
      options_.query_poll_initial = initial;
      options_.query_poll_max = max;
      return *this;
    }
    Builder& deserializer(BigQueryReadRowDeserializer<T> deserializer) {
      deserializer_ = std::move(deserializer);
      return *this;
    }
    // The project the session is created in and billed to [the table's project].
    Builder& parent_project(std::string project) {
      options_.parent_project = std::move(project);
      return *this;
    }
    Builder& selected_fields(std::vector<std::string> fields) {
      options_.selected_fields = std::move(fields);
      return *this;
    }
    Builder& row_restriction(std::string restriction) {
      options_.row_restriction = std::move(restriction);
      return *this;
    }
    Builder& snapshot_time(absl::Time time) {
      options_.snapshot_time = time;
      return *this;
    }
    Builder& max_stream_count(int n) {
      options_.max_stream_count = n;
      return *this;
    }
    Builder& preferred_min_stream_count(int n) {
      options_.preferred_min_stream_count = n;
      return *this;
    }
    Builder& max_records_per_fetch(int n) {
      options_.max_records_per_fetch = n;
      return *this;
    }
    Builder& retry_max_attempts(int n) {
      options_.retry_max_attempts = n;
      return *this;
    }
    // Tests: the first retry delay (100 ms otherwise) and the stall bound (60 s otherwise).
    Builder& initial_retry_delay_for_tests(std::chrono::milliseconds delay) {
      options_.initial_retry_delay = delay;
      return *this;
    }
    Builder& stall_timeout(std::chrono::milliseconds timeout) {
      options_.stall_timeout = timeout;
      return *this;
    }
    // Tests: the stub every coordinator and reader uses instead of a gRPC channel.
    Builder& stub_factory(BigQueryReadStubFactory stubs) {
      stubs_ = std::move(stubs);
      return *this;
    }

    // INVALID_ARGUMENT naming what is missing or out of range (BigQueryReadOptions::validate).
    absl::StatusOr<std::shared_ptr<BigQuerySource>> build() const {
      GCP_RETURN_IF_ERROR(this->builder_error());
      const bool query = !options_.query.empty();
      if (query && table_) {
        return absl::InvalidArgumentError("BigQuerySource: set table(...) or query(...), not both");
      }
      if (!query && (!table_ || table_->project.empty() || table_->dataset.empty() ||
                     table_->table.empty())) {
        return absl::InvalidArgumentError(
            "BigQuerySource needs table(project, dataset, table), each part set, or query(...)");
      }
      if (!deserializer_) {
        return absl::InvalidArgumentError("BigQuerySource needs deserializer(...)");
      }
      const bool emulator = this->client().emulator_endpoint().has_value();
      const bool rest = query || options_.materialize_views;
      if (rest && emulator && !emulator_rest_) {
        return absl::InvalidArgumentError(
            "BigQuerySource: a query source (or one with materialize_views) with "
            "emulator_endpoint needs emulator_rest_endpoint too: the query job is a REST call, "
            "served on another port");
      }
      if (emulator_rest_ && !rest) {
        return absl::InvalidArgumentError(
            "BigQuerySource: emulator_rest_endpoint applies to a query source only, or with "
            "materialize_views (a table source makes no REST call)");
      }
      if (emulator_rest_ && !emulator) {
        return absl::InvalidArgumentError(
            "BigQuerySource: emulator_rest_endpoint goes with emulator_endpoint: the query would "
            "go to the emulator and the reads to BigQuery");
      }
      if (emulator_rest_) GCP_RETURN_IF_ERROR(ValidateRestEndpoint(*emulator_rest_));
      BigQueryReadOptions options = options_;
      if (table_) options.table = table_->resource_name();
      GCP_RETURN_IF_ERROR(options.validate());
      return std::shared_ptr<BigQuerySource>(new BigQuerySource(*this, std::move(options)));
    }

   private:
    friend class BigQuerySource;
    std::optional<connector::BigQueryTableDestination> table_;
    BigQueryReadRowDeserializer<T> deserializer_;
    BigQueryReadOptions options_;
    BigQueryReadStubFactory stubs_;
    std::optional<std::string> emulator_rest_;
  };

  static Builder builder() { return Builder(); }

  Boundedness boundedness() const override { return Boundedness::kBounded; }

  using EnumeratorPtr = std::unique_ptr<SplitEnumerator<ReadStreamSplit, BigQueryReadEnumState>>;
  absl::StatusOr<EnumeratorPtr> create_enumerator(
      SplitEnumeratorContext<ReadStreamSplit>& context) const override {
    GCP_ASSIGN_OR_RETURN(std::shared_ptr<const TableAdmin> admin, make_admin());
    return EnumeratorPtr(
        std::make_unique<ReadSessionEnumerator>(context, stubs_, options_, std::move(admin)));
  }
  absl::StatusOr<EnumeratorPtr> restore_enumerator(SplitEnumeratorContext<ReadStreamSplit>& context,
                                                   BigQueryReadEnumState state) const override {
    // A restored session runs no query: no REST client (nor credentials) unless there is none.
    std::shared_ptr<const TableAdmin> admin;
    if (state.session.empty()) {
      GCP_ASSIGN_OR_RETURN(admin, make_admin());
    }
    return EnumeratorPtr(std::make_unique<ReadSessionEnumerator>(
        context, stubs_, options_, std::move(admin), std::move(state)));
  }
  absl::StatusOr<std::unique_ptr<SourceReader<T, ReadStreamSplit>>> create_reader(
      SourceReaderContext& context) const override {
    Counter& retries = context.metric_group().counter("readRetries");
    return std::unique_ptr<SourceReader<T, ReadStreamSplit>>(
        std::make_unique<Reader>(std::make_unique<ReadStreamReader>(stubs_, options_, retries),
                                 std::make_unique<Emitter>(b_.deserializer_, context), context));
  }
  const VersionedSerializer<ReadStreamSplit>& split_serializer() const override {
    return split_serializer_;
  }
  const VersionedSerializer<BigQueryReadEnumState>& enumerator_state_serializer() const override {
    return state_serializer_;
  }

  LineageVertex lineage_vertex() const override {
    LineageVertex v;
    v.role = LineageVertex::Role::kSource;
    v.connector = "bigquery";
    v.bounded = true;
    // A query's result table is known only once its job ran.
    if (b_.table_) v.datasets.push_back(connector::BigQueryDataset(*b_.table_));
    return v;
  }

  const BigQueryReadOptions& options() const { return options_; }

 private:
  class Emitter final : public RecordEmitter<ReadStreamRow, T, ReadStreamSplit> {
   public:
    Emitter(BigQueryReadRowDeserializer<T> deserializer, SourceReaderContext& context)
        : deserializer_(std::move(deserializer)),
          rows_read_(context.metric_group().counter("rowsRead")),
          bytes_read_(context.metric_group().counter("bytesRead")),
          records_in_(context.metric_group().counter("numRecordsIn")),
          skipped_(context.metric_group().counter(metric_names::kRecordsSkipped)) {}

    absl::Status emit_record(ReadStreamRow element, SourceOutput<T>& output,
                             ReadStreamSplit& split) override {
      rows_read_.inc_single_writer();
      if (element.block_bytes > 0) bytes_read_.inc_single_writer(element.block_bytes);
      GCP_RETURN_IF_ERROR(RunDeserializer(
          records_, [&](Collector<T>& out) { return deserializer_(element.row, out); },
          [&] {
            return absl::StrCat("BigQuerySource: the deserializer failed on row ", split.offset,
                                " of ", split.stream);
          }));
      if (records_.empty()) skipped_.inc_single_writer();
      for (T& record : records_) {
        GCP_RETURN_IF_ERROR(output.collect(std::move(record)));
        records_in_.inc_single_writer();
      }
      ++split.offset;  // only now is the row behind us
      return absl::OkStatus();
    }

   private:
    BigQueryReadRowDeserializer<T> deserializer_;
    std::vector<T> records_;
    Counter& rows_read_;
    Counter& bytes_read_;
    Counter& records_in_;
    Counter& skipped_;
  };

  using Reader = PullSourceReader<ReadStreamRow, T, ReadStreamSplit, /*max_held=*/1>;

  // The REST client of a query source or one with materialize_views (credentials read now);
  // none for a plain table source, whose read path makes no REST call.
  absl::StatusOr<std::shared_ptr<const TableAdmin>> make_admin() const {
    if (options_.query.empty() && !options_.materialize_views) {
      return std::shared_ptr<const TableAdmin>();
    }
    GCP_ASSIGN_OR_RETURN(std::shared_ptr<TableAdmin> admin,
                         MakeTableAdmin(b_.client(), b_.emulator_rest_));
    return std::shared_ptr<const TableAdmin>(std::move(admin));
  }

  BigQuerySource(Builder b, BigQueryReadOptions options)
      : b_(std::move(b)), options_(std::move(options)) {
    stubs_ = b_.stubs_ ? b_.stubs_ : MakeBigQueryReadStubFactory(b_.client());
  }

  Builder b_;
  BigQueryReadOptions options_;
  BigQueryReadStubFactory stubs_;
  ReadStreamSplitSerializer split_serializer_;
  BigQueryReadEnumStateSerializer state_serializer_;
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SOURCE_BIGQUERY_SOURCE_H_
