#ifndef GCPSTREAM_BIGTABLE_CLIENT_BULK_MUTATION_BATCHER_H_
#define GCPSTREAM_BIGTABLE_CLIENT_BULK_MUTATION_BATCHER_H_

#include <memory>
#include <string>

#include "gcpstream/bigtable/client/bigtable_stub.h"
#include "gcpstream/bigtable/client/mutation_batcher.h"
#include "gcpstream/connector/request_batcher.h"
#include "gcpstream/util/timer_thread.h"

namespace gcpstream::bigtable {

// The real MutationBatcher over MutateRows: batches by count, bytes, delay and the mutation
// limit; retries transient per-entry (and whole-call) failures with backoff until the total
// timeout; reports every entry's outcome against its caller's token. Thread-safe. The mechanism
// is the shared connector::RequestBatcher; this class supplies MutateRows and the Bigtable
// client's retry schedule.
class BulkMutationBatcher final : public MutationBatcher {
 public:
  BulkMutationBatcher(std::string table_name, std::string app_profile_id,
                      std::shared_ptr<BigtableDataStub> stub, BatchingThresholds thresholds,
                      MutateRowsRetrySettings retry, std::shared_ptr<util::TimerThread> timers,
                      std::shared_ptr<MutationListener> listener);
  ~BulkMutationBatcher() override;

  void add(Entry&& entry, std::uint64_t token) override;
  void add_solo(Entry&& entry, std::uint64_t token) override;
  void flush() override;
  absl::Status shutdown() override;

 private:
  std::shared_ptr<connector::RequestBatcher<Entry, google::bigtable::v2::MutateRowsRequest>>
      batcher_;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_CLIENT_BULK_MUTATION_BATCHER_H_
