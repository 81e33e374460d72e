#include "gcpstream/spanner/changestream/change_stream_split.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/spanner/client/value.h"

namespace gcpstream::spanner {
namespace {

using nlohmann::json;
using State = ChangeStreamLedgerEntry::State;

absl::Status Corrupt(std::string_view what, std::string_view detail) {
  return absl::DataLossError(
      fmt::format("Spanner change stream {}: corrupt state ({})", what, detail));
}

json SplitJson(const ChangeStreamPartitionSplit& s) {
  return json{{"token", s.token},
              {"start", FormatTimestamp(s.start)},
              {"position", FormatTimestamp(s.position)},
              {"parents", s.parent_tokens}};
}

absl::StatusOr<absl::Time> TimeAt(const json& j, const char* key, std::string_view what) {
  if (!j.contains(key) || !j[key].is_string()) return Corrupt(what, fmt::format("no {}", key));
  auto t = ParseTimestamp(j[key].get<std::string>());
  if (!t.ok()) return Corrupt(what, fmt::format("{}: {}", key, t.status().message()));
  return *t;
}

absl::StatusOr<ChangeStreamPartitionSplit> ParseSplit(const json& j, std::string_view what) {
  if (!j.is_object() || !j.contains("token") || !j["token"].is_string()) {
    return Corrupt(what, "split without a token");
  }
  ChangeStreamPartitionSplit s;
  s.token = j["token"].get<std::string>();
  GCP_ASSIGN_OR_RETURN(s.start, TimeAt(j, "start", what));
  GCP_ASSIGN_OR_RETURN(s.position, TimeAt(j, "position", what));
  if (s.position < s.start) return Corrupt(what, "position before start");
  if (j.contains("parents")) {
    if (!j["parents"].is_array()) return Corrupt(what, "parents");
    for (const auto& p : j["parents"]) {
      if (!p.is_string()) return Corrupt(what, "parents");
      s.parent_tokens.push_back(p.get<std::string>());
    }
  }
  return s;
}

const char* StateName(State s) {
  switch (s) {
    case State::kWaiting:
      return "waiting";
    case State::kReady:
      return "ready";
    case State::kAssigned:
      return "assigned";
    case State::kFinished:
      return "finished";
  }
  return "?";
}

}  // namespace

std::string ChangeStreamSplitId(const std::string& token, absl::Time start) {
  return token.empty() ? "initial@" + FormatTimestamp(start) : token;
}

std::string ChangeStreamPartitionSplit::split_id() const {
  return ChangeStreamSplitId(token, start);
}

absl::StatusOr<std::string> ChangeStreamSplitSerializer::serialize(
    const ChangeStreamPartitionSplit& split) const {
  return SplitJson(split).dump();
}

absl::StatusOr<ChangeStreamPartitionSplit> ChangeStreamSplitSerializer::deserialize(
    int version, std::string_view bytes) const {
  if (version != 1) return Corrupt("split", fmt::format("unknown version {}", version));
  json j = json::parse(bytes, nullptr, false);
  if (j.is_discarded()) return Corrupt("split", "not JSON");
  return ParseSplit(j, "split");
}

absl::StatusOr<std::string> ChangeStreamEnumStateSerializer::serialize(
    const ChangeStreamEnumState& state) const {
  json entries = json::array();
  for (const auto& e : state.entries) {
    entries.push_back(
        json{{"split", SplitJson(e.split)}, {"state", StateName(e.state)}, {"subtask", e.subtask}});
  }
  return json{{"started", state.started},
              {"entries", std::move(entries)},
              {"emitted_watermark_ms", state.emitted_watermark_ms}}
      .dump();
}

absl::StatusOr<ChangeStreamEnumState> ChangeStreamEnumStateSerializer::deserialize(
    int version, std::string_view bytes) const {
  constexpr std::string_view kWhat = "enumerator state";
  if (version != 1) return Corrupt(kWhat, fmt::format("unknown version {}", version));
  json j = json::parse(bytes, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Corrupt(kWhat, "not a JSON object");
  if (!j.contains("started") || !j["started"].is_boolean() || !j.contains("entries") ||
      !j["entries"].is_array()) {
    return Corrupt(kWhat, "missing members");
  }
  ChangeStreamEnumState state;
  state.started = j["started"].get<bool>();
  if (j.contains("emitted_watermark_ms") && j["emitted_watermark_ms"].is_number_integer()) {
    state.emitted_watermark_ms = j["emitted_watermark_ms"].get<std::int64_t>();
  }
  for (const auto& e : j["entries"]) {
    if (!e.is_object() || !e.contains("split") || !e.contains("state") || !e["state"].is_string()) {
      return Corrupt(kWhat, "entry");
    }
    ChangeStreamLedgerEntry entry;
    GCP_ASSIGN_OR_RETURN(entry.split, ParseSplit(e["split"], kWhat));
    const std::string name = e["state"].get<std::string>();
    bool known = false;
    for (State s : {State::kWaiting, State::kReady, State::kAssigned, State::kFinished}) {
      if (name == StateName(s)) {
        entry.state = s;
        known = true;
      }
    }
    if (!known) return Corrupt(kWhat, fmt::format("entry state \"{}\"", name));
    if (e.contains("subtask") && e["subtask"].is_number_integer()) {
      entry.subtask = e["subtask"].get<int>();
    }
    state.entries.push_back(std::move(entry));
  }
  return state;
}

}  // namespace gcpstream::spanner
