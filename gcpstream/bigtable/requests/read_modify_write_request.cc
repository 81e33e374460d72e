#include "gcpstream/bigtable/requests/read_modify_write_request.h"

#include <fmt/format.h>

#include "absl/status/statusor.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/bigtable/client/row_mutation_entry.h"
#include "gcpstream/util/utf8.h"

namespace gcpstream::bigtable {

namespace v2 = google::bigtable::v2;

ReadModifyWriteRequest& ReadModifyWriteRequest::append(std::string family, std::string qualifier,
                                                       std::string value) {
  auto& rule = rules_.emplace_back();
  rule.set_family_name(std::move(family));
  rule.set_column_qualifier(std::move(qualifier));
  rule.set_append_value(std::move(value));
  return *this;
}

ReadModifyWriteRequest& ReadModifyWriteRequest::increment(std::string family, std::string qualifier,
                                                          std::int64_t amount) {
  auto& rule = rules_.emplace_back();
  rule.set_family_name(std::move(family));
  rule.set_column_qualifier(std::move(qualifier));
  rule.set_increment_amount(amount);
  return *this;
}

std::int64_t ReadModifyWriteRequest::byte_size() const {
  std::size_t bytes = row_key_.size();
  for (const auto& rule : rules_) bytes += rule.ByteSizeLong();
  return static_cast<std::int64_t>(bytes);
}

absl::Status ReadModifyWriteRequest::validate() const {
  GCP_RETURN_IF_ERROR(ValidateRowKey(row_key_));
  const std::string key = RowKeyForMessages(row_key_);
  if (rules_.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("the read-modify-write request for row '{}' has no rule", key));
  }
  if (static_cast<std::int64_t>(rules_.size()) > kMaxMutationsPerRequest) {
    return absl::InvalidArgumentError(fmt::format(
        "the read-modify-write request for row '{}' has {} rules; Bigtable accepts at most {}", key,
        rules_.size(), kMaxMutationsPerRequest));
  }
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    const auto& rule = rules_[i];
    if (auto at = util::InvalidUtf8At(rule.family_name())) {
      return absl::InvalidArgumentError(fmt::format(
          "rule {} of the read-modify-write request for row '{}' names a column family that is "
          "not valid UTF-8 (byte {})",
          i, key, *at));
    }
    if (rule.has_append_value() && rule.append_value().empty()) {
      return absl::InvalidArgumentError(fmt::format(
          "rule {} of the read-modify-write request for row '{}' appends an empty value", i, key));
    }
  }
  return absl::OkStatus();
}

v2::ReadModifyWriteRowRequest ReadModifyWriteRequest::to_proto(
    const std::string& table_name, const std::string& app_profile_id) const {
  v2::ReadModifyWriteRowRequest r;
  r.set_table_name(table_name);
  r.set_app_profile_id(app_profile_id);
  r.set_row_key(row_key_);
  for (const auto& rule : rules_) *r.add_rules() = rule;
  return r;
}

absl::StatusOr<std::int64_t> DecodeCounter(const std::string& value) {
  if (value.size() != 8) {
    return absl::InvalidArgumentError(
        fmt::format("a Bigtable counter is 8 bytes big-endian; this value has {}", value.size()));
  }
  std::uint64_t v = 0;
  for (unsigned char byte : value) v = (v << 8) | byte;
  return static_cast<std::int64_t>(v);
}

}  // namespace gcpstream::bigtable
