#ifndef GCPSTREAM_BIGQUERY_SINK_CDC_H_
#define GCPSTREAM_BIGQUERY_SINK_CDC_H_

#include <google/protobuf/descriptor.pb.h>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/bigquery/schema/table_schema.h"

// Change data capture (CDC) writes: rows appended to a table's default stream that BigQuery
// applies as an upsert or a delete of the row with the same primary key. Each row carries two
// write-only pseudocolumns (never table columns): `_CHANGE_TYPE` ("UPSERT" or "DELETE") and,
// optionally, `_CHANGE_SEQUENCE_NUMBER`, which orders the changes of one key (without it
// BigQuery orders them by ingestion time). Requirements, from the BigQuery CDC docs
// ("Stream table updates with change data capture"): the default stream, protobuf rows, and a
// declared primary key of at most 16 columns.
namespace gcpstream::bigquery {

inline constexpr char kChangeTypeColumn[] = "_CHANGE_TYPE";
inline constexpr char kChangeSequenceNumberColumn[] = "_CHANGE_SEQUENCE_NUMBER";
// A primary key has at most this many columns (BigQuery CDC docs).
inline constexpr std::size_t kMaxPrimaryKeyColumns = 16;

enum class ChangeType { kUpsert, kDelete };
// "UPSERT" / "DELETE": the pseudocolumn's value.
std::string_view ChangeTypeName(ChangeType type);

// The sequence value as the connector sends it: one to four '/'-separated sections, each one to
// 16 hexadecimal digits, letters made uppercase ("a1/0" -> "A1/0"). BigQuery compares it a
// section at a time as unsigned numbers. INVALID_ARGUMENT naming what is wrong: no section,
// more than four, an empty or over-long section, a character that is not a hex digit.
absl::StatusOr<std::string> CanonicalChangeSequenceNumber(std::string_view value);

// A sequence value from one to four unsigned numbers, each section padded to 16 digits so the
// strings also sort as text ({0x17306D33FB84D440, 1, 0} ->
// "17306D33FB84D440/0000000000000001/0000000000000000"). INVALID_ARGUMENT for no section or
// more than four.
absl::StatusOr<std::string> FormatChangeSequenceNumber(std::span<const std::uint64_t> sections);

// Where a sink's CDC metadata comes from (the reference's CdcOptions). Both are called once per
// record the serializer did not skip, with the original record, on the writer's thread; an
// error (or a thrown exception) is a serialization failure of that record, routed to the
// failure handler.
template <typename T>
struct CdcOptions {
  // Required: UPSERT or DELETE for each record.
  std::function<absl::StatusOr<ChangeType>(const T&)> change_type;
  // Optional for the whole sink; when set, every record needs a valid value
  // (CanonicalChangeSequenceNumber's rules). Unset: no sequence pseudocolumn is sent.
  std::function<absl::StatusOr<std::string>(const T&)> sequence_number;
};

// The table contract of a CDC destination (the reference's CdcTableOptions, verify-only).
struct CdcTableOptions {
  // The table's unenforced primary key, in key order. Required when the sink creates a missing
  // table; an existing table may supply its own (then this, when set, must equal it).
  std::vector<std::string> primary_key_columns;

  // INVALID_ARGUMENT unless the key (when declared) has 1..16 distinct top-level, non-repeated,
  // non-RECORD columns of `schema`.
  absl::Status validate(const TableSchema& schema) const;
};

// The primary key a table resource declares (tableConstraints.primaryKey.columns); empty when
// none.
std::vector<std::string> PrimaryKeyOf(const nlohmann::json& table);

// Checks an existing table against the CDC contract: it must declare a primary key, equal to
// `declared` when that is set (column names compared case-insensitively, in order), and every
// key column must be a column the rows carry (`schema`). FAILED_PRECONDITION naming the table,
// both keys and how to fix it.
absl::Status VerifyCdcTable(const std::string& table_name, const nlohmann::json& table,
                            const CdcTableOptions& declared, const TableSchema& schema);

// The serializer's writer descriptor with the pseudocolumns appended as optional string fields
// numbered after its highest field (`with_sequence` adds _CHANGE_SEQUENCE_NUMBER).
// INVALID_ARGUMENT when a top-level column of `schema` or field of `base` already has either
// name (case-insensitively): a configuration error, raised before any row is written.
struct CdcWriterDescriptor {
  google::protobuf::DescriptorProto descriptor;
  int change_type_field = 0;
  int sequence_number_field = 0;  // 0 without a sequence
};
absl::StatusOr<CdcWriterDescriptor> MakeCdcWriterDescriptor(
    const google::protobuf::DescriptorProto& base, const TableSchema& schema, bool with_sequence);

// Appends the pseudocolumns to a serialized row of the base descriptor (a protobuf message may
// carry its fields in any order, so the row needs no re-encoding). `sequence_number` is
// canonicalized first; it must be set exactly when the descriptor has the sequence field.
// INVALID_ARGUMENT (the row is left as it was) for a change type that is neither UPSERT nor
// DELETE, an invalid sequence number, or a missing or unexpected one.
absl::Status AppendCdcPseudocolumns(const CdcWriterDescriptor& d, ChangeType type,
                                    const std::optional<std::string>& sequence_number,
                                    std::string* row);

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SINK_CDC_H_
