#ifndef GCPSTREAM_BIGTABLE_SINK_BIGTABLE_WRITER_CORE_H_
#define GCPSTREAM_BIGTABLE_SINK_BIGTABLE_WRITER_CORE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/bigtable/admin/table_admin.h"
#include "gcpstream/bigtable/client/mutation_batcher.h"
#include "gcpstream/bigtable/client/row_mutation_entry.h"
#include "gcpstream/bigtable/sink/bigtable_writer_options.h"
#include "gcpstream/connector/failure_router.h"
#include "gcpstream/connector/in_flight_gate.h"

namespace gcpstream::bigtable {

enum class CreateDisposition { kCreateNever, kCreateIfNeeded };

// The clients of one (project, instance): batchers of its tables over one channel, and a table
// admin opened on demand.
class InstanceClient {
 public:
  virtual ~InstanceClient() = default;
  virtual absl::StatusOr<std::shared_ptr<MutationBatcher>> batcher(
      const connector::TableDestination& table, std::shared_ptr<MutationListener> listener) = 0;
  virtual absl::StatusOr<std::shared_ptr<TableAdmin>> admin() = 0;
  // Releases the channel. Blocking but short.
  virtual absl::Status close() = 0;
};

class InstanceClientFactory {
 public:
  virtual ~InstanceClientFactory() = default;
  virtual absl::StatusOr<std::shared_ptr<InstanceClient>> open(const std::string& project,
                                                               const std::string& instance) = 0;
};

struct BigtableWriterConfig {
  BigtableWriterOptions options;
  CreateDisposition create_disposition = CreateDisposition::kCreateNever;
  std::optional<TableCreateOptions> table_create_options;
  std::shared_ptr<connector::FailureHandler> failure_handler;
  std::shared_ptr<InstanceClientFactory> clients;
};

// Everything the Bigtable sink writer does after a record became a (table, entry) pair; the
// typed BigtableWriter<T> in front of it only resolves and serializes. All on the writer's
// thread: outcomes come back as mails.
//
//  - one client per (project, instance), at most max_active_instances (the least recently used
//    is evicted after draining everything), and one batcher per table, dropped when idle;
//  - in-flight caps by entries and bytes, with mailbox backpressure;
//  - failures from completions are returned by the next write() / flush();
//  - NOT_FOUND first: under CREATE_IF_NEEDED the entries are parked, the table and its declared
//    families are ensured (idempotently), and the entries re-applied under the recovery budget;
//    a missing family the options do not declare fails at once naming it; under CREATE_NEVER a
//    NOT_FOUND fails naming the disposition;
//  - INVALID_ARGUMENT answering a batched request is parked and confirmed by re-submitting each
//    entry alone (the isolation pass) before it reaches the handler;
//  - everything else is fatal (the client already retried what it retries).
class BigtableWriterCore {
 public:
  BigtableWriterCore(BigtableWriterConfig config, WriterInitContext& context);
  ~BigtableWriterCore();

  absl::Status open();
  // A captured failure, then any pending repair or isolation.
  absl::Status before_record();
  absl::Status write(const connector::TableDestination& table, RowMutationEntry&& entry);
  absl::Status route_serialization_failure(const connector::TableDestination& table,
                                           absl::Status status);
  void record_skipped() { records_skipped_.inc_single_writer(); }
  absl::Status flush(bool end_of_input);
  // Releases every client whatever their batchers' shutdown does; failures already acted on are
  // not reported again.
  absl::Status close();

  std::int64_t in_flight_entries() const { return gate_.count(); }
  std::int64_t parked_entries() const { return parked_count_.load(); }

 private:
  enum class ParkReason { kNotFound, kRejectedInBatch };
  struct Table;
  struct Instance;
  struct Tracked {
    std::uint64_t sequence = 0;
    Table* table = nullptr;
    std::int64_t bytes = 0;
    bool solo = false;
    std::optional<Entry> entry;  // handed back on failure
  };
  struct Parked {
    Tracked tracked;
    ParkReason reason;
    absl::Status status;
  };
  struct Table {
    connector::TableDestination destination;
    Instance* instance = nullptr;
    std::shared_ptr<MutationBatcher> batcher;
    int in_flight = 0;
    std::vector<Parked> parked;
    SteadyTime last_used;
    bool used_since_flush = false;
    bool checked = false;  // declared aggregate families inspected
    Counter* records_send = nullptr;
    Counter* send_errors = nullptr;
  };
  struct Instance {
    std::string project;
    std::string name;
    std::shared_ptr<InstanceClient> client;
    absl::node_hash_map<std::string, Table> tables;
    SteadyTime last_used;
    bool used_since_flush = false;
  };
  struct SoloResult {
    absl::Status status;
    std::optional<Entry> entry;
  };
  class Completions;

  absl::StatusOr<Table*> table(const connector::TableDestination& destination);
  absl::StatusOr<Instance*> instance(const std::string& project, const std::string& name);
  absl::Status check_aggregates(Table& table);
  void dispatch(Table& table, Tracked tracked, Entry&& entry);
  void on_complete(MutationOutcome outcome);
  void park(Table& table, Tracked tracked, ParkReason reason, absl::Status status);
  void capture(absl::Status status);
  absl::Status repair_all();
  absl::Status repair(Table& table);
  absl::Status ensure_table(Table& table, const std::vector<Parked>& batch, bool* created);
  absl::StatusOr<SoloResult> submit_solo_and_wait(Table& table, Tracked tracked, Entry&& entry);
  absl::Status drain(std::string_view wait);
  absl::Status evict_instance(const std::pair<std::string, std::string>& key);
  absl::Status idle_sweep();
  template <typename T>
  absl::StatusOr<T> await_admin(std::function<void(std::function<void(T)>)> call);
  std::size_t live_tables() const;
  bool clean(const Table& t) const { return t.in_flight == 0 && t.parked.empty(); }

  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  BigtableWriterConfig config_;
  WriterInitContext& context_;
  MetricGroup& metrics_;
  connector::InFlightGate gate_;
  connector::FailureRouter router_;
  Counter& records_send_;
  Counter& bytes_send_;
  Counter& records_skipped_;
  Counter& tables_created_;
  Counter& families_added_;
  Counter& capacity_evictions_;
  Counter& idle_evictions_;
  std::map<std::pair<std::string, std::string>, Instance> instances_;
  absl::flat_hash_map<std::uint64_t, Tracked> in_flight_;
  std::map<std::uint64_t, SoloResult> solo_results_;
  std::shared_ptr<Completions> completions_;
  const connector::TableDestination* last_destination_ = nullptr;
  Table* last_table_ = nullptr;
  absl::Status captured_;
  std::uint64_t next_sequence_ = 0;
  std::atomic<std::int64_t> parked_count_{0};
  std::atomic<std::int64_t> active_clients_{0};
  bool repairing_ = false;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_SINK_BIGTABLE_WRITER_CORE_H_
