#include "gcpstream/spanner/source/spanner_partition_split.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"

namespace gcpstream::spanner {
namespace {

using nlohmann::json;

json TransactionJson(const BatchTransactionRef& tx) {
  return json{{"session", tx.session},
              {"transaction_id", absl::Base64Escape(tx.transaction_id)},
              {"read_timestamp", tx.read_timestamp}};
}

json SplitJson(const SpannerPartitionSplit& split) {
  return json{{"index", split.index},
              {"token", absl::Base64Escape(split.partition_token)},
              {"transaction", TransactionJson(split.transaction)},
              {"started", split.started}};
}

absl::Status Corrupt(std::string_view what, std::string_view detail) {
  return absl::DataLossError(fmt::format("Spanner source {}: corrupt state ({})", what, detail));
}

absl::StatusOr<std::string> Bytes(const json& j, const char* key, std::string_view what) {
  if (!j.contains(key) || !j[key].is_string()) return Corrupt(what, fmt::format("no {}", key));
  std::string out;
  if (!absl::Base64Unescape(j[key].get<std::string>(), &out)) {
    return Corrupt(what, fmt::format("{} is not base64", key));
  }
  return out;
}

absl::StatusOr<BatchTransactionRef> ParseTransaction(const json& j, std::string_view what) {
  if (!j.is_object() || !j.contains("session") || !j["session"].is_string() ||
      !j.contains("read_timestamp") || !j["read_timestamp"].is_string()) {
    return Corrupt(what, "transaction");
  }
  BatchTransactionRef tx;
  tx.session = j["session"].get<std::string>();
  tx.read_timestamp = j["read_timestamp"].get<std::string>();
  auto id = Bytes(j, "transaction_id", what);
  if (!id.ok()) return id.status();
  tx.transaction_id = *std::move(id);
  return tx;
}

absl::StatusOr<SpannerPartitionSplit> ParseSplit(const json& j, std::string_view what) {
  if (!j.is_object() || !j.contains("index") || !j["index"].is_number_integer() ||
      !j.contains("transaction")) {
    return Corrupt(what, "split");
  }
  SpannerPartitionSplit split;
  const auto index = j["index"].get<std::int64_t>();
  if (index < 0 || index > 1000000000) return Corrupt(what, "partition index out of range");
  split.index = static_cast<int>(index);
  auto token = Bytes(j, "token", what);
  if (!token.ok()) return token.status();
  split.partition_token = *std::move(token);
  auto tx = ParseTransaction(j["transaction"], what);
  if (!tx.ok()) return tx.status();
  split.transaction = *std::move(tx);
  split.started = j.value("started", false);
  return split;
}

absl::StatusOr<json> Parse(int version, std::string_view bytes, std::string_view what) {
  if (version != 1) {
    return absl::FailedPreconditionError(fmt::format(
        "Spanner source {}: unknown serialized version {} (this build reads 1)", what, version));
  }
  json j = json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Corrupt(what, "not a JSON object");
  return j;
}

}  // namespace

absl::StatusOr<std::string> SpannerPartitionSplitSerializer::serialize(
    const SpannerPartitionSplit& split) const {
  return SplitJson(split).dump();
}

absl::StatusOr<SpannerPartitionSplit> SpannerPartitionSplitSerializer::deserialize(
    int version, std::string_view bytes) const {
  auto j = Parse(version, bytes, "split");
  if (!j.ok()) return j.status();
  return ParseSplit(*j, "split");
}

absl::StatusOr<std::string> SpannerSourceEnumStateSerializer::serialize(
    const SpannerSourceEnumState& state) const {
  json unassigned = json::array();
  for (const auto& split : state.unassigned) unassigned.push_back(SplitJson(split));
  return json{{"planned", state.planned},
              {"transaction", TransactionJson(state.transaction)},
              {"partition_count", state.partition_count},
              {"unassigned", std::move(unassigned)}}
      .dump();
}

absl::StatusOr<SpannerSourceEnumState> SpannerSourceEnumStateSerializer::deserialize(
    int version, std::string_view bytes) const {
  constexpr std::string_view kWhat = "enumerator state";
  auto j = Parse(version, bytes, kWhat);
  if (!j.ok()) return j.status();
  SpannerSourceEnumState state;
  if (!j->contains("planned") || !(*j)["planned"].is_boolean()) return Corrupt(kWhat, "planned");
  state.planned = (*j)["planned"].get<bool>();
  if (!state.planned) return state;
  auto tx = ParseTransaction(j->value("transaction", json()), kWhat);
  if (!tx.ok()) return tx.status();
  state.transaction = *std::move(tx);
  const json count = j->value("partition_count", json());
  if (!count.is_number_integer() || count.get<std::int64_t>() < 0 ||
      count.get<std::int64_t>() > 1000000000) {
    return Corrupt(kWhat, "partition_count");
  }
  state.partition_count = count.get<int>();
  const json unassigned = j->value("unassigned", json());
  if (!unassigned.is_array()) return Corrupt(kWhat, "unassigned");
  for (const auto& s : unassigned) {
    auto split = ParseSplit(s, kWhat);
    if (!split.ok()) return split.status();
    state.unassigned.push_back(*std::move(split));
  }
  return state;
}

}  // namespace gcpstream::spanner
