#ifndef GCPSTREAM_BIGQUERY_SINK_BIGQUERY_SINK_H_
#define GCPSTREAM_BIGQUERY_SINK_BIGQUERY_SINK_H_

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/cord.h"
#include "gcpstream/api/lineage.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/bigquery/sink/bigquery_serialization_schema.h"
#include "gcpstream/bigquery/sink/bigquery_sink_adapter.h"
#include "gcpstream/bigquery/sink/bigquery_writer_options.h"
#include "gcpstream/bigquery/sink/buffered_stream_committer.h"
#include "gcpstream/bigquery/sink/buffered_stream_ledger.h"
#include "gcpstream/bigquery/sink/cdc.h"
#include "gcpstream/bigquery/sink/file_loads_options.h"
#include "gcpstream/connector/async_sink_writer_front.h"
#include "gcpstream/connector/client_options.h"
#include "gcpstream/connector/committing_sink_writer_front.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/failure_handler.h"
#include "gcpstream/connector/lineage.h"
#include "gcpstream/connector/serialization.h"

namespace gcpstream::bigquery {

// The clients a writer uses, made when it starts (credentials are read then): the Storage Write
// stub over one channel, and the REST table client (MakeTableAdmin). With an emulator endpoint set,
// the REST endpoint must be too (plaintext, no credentials).
absl::StatusOr<std::shared_ptr<BigQueryWriteStub>> MakeBigQueryWriteStub(
    const connector::ClientOptions& client);
// The Cloud Storage client FILE_LOADS stages with: the production endpoint with the client's
// credentials, or the emulator REST endpoint (the BigQuery fake serves Cloud Storage there).
absl::StatusOr<std::shared_ptr<gcs::StorageClient>> MakeStorageClient(
    const connector::ClientOptions& client, const std::optional<std::string>& emulator_rest);

template <typename T>
class BigQueryFileLoadsSink;

// Writes records to BigQuery tables through the Storage Write API, by one of two methods:
//
//  - STORAGE_API_AT_LEAST_ONCE (the default): rows are appended to each table's `_default`
//    stream as batches fill, and flush() at each checkpoint appends what is batched and waits
//    for every append, so a completed checkpoint means BigQuery acknowledged every row before
//    the barrier — except those the serializer skipped or a dropping failure handler received.
//    A retried append may duplicate rows; the writer keeps no state.
//  - STORAGE_API_EXACTLY_ONCE: each writer subtask appends at explicit offsets to one BUFFERED
//    stream per table (BufferedStreamClient), rows stay invisible, and once a checkpoint
//    completed the committer flushes its rows (BufferedStreamCommitter). Writer state is each
//    table's stream and acknowledged offset; a committable is the offset a checkpoint may
//    flush up to. Visible one checkpoint later, each row once — provided the job is restored
//    from its latest checkpoint or a savepoint: a start without state loses up to one
//    checkpoint of rows. Needs checkpointing (without it rows become visible only at the end
//    of a bounded input).
//
// FILE_LOADS commits staged files rather than stream positions, so it is a sink type of its
// own: set write_method(FILE_LOADS) and file_loads_options(...), then build_file_loads()
// (bigquery_file_loads_sink.h).
//
// Change data capture (at least once only): with cdc_options each row is sent as an UPSERT or a
// DELETE of the row with its primary key, with the optional sequence number that orders the
// changes of one key (cdc.h). Each table must declare a primary key; cdc_table_options names
// the key a missing table is created with and the key an existing one must have. A retried
// append may apply a change twice, which an upsert or a delete tolerates; with sequence
// numbers a late duplicate never overrides a newer change.
//
//   auto serializer = BigQuerySerializationSchema<Flight>::json(schema, to_json);
//   auto sink = BigQuerySink<Flight>::builder()
//                   .destination(BigQueryTableDestination::of("p", "flights", "delays"))
//                   .serializer(*serializer)
//                   .build();
//
// A missing table is created under CREATE_IF_NEEDED (the default) with the serializer's
// schema and table_create_options. See docs/bigquery.md.
template <typename T>
class BigQuerySink final : public Sink<T>,
                           public SupportsWriterState<T, BufferedStreamPosition>,
                           public SupportsCommitter<BufferedStreamPosition>,
                           public LineageVertexProvider {
 public:
  class Builder {
   public:
    Builder& write_method(WriteMethod method) {
      method_ = method;
      return *this;
    }
    // Every record to one table. Replaces a resolver set before.
    Builder& destination(connector::BigQueryTableDestination table) {
      fixed_ = table;
      resolver_ = connector::FixedDestination<T>(std::move(table));
      return *this;
    }
    // The table per record; returning nothing fails the job.
    Builder& destination_resolver(
        connector::DestinationResolver<T, connector::BigQueryTableDestination> r) {
      fixed_.reset();
      resolver_ = std::move(r);
      return *this;
    }
    Builder& serializer(BigQuerySerializationSchema<T> s) {
      serializer_ = std::move(s);
      return *this;
    }
    Builder& create_disposition(CreateDisposition d) {
      disposition_ = d;
      return *this;
    }
    // Which changes the sink may make to an existing table so it takes the rows [none].
    Builder& schema_update_options(SchemaUpdateOptions o) {
      schema_updates_ = o;
      return *this;
    }
    Builder& table_create_options(TableCreateOptions o) {
      create_options_ = std::move(o);
      return *this;
    }
    // CDC writes (STORAGE_API_AT_LEAST_ONCE only); change_type is required.
    Builder& cdc_options(CdcOptions<T> o) {
      cdc_ = std::move(o);
      return *this;
    }
    // The primary key CDC tables have (verified) or are created with. Needs cdc_options.
    Builder& cdc_table_options(CdcTableOptions o) {
      cdc_table_ = std::move(o);
      return *this;
    }
    // FILE_LOADS only (and required by it): staging path, write disposition, file size, polling.
    Builder& file_loads_options(FileLoadsOptions o) {
      file_loads_ = std::move(o);
      return *this;
    }
    Builder& writer_options(BigQueryWriterOptions o) {
      options_ = std::move(o);
      return *this;
    }
    // What receives a row that terminally fails [fail the job].
    Builder& failure_handler(std::shared_ptr<connector::FailureHandler> h) {
      handler_ = std::move(h);
      return *this;
    }
    Builder& service_account_key_file(std::string path) {
      note(client_.set_service_account_key_file(std::move(path)));
      return *this;
    }
    // The Storage Write API at host:port (plaintext, no credentials): an emulator or the fake.
    Builder& emulator_endpoint(std::string_view host_port) {
      note(client_.set_emulator_endpoint(host_port));
      return *this;
    }
    // The REST API of the same, "http://host:port" (table creation).
    Builder& emulator_rest_endpoint(std::string url) {
      emulator_rest_ = std::move(url);
      return *this;
    }
    // Test seams.
    Builder& stub(std::shared_ptr<BigQueryWriteStub> stub) {
      stub_ = std::move(stub);
      return *this;
    }
    Builder& table_admin(std::shared_ptr<TableAdmin> admin) {
      admin_ = std::move(admin);
      return *this;
    }
    Builder& storage_client(std::shared_ptr<gcs::StorageClient> storage) {
      storage_ = std::move(storage);
      return *this;
    }

    // INVALID_ARGUMENT naming the option of the first problem (FILE_LOADS: use
    // build_file_loads()).
    absl::StatusOr<std::shared_ptr<BigQuerySink>> build() const {
      if (method_ == WriteMethod::kFileLoads) {
        return absl::InvalidArgumentError(
            "BigQuerySink: write_method FILE_LOADS commits staged files, not stream positions: "
            "build it with build_file_loads() (gcpstream/bigquery/sink/"
            "bigquery_file_loads_sink.h)");
      }
      if (file_loads_) {
        return absl::InvalidArgumentError(
            "file_loads_options are for write_method FILE_LOADS only");
      }
      GCP_RETURN_IF_ERROR(validate_common());
      std::shared_ptr<const CdcWriterDescriptor> cdc_descriptor;
      if (cdc_) {
        if (method_ != WriteMethod::kStorageApiAtLeastOnce) {
          return absl::InvalidArgumentError(
              "cdc_options needs write_method STORAGE_API_AT_LEAST_ONCE: BigQuery applies CDC "
              "changes only from the default stream");
        }
        if (!cdc_->change_type) {
          return absl::InvalidArgumentError("cdc_options needs a change_type provider");
        }
        if (cdc_table_) GCP_RETURN_IF_ERROR(cdc_table_->validate(serializer_.schema()));
        GCP_ASSIGN_OR_RETURN(
            CdcWriterDescriptor d,
            MakeCdcWriterDescriptor(serializer_.writer_descriptor(), serializer_.schema(),
                                    static_cast<bool>(cdc_->sequence_number)));
        cdc_descriptor = std::make_shared<const CdcWriterDescriptor>(std::move(d));
      } else if (cdc_table_) {
        return absl::InvalidArgumentError("cdc_table_options needs cdc_options");
      }
      return std::shared_ptr<BigQuerySink>(new BigQuerySink(*this, std::move(cdc_descriptor)));
    }

    // The FILE_LOADS sink (defined in bigquery_file_loads_sink.h). INVALID_ARGUMENT unless
    // write_method is FILE_LOADS with file_loads_options, and for what FILE_LOADS cannot do:
    // CDC, schema_update_options (widening before a load is not built), a schema BigQuery's
    // Avro loads cannot carry (INTERVAL, flexible column names), a writer schema that cannot
    // feed the table (AvroRowEncoder).
    absl::StatusOr<std::shared_ptr<BigQueryFileLoadsSink<T>>> build_file_loads() const;

   private:
    friend class BigQuerySink;
    template <typename U>
    friend class BigQueryFileLoadsSink;
    // What every write method needs: a destination, a serializer, valid client and writer
    // options, paired emulator endpoints, valid table creation options.
    absl::Status validate_common() const {
      GCP_RETURN_IF_ERROR(error_);
      if (!resolver_) {
        return absl::InvalidArgumentError(
            "BigQuerySink needs a destination: set destination(...) or destination_resolver(...)");
      }
      if (!serializer_.valid())
        return absl::InvalidArgumentError("BigQuerySink needs serializer(...)");
      GCP_RETURN_IF_ERROR(client_.validate());
      GCP_RETURN_IF_ERROR(options_.validate());
      if (client_.emulator_endpoint().has_value() != emulator_rest_.has_value() && !admin_) {
        return absl::InvalidArgumentError(
            "emulator_endpoint and emulator_rest_endpoint go together: the Storage Write API and "
            "the REST API of an emulator listen on different ports");
      }
      GCP_RETURN_IF_ERROR(create_options_.validate(serializer_.schema()));
      if (emulator_rest_) GCP_RETURN_IF_ERROR(ValidateRestEndpoint(*emulator_rest_));
      return absl::OkStatus();
    }
    void note(absl::Status s) {
      if (error_.ok() && !s.ok()) error_ = std::move(s);
    }
    WriteMethod method_ = WriteMethod::kStorageApiAtLeastOnce;
    std::optional<connector::BigQueryTableDestination> fixed_;
    connector::DestinationResolver<T, connector::BigQueryTableDestination> resolver_;
    BigQuerySerializationSchema<T> serializer_;
    CreateDisposition disposition_ = CreateDisposition::kCreateIfNeeded;
    TableCreateOptions create_options_;
    SchemaUpdateOptions schema_updates_;
    BigQueryWriterOptions options_;
    std::shared_ptr<connector::FailureHandler> handler_;
    connector::ClientOptions client_;
    std::optional<std::string> emulator_rest_;
    std::shared_ptr<BigQueryWriteStub> stub_;
    std::shared_ptr<TableAdmin> admin_;
    std::optional<CdcOptions<T>> cdc_;
    std::optional<CdcTableOptions> cdc_table_;
    std::optional<FileLoadsOptions> file_loads_;
    std::shared_ptr<gcs::StorageClient> storage_;
    absl::Status error_;
  };

  static Builder builder() { return Builder(); }

  absl::StatusOr<std::unique_ptr<SinkWriter<T>>> create_writer(
      WriterInitContext& context) const override {
    GCP_ASSIGN_OR_RETURN(auto writer, restore_writer(context, {}));
    return std::unique_ptr<SinkWriter<T>>(std::move(writer));
  }

  // Exactly-once: every restored table resumes (after a probe) on its checkpointed stream.
  // At-least-once keeps no state; positions restored from an exactly-once run are ignored
  // (their committables are still committed).
  absl::StatusOr<std::unique_ptr<StatefulSinkWriter<T, BufferedStreamPosition>>> restore_writer(
      WriterInitContext& context, std::vector<BufferedStreamPosition> states) const override {
    BigQueryWriterConfig config;
    if (b_.method_ == WriteMethod::kStorageApiExactlyOnce) {
      config.ledger = std::make_shared<BufferedStreamLedger>(std::move(states));
    } else if (!states.empty()) {
      spdlog::warn(
          "BigQuery sink: {} exactly-once stream position(s) restored into an "
          "at-least-once writer are ignored",
          states.size());
    }
    config.options = b_.options_;
    config.create_disposition = b_.disposition_;
    config.table_create_options = b_.create_options_;
    config.schema_updates = b_.schema_updates_;
    config.schema = b_.serializer_.schema();
    config.writer_descriptor = b_.serializer_.writer_descriptor();
    if (cdc_descriptor_) {
      config.writer_descriptor = cdc_descriptor_->descriptor;
      config.cdc = b_.cdc_table_.value_or(CdcTableOptions{});
    }
    config.failure_handler = b_.handler_ ? b_.handler_ : connector::FailureHandler::fail_job();
    if (b_.stub_) {
      config.stub = b_.stub_;
    } else {
      GCP_ASSIGN_OR_RETURN(config.stub, MakeBigQueryWriteStub(b_.client_));
    }
    if (b_.admin_) {
      config.admin = b_.admin_;
    } else {
      GCP_ASSIGN_OR_RETURN(config.admin, MakeTableAdmin(b_.client_, b_.emulator_rest_));
    }
    auto serialize =
        [serializer = b_.serializer_, cdc = b_.cdc_, descriptor = cdc_descriptor_](
            const T& element,
            const SinkWriterContext& ctx) -> absl::StatusOr<std::optional<BigQueryRow>> {
      return connector::CallSerializer<BigQueryRow>(
          [&]() -> absl::StatusOr<std::optional<BigQueryRow>> {
            auto row = serializer.serialize(element, ctx);
            // A skip stays a skip: the CDC providers see only rows that are written.
            if (!row.ok() || !row->has_value() || descriptor == nullptr) return row;
            return WithCdcPseudocolumns(*cdc, *descriptor, element, std::move(**row));
          });
    };
    std::shared_ptr<BufferedStreamLedger> ledger = config.ledger;
    auto writer = std::make_unique<Writer>(
        std::make_unique<Front>(b_.resolver_, std::move(serialize),
                                MakeBigQueryWriterCore(std::move(config), context)),
        std::move(ledger));
    GCP_RETURN_IF_ERROR(writer->open());
    return std::unique_ptr<StatefulSinkWriter<T, BufferedStreamPosition>>(std::move(writer));
  }
  const VersionedSerializer<BufferedStreamPosition>& writer_state_serializer() const override {
    return positions_;
  }

  // Commits exactly-once committables (an at-least-once job has none, unless it was restored
  // from an exactly-once one).
  absl::StatusOr<std::unique_ptr<Committer<BufferedStreamPosition>>> create_committer(
      CommitterInitContext& context) const override {
    std::shared_ptr<BigQueryWriteStub> stub = b_.stub_;
    if (!stub) {
      GCP_ASSIGN_OR_RETURN(stub, MakeBigQueryWriteStub(b_.client_));
    }
    return std::unique_ptr<Committer<BufferedStreamPosition>>(
        std::make_unique<BufferedStreamCommitter>(
            std::move(stub), b_.options_.recovery,
            b_.disposition_ == CreateDisposition::kCreateIfNeeded, context.metric_group(),
            std::chrono::seconds(60)));
  }
  const VersionedSerializer<BufferedStreamPosition>& committable_serializer() const override {
    return positions_;
  }

  LineageVertex lineage_vertex() const override { return SinkLineage(b_.fixed_); }

  // A BigQuery sink's lineage: the table, when every record goes to one.
  static LineageVertex SinkLineage(
      const std::optional<connector::BigQueryTableDestination>& fixed) {
    LineageVertex v;
    v.role = LineageVertex::Role::kSink;
    v.connector = "bigquery";
    if (fixed) v.datasets.push_back(connector::BigQueryDataset(*fixed));
    return v;
  }

 private:
  using Front =
      connector::AsyncSinkWriterFront<T, connector::BigQueryTableDestination, BigQueryRow>;
  using Writer =
      connector::CommittingSinkWriterFront<T, connector::BigQueryTableDestination, BigQueryRow,
                                           BufferedStreamPosition, BufferedStreamPosition>;
  BigQuerySink(Builder b, std::shared_ptr<const CdcWriterDescriptor> cdc_descriptor)
      : b_(std::move(b)), cdc_descriptor_(std::move(cdc_descriptor)) {}

  // A provider's answer; its failure (or exception) says which provider, keeping the code and
  // payloads (a ConfigurationError stays one).
  template <typename R>
  static absl::StatusOr<R> CallCdcProvider(const char* name,
                                           const std::function<absl::StatusOr<R>(const T&)>& f,
                                           const T& element) {
    absl::StatusOr<R> answer = absl::UnknownError("not called");
    try {
      answer = f(element);
    } catch (const std::exception& e) {
      answer = absl::InvalidArgumentError(std::string("threw: ") + e.what());
    } catch (...) {
      answer = absl::InvalidArgumentError("threw a non-standard exception");
    }
    if (answer.ok()) return answer;
    absl::Status failed(answer.status().code(),
                        fmt::format("the CDC {} provider failed: {}", name,
                                    std::string(answer.status().message())));
    answer.status().ForEachPayload(
        [&](absl::string_view url, const absl::Cord& payload) { failed.SetPayload(url, payload); });
    return failed;
  }

  // The row with its CDC pseudocolumns, or the providers' failure (a failure of the record).
  static absl::StatusOr<std::optional<BigQueryRow>> WithCdcPseudocolumns(
      const CdcOptions<T>& cdc, const CdcWriterDescriptor& descriptor, const T& element,
      BigQueryRow row) {
    absl::StatusOr<ChangeType> type = CallCdcProvider("change_type", cdc.change_type, element);
    if (!type.ok()) return type.status();
    std::optional<std::string> sequence;
    if (cdc.sequence_number) {
      absl::StatusOr<std::string> s =
          CallCdcProvider("sequence_number", cdc.sequence_number, element);
      if (!s.ok()) return s.status();
      sequence = std::move(*s);
    }
    GCP_RETURN_IF_ERROR(AppendCdcPseudocolumns(descriptor, *type, sequence, &row.bytes));
    return std::optional<BigQueryRow>(std::move(row));
  }

  Builder b_;
  std::shared_ptr<const CdcWriterDescriptor> cdc_descriptor_;  // set for CDC writes
  BufferedStreamPositionSerializer positions_;
};

}  // namespace gcpstream::bigquery

// build_file_loads() is defined there, once BigQuerySink is complete.
#include "gcpstream/bigquery/sink/bigquery_file_loads_sink.h"

#endif  // GCPSTREAM_BIGQUERY_SINK_BIGQUERY_SINK_H_
