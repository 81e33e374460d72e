#include "gcpstream/bigtable/client/row_mutation_entry.h"

#include <fmt/format.h>

#include <chrono>

#include "absl/strings/escaping.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/util/absl_fmt.h"
#include "gcpstream/util/utf8.h"

namespace gcpstream::bigtable {

void AggregateValue::to_proto(google::bigtable::v2::Value& out) const {
  switch (kind_) {
    case Kind::kInt64:
      out.set_int_value(int_);
      break;
    case Kind::kBytes:
      out.set_bytes_value(bytes_);
      break;
    case Kind::kRaw:
      out.set_raw_value(bytes_);
      break;
  }
}

RowMutationEntry::RowMutationEntry(std::string row_key) { entry_.set_row_key(std::move(row_key)); }

RowMutationEntry RowMutationEntry::from_proto(google::bigtable::v2::MutateRowsRequest::Entry e) {
  RowMutationEntry entry;
  entry.entry_ = std::move(e);
  return entry;
}

RowMutationEntry& RowMutationEntry::set_cell(std::string_view family, std::string_view qualifier,
                                             std::int64_t timestamp_micros, std::string value) {
  auto* set = entry_.add_mutations()->mutable_set_cell();
  set->set_family_name(std::string(family));
  set->set_column_qualifier(std::string(qualifier));
  set->set_timestamp_micros(timestamp_micros);
  set->set_value(std::move(value));
  return *this;
}

RowMutationEntry& RowMutationEntry::set_cell(std::string_view family, std::string_view qualifier,
                                             std::string value) {
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  return set_cell(family, qualifier, micros - micros % 1000, std::move(value));
}

RowMutationEntry& RowMutationEntry::set_cell_server_time(std::string_view family,
                                                         std::string_view qualifier,
                                                         std::string value) {
  return set_cell(family, qualifier, -1, std::move(value));
}

RowMutationEntry& RowMutationEntry::delete_cells(std::string_view family,
                                                 std::string_view qualifier, TimestampRange range) {
  auto* del = entry_.add_mutations()->mutable_delete_from_column();
  del->set_family_name(std::string(family));
  del->set_column_qualifier(std::string(qualifier));
  if (range.start_micros || range.end_micros) {
    auto* r = del->mutable_time_range();
    if (range.start_micros) r->set_start_timestamp_micros(*range.start_micros);
    if (range.end_micros) r->set_end_timestamp_micros(*range.end_micros);
  }
  return *this;
}

RowMutationEntry& RowMutationEntry::delete_family(std::string_view family) {
  entry_.add_mutations()->mutable_delete_from_family()->set_family_name(std::string(family));
  return *this;
}

RowMutationEntry& RowMutationEntry::delete_row() {
  entry_.add_mutations()->mutable_delete_from_row();
  return *this;
}

RowMutationEntry& RowMutationEntry::add_to_cell(std::string_view family, std::string_view qualifier,
                                                std::int64_t timestamp_micros,
                                                const AggregateValue& input) {
  auto* add = entry_.add_mutations()->mutable_add_to_cell();
  add->set_family_name(std::string(family));
  add->mutable_column_qualifier()->set_raw_value(std::string(qualifier));
  add->mutable_timestamp()->set_raw_timestamp_micros(timestamp_micros);
  input.to_proto(*add->mutable_input());
  return *this;
}

RowMutationEntry& RowMutationEntry::merge_to_cell(std::string_view family,
                                                  std::string_view qualifier,
                                                  std::int64_t timestamp_micros,
                                                  const AggregateValue& input) {
  auto* merge = entry_.add_mutations()->mutable_merge_to_cell();
  merge->set_family_name(std::string(family));
  merge->mutable_column_qualifier()->set_raw_value(std::string(qualifier));
  merge->mutable_timestamp()->set_raw_timestamp_micros(timestamp_micros);
  input.to_proto(*merge->mutable_input());
  return *this;
}

const std::string* FamilyOf(const google::bigtable::v2::Mutation& m) {
  switch (m.mutation_case()) {
    case google::bigtable::v2::Mutation::kSetCell:
      return &m.set_cell().family_name();
    case google::bigtable::v2::Mutation::kDeleteFromColumn:
      return &m.delete_from_column().family_name();
    case google::bigtable::v2::Mutation::kDeleteFromFamily:
      return &m.delete_from_family().family_name();
    case google::bigtable::v2::Mutation::kAddToCell:
      return &m.add_to_cell().family_name();
    case google::bigtable::v2::Mutation::kMergeToCell:
      return &m.merge_to_cell().family_name();
    default:
      return nullptr;
  }
}

std::string RowKeyForMessages(const std::string& row_key) {
  return absl::CHexEscape(absl::string_view(row_key).substr(0, 64));
}

absl::Status ValidateRowKey(const std::string& row_key) {
  if (row_key.empty()) {
    return absl::InvalidArgumentError("the entry has an empty row key; Bigtable requires one");
  }
  if (row_key.size() > static_cast<std::size_t>(kMaxRowKeyBytes)) {
    return absl::InvalidArgumentError(
        fmt::format("the row key starting '{}' is {} bytes; Bigtable accepts at most {}",
                    RowKeyForMessages(row_key), row_key.size(), kMaxRowKeyBytes));
  }
  return absl::OkStatus();
}

absl::Status ValidateMutations(
    const std::string& row_key,
    const google::protobuf::RepeatedPtrField<google::bigtable::v2::Mutation>& mutations) {
  // Row keys in messages are cut: a 4 KiB key is not worth a log line.
  // Escaped: a key is bytes, and these messages end up in logs and dead-letter attributes.
  const std::string key = RowKeyForMessages(row_key);
  if (mutations.size() > kMaxMutationsPerRequest) {
    return absl::InvalidArgumentError(fmt::format(
        "the entry for row '{}' carries {} mutations; Bigtable accepts at most {} in one "
        "request",
        key, mutations.size(), kMaxMutationsPerRequest));
  }
  for (const auto& m : mutations) {
    // Family names are protobuf strings: a name that is not UTF-8 makes a request the service
    // cannot parse, so the entry fails here, alone, before any RPC.
    if (const std::string* family = FamilyOf(m); family != nullptr) {
      if (auto at = util::InvalidUtf8At(*family)) {
        return absl::InvalidArgumentError(fmt::format(
            "the entry for row '{}' names a column family that is not valid UTF-8 (byte {})", key,
            *at));
      }
    }
    if (!m.has_set_cell()) continue;
    // -1 asks the server for its time; otherwise microseconds at the table's millisecond
    // granularity. The emulator answers anything else with UNKNOWN/INTERNAL, which reads as
    // an outage; the service with INVALID_ARGUMENT for the whole request.
    const std::int64_t ts = m.set_cell().timestamp_micros();
    if (ts < -1 || (ts >= 0 && ts % 1000 != 0)) {
      return absl::InvalidArgumentError(fmt::format(
          "the entry for row '{}' sets a cell at timestamp {} us; Bigtable accepts -1 (server "
          "time) or a non-negative multiple of 1000 (millisecond granularity)",
          key, ts));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateEntry(const google::bigtable::v2::MutateRowsRequest::Entry& entry) {
  GCP_RETURN_IF_ERROR(ValidateRowKey(entry.row_key()));
  if (entry.mutations_size() == 0) {
    return absl::InvalidArgumentError(
        fmt::format("the entry for row '{}' has no mutation", RowKeyForMessages(entry.row_key())));
  }
  return ValidateMutations(entry.row_key(), entry.mutations());
}

absl::Status RowMutationEntry::validate() const { return ValidateEntry(entry_); }

}  // namespace gcpstream::bigtable
