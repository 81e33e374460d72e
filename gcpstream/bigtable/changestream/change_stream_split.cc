#include "gcpstream/bigtable/changestream/change_stream_split.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "absl/strings/escaping.h"
#include "gcpstream/api/status_macros.h"

namespace gcpstream::bigtable {
namespace {

using nlohmann::json;

// End comparison where the empty end is past every key.
bool EndLess(const std::string& a, const std::string& b) {
  if (a.empty()) return false;
  return b.empty() || a < b;
}

absl::Status Corrupt(std::string_view what, std::string_view detail) {
  return absl::DataLossError(
      fmt::format("Bigtable change stream {}: corrupt state ({})", what, detail));
}

// Microseconds a protobuf Timestamp can hold (years 1 to 9999).
absl::Status CheckMicros(std::int64_t us, std::string_view what) {
  constexpr std::int64_t kMin = -62'135'596'800'000'000;
  constexpr std::int64_t kMax = 253'402'300'799'999'999;
  if (us < kMin || us > kMax) return Corrupt(what, "a time outside years 1 to 9999");
  return absl::OkStatus();
}

json RangeJson(const RowKeyRange& r) {
  return json{{"start", absl::Base64Escape(r.start)}, {"end", absl::Base64Escape(r.end)}};
}

absl::StatusOr<std::string> Bytes(const json& j, const char* key, std::string_view what) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) {
    return Corrupt(what, fmt::format("no {}", key));
  }
  std::string out;
  if (!absl::Base64Unescape(j[key].get<std::string>(), &out)) {
    return Corrupt(what, fmt::format("{} is not base64", key));
  }
  return out;
}

absl::StatusOr<std::int64_t> Int(const json& j, const char* key, std::string_view what) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer()) {
    return Corrupt(what, fmt::format("no {}", key));
  }
  return j[key].get<std::int64_t>();
}

absl::StatusOr<RowKeyRange> ParseRange(const json& j, std::string_view what) {
  RowKeyRange r;
  GCP_ASSIGN_OR_RETURN(r.start, Bytes(j, "start", what));
  GCP_ASSIGN_OR_RETURN(r.end, Bytes(j, "end", what));
  if (!r.end.empty() && r.start >= r.end) return Corrupt(what, "an empty partition range");
  return r;
}

json TokensJson(const std::vector<PartitionToken>& tokens) {
  json out = json::array();
  for (const auto& t : tokens) {
    out.push_back(json{{"range", RangeJson(t.range)}, {"token", absl::Base64Escape(t.token)}});
  }
  return out;
}

absl::StatusOr<std::vector<PartitionToken>> ParseTokens(const json& j, std::string_view what) {
  if (!j.is_array()) return Corrupt(what, "tokens");
  std::vector<PartitionToken> out;
  for (const auto& t : j) {
    PartitionToken token;
    if (!t.is_object() || !t.contains("range")) return Corrupt(what, "a token without a range");
    GCP_ASSIGN_OR_RETURN(token.range, ParseRange(t["range"], what));
    GCP_ASSIGN_OR_RETURN(token.token, Bytes(t, "token", what));
    out.push_back(std::move(token));
  }
  return out;
}

json SplitJson(const BigtableChangeStreamSplit& s) {
  return json{{"id", s.id},
              {"partition", RangeJson(s.partition)},
              {"tokens", TokensJson(s.tokens)},
              {"start_us", absl::ToUnixMicros(s.start_time)},
              {"low_watermark_us", absl::ToUnixMicros(s.low_watermark)}};
}

absl::StatusOr<BigtableChangeStreamSplit> ParseSplit(const json& j, std::string_view what) {
  BigtableChangeStreamSplit s;
  if (!j.is_object() || !j.contains("id") || !j["id"].is_string() || !j.contains("partition") ||
      !j.contains("tokens")) {
    return Corrupt(what, "a split without id, partition or tokens");
  }
  s.id = j["id"].get<std::string>();
  if (s.id.empty()) return Corrupt(what, "an empty split id");
  GCP_ASSIGN_OR_RETURN(s.partition, ParseRange(j["partition"], what));
  GCP_ASSIGN_OR_RETURN(s.tokens, ParseTokens(j["tokens"], what));
  if (!s.tokens.empty() && !TokensCover(s.tokens, s.partition)) {
    return Corrupt(what, "tokens that do not cover their partition");
  }
  GCP_ASSIGN_OR_RETURN(std::int64_t start, Int(j, "start_us", what));
  GCP_ASSIGN_OR_RETURN(std::int64_t low, Int(j, "low_watermark_us", what));
  GCP_RETURN_IF_ERROR(CheckMicros(start, what));
  GCP_RETURN_IF_ERROR(CheckMicros(low, what));
  s.start_time = absl::FromUnixMicros(start);
  s.low_watermark = absl::FromUnixMicros(low);
  return s;
}

absl::StatusOr<json> Parse(std::string_view bytes, std::string_view what) {
  json j = json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Corrupt(what, "not JSON");
  return j;
}

}  // namespace

bool RangeContains(const RowKeyRange& outer, const RowKeyRange& inner) {
  return inner.start >= outer.start && !EndLess(outer.end, inner.end);
}

bool TokensCover(std::vector<PartitionToken> tokens, const RowKeyRange& range) {
  if (tokens.empty()) return false;
  std::sort(tokens.begin(), tokens.end(),
            [](const auto& a, const auto& b) { return a.range.start < b.range.start; });
  std::string at = range.start;
  bool at_end = false;
  for (const auto& t : tokens) {
    if (at_end || t.range.start != at) return false;
    at = t.range.end;
    at_end = t.range.end.empty();
  }
  return range.end.empty() ? at_end : (!at_end && at == range.end);
}

