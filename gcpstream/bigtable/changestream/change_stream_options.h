#ifndef GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_OPTIONS_H_
#define GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_OPTIONS_H_

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gcpstream/connector/start_position.h"

namespace gcpstream::bigtable {

// The entry projection of BigtableChangeStreamSource. Patterns are RE2 expressions matched
// against the whole name: family patterns see the family name, qualifier patterns see
// "family:qualifierBase64" with the qualifier in padded standard Base64 (RFC 4648), e.g. the
// qualifier "temporary" of family "orders" is "orders:dGVtcG9yYXJ5". DeleteFamily entries have
// no qualifier and are subject to the family patterns only. Include and exclude lists of one
// dimension are mutually exclusive; the two dimensions compose (an entry must pass both).
struct ChangeStreamEntryFilterOptions {
  std::vector<std::string> family_include;
  std::vector<std::string> family_exclude;
  std::vector<std::string> qualifier_include;
  std::vector<std::string> qualifier_exclude;
  // When the filters remove every entry of a mutation: skip it without calling the deserializer
  // (true), or deliver it with no entries (false, the default, so the atomic row change stays
  // visible). Either way its token and low watermark are progress.
  bool skip_messages_without_change = false;
};

// The options of BigtableChangeStreamSource (names as in the spec's builder; defaults there).
struct BigtableChangeStreamOptions {
  // Used only by a fresh job; a restore resumes from the checkpointed tokens.
  connector::StartPosition start_position = connector::StartPosition::latest();
  // Where a restored partition whose checkpointed position fell out of the table's change
  // stream retention starts over, without its stale token. Unset: such a restore fails (the
  // changes between are gone, and the job says so instead of skipping them silently).
  std::optional<connector::StartPosition> resume_fallback;
  // Stop at this commit time: the source becomes bounded and finishes when every partition has
  // passed it. Unset: it runs for ever.
  std::optional<absl::Time> end_time;
  // Open ReadChangeStream calls per subtask, 1 to 100. More assigned partitions wait in a
  // checkpointed queue and take turns at heartbeats. Parallelism x this is the job's configured
  // read capacity, not a Bigtable quota.
  int max_concurrent_streams_per_subtask = 2;
  ChangeStreamEntryFilterOptions filters;
  // INVALID_ARGUMENT naming the option.
  absl::Status validate() const;
};

// Every ReadChangeStream asks for a heartbeat this often; it also paces the rotation of queued
// partitions. Not an option (the spec's decision): the service's own default.
inline constexpr std::chrono::milliseconds kChangeStreamHeartbeat{5000};
inline constexpr int kMaxStreamsPerSubtask = 100;

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_OPTIONS_H_
