#include "gcpstream/bigtable/sink/bigtable_sink_adapter.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "gcpstream/api/status_macros.h"
#include "gcpstream/bigtable/admin/resource_names.h"
#include "gcpstream/bigtable/client/row_mutation_entry.h"
#include "gcpstream/bigtable/sink/failed_mutation.h"
#include "gcpstream/connector/await_on_mailbox.h"
#include "gcpstream/connector/status_classifier.h"

namespace gcpstream::bigtable {
namespace {

using connector::TableDestination;
using TableAnswer = absl::StatusOr<google::bigtable::admin::v2::Table>;

constexpr char kAbandoned[] = "bigtableShutdownsAbandoned";

// The families a mutation entry names.
std::set<std::string> FamiliesOf(const Entry& entry) {
  std::set<std::string> out;
  for (const auto& m : entry.mutations()) {
    if (const std::string* family = FamilyOf(m)) out.insert(*family);
  }
  return out;
}

// One table's batcher as the core drives it.
class BatcherClient final : public connector::DestinationClient<Entry> {
 public:
  explicit BatcherClient(std::shared_ptr<MutationBatcher> batcher) : batcher_(std::move(batcher)) {}
  void submit(Entry&& e, std::uint64_t token) override { batcher_->add(std::move(e), token); }
  void submit_solo(Entry&& e, std::uint64_t token) override {
    batcher_->add_solo(std::move(e), token);
  }
  void flush() override { batcher_->flush(); }
  absl::Status shutdown() override { return batcher_->shutdown(); }

 private:
  std::shared_ptr<MutationBatcher> batcher_;
};

class BigtableSinkAdapter final : public connector::AsyncSinkAdapter<TableDestination, Entry> {
 public:
  BigtableSinkAdapter(BigtableWriterConfig config, WriterInitContext& context)
      : config_(std::move(config)),
        mailbox_(context.mailbox_executor()),
        tables_created_(context.metric_group().counter("tablesCreated")),
        families_added_(context.metric_group().counter("columnFamiliesAdded")) {
    rules_.not_found_is_repairable =
        config_.create_disposition == CreateDisposition::kCreateIfNeeded;
  }
  // A client opened for a table whose batcher then failed to open is not a group of the core's:
  // released here.
  ~BigtableSinkAdapter() override {
    for (auto& [group, client] : clients_) {
      if (client) (void)client->close();
    }
  }

  std::string describe(const TableDestination& t) const override { return t.resource_name(); }
  std::string metric_scope(const TableDestination& t) const override { return t.table; }
  std::string group_of(const TableDestination& t) const override { return t.instance_name(); }

  absl::StatusOr<std::shared_ptr<connector::DestinationClient<Entry>>> open(
      const TableDestination& table,
      std::shared_ptr<connector::SinkOutcomeListener<Entry>> listener) override {
    if (absl::Status s = ValidateTableId(table.table); !s.ok()) {
      // A configuration error, not a failure of the record: never routed.
      return absl::FailedPreconditionError(
          fmt::format("the Bigtable sink's destination resolver returned {}: {}",
                      table.resource_name(), s.message()));
    }
    GCP_ASSIGN_OR_RETURN(InstanceClient * client, instance(table));
    GCP_ASSIGN_OR_RETURN(std::shared_ptr<MutationBatcher> batcher,
                         client->batcher(table, std::move(listener)));
    return std::shared_ptr<connector::DestinationClient<Entry>>(
        std::make_shared<BatcherClient>(std::move(batcher)));
  }

  // Declared aggregate types are compared with the table before it receives data: a type
  // mismatch must fail the job, never reach the row failure handler.
  absl::Status check(const TableDestination& table) override {
    const auto& options = config_.table_create_options;
    if (!options || !options->declares_aggregates()) return absl::OkStatus();
    GCP_ASSIGN_OR_RETURN(TableAnswer answer, get_table(table));
    if (answer.status().code() == absl::StatusCode::kNotFound) return absl::OkStatus();
    GCP_RETURN_IF_ERROR(answer.status());
    for (const auto& [name, declared] : options->families()) {
      auto it = answer->column_families().find(name);
      if (it == answer->column_families().end()) continue;  // the repair adds it
      const auto actual = ColumnFamilyTypeOf(it->second);
      if (!actual || *actual != declared.type) {
        return absl::FailedPreconditionError(fmt::format(
            "Bigtable table {}: column family '{}' is declared {} in table_create_options but "
            "the table has it as {}",
            table.resource_name(), name, ColumnFamilyTypeName(declared.type),
            actual ? ColumnFamilyTypeName(*actual) : std::string("another type")));
      }
    }
    return absl::OkStatus();
  }

