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
// was staged (CheckAndMutateRow, one attempt each, options.request_options.request_timeout its
// deadline), at most request_options.max_in_flight_requests at a time. A request whose
// predicate matched found its marker: the envelope was applied before (a replay), so nothing
// was written again (requestsDeduplicated). Any failed request fails the commit and so the job
// (requestsFailed): the outstanding ones are cancelled and waited for, and since a failed RPC
// does not tell whether the row was applied, the restore of the checkpoint sends the same bytes
// again and the markers sort it out. Each target (table, app profile) is validated once before
// its first write. Metrics: requestsCompleted, requestsDeduplicated, requestsFailed. Runs on
// the subtask thread and blocks it while a commit drains.
class BigtableStagedCommitter final : public Committer<StagedBatch> {
 public:
  BigtableStagedCommitter(std::shared_ptr<BigtableDataStub> data, StagedTargetValidator validator,
                          BigtableRequestOptions options, MetricGroup& metrics);
  absl::Status commit(std::vector<CommitRequest<StagedBatch>>& requests) override;

 private:
  // The batch sent; the first failure, or OK.
  absl::Status send(const StagedBatch& batch);

  std::shared_ptr<BigtableDataStub> data_;
  StagedTargetValidator validator_;
  const BigtableRequestOptions options_;
  std::set<std::pair<std::string, std::string>> validated_;
  Counter& completed_;
  Counter& deduplicated_;
  Counter& failed_;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_STAGED_STAGED_COMMITTER_H_
