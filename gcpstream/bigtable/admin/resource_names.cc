#include "gcpstream/bigtable/admin/resource_names.h"

#include <fmt/format.h>

#include <cctype>

namespace gcpstream::bigtable {

absl::Status ValidateTableId(std::string_view id) {
  auto invalid = [&](std::string_view why) {
    return absl::InvalidArgumentError(fmt::format(
        "'{}' is not a valid Bigtable table id: {} (ids are 1 to 50 characters: letters, digits, "
        "_ - and ., not starting with - or .)",
        id, why));
  };
  if (id.empty()) return invalid("it is empty");
  if (id.size() > 50) return invalid("too long");
  if (id[0] == '-' || id[0] == '.') return invalid("it starts with '-' or '.'");
  for (const char c : id) {
    const auto u = static_cast<unsigned char>(c);
    if (!(std::isalnum(u) || c == '_' || c == '-' || c == '.')) {
      return invalid(std::isprint(u) ? fmt::format("it contains '{}'", c)
                                     : fmt::format("it contains the byte {:#04x}", u));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateAppProfileId(std::string_view who, std::string_view id) {
  auto word = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  };
  bool ok = !id.empty() && id.size() <= 50 && word(id.front());
  for (char c : id) ok = ok && (word(c) || c == '-' || c == '.');
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(fmt::format(
      "{}: app_profile_id must start with a letter, digit or '_' and hold only letters, "
      "digits, '_', '-' and '.', at most 50 characters",
      who));
}

absl::Status ValidateTableDestination(std::string_view who,
                                      const std::optional<connector::TableDestination>& table) {
  if (!table || table->project.empty() || table->instance.empty() || table->table.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("{} needs table(...) with project, instance and table", who));
  }
  return ValidateTableId(table->table);
}

}  // namespace gcpstream::bigtable