absl::StatusOr<std::string> BigtableChangeStreamSplitSerializer::serialize(
    const BigtableChangeStreamSplit& split) const {
  return SplitJson(split).dump();
}

absl::StatusOr<BigtableChangeStreamSplit> BigtableChangeStreamSplitSerializer::deserialize(
    int version, std::string_view bytes) const {
  if (version != 1) return Corrupt("split", fmt::format("unknown version {}", version));
  GCP_ASSIGN_OR_RETURN(json j, Parse(bytes, "split"));
  return ParseSplit(j, "split");
}

absl::StatusOr<std::string> BigtableChangeStreamEnumStateSerializer::serialize(
    const BigtableChangeStreamEnumState& state) const {
  json entries = json::array();
  for (const auto& e : state.entries) {
    entries.push_back(json{{"split", SplitJson(e.split)}, {"subtask", e.subtask}});
  }
  json tokens = json::array();
  for (const auto& t : state.tokens) {
    tokens.push_back(json{{"token", TokensJson({t.token})[0]},
                          {"low_watermark_us", absl::ToUnixMicros(t.low_watermark)},
                          {"parent", t.parent}});
  }
  json successors = json::array();
  for (const auto& r : state.successors) successors.push_back(RangeJson(r));
  return json{{"started", state.started},
              {"entries", entries},
              {"tokens", tokens},
              {"successors", successors},
              {"next_id", state.next_id}}
      .dump();
}

namespace {

// Ranges that must not overlap (live partitions; handed-over tokens).
bool Disjoint(std::vector<RowKeyRange> ranges) {
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    const auto& prev = ranges[i - 1];
    if (prev.end.empty() || prev.end > ranges[i].start) return false;
  }
  return true;
}

// The number after the last '#' of a coordinator-made split id.
std::optional<std::int64_t> IdNumber(const std::string& id) {
  const auto hash = id.rfind('#');
  if (hash == std::string::npos) return std::nullopt;
  std::int64_t n = 0;
  for (std::size_t i = hash + 1; i < id.size(); ++i) {
    if (id[i] < '0' || id[i] > '9' || n > (std::int64_t{1} << 53)) return std::nullopt;
    n = n * 10 + (id[i] - '0');
  }
  return hash + 1 < id.size() ? std::optional<std::int64_t>(n) : std::nullopt;
}

}  // namespace

absl::StatusOr<BigtableChangeStreamEnumState> BigtableChangeStreamEnumStateSerializer::deserialize(
    int version, std::string_view bytes) const {
  constexpr std::string_view kWhat = "coordinator";
  if (version != 1) return Corrupt(kWhat, fmt::format("unknown version {}", version));
  GCP_ASSIGN_OR_RETURN(json j, Parse(bytes, kWhat));
  if (!j.is_object() || !j.contains("started") || !j["started"].is_boolean() ||
      !j.contains("entries") || !j["entries"].is_array() || !j.contains("tokens") ||
      !j["tokens"].is_array() || !j.contains("successors") || !j["successors"].is_array()) {
    return Corrupt(kWhat, "missing fields");
  }
  BigtableChangeStreamEnumState state;
  state.started = j["started"].get<bool>();
  GCP_ASSIGN_OR_RETURN(state.next_id, Int(j, "next_id", kWhat));
  if (state.next_id < 1) return Corrupt(kWhat, "next_id below 1");
  std::set<std::string> ids;
  std::vector<RowKeyRange> live;
  for (const auto& e : j["entries"]) {
    BigtableChangeStreamEnumState::Entry entry;
    if (!e.is_object() || !e.contains("split")) return Corrupt(kWhat, "an entry without a split");
    GCP_ASSIGN_OR_RETURN(entry.split, ParseSplit(e["split"], kWhat));
    GCP_ASSIGN_OR_RETURN(std::int64_t subtask, Int(e, "subtask", kWhat));
    if (subtask < -1 || subtask > 1 << 20) return Corrupt(kWhat, "subtask out of range");
    entry.subtask = static_cast<int>(subtask);
    auto number = IdNumber(entry.split.id);
    if (!number || *number >= state.next_id) {
      return Corrupt(kWhat, "a split id the coordinator cannot have made");
    }
    if (!ids.insert(entry.split.id).second) return Corrupt(kWhat, "a split id twice");
    live.push_back(entry.split.partition);
    state.entries.push_back(std::move(entry));
  }
  if (!Disjoint(live)) return Corrupt(kWhat, "overlapping partitions");
  std::vector<RowKeyRange> handed;
  for (const auto& t : j["tokens"]) {
    HandedOverToken token;
    if (!t.is_object() || !t.contains("token") || !t.contains("parent") ||
        !t["parent"].is_string()) {
      return Corrupt(kWhat, "a handed-over token without token or parent");
    }
    GCP_ASSIGN_OR_RETURN(auto parsed, ParseTokens(json::array({t["token"]}), kWhat));
    token.token = std::move(parsed.front());
    GCP_ASSIGN_OR_RETURN(std::int64_t low, Int(t, "low_watermark_us", kWhat));
    GCP_RETURN_IF_ERROR(CheckMicros(low, kWhat));
    token.low_watermark = absl::FromUnixMicros(low);
    token.parent = t["parent"].get<std::string>();
    handed.push_back(token.token.range);
    state.tokens.push_back(std::move(token));
  }
  if (!Disjoint(handed)) return Corrupt(kWhat, "overlapping handed-over tokens");
  for (const auto& r : j["successors"]) {
    GCP_ASSIGN_OR_RETURN(RowKeyRange range, ParseRange(r, kWhat));
    state.successors.push_back(std::move(range));
  }
  return state;
}

}  // namespace gcpstream::bigtable
