#include "tests/fakes/bigquery/fake_write_service.h"

#include <fmt/format.h>

#include <thread>

#include "google/rpc/status.pb.h"
#include "tests/fakes/bigquery/fake_row_decoder.h"

namespace gcpstream::testing::bigquery_fake {
namespace {

namespace storage = google::cloud::bigquery::storage::v1;

google::rpc::Status ToRpcStatus(const grpc::Status& status) {
  google::rpc::Status out;
  if (!status.error_details().empty() && out.ParseFromString(status.error_details())) return out;
  out.set_code(static_cast<int>(status.error_code()));
  out.set_message(status.error_message());
  return out;
}

void SetError(storage::AppendRowsResponse& response, const grpc::Status& status) {
  *response.mutable_error() = ToRpcStatus(status);
}

// One AppendRows connection's state.
struct Connection {
  std::string stream;
  std::string table;
  bool default_stream = false;
  google::protobuf::DescriptorProto writer_schema;
  bool has_writer_schema = false;  // the connection declared one (kept after a refusal)
  std::unique_ptr<RowDecoder> decoder;
  std::int64_t decoder_version = -1;  // the table schema version the decoder was built for
  std::int64_t seen_version = -1;     // the schema version the client was last told about
};

class WriteService final : public storage::BigQueryWrite::Service {
 public:
  explicit WriteService(std::shared_ptr<FakeStore> store) : store_(std::move(store)) {}

  grpc::Status CreateWriteStream(grpc::ServerContext*,
                                 const storage::CreateWriteStreamRequest* request,
                                 storage::WriteStream* response) override {
    return store_->create_write_stream(request->parent(), request->write_stream().type(), response);
  }

