#include "tests/fakes/bigquery/fake_read_service.h"

#include <fmt/format.h>
#include <google/protobuf/util/time_util.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "absl/strings/ascii.h"
#include "tests/fakes/bigquery/fake_avro.h"
#include "tests/fakes/bigquery/fake_row_restriction.h"

namespace gcpstream::testing::bigquery_fake {

namespace {

namespace v1 = google::cloud::bigquery::storage::v1;
using google::protobuf::util::TimeUtil;

grpc::Status ToGrpc(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

class ReadService final : public v1::BigQueryRead::Service {
 public:
  explicit ReadService(std::shared_ptr<FakeStore> store) : store_(std::move(store)) {}

  grpc::Status CreateReadSession(grpc::ServerContext*, const v1::CreateReadSessionRequest* request,
                                 v1::ReadSession* out) override {
    const v1::ReadSession& asked = request->read_session();
    if (request->parent().rfind("projects/", 0) != 0) {
      return {grpc::StatusCode::INVALID_ARGUMENT, "parent must be projects/{project}"};
    }
    if (asked.data_format() != v1::DataFormat::AVRO) {
      return {grpc::StatusCode::INVALID_ARGUMENT,
              "the fake BigQuery serves AVRO read sessions only (data_format AVRO)"};
    }
    if (request->max_stream_count() < 0 || request->preferred_min_stream_count() < 0) {
      return {grpc::StatusCode::INVALID_ARGUMENT, "stream counts must not be negative"};
    }
    if (request->max_stream_count() > 0 &&
        request->preferred_min_stream_count() > request->max_stream_count()) {
      return {grpc::StatusCode::INVALID_ARGUMENT,
              "preferred_min_stream_count must not exceed max_stream_count"};
    }
    std::optional<absl::Time> at;
    if (asked.has_table_modifiers() && asked.table_modifiers().has_snapshot_time()) {
      at = absl::FromUnixMicros(
          TimeUtil::TimestampToMicroseconds(asked.table_modifiers().snapshot_time()));
    }
    Schema schema;
    std::vector<nlohmann::json> rows;
    if (absl::Status st = store_->snapshot(asked.table(), at, &schema, &rows); !st.ok()) {
      return ToGrpc(st);
    }
    // The restriction reads the table's columns, selected or not.
    if (!asked.read_options().row_restriction().empty()) {
      auto restriction = RowRestriction::Parse(asked.read_options().row_restriction(), schema);
      if (!restriction.ok()) return ToGrpc(restriction.status());
      std::erase_if(rows, [&](const nlohmann::json& r) { return !restriction->matches(r); });
    }
    // Projection.
    if (asked.read_options().selected_fields_size() > 0) {
      Schema projected;
      for (const std::string& name : asked.read_options().selected_fields()) {
        const Field* f = FindField(schema, name);
        if (f == nullptr) {
          return {grpc::StatusCode::INVALID_ARGUMENT,
                  fmt::format("request failed: the user does not have field {} in the table",
                              name.substr(0, 300))};
        }
        projected.push_back(*f);
      }
      // The session keeps the table's column order.
      Schema ordered;
      for (const Field& f : schema) {
        if (FindField(projected, f.name) != nullptr) ordered.push_back(f);
      }
      schema = std::move(ordered);
    }
    auto writer = AvroRowsWriter::Create(schema);
    if (!writer.ok()) return ToGrpc(writer.status());

    const FakeOptions options = store_->options();
    const auto n = static_cast<std::int64_t>(rows.size());
    const std::int64_t per = std::max(1, options.read_rows_per_stream);
    std::int64_t streams = n == 0 ? 0 : (n + per - 1) / per;
    if (request->preferred_min_stream_count() > streams) {
      streams = std::min<std::int64_t>(request->preferred_min_stream_count(), n);
    }
    if (request->max_stream_count() > 0) {
      streams = std::min<std::int64_t>(streams, request->max_stream_count());
    }
    const absl::Time now = store_->now();
    std::lock_guard lock(mu_);
    Session session;
    session.name = fmt::format("{}/locations/us/sessions/s{}", request->parent(), ++sessions_);
    session.expire = now + options.read_session_lifetime;
    session.avro_schema = (*writer)->schema_json();
    session.columns = schema;
    out->set_name(session.name);
    out->set_table(asked.table());
    out->set_data_format(v1::DataFormat::AVRO);
    *out->mutable_read_options() = asked.read_options();
    if (asked.has_table_modifiers()) *out->mutable_table_modifiers() = asked.table_modifiers();
    *out->mutable_expire_time() =
        TimeUtil::MicrosecondsToTimestamp(absl::ToUnixMicros(session.expire));
    out->mutable_avro_schema()->set_schema(session.avro_schema);
    out->set_estimated_row_count(n);
    for (std::int64_t i = 0; i < streams; ++i) {
      const std::int64_t begin = n * i / streams, end = n * (i + 1) / streams;
      Stream stream;
      stream.session = session.name;
      stream.rows.assign(rows.begin() + begin, rows.begin() + end);
      const std::string name = fmt::format("{}/streams/{}", session.name, i);
      streams_[name] = std::move(stream);
      out->add_streams()->set_name(name);
    }
    sessions_by_name_[session.name] = std::move(session);
    return grpc::Status::OK;
  }

  grpc::Status ReadRows(grpc::ServerContext* context, const v1::ReadRowsRequest* request,
                        grpc::ServerWriter<v1::ReadRowsResponse>* writer) override {
    std::vector<nlohmann::json> rows;
    Schema columns;
    {
      std::lock_guard lock(mu_);
      auto it = streams_.find(request->read_stream());
      if (it == streams_.end()) {
        return {grpc::StatusCode::NOT_FOUND,
                fmt::format("Not found: read stream {}", request->read_stream())};
      }
      const Session& session = sessions_by_name_.at(it->second.session);
      if (store_->now() >= session.expire) {
        return {grpc::StatusCode::FAILED_PRECONDITION,
                fmt::format("there was an error operating on '{}': session expired at {}",
                            request->read_stream(),
                            absl::FormatTime(session.expire, absl::UTCTimeZone()))};
      }
      const auto size = static_cast<std::int64_t>(it->second.rows.size());
      if (request->offset() < 0 || request->offset() > size) {
        return {grpc::StatusCode::FAILED_PRECONDITION,
                fmt::format("the offset {} is beyond the end of the stream ({} rows)",
                            request->offset(), size)};
      }
      rows.assign(it->second.rows.begin() + request->offset(), it->second.rows.end());
      columns = session.columns;
    }
    auto avro = AvroRowsWriter::Create(columns);
    if (!avro.ok()) return ToGrpc(avro.status());
    const FakeOptions options = store_->options();
    const std::size_t per = static_cast<std::size_t>(std::max(1, options.read_rows_per_response));
    std::size_t sent = 0;
    while (sent < rows.size()) {
      if (context->IsCancelled()) return {grpc::StatusCode::CANCELLED, "cancelled"};
      std::size_t end = std::min(rows.size(), sent + per);
      const bool fail = options.read_fail_after_rows > 0;
      if (fail && sent < static_cast<std::size_t>(options.read_fail_after_rows)) {
        end = std::min(end, static_cast<std::size_t>(options.read_fail_after_rows));
      }
      v1::ReadRowsResponse response;
      std::string* block = response.mutable_avro_rows()->mutable_serialized_binary_rows();
      for (std::size_t i = sent; i < end; ++i) {
        if (absl::Status st = (*avro)->append(rows[i], block); !st.ok()) return ToGrpc(st);
      }
      response.set_row_count(static_cast<std::int64_t>(end - sent));
      if (!writer->Write(response)) return {grpc::StatusCode::CANCELLED, "the client went away"};
      sent = end;
      if (fail && sent == static_cast<std::size_t>(options.read_fail_after_rows) &&
          sent < rows.size() && store_->take_read_failure()) {
        return {static_cast<grpc::StatusCode>(options.read_fail_code), options.read_fail_message};
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status SplitReadStream(grpc::ServerContext*, const v1::SplitReadStreamRequest* request,
                               v1::SplitReadStreamResponse* out) override {
    if (!(request->fraction() > 0 && request->fraction() < 1)) {
      return {grpc::StatusCode::INVALID_ARGUMENT, "fraction must be in (0, 1)"};
    }
    std::lock_guard lock(mu_);
    auto it = streams_.find(request->name());
    if (it == streams_.end()) {
      return {grpc::StatusCode::NOT_FOUND,
              fmt::format("Not found: read stream {}", request->name())};
    }
    const auto n = static_cast<std::int64_t>(it->second.rows.size());
    const auto k = static_cast<std::int64_t>(static_cast<double>(n) * request->fraction());
    if (k <= 0 || k >= n) return grpc::Status::OK;  // too small to split
    Stream primary{it->second.session, {it->second.rows.begin(), it->second.rows.begin() + k}};
    Stream remainder{it->second.session, {it->second.rows.begin() + k, it->second.rows.end()}};
    it->second.rows.resize(static_cast<std::size_t>(k));
    const std::string p = fmt::format("{}-p{}", request->name(), ++splits_);
    const std::string r = fmt::format("{}-r{}", request->name(), splits_);
    streams_[p] = std::move(primary);
    streams_[r] = std::move(remainder);
    out->mutable_primary_stream()->set_name(p);
    out->mutable_remainder_stream()->set_name(r);
    return grpc::Status::OK;
  }

 private:
  struct Session {
    std::string name;
    absl::Time expire;
    std::string avro_schema;
    Schema columns;
  };
  struct Stream {
    std::string session;
    std::vector<nlohmann::json> rows;
  };

  std::shared_ptr<FakeStore> store_;
  std::mutex mu_;
  std::int64_t sessions_ = 0;
  std::int64_t splits_ = 0;
  std::map<std::string, Session> sessions_by_name_;
  std::map<std::string, Stream> streams_;
};

}  // namespace

std::unique_ptr<v1::BigQueryRead::Service> MakeReadService(std::shared_ptr<FakeStore> store) {
  return std::make_unique<ReadService>(std::move(store));
}

}  // namespace gcpstream::testing::bigquery_fake
