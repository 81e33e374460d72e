#ifndef GCPSTREAM_BIGTABLE_CLIENT_BULK_MUTATION_BATCHER_H_
#define GCPSTREAM_BIGTABLE_CLIENT_BULK_MUTATION_BATCHER_H_

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gcpstream/bigtable/client/bigtable_stub.h"
#include "gcpstream/bigtable/client/mutation_batcher.h"
#include "gcpstream/util/timer_thread.h"

namespace gcpstream::bigtable {

// The real MutationBatcher over MutateRows: batches by count, bytes, delay and the mutation
// limit; retries transient per-entry (and whole-call) failures with backoff until the total
// timeout; reports every entry's outcome against its caller's token. Thread-safe.
class BulkMutationBatcher final : public MutationBatcher,
                                  public std::enable_shared_from_this<BulkMutationBatcher> {
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
  struct Batch {
    std::shared_ptr<google::bigtable::v2::MutateRowsRequest> request;
    std::vector<std::uint64_t> tokens;
    std::int64_t bytes = 0;
    std::int64_t mutations = 0;
    int attempts = 0;
    std::chrono::steady_clock::time_point first_attempt;
    std::chrono::milliseconds next_delay{0};
  };
  struct Later {
    std::vector<std::function<void()>> calls;
    std::vector<MutationOutcome> outcomes;
    std::shared_ptr<void> spent;
  };

  std::shared_ptr<Batch> new_batch_locked();
  void add_impl(Entry&& entry, std::uint64_t token, bool solo);
  void close_open_locked(Later& later);
  void send_locked(std::shared_ptr<Batch> batch, Later& later);
  void on_result(std::uint64_t call, MutateRowsResult result);
  void arm_timer_locked();
  void run(Later& later);

  const std::string table_name_;
  const std::string app_profile_id_;
  std::shared_ptr<BigtableDataStub> stub_;
  const BatchingThresholds thresholds_;
  const MutateRowsRetrySettings retry_;
  std::shared_ptr<util::TimerThread> timers_;
  std::shared_ptr<MutationListener> listener_;

  std::mutex mu_;
  std::condition_variable idle_;
  std::shared_ptr<Batch> open_;
  std::chrono::steady_clock::time_point open_since_;
  std::map<std::uint64_t, std::function<void()>> in_flight_;
  // Requests on the wire, by call id.
  std::map<std::uint64_t, std::shared_ptr<Batch>> sent_;
  std::map<Batch*, std::shared_ptr<Batch>> waiting_retry_;
  std::map<Batch*, std::shared_ptr<util::TimerHandle>> retry_timers_;
  std::uint64_t next_call_ = 0;
  int outstanding_ = 0;
  std::shared_ptr<util::TimerHandle> timer_;
  bool shut_down_ = false;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_CLIENT_BULK_MUTATION_BATCHER_H_
