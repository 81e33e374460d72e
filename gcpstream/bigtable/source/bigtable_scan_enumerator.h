#ifndef GCPSTREAM_BIGTABLE_SOURCE_BIGTABLE_SCAN_ENUMERATOR_H_
#define GCPSTREAM_BIGTABLE_SOURCE_BIGTABLE_SCAN_ENUMERATOR_H_

#include <atomic>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gcpstream/api/pull_split_assigner.h"
#include "gcpstream/api/split_enumerator.h"
#include "gcpstream/bigtable/client/blocking_stub.h"
#include "gcpstream/bigtable/source/bigtable_scan_split.h"

namespace gcpstream::bigtable {

// The row keys SampleRowKeys returns for `table_name` (each ends a section of the table as
// Bigtable stores it; the last is usually empty, meaning the end of the table). Transient
// failures (UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED) are tried again, 5 attempts in all, each
// with a 60 s deadline; other failures keep their code. Blocking.
absl::StatusOr<std::vector<std::string>> SampleRowKeys(
    google::bigtable::v2::Bigtable::StubInterface& stub, const std::string& table_name,
    const std::string& app_profile_id);

// Plans the scan once and hands out one split per split request, so a subtask that finishes a
// dense piece early takes the next one. Fresh, it samples the table (on a worker thread) and
// cuts the configured ranges at the sampled keys (PlanScanSplits); restored, it never samples
// again and hands out the checkpointed unassigned splits. A failed sampling fails the job.
// Metrics on the coordinator's group: rowKeySamplesTaken (1 fresh, 0 restored), splitsAssigned,
// splitsReturned, unassignedSplits (gauge).
class BigtableScanEnumerator final
    : public SplitEnumerator<BigtableScanSplit, BigtableScanEnumState> {
 public:
  BigtableScanEnumerator(SplitEnumeratorContext<BigtableScanSplit>& context,
                         BigtableStubFactory stubs, std::string table_name,
                         std::string app_profile_id, std::vector<RowKeyRange> ranges,
                         BigtableScanEnumState restored = {});

  absl::Status start() override;
  absl::Status handle_split_request(int subtask) override;
  absl::Status add_splits_back(std::vector<BigtableScanSplit> splits, int subtask) override;
  absl::Status add_reader(int subtask) override;
  absl::StatusOr<BigtableScanEnumState> snapshot_state(std::int64_t checkpoint_id) override;

 private:
  void on_planned(absl::StatusOr<std::vector<BigtableScanSplit>> planned);

  SplitEnumeratorContext<BigtableScanSplit>& context_;
  BigtableStubFactory stubs_;
  const std::string table_name_;
  const std::string app_profile_id_;
  const std::vector<RowKeyRange> ranges_;
  BigtableScanEnumState state_;
  PullSplitAssigner<BigtableScanSplit> assigner_;
  Counter* samples_ = nullptr;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_SOURCE_BIGTABLE_SCAN_ENUMERATOR_H_
