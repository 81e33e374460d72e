#include "tests/fakes/bigquery/fake_cdc.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace gcpstream::testing::bigquery_fake {
namespace {

// A value quoted in an error message: escaped (a message is UTF-8 text) and cut short.
std::string Quoted(std::string_view text) {
  constexpr std::size_t kMax = 64;
  const absl::string_view v(text.data(), std::min(text.size(), kMax));
  return absl::CEscape(v) + (text.size() > kMax ? "..." : "");
}

// The key of a row: its key columns' values, as JSON text.
std::string KeyOf(const std::vector<std::string>& columns, const nlohmann::json& row) {
  nlohmann::json key = nlohmann::json::array();
  for (const auto& c : columns) key.push_back(row.value(c, nlohmann::json()));
  return key.dump();
}

}  // namespace

bool IsCdcPseudocolumn(std::string_view name) {
  const absl::string_view n(name.data(), name.size());
  return absl::EqualsIgnoreCase(n, kChangeTypeField) ||
         absl::EqualsIgnoreCase(n, kChangeSequenceField);
}

absl::StatusOr<std::vector<std::uint64_t>> ParseChangeSequence(std::string_view text) {
  std::vector<std::uint64_t> out;
  const std::vector<absl::string_view> sections =
      absl::StrSplit(absl::string_view(text.data(), text.size()), '/');
  if (text.empty() || sections.size() > 4) {
    return absl::InvalidArgumentError(
        fmt::format("Invalid _CHANGE_SEQUENCE_NUMBER \"{}\": one to four sections separated by '/'",
                    Quoted(text)));
  }
  for (absl::string_view s : sections) {
    std::uint64_t v = 0;
    const bool hex = !s.empty() && s.size() <= 16 && std::all_of(s.begin(), s.end(), [](char c) {
      return absl::ascii_isxdigit(static_cast<unsigned char>(c));
    });
    if (!hex || !absl::SimpleHexAtoi(s, &v)) {
      return absl::InvalidArgumentError(fmt::format(
          "Invalid _CHANGE_SEQUENCE_NUMBER \"{}\": each section is 1 to 16 hexadecimal digits",
          Quoted(text)));
    }
    out.push_back(v);
  }
  return out;
}

int CompareChangeSequence(const std::vector<std::uint64_t>& a,
                          const std::vector<std::uint64_t>& b) {
  const std::size_t n = std::max(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t x = i < a.size() ? a[i] : 0;
    const std::uint64_t y = i < b.size() ? b[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

std::vector<std::string> PrimaryKeyColumns(const nlohmann::json& resource) {
  std::vector<std::string> out;
  const nlohmann::json* columns = nullptr;
  if (resource.contains("tableConstraints") && resource["tableConstraints"].is_object() &&
      resource["tableConstraints"].contains("primaryKey") &&
      resource["tableConstraints"]["primaryKey"].is_object()) {
    const auto& pk = resource["tableConstraints"]["primaryKey"];
    if (pk.contains("columns")) columns = &pk["columns"];
  }
  if (columns == nullptr || !columns->is_array()) return out;
  for (const auto& c : *columns) {
    if (c.is_string()) out.push_back(c.get<std::string>());
  }
  return out;
}

absl::Status CheckPrimaryKey(const nlohmann::json& resource, const Schema& schema) {
  if (!resource.contains("tableConstraints")) return absl::OkStatus();
  if (!resource["tableConstraints"].is_object()) {
    return absl::InvalidArgumentError("tableConstraints must be an object");
  }
  if (!resource["tableConstraints"].contains("primaryKey")) return absl::OkStatus();
  const auto& pk = resource["tableConstraints"]["primaryKey"];
  if (!pk.is_object() || !pk.contains("columns") || !pk["columns"].is_array() ||
      pk["columns"].empty()) {
    return absl::InvalidArgumentError("The primary key needs at least one column");
  }
  if (pk["columns"].size() > 16) {
    return absl::InvalidArgumentError("A primary key has at most 16 columns");
  }
  std::set<std::string> seen;
  for (const auto& c : pk["columns"]) {
    const Field* f = c.is_string() ? FindField(schema, c.get<std::string>()) : nullptr;
    if (f == nullptr) {
      return absl::InvalidArgumentError(
          fmt::format("The primary key column {} is not a column of the table", c.dump()));
    }
    if (f->mode == "REPEATED" || f->type == "RECORD") {
      return absl::InvalidArgumentError(
          fmt::format("The primary key column {} must be a scalar column", f->name));
    }
    if (!seen.insert(absl::AsciiStrToLower(f->name)).second) {
      return absl::InvalidArgumentError(
          fmt::format("The primary key names column {} twice", f->name));
    }
  }
  return absl::OkStatus();
}

void ApplyChanges(const std::vector<std::string>& key_columns, std::vector<nlohmann::json> changes,
                  absl::Time now, std::vector<nlohmann::json>* rows, std::vector<absl::Time>* times,
                  CdcLedger* ledger) {
  for (auto& change : changes) {
    const std::string type = change.value(kChangeTypeField, "");
    std::optional<std::vector<std::uint64_t>> sequence;
    if (change.contains(kChangeSequenceField)) {
      auto parsed = ParseChangeSequence(change[kChangeSequenceField].get<std::string>());
      if (parsed.ok()) sequence = std::move(*parsed);  // the decoder refused invalid ones
    }
    change.erase(kChangeTypeField);
    change.erase(kChangeSequenceField);
    const std::string key = KeyOf(key_columns, change);
    auto last = ledger->applied.find(key);
    if (sequence && last != ledger->applied.end() &&
        CompareChangeSequence(*sequence, last->second) < 0) {
      continue;  // older than what the key already shows
    }
    if (sequence) {
      ledger->applied[key] = *sequence;
    } else if (last != ledger->applied.end()) {
      ledger->applied.erase(last);
    }
    auto found = std::find_if(rows->begin(), rows->end(), [&](const nlohmann::json& r) {
      return KeyOf(key_columns, r) == key;
    });
    const auto index = static_cast<std::size_t>(found - rows->begin());
    if (type == "DELETE") {
      if (found != rows->end()) {
        rows->erase(found);
        times->erase(times->begin() + static_cast<std::ptrdiff_t>(index));
      }
      continue;
    }
    if (found != rows->end()) {
      *found = std::move(change);
      (*times)[index] = now;
    } else {
      rows->push_back(std::move(change));
      times->push_back(now);
    }
  }
}

}  // namespace gcpstream::testing::bigquery_fake
