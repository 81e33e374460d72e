#ifndef GCPSTREAM_BIGQUERY_SINK_BIGQUERY_SERIALIZATION_SCHEMA_H_
#define GCPSTREAM_BIGQUERY_SINK_BIGQUERY_SERIALIZATION_SCHEMA_H_

#include <concepts>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/bigquery/schema/json_row_encoder.h"
#include "gcpstream/bigquery/schema/proto_row_converter.h"

namespace gcpstream::bigquery {

// One row on its way to BigQuery: the serialized writer-schema message AppendRows carries.
struct BigQueryRow {
  std::string bytes;
};

// Turns a record into a BigQuery row, or into nothing to skip it. Two forms:
//  - json(schema, to_json): JSON rows against a table schema you supply (the "JSON records"
//    serializer), encoded strictly by JsonRowEncoder;
//  - proto(descriptor, options, to_message) and proto_message(options): protobuf messages (a
//    generated class or a DynamicMessage) whose table schema is derived from the descriptor and
//    rewritten into BigQuery's types by ProtoRowConverter (the "Protobuf messages" serializer).
// Either way the schema creates a missing table. A row the encoder refuses is a failure of that
// record (for the failure handler); the function may also return an error of its own for the
// same purpose. Copyable (copies share the immutable encoder); thread-compatible.
template <typename T>
class BigQuerySerializationSchema {
 public:
  using ToJson = std::function<absl::StatusOr<std::optional<nlohmann::json>>(const T&)>;
  // A null message skips the record.
  using ToMessage =
      std::function<absl::StatusOr<std::unique_ptr<google::protobuf::Message>>(const T&)>;

  BigQuerySerializationSchema() = default;
  // INVALID_ARGUMENT when the schema breaks BigQuery's rules (ValidateTableSchema).
  static absl::StatusOr<BigQuerySerializationSchema> json(TableSchema schema, ToJson to_json) {
    auto encoder = JsonRowEncoder::Create(std::move(schema));
    if (!encoder.ok()) return encoder.status();
    std::shared_ptr<const JsonRowEncoder> shared(std::move(*encoder));
    auto encode = [shared, to_json = std::move(to_json)](
                      const T& record) -> absl::StatusOr<std::optional<BigQueryRow>> {
      auto json = to_json(record);
      if (!json.ok()) return json.status();
      if (!json->has_value()) return std::optional<BigQueryRow>();
      auto bytes = shared->encode(**json);
      if (!bytes.ok()) return bytes.status();
      return std::optional<BigQueryRow>(BigQueryRow{std::move(*bytes)});
    };
    return BigQuerySerializationSchema(shared->schema(), shared->writer_descriptor(), shared,
                                       std::move(encode));
  }

  // Records turned into messages of `descriptor` (which must outlive the sink). INVALID_ARGUMENT
  // when the descriptor cannot become a BigQuery schema (ProtoRowConverter::Create).
  static absl::StatusOr<BigQuerySerializationSchema> proto(
      const google::protobuf::Descriptor* descriptor, ProtoSchemaOptions options,
      ToMessage to_message) {
    auto converter = ProtoRowConverter::Create(descriptor, std::move(options));
    if (!converter.ok()) return converter.status();
    std::shared_ptr<const ProtoRowConverter> shared(std::move(*converter));
    auto encode = [shared, to_message = std::move(to_message)](
                      const T& record) -> absl::StatusOr<std::optional<BigQueryRow>> {
      auto message = to_message(record);
      if (!message.ok()) return message.status();
      if (*message == nullptr) return std::optional<BigQueryRow>();
      auto bytes = shared->encode(**message);
      if (!bytes.ok()) return bytes.status();
      return std::optional<BigQueryRow>(BigQueryRow{std::move(*bytes)});
    };
    return BigQuerySerializationSchema(shared->schema(), shared->writer_descriptor(), shared,
                                       std::move(encode));
  }

  // T is itself the message: a generated class (its descriptor is used), or any Message with
  // `descriptor` naming the type every record has.
  static absl::StatusOr<BigQuerySerializationSchema> proto_message(
      ProtoSchemaOptions options = {},
      const google::protobuf::Descriptor* descriptor =
          nullptr) requires std::derived_from<T, google::protobuf::Message> {
    if (descriptor == nullptr) {
      if constexpr (requires { T::descriptor(); }) descriptor = T::descriptor();
    }
    if (descriptor == nullptr) {
      return absl::InvalidArgumentError(
          "proto_message needs the message descriptor for a type without generated code");
    }
    auto converter = ProtoRowConverter::Create(descriptor, std::move(options));
    if (!converter.ok()) return converter.status();
    std::shared_ptr<const ProtoRowConverter> shared(std::move(*converter));
    auto encode = [shared](const T& record) -> absl::StatusOr<std::optional<BigQueryRow>> {
      auto bytes = shared->encode(record);
      if (!bytes.ok()) return bytes.status();
      return std::optional<BigQueryRow>(BigQueryRow{std::move(*bytes)});
    };
    return BigQuerySerializationSchema(shared->schema(), shared->writer_descriptor(), shared,
                                       std::move(encode));
  }

  bool valid() const { return encode_ != nullptr; }
  // The table schema rows are written in: supplied (json) or derived (proto).
  const TableSchema& schema() const { return *schema_; }
  const google::protobuf::DescriptorProto& writer_descriptor() const { return *descriptor_; }

  absl::StatusOr<std::optional<BigQueryRow>> serialize(const T& record,
                                                       const SinkWriterContext&) const {
    return encode_(record);
  }

 private:
  using Encode = std::function<absl::StatusOr<std::optional<BigQueryRow>>(const T&)>;
  BigQuerySerializationSchema(const TableSchema& schema,
                              const google::protobuf::DescriptorProto& descriptor,
                              std::shared_ptr<const void> owner, Encode encode)
      : schema_(&schema),
        descriptor_(&descriptor),
        owner_(std::move(owner)),
        encode_(std::move(encode)) {}

  const TableSchema* schema_ = nullptr;                            // owned by owner_
  const google::protobuf::DescriptorProto* descriptor_ = nullptr;  // owned by owner_
  std::shared_ptr<const void> owner_;
  Encode encode_;
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SINK_BIGQUERY_SERIALIZATION_SCHEMA_H_