  grpc::Status AppendRows(grpc::ServerContext* context,
                          grpc::ServerReaderWriter<storage::AppendRowsResponse,
                                                   storage::AppendRowsRequest>* stream) override {
    Connection c;
    storage::AppendRowsRequest request;
    while (stream->Read(&request)) {
      const std::int64_t ordinal = store_->next_append_ordinal();
      const FakeOptions options = store_->options();
      if (options.unavailable_on_append == ordinal) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            fmt::format("injected: append {} not applied", ordinal));
      }
      if (options.resource_exhausted_from > 0 && ordinal >= options.resource_exhausted_from &&
          ordinal < options.resource_exhausted_from + options.resource_exhausted_count) {
        return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                            fmt::format("injected: append {} over the AppendRows throughput quota, "
                                        "not applied",
                                        ordinal));
      }
      if (options.append_latency.count() > 0) std::this_thread::sleep_for(options.append_latency);
      if (options.stall_on_append == ordinal) {
        const auto until = std::chrono::steady_clock::now() + options.stall;
        while (std::chrono::steady_clock::now() < until && !context->IsCancelled()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        if (context->IsCancelled()) return grpc::Status::CANCELLED;
      }
      storage::AppendRowsResponse response;
      handle(c, request, response);
      if (options.lose_response_on_append == ordinal) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            fmt::format("injected: append {} applied, its response lost", ordinal));
      }
      if (!stream->Write(response)) break;
    }
    return grpc::Status::OK;
  }

  grpc::Status GetWriteStream(grpc::ServerContext*, const storage::GetWriteStreamRequest* request,
                              storage::WriteStream* response) override {
    return store_->get_write_stream(request->name(),
                                    request->view() == storage::WriteStreamView::FULL, response);
  }

  grpc::Status FinalizeWriteStream(grpc::ServerContext*,
                                   const storage::FinalizeWriteStreamRequest* request,
                                   storage::FinalizeWriteStreamResponse* response) override {
    std::int64_t count = 0;
    grpc::Status status = store_->finalize_write_stream(request->name(), &count);
    if (status.ok()) response->set_row_count(count);
    return status;
  }

  grpc::Status BatchCommitWriteStreams(
      grpc::ServerContext*, const storage::BatchCommitWriteStreamsRequest* request,
      storage::BatchCommitWriteStreamsResponse* response) override {
    return store_->batch_commit(*request, response);
  }

  grpc::Status FlushRows(grpc::ServerContext*, const storage::FlushRowsRequest* request,
                         storage::FlushRowsResponse* response) override {
    const std::int64_t ordinal = store_->next_flush_ordinal();
    if (store_->options().unavailable_on_flush == ordinal) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          fmt::format("injected: flush {} not applied", ordinal));
    }
    std::optional<std::int64_t> offset;
    if (request->has_offset()) offset = request->offset().value();
    std::int64_t flushed = 0;
    grpc::Status status = store_->flush_rows(request->write_stream(), offset, &flushed);
    if (status.ok()) response->set_offset(flushed);
    return status;
  }

 private:
  void handle(Connection& c, const storage::AppendRowsRequest& request,
              storage::AppendRowsResponse& response) {
    const std::size_t bytes = request.ByteSizeLong();
    if (bytes > kMaxAppendRequestBytes) {
      SetError(response, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                      fmt::format("AppendRows request too large: {} bytes, the "
                                                  "limit is {} bytes",
                                                  bytes, kMaxAppendRequestBytes)));
      return;
    }
    if (!request.write_stream().empty()) {
      if (!c.stream.empty() && request.write_stream() != c.stream) {
        SetError(response, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                        "this fake serves one write stream per connection"));
        return;
      }
      c.stream = request.write_stream();
    }
    response.set_write_stream(c.stream);
    if (c.stream.empty()) {
      SetError(response, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                      "the first AppendRows request names write_stream"));
      return;
    }
    // Like the stream name, the writer schema belongs to the connection from the request that
    // carried it, even when the service refuses that request (a table still missing, say): a
    // later request on the same connection leans on it.
    const bool new_schema = request.has_proto_rows() && request.proto_rows().has_writer_schema();
    if (new_schema) {
      c.writer_schema = request.proto_rows().writer_schema().proto_descriptor();
      c.has_writer_schema = true;
    }
    Schema schema;
    std::int64_t version = 0;
    if (grpc::Status s =
            store_->stream_table(c.stream, &c.table, &schema, &version, &c.default_stream);
        !s.ok()) {
      SetError(response, s);
      return;
    }
    if (!request.has_proto_rows()) {
      SetError(response, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                      "this fake accepts proto_rows only (not arrow_rows)"));
      return;
    }
    const auto& data = request.proto_rows();
    if (!c.has_writer_schema) {
      SetError(response,
               grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "the first AppendRows request on a connection carries writer_schema"));
      return;
    }
    // The writer schema stays the connection's even when the table refused it: each later
    // request is checked against it again (and refused again until the table changes).
    if (new_schema || c.decoder == nullptr || c.decoder_version != version) {
      RowDecoder::Refusal refusal;
      auto decoder = RowDecoder::Create(c.writer_schema, schema, &refusal);
      if (!decoder.ok()) {
        c.decoder.reset();
        SetError(response, WriteError(grpc::StatusCode::INVALID_ARGUMENT,
                                      refusal == RowDecoder::Refusal::kExtraField
                                          ? storage::StorageError::SCHEMA_MISMATCH_EXTRA_FIELDS
                                          : storage::StorageError::STORAGE_ERROR_CODE_UNSPECIFIED,
                                      c.stream, std::string(decoder.status().message())));
        return;
      }
      c.decoder = std::move(*decoder);
      c.decoder_version = version;
    }
    // A table schema changed since this connection started: say so on the next response.
    if (c.seen_version >= 0 && version > c.seen_version) {
      *response.mutable_updated_schema() = ToStorageSchema(schema);
    }
    c.seen_version = version;
    std::vector<nlohmann::json> rows;
    rows.reserve(static_cast<std::size_t>(data.rows().serialized_rows_size()));
    for (int i = 0; i < data.rows().serialized_rows_size(); ++i) {
      auto row = c.decoder->decode(data.rows().serialized_rows(i));
      if (!row.ok()) {
        auto* e = response.add_row_errors();
        e->set_index(i);
        e->set_code(storage::RowError::FIELDS_ERROR);
        e->set_message(std::string(row.status().message()));
        continue;
      }
      rows.push_back(std::move(*row));
    }
    if (response.row_errors_size() > 0) {
      // A request is accepted or refused whole: none of its rows lands.
      SetError(response, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                      fmt::format("Errors found while processing rows: {} of {} "
                                                  "refused (see row_errors)",
                                                  response.row_errors_size(),
                                                  data.rows().serialized_rows_size())));
      return;
    }
    std::optional<std::int64_t> offset;
    if (request.has_offset()) offset = request.offset().value();
    std::int64_t first = 0;
    if (grpc::Status s = store_->append(c.stream, offset, std::move(rows), &first); !s.ok()) {
      SetError(response, s);
      return;
    }
    auto* result = response.mutable_append_result();
    // The default stream's answers carry no offset (AppendResult reference).
    if (!c.default_stream) result->mutable_offset()->set_value(first);
  }

  std::shared_ptr<FakeStore> store_;
};

}  // namespace

std::unique_ptr<storage::BigQueryWrite::Service> MakeWriteService(
    std::shared_ptr<FakeStore> store) {
  return std::make_unique<WriteService>(std::move(store));
}

}  // namespace gcpstream::testing::bigquery_fake
