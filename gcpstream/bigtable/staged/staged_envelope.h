#ifndef GCPSTREAM_BIGTABLE_STAGED_STAGED_ENVELOPE_H_
#define GCPSTREAM_BIGTABLE_STAGED_STAGED_ENVELOPE_H_

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/api/versioned_serializer.h"
#include "gcpstream/bigtable/client/row_mutation_entry.h"
#include "gcpstream/bigtable/requests/single_row_client.h"
#include "google/bigtable/v2/bigtable.pb.h"

namespace gcpstream::bigtable {

// The knobs of the checkpoint-owned (staged) mode.
struct BigtableStagedOptions {
  // The reserved family holding replay markers: required; raw (no aggregate type), no GC rule,
  // provisioned by you (the connector never creates it or deletes a marker).
  std::string marker_family;
  // Per-commit concurrency and the single attempt's deadline of each CheckAndMutateRow
  // [100 in flight, 20 s].
  BigtableRequestOptions request_options;
  // What one checkpoint interval may stage per writer: entries [100,000] and bytes of serialized
  // requests plus kStagedEntryAllowance per entry [64 MiB]. Beyond either the write fails at once
  // (RESOURCE_EXHAUSTED), because the writer never waits for the barrier it is holding up.
  std::int64_t max_entries_per_interval = 100'000;
  std::int64_t max_bytes_per_interval = 64 << 20;
  // INVALID_ARGUMENT naming the option.
  absl::Status validate() const;
};

// The accounting charge of one staged entry beside its serialized bytes.
inline constexpr std::int64_t kStagedEntryAllowance = 256;
// A staged entry carries at most this many mutations of its own: the marker is the last of the
// request's 100,000.
inline constexpr std::int64_t kMaxStagedMutations = kMaxMutationsPerRequest - 1;

// A fresh envelope identity: 128 random bits as 32 hex characters. Distinct inputs get distinct
// identities even when their content is the same.
class EnvelopeIdentities {
 public:
  EnvelopeIdentities();
  std::string next();

 private:
  std::mt19937_64 engine_;
};

// One staged write as the exact CheckAndMutateRow request a commit sends (and a restore sends
// again, byte for byte): the predicate tests for the marker cell `marker_family:identity`; when
// it is absent (false branch) the entry's mutations and then the marker SetCell are applied in
// one atomic row transaction; when it is present nothing is applied (a replay). The marker's
// timestamp is `marker_micros` truncated to milliseconds and its value empty.
// INVALID_ARGUMENT for an entry that cannot be staged: an invalid row key or mutation, a
// DeleteFromRow (it would delete the row's markers), a mutation of the marker family, or more
// than kMaxStagedMutations mutations.
absl::StatusOr<std::string> BuildStagedRequest(const std::string& table_name,
                                               const std::string& app_profile_id,
                                               const std::string& marker_family,
                                               const RowMutationEntry& entry,
                                               const std::string& identity,
                                               std::int64_t marker_micros);

// What one writer staged in one checkpoint interval: the serialized requests, committed once
// that checkpoint completes.
struct StagedBatch {
  std::vector<std::string> requests;
  friend bool operator==(const StagedBatch&, const StagedBatch&) = default;
};

// Version 1 (a count, then length-prefixed requests). DATA_LOSS for bytes that do not parse,
// including a request that is not a CheckAndMutateRowRequest; FAILED_PRECONDITION for an
// unknown version.
class StagedBatchSerializer final : public VersionedSerializer<StagedBatch> {
 public:
  int version() const override { return 1; }
  absl::StatusOr<std::string> serialize(const StagedBatch& batch) const override;
  absl::StatusOr<StagedBatch> deserialize(int version, std::string_view bytes) const override;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_STAGED_STAGED_ENVELOPE_H_
