#ifndef GCPSTREAM_BIGQUERY_SINK_BIGQUERY_SERIALIZATION_SCHEMA_H_
#define GCPSTREAM_BIGQUERY_SINK_BIGQUERY_SERIALIZATION_SCHEMA_H_

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/bigquery/schema/json_row_encoder.h"

namespace gcpstream::bigquery {

// One row on its way to BigQuery: the serialized writer-schema message AppendRows carries.
struct BigQueryRow {
  std::string bytes;
};

// Turns a record into a BigQuery row, or into nothing to skip it. Today one form exists: JSON
// rows against a table schema you supply (the "JSON records" serializer), encoded strictly by
// JsonRowEncoder; the same schema creates a missing table. A row the encoder refuses is a
// failure of that record (for the failure handler); the function may also return an error of
// its own for the same purpose. Copyable; thread-compatible (one copy per writer).
template <typename T>
class BigQuerySerializationSchema {
 public:
  using ToJson = std::function<absl::StatusOr<std::optional<nlohmann::json>>(const T&)>;

  BigQuerySerializationSchema() = default;
  // INVALID_ARGUMENT when the schema breaks BigQuery's rules (ValidateTableSchema).
  static absl::StatusOr<BigQuerySerializationSchema> json(TableSchema schema, ToJson to_json) {
    auto encoder = JsonRowEncoder::Create(std::move(schema));
    if (!encoder.ok()) return encoder.status();
    BigQuerySerializationSchema s;
    s.encoder_ = std::shared_ptr<const JsonRowEncoder>(std::move(*encoder));
    s.to_json_ = std::move(to_json);
    return s;
  }

  bool valid() const { return encoder_ != nullptr && to_json_ != nullptr; }
  const TableSchema& schema() const { return encoder_->schema(); }
  const google::protobuf::DescriptorProto& writer_descriptor() const {
    return encoder_->writer_descriptor();
  }

  absl::StatusOr<std::optional<BigQueryRow>> serialize(const T& record,
                                                       const SinkWriterContext&) const {
    auto json = to_json_(record);
    if (!json.ok()) return json.status();
    if (!json->has_value()) return std::optional<BigQueryRow>();
    auto bytes = encoder_->encode(**json);
    if (!bytes.ok()) return bytes.status();
    return std::optional<BigQueryRow>(BigQueryRow{std::move(*bytes)});
  }

 private:
  std::shared_ptr<const JsonRowEncoder> encoder_;
  ToJson to_json_;
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SINK_BIGQUERY_SERIALIZATION_SCHEMA_H_
