#ifndef GCPSTREAM_BIGTABLE_STAGED_STAGED_COMMITTER_H_
#define GCPSTREAM_BIGTABLE_STAGED_STAGED_COMMITTER_H_

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "gcpstream/api/metrics.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/bigtable/client/bigtable_stub.h"
#include "gcpstream/bigtable/staged/staged_envelope.h"
#include "google/bigtable/admin/v2/bigtable_instance_admin.grpc.pb.h"
#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"

namespace gcpstream::bigtable {

// Checks one target before any staged write reaches it: FAILED_PRECONDITION naming what to fix
// unless the table has the marker family as a raw family without a GC rule and the app profile
// routes to a single cluster with transactional writes allowed; the service's code (NOT_FOUND
// for a missing table, PERMISSION_DENIED, …) otherwise. Blocking.
using StagedTargetValidator =
    std::function<absl::Status(const std::string& table_name, const std::string& app_profile_id)>;

// The validator over the table admin (GetTable, schema view) and instance admin
// (GetAppProfile) APIs. `emulator`: the Bigtable emulator serves no app profiles, so an
// UNIMPLEMENTED answer to GetAppProfile is logged and the profile left unchecked; against the
// service it fails the commit.
StagedTargetValidator MakeStagedTargetValidator(
    std::shared_ptr<google::bigtable::admin::v2::BigtableTableAdmin::StubInterface> tables,
    std::shared_ptr<google::bigtable::admin::v2::BigtableInstanceAdmin::StubInterface> instances,
    std::string marker_family, bool emulator);

// Applies the staged batches of completed checkpoints: every request of a batch is sent as it
// was staged (CheckAndMutateRow, options.request_options.request_timeout each call's deadline),
// at most request_options.max_in_flight_requests at a time. A request whose predicate matched
// found its marker: the envelope was applied before (a replay), so nothing was written again
// (requestsDeduplicated). A transient failure (UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED) is sent
// again, the same bytes, in up to kStagedAttempts rounds of the commit: the marker makes that
// safe, and without it a steady trickle of transient errors would fail every commit (the spec
// fails the commit at once; this is a deliberate difference). Any other failure, or a transient
// one that outlasted the rounds, fails the commit and so the job (requestsFailed): the
// outstanding calls are cancelled and waited for, and since a failed RPC does not tell whether
// the row was applied, the restore of the checkpoint sends the same bytes again and the markers
// sort it out. Each target (table, app profile) is validated once before
// its first write. Metrics: requestsCompleted, requestsDeduplicated, requestsFailed,
// numRecordsSend (envelopes applied by this commit, deduplicated ones excluded). Runs on
// the subtask thread and blocks it while a commit drains.
class BigtableStagedCommitter final : public Committer<StagedBatch> {
 public:
  BigtableStagedCommitter(std::shared_ptr<BigtableDataStub> data, StagedTargetValidator validator,
                          BigtableRequestOptions options, MetricGroup& metrics);
  absl::Status commit(std::vector<CommitRequest<StagedBatch>>& requests) override;

 private:
  // The batch sent; the first failure, or OK.
  absl::Status send(const StagedBatch& batch);
  // One round over `requests` with the in-flight window. Transient failures go to `again` when
  // it is given (a later round resends them), otherwise they fail the round like any other.
  absl::Status send_round(
      const std::vector<std::shared_ptr<const google::bigtable::v2::CheckAndMutateRowRequest>>&
          requests,
      std::vector<std::shared_ptr<const google::bigtable::v2::CheckAndMutateRowRequest>>* again);

  std::shared_ptr<BigtableDataStub> data_;
  StagedTargetValidator validator_;
  const BigtableRequestOptions options_;
  std::set<std::pair<std::string, std::string>> validated_;
  Counter& completed_;
  Counter& deduplicated_;
  Counter& failed_;
  Counter& sent_;  // numRecordsSend: envelopes this committer applied (not deduplicated ones)
};

// How many rounds one commit sends a transiently failing request in (100 ms, then 400 ms apart).
inline constexpr int kStagedAttempts = 3;

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_STAGED_STAGED_COMMITTER_H_