  absl::Status release_group(const std::string& group) override {
    auto it = clients_.find(group);
    if (it == clients_.end()) return absl::OkStatus();
    std::shared_ptr<InstanceClient> client = std::move(it->second);
    clients_.erase(it);
    return client->close();
  }

  std::int64_t size_of(const Entry& e) const override {
    return static_cast<std::int64_t>(e.ByteSizeLong());
  }
  absl::Status precheck(const TableDestination&, const Entry& e) override {
    return ValidateEntry(e);
  }
  connector::FailureClass classify(const absl::Status& status) const override {
    return connector::Classify(status, rules_);
  }

  connector::RepairResult repair(const TableDestination& table,
                                 const std::vector<const Entry*>& parked) override {
    connector::RepairResult r;
    r.status = ensure_table(table, parked, &r.created, &r.permanent);
    return r;
  }

  absl::Status fatal_failure(const TableDestination& table,
                             const absl::Status& cause) const override {
    if (cause.code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(fmt::format(
          "Bigtable table {} (or a column family of it) does not exist and create_disposition "
          "is CREATE_NEVER: {}",
          table.resource_name(), cause.message()));
    }
    return absl::Status(cause.code(), fmt::format("writing to Bigtable table {} failed: {}",
                                                  table.resource_name(), cause.message()));
  }

  std::unique_ptr<connector::FailedElement> failed_element(const TableDestination& table,
                                                           std::optional<Entry> entry,
                                                           absl::Status status,
                                                           bool service_rejection) const override {
    return std::make_unique<FailedMutation>(table, std::move(entry), std::move(status),
                                            service_rejection);
  }

 private:
  absl::StatusOr<InstanceClient*> instance(const TableDestination& table) {
    auto& slot = clients_[table.instance_name()];
    if (!slot) {
      auto opened = config_.clients->open(table.project, table.instance);
      if (!opened.ok()) {
        clients_.erase(table.instance_name());
        return opened.status();
      }
      slot = std::move(*opened);
    }
    return slot.get();
  }

  absl::StatusOr<TableAnswer> get_table(const TableDestination& table) {
    GCP_ASSIGN_OR_RETURN(InstanceClient * client, instance(table));
    GCP_ASSIGN_OR_RETURN(std::shared_ptr<TableAdmin> admin, client->admin());
    return connector::AwaitOnMailbox<TableAnswer>(mailbox_, "bigtable admin answer",
                                                  [&](std::function<void(TableAnswer)> done) {
                                                    admin->async_get_table(table, std::move(done));
                                                  });
  }

