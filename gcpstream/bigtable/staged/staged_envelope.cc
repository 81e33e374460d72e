#include "gcpstream/bigtable/staged/staged_envelope.h"

#include <fmt/format.h>

#include "gcpstream/api/status_macros.h"
#include "gcpstream/util/bytes.h"
#include "re2/re2.h"

namespace gcpstream::bigtable {

namespace v2 = google::bigtable::v2;

absl::Status BigtableStagedOptions::validate() const {
  if (marker_family.empty()) {
    return absl::InvalidArgumentError(
        "staged options need marker_family: a raw column family without a GC rule, reserved for "
        "replay markers");
  }
  GCP_RETURN_IF_ERROR(request_options.validate());
  if (max_entries_per_interval < 1) {
    return absl::InvalidArgumentError(
        fmt::format("max_entries_per_interval must be >= 1 (got {})", max_entries_per_interval));
  }
  if (max_bytes_per_interval < 1) {
    return absl::InvalidArgumentError(
        fmt::format("max_bytes_per_interval must be >= 1 (got {})", max_bytes_per_interval));
  }
  return absl::OkStatus();
}

EnvelopeIdentities::EnvelopeIdentities() {
  std::random_device device;
  std::seed_seq seed{device(), device(), device(), device(),
                     device(), device(), device(), device()};
  engine_.seed(seed);
}

std::string EnvelopeIdentities::next() {
  return fmt::format("{:016x}{:016x}", engine_(), engine_());
}

absl::StatusOr<std::string> BuildStagedRequest(const std::string& table_name,
                                               const std::string& app_profile_id,
                                               const std::string& marker_family,
                                               const RowMutationEntry& entry,
                                               const std::string& identity,
                                               std::int64_t marker_micros) {
  const auto& proto = entry.proto();
  GCP_RETURN_IF_ERROR(ValidateEntry(proto));
  if (proto.mutations_size() > kMaxStagedMutations) {
    return absl::InvalidArgumentError(fmt::format(
        "row {}: {} mutations; a staged entry holds at most {} (the replay marker is the last "
        "of the request's {})",
        RowKeyForMessages(proto.row_key()), proto.mutations_size(), kMaxStagedMutations,
        kMaxMutationsPerRequest));
  }
  for (const auto& m : proto.mutations()) {
    const std::string* family = FamilyOf(m);
    if (family == nullptr) {
      return absl::InvalidArgumentError(fmt::format(
          "row {}: a whole-row delete cannot be staged (it would delete the row's replay "
          "markers); delete families or cells instead",
          RowKeyForMessages(proto.row_key())));
    }
    if (*family == marker_family) {
      return absl::InvalidArgumentError(fmt::format(
          "row {}: the mutation names the marker family '{}', which is reserved for replay "
          "markers",
          RowKeyForMessages(proto.row_key()), marker_family));
    }
  }
  v2::CheckAndMutateRowRequest request;
  request.set_table_name(table_name);
  if (!app_profile_id.empty()) request.set_app_profile_id(app_profile_id);
  request.set_row_key(proto.row_key());
  auto* chain = request.mutable_predicate_filter()->mutable_chain();
  chain->add_filters()->set_family_name_regex_filter(RE2::QuoteMeta(marker_family));
  chain->add_filters()->set_column_qualifier_regex_filter(RE2::QuoteMeta(identity));
  chain->add_filters()->set_strip_value_transformer(true);
  for (const auto& m : proto.mutations()) *request.add_false_mutations() = m;
  auto* marker = request.add_false_mutations()->mutable_set_cell();
  marker->set_family_name(marker_family);
  marker->set_column_qualifier(identity);
  marker->set_timestamp_micros(marker_micros / 1000 * 1000);
  return request.SerializeAsString();
}

absl::StatusOr<std::string> StagedBatchSerializer::serialize(const StagedBatch& batch) const {
  util::ByteWriter out;
  out.put_u32(static_cast<std::uint32_t>(batch.requests.size()));
  for (const auto& r : batch.requests) out.put_string(r);
  return out.take();
}

absl::StatusOr<StagedBatch> StagedBatchSerializer::deserialize(int version,
                                                               std::string_view bytes) const {
  if (version != 1) return util::UnknownVersion("StagedBatch", version, 1);
  util::ByteReader in(bytes);
  GCP_ASSIGN_OR_RETURN(std::uint32_t n, in.u32());
  StagedBatch batch;
  for (std::uint32_t i = 0; i < n; ++i) {
    GCP_ASSIGN_OR_RETURN(std::string r, in.string());
    v2::CheckAndMutateRowRequest parsed;
    if (!parsed.ParseFromString(r) || parsed.row_key().empty() || parsed.table_name().empty()) {
      return absl::DataLossError(
          fmt::format("StagedBatch: corrupt state (request {} is not a staged write)", i));
    }
    batch.requests.push_back(std::move(r));
  }
  if (!in.done()) return absl::DataLossError("StagedBatch: corrupt state (trailing bytes)");
  return batch;
}

}  // namespace gcpstream::bigtable