  // Creates the table with its declared families, or adds the declared families an existing
  // table lacks; then refuses (permanently) a family the entries name that nobody declared.
  absl::Status ensure_table(const TableDestination& table, const std::vector<const Entry*>& parked,
                            bool* created, bool* permanent) {
    const TableCreateOptions& options = *config_.table_create_options;
    GCP_ASSIGN_OR_RETURN(InstanceClient * client, instance(table));
    GCP_ASSIGN_OR_RETURN(std::shared_ptr<TableAdmin> admin, client->admin());
    GCP_ASSIGN_OR_RETURN(
        absl::Status create,
        connector::AwaitOnMailbox<absl::Status>(
            mailbox_, "bigtable admin answer", [&](std::function<void(absl::Status)> done) {
              admin->async_create_table(table, options, std::move(done));
            }));
    std::set<std::string> present;
    if (create.ok()) {
      *created = true;
      tables_created_.inc();
      spdlog::info("Bigtable sink: created table {}", table.resource_name());
      for (const auto& [name, f] : options.families()) present.insert(name);
    } else if (create.code() == absl::StatusCode::kAlreadyExists) {
      // The table exists (another subtask won, or a family is what was missing): add whatever
      // declared families it lacks, in one atomic request, re-reading at most once more.
      for (int round = 0; round < 2; ++round) {
        GCP_ASSIGN_OR_RETURN(TableAnswer answer, get_table(table));
        GCP_RETURN_IF_ERROR(answer.status());
        present.clear();
        for (const auto& [name, f] : answer->column_families()) present.insert(name);
        std::vector<std::string> missing;
        for (const auto& [name, f] : options.families()) {
          if (present.count(name) == 0) missing.push_back(name);
        }
        if (missing.empty()) break;
        GCP_ASSIGN_OR_RETURN(
            absl::Status added,
            connector::AwaitOnMailbox<absl::Status>(
                mailbox_, "bigtable admin answer", [&](std::function<void(absl::Status)> done) {
                  admin->async_add_families(table, missing, options, std::move(done));
                }));
        if (added.ok()) {
          families_added_.inc(static_cast<std::int64_t>(missing.size()));
          for (const auto& m : missing) present.insert(m);
          break;
        }
        if (added.code() != absl::StatusCode::kAlreadyExists || round == 1) return added;
      }
    } else {
      return create;
    }
    // A family the entries name, that the table lacks and the options do not declare, cannot
    // be repaired: fail now instead of spending the recovery budget.
    for (const Entry* e : parked) {
      for (const auto& family : FamiliesOf(*e)) {
        if (present.count(family) == 0 && options.families().count(family) == 0) {
          *permanent = true;
          return absl::FailedPreconditionError(fmt::format(
              "Bigtable table {} has no column family '{}' and table_create_options does not "
              "declare it, so the sink cannot add it",
              table.resource_name(), family));
        }
      }
    }
    return absl::OkStatus();
  }

  BigtableWriterConfig config_;
  MailboxExecutor& mailbox_;
  Counter& tables_created_;
  Counter& families_added_;
  connector::ClassifierRules rules_;
  // One client per (project, instance), keyed by the instance's resource name (the group).
  std::map<std::string, std::shared_ptr<InstanceClient>> clients_;
};

connector::AsyncSinkWriterSettings Settings(const BigtableWriterOptions& o) {
  connector::AsyncSinkWriterSettings s;
  s.words = {.connector = "Bigtable",
             .metric_connector = "bigtable",
             .element = "entry",
             .elements = "entries",
             .element_metric = "Entries",
             .destination = "table",
             .client = "batcher",
             .live_destinations = "live tables",
             .request = "MutateRows"};
  s.max_in_flight_count = o.max_in_flight_entries;
  s.max_in_flight_bytes = o.max_in_flight_bytes;
  s.progress.connector = "Bigtable";
  s.progress.completion = "mutation";
  s.progress.stall_warning_interval = o.stall_warning_interval;
  // No sink-side timeout: the client gives up on a stalled MutateRows after 10 minutes.
  s.recovery = o.recovery;
  s.max_consecutive_rejections = o.max_consecutive_rejections;
  s.max_active_groups = o.max_active_instances;
  s.destination_idle_timeout = o.destination_idle_timeout;
  s.shutdown_timeout = std::chrono::seconds(30);
  s.per_destination_metrics = o.per_destination_metrics;
  s.abandoned_counter = kAbandoned;
  s.active_groups_gauge = "activeClients";
  return s;
}

}  // namespace

std::unique_ptr<BigtableWriterCore> MakeBigtableWriterCore(BigtableWriterConfig config,
                                                           WriterInitContext& context) {
  connector::AsyncSinkWriterSettings settings = Settings(config.options);
  std::shared_ptr<connector::FailureHandler> handler = config.failure_handler;
  return std::make_unique<BigtableWriterCore>(
      std::move(settings), std::make_unique<BigtableSinkAdapter>(std::move(config), context),
      std::move(handler), context);
}

}  // namespace gcpstream::bigtable
