#include "gcpstream/bigtable/sink/bigtable_writer_core.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>

#include "gcpstream/api/status_macros.h"
#include "gcpstream/bigtable/sink/failed_mutation.h"
#include "gcpstream/connector/bounded_shutdown.h"
#include "gcpstream/connector/recovery_backoff.h"
#include "gcpstream/connector/status_classifier.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::bigtable {
namespace {

// How long close() and evictions wait for a batcher/client release.
constexpr std::chrono::seconds kReleaseTimeout{30};
constexpr char kAbandoned[] = "bigtableShutdownsAbandoned";

connector::ProgressPolicy Progress(const BigtableWriterOptions& o) {
  connector::ProgressPolicy p;
  p.connector = "Bigtable";
  p.completion = "mutation";
  p.stall_warning_interval = o.stall_warning_interval;
  // No sink-side timeout: the client gives up on a stalled MutateRows after 10 minutes.
  return p;
}

// The families a mutation entry names.
std::set<std::string> FamiliesOf(const Entry& entry) {
  std::set<std::string> out;
  for (const auto& m : entry.mutations()) {
    if (m.has_set_cell()) out.insert(m.set_cell().family_name());
    if (m.has_delete_from_column()) out.insert(m.delete_from_column().family_name());
    if (m.has_delete_from_family()) out.insert(m.delete_from_family().family_name());
    if (m.has_add_to_cell()) out.insert(m.add_to_cell().family_name());
    if (m.has_merge_to_cell()) out.insert(m.merge_to_cell().family_name());
  }
  return out;
}

}  // namespace

// Outcomes arrive on client threads and are queued; one mail (posted when the queue turns
// non-empty) hands them to the writer's thread. Detached at close so a batcher abandoned at
// shutdown finds nobody listening.
class BigtableWriterCore::Completions final : public MutationListener {
 public:
  Completions(BigtableWriterCore* core, MailboxExecutor* mailbox, std::weak_ptr<bool> alive)
      : core_(core), mailbox_(mailbox), alive_(std::move(alive)) {}
  void detach() {
    std::lock_guard lock(mu_);
    detached_ = true;
    queue_.clear();
    spent_.clear();
  }
  void on_mutated(std::vector<MutationOutcome> outcomes, std::shared_ptr<void> spent) override {
    std::lock_guard lock(mu_);
    if (detached_) return;
    if (queue_.empty()) {
      queue_ = std::move(outcomes);
    } else {
      for (auto& o : outcomes) queue_.push_back(std::move(o));
    }
    if (spent) spent_.push_back(std::move(spent));
    if (scheduled_) return;
    scheduled_ = true;
    mailbox_->execute(
        [this, alive = alive_]() -> absl::Status {
          auto a = alive.lock();
          if (!a || !*a) return absl::OkStatus();
          std::vector<MutationOutcome> batch;
          std::vector<std::shared_ptr<void>> spent;
          {
            std::lock_guard lock(mu_);
            batch.swap(queue_);
            spent.swap(spent_);
            scheduled_ = false;
          }
          for (auto& o : batch) core_->on_complete(std::move(o));
          spent.clear();  // freed here, on the thread that allocated the entries
          return absl::OkStatus();
        },
        "bigtable mutation completions");
  }

 private:
  BigtableWriterCore* core_;
  MailboxExecutor* mailbox_;
  std::weak_ptr<bool> alive_;
  std::mutex mu_;
  std::vector<MutationOutcome> queue_;
  std::vector<std::shared_ptr<void>> spent_;
  bool scheduled_ = false;
  bool detached_ = false;
};

BigtableWriterCore::BigtableWriterCore(BigtableWriterConfig config, WriterInitContext& context)
    : config_(std::move(config)),
      context_(context),
      metrics_(context.metric_group()),
      gate_(config_.options.max_in_flight_entries, config_.options.max_in_flight_bytes,
            Progress(config_.options), context.mailbox_executor()),
      router_("bigtable", config_.failure_handler, config_.options.max_consecutive_rejections,
              context.metric_group()),
      records_send_(metrics_.counter(metric_names::kNumRecordsSend)),
      bytes_send_(metrics_.counter(metric_names::kNumBytesSend)),
      records_skipped_(metrics_.counter(metric_names::kRecordsSkipped)),
      tables_created_(metrics_.counter("tablesCreated")),
      families_added_(metrics_.counter("columnFamiliesAdded")),
      capacity_evictions_(metrics_.counter("capacityEvictions")),
      idle_evictions_(metrics_.counter("idleEvictions")),
      completions_(std::make_shared<Completions>(this, &context.mailbox_executor(), alive_)) {
  metrics_.gauge("inFlightEntries", [this] { return static_cast<double>(gate_.count()); });
  metrics_.gauge("inFlightBytes", [this] { return static_cast<double>(gate_.bytes()); });
  metrics_.gauge("parkedEntries", [this] { return static_cast<double>(parked_count_.load()); });
  metrics_.gauge("activeClients", [this] { return static_cast<double>(active_clients_.load()); });
  gate_.set_stall_detail([this] { return fmt::format("{} live tables", live_tables()); });
}

BigtableWriterCore::~BigtableWriterCore() {
  *alive_ = false;
  completions_->detach();
}

absl::Status BigtableWriterCore::open() {
  connector::DeadLetterQueueContext dlq;
  dlq.subtask_index = context_.subtask_index();
  dlq.parallelism = context_.parallelism();
  dlq.metric_group = &metrics_;
  dlq.mailbox_executor = &context_.mailbox_executor();
  return router_.open(dlq);
}

std::size_t BigtableWriterCore::live_tables() const {
  std::size_t n = 0;
  for (const auto& [k, i] : instances_) n += i.tables.size();
  return n;
}

void BigtableWriterCore::capture(absl::Status status) {
  if (captured_.ok()) captured_ = std::move(status);
}

absl::Status BigtableWriterCore::before_record() {
  GCP_RETURN_IF_ERROR(captured_);
  if (parked_count_.load() > 0 && !repairing_) GCP_RETURN_IF_ERROR(repair_all());
  return captured_;
}

template <typename T>
absl::StatusOr<T> BigtableWriterCore::await_admin(
    std::function<void(std::function<void(T)>)> call) {
  auto result = std::make_shared<std::optional<T>>();
  MailboxExecutor* mailbox = &context_.mailbox_executor();
  call([result, mailbox](T value) {
    mailbox->execute(
        [result, value = std::move(value)]() mutable {
          *result = std::move(value);
          return absl::OkStatus();
        },
        "bigtable admin answer");
  });
  // The admin client has its own deadline; this wait is not a mutation wait.
  GCP_RETURN_IF_ERROR(context_.mailbox_executor().yield_until([&] { return result->has_value(); }));
  return std::move(**result);
}

absl::StatusOr<BigtableWriterCore::Instance*> BigtableWriterCore::instance(
    const std::string& project, const std::string& name) {
  const auto key = std::make_pair(project, name);
  auto it = instances_.find(key);
  if (it != instances_.end()) return &it->second;
  if (static_cast<int>(instances_.size()) >= config_.options.max_active_instances) {
    // Evict the least recently used instance, after sending and waiting for everything.
    for (auto& [k, inst] : instances_) {
      for (auto& [t, table] : inst.tables) table.batcher->flush();
    }
    GCP_RETURN_IF_ERROR(drain("evicting an instance client at max_active_instances"));
    GCP_RETURN_IF_ERROR(repair_all());
    const auto now = std::chrono::steady_clock::now();
    const std::pair<std::string, std::string>* victim = nullptr;
    SteadyTime oldest = SteadyTime::max();
    for (auto& [k, inst] : instances_) {
      if (inst.used_since_flush) inst.last_used = now;
      if (inst.last_used < oldest) {
        oldest = inst.last_used;
        victim = &k;
      }
    }
    if (victim != nullptr) {
      capacity_evictions_.inc();
      GCP_RETURN_IF_ERROR(evict_instance(*victim));
    }
  }
  GCP_ASSIGN_OR_RETURN(std::shared_ptr<InstanceClient> client,
                       config_.clients->open(project, name));
  Instance& inst = instances_[key];
  inst.project = project;
  inst.name = name;
  inst.client = std::move(client);
  inst.last_used = std::chrono::steady_clock::now();
  active_clients_.store(static_cast<std::int64_t>(instances_.size()));
  return &inst;
}

absl::StatusOr<BigtableWriterCore::Table*> BigtableWriterCore::table(
    const connector::TableDestination& destination) {
  if (last_destination_ != nullptr && *last_destination_ == destination) return last_table_;
  GCP_ASSIGN_OR_RETURN(Instance * inst, instance(destination.project, destination.instance));
  inst->used_since_flush = true;
  auto it = inst->tables.find(destination.table);
  if (it == inst->tables.end()) {
    Table t;
    t.destination = destination;
    t.instance = inst;
    GCP_ASSIGN_OR_RETURN(t.batcher, inst->client->batcher(destination, completions_));
    t.last_used = std::chrono::steady_clock::now();
    if (config_.options.per_destination_metrics) {
      auto& group = metrics_.add_group("destination").add_group(destination.table);
      t.records_send = &group.counter("recordsSend");
      t.send_errors = &group.counter("sendErrors");
    }
    it = inst->tables.emplace(destination.table, std::move(t)).first;
  }
  Table& t = it->second;
  t.used_since_flush = true;
  if (!t.checked) GCP_RETURN_IF_ERROR(check_aggregates(t));
  last_destination_ = &t.destination;
  last_table_ = &t;
  return &t;
}

absl::Status BigtableWriterCore::check_aggregates(Table& t) {
  t.checked = true;
  if (!config_.table_create_options || !config_.table_create_options->declares_aggregates()) {
    return absl::OkStatus();
  }
  // Declared aggregate types are checked against the table before it receives data: a type
  // mismatch must fail the job, never reach the row failure handler.
  GCP_ASSIGN_OR_RETURN(std::shared_ptr<TableAdmin> admin, t.instance->client->admin());
  using Answer = absl::StatusOr<google::bigtable::admin::v2::Table>;
  GCP_ASSIGN_OR_RETURN(Answer answer, await_admin<Answer>([&](std::function<void(Answer)> done) {
                         admin->async_get_table(t.destination, std::move(done));
                       }));
  if (answer.status().code() == absl::StatusCode::kNotFound) return absl::OkStatus();
  GCP_RETURN_IF_ERROR(answer.status());
  for (const auto& [name, declared] : config_.table_create_options->families()) {
    auto it = answer->column_families().find(name);
    if (it == answer->column_families().end()) continue;  // the repair adds it
    const auto actual = ColumnFamilyTypeOf(it->second);
    if (!actual || *actual != declared.type) {
      return absl::FailedPreconditionError(fmt::format(
          "Bigtable table {}: column family '{}' is declared {} in table_create_options but the "
          "table has it as {}",
          t.destination.resource_name(), name, ColumnFamilyTypeName(declared.type),
          actual ? ColumnFamilyTypeName(*actual) : std::string("another type")));
    }
  }
  return absl::OkStatus();
}

absl::Status BigtableWriterCore::write(const connector::TableDestination& destination,
                                       RowMutationEntry&& entry) {
  if (absl::Status s = entry.validate(); !s.ok()) {
    // Refused before any RPC: a serialization failure (never a service rejection).
    return router_.route_serialization_failure(FailedMutation(
        destination, std::move(entry).release(), std::move(s), /*service_rejection=*/false));
  }
  Tracked tracked;
  tracked.sequence = next_sequence_++;
  tracked.bytes = entry.byte_size();
  GCP_RETURN_IF_ERROR(gate_.admit("write", [&] {
    for (auto& [k, inst] : instances_) {
      for (auto& [name, t] : inst.tables) t.batcher->flush();
    }
  }));
  GCP_ASSIGN_OR_RETURN(Table * t, table(destination));
  tracked.table = t;
  records_send_.inc_single_writer();
  bytes_send_.inc_single_writer(tracked.bytes);
  if (t->records_send != nullptr) t->records_send->inc_single_writer();
  dispatch(*t, std::move(tracked), std::move(entry).release());
  return absl::OkStatus();
}

void BigtableWriterCore::dispatch(Table& t, Tracked tracked, Entry&& entry) {
  gate_.acquire(tracked.bytes);
  ++t.in_flight;
  const std::uint64_t token = tracked.sequence;
  const bool solo = tracked.solo;
  in_flight_.emplace(token, std::move(tracked));
  if (solo) {
    t.batcher->add_solo(std::move(entry), token);
  } else {
    t.batcher->add(std::move(entry), token);
  }
}

void BigtableWriterCore::park(Table& t, Tracked tracked, ParkReason reason, absl::Status status) {
  t.parked.push_back({std::move(tracked), reason, std::move(status)});
  parked_count_.fetch_add(1);
}

void BigtableWriterCore::on_complete(MutationOutcome outcome) {
  auto found = in_flight_.find(outcome.token);
  if (found == in_flight_.end()) return;
  Tracked tracked = std::move(found->second);
  in_flight_.erase(found);
  gate_.release(tracked.bytes);
  Table& t = *tracked.table;
  --t.in_flight;
  if (tracked.solo) {
    solo_results_[tracked.sequence] = {outcome.status, std::move(outcome.entry)};
    return;
  }
  if (outcome.status.ok()) {
    router_.on_success();
    return;
  }
  tracked.entry = std::move(outcome.entry);
  connector::ClassifierRules rules;
  rules.not_found_is_repairable = config_.create_disposition == CreateDisposition::kCreateIfNeeded;
  switch (connector::Classify(outcome.status, rules)) {
    case connector::FailureClass::kRepairable:
      // Every entry genuinely failed on the missing resource: counted per entry.
      router_.count_error_class(absl::StatusCode::kNotFound);
      park(t, std::move(tracked), ParkReason::kNotFound, outcome.status);
      return;
    case connector::FailureClass::kRecordLevel:
      // Bigtable may reject a whole request for one entry: confirm each alone first.
      park(t, std::move(tracked), ParkReason::kRejectedInBatch, outcome.status);
      return;
    default:
      break;
  }
  router_.count_error_class(outcome.status.code());
  if (t.send_errors != nullptr) t.send_errors->inc();
  if (outcome.status.code() == absl::StatusCode::kNotFound) {
    capture(absl::NotFoundError(fmt::format(
        "Bigtable table {} (or a column family of it) does not exist and create_disposition is "
        "CREATE_NEVER: {}",
        t.destination.resource_name(), outcome.status.message())));
    return;
  }
  capture(absl::Status(outcome.status.code(),
                       fmt::format("writing to Bigtable table {} failed: {}",
                                   t.destination.resource_name(), outcome.status.message())));
}

absl::Status BigtableWriterCore::drain(std::string_view wait) { return gate_.drain(wait); }

absl::Status BigtableWriterCore::repair_all() {
  repairing_ = true;
  absl::Status status;
  for (bool again = true; again && status.ok();) {
    again = false;
    std::vector<Table*> tables;
    for (auto& [k, inst] : instances_) {
      for (auto& [name, t] : inst.tables) {
        if (!t.parked.empty()) tables.push_back(&t);
      }
    }
    for (Table* t : tables) {
      status = repair(*t);
      if (!status.ok()) break;
      again = true;
    }
  }
  repairing_ = false;
  GCP_RETURN_IF_ERROR(status);
  return captured_;
}

absl::Status BigtableWriterCore::ensure_table(Table& t, const std::vector<Parked>& batch,
                                              bool* created) {
  const TableCreateOptions& options = *config_.table_create_options;
  GCP_ASSIGN_OR_RETURN(std::shared_ptr<TableAdmin> admin, t.instance->client->admin());
  GCP_ASSIGN_OR_RETURN(absl::Status create,
                       await_admin<absl::Status>([&](std::function<void(absl::Status)> done) {
                         admin->async_create_table(t.destination, options, std::move(done));
                       }));
  std::set<std::string> present;
  if (create.ok()) {
    *created = true;
    tables_created_.inc();
    spdlog::info("Bigtable sink: created table {}", t.destination.resource_name());
    for (const auto& [name, f] : options.families()) present.insert(name);
  } else if (create.code() == absl::StatusCode::kAlreadyExists) {
    // The table exists (another subtask won, or a family is what was missing): add whatever
    // declared families it lacks, in one atomic request, re-reading at most once more.
    for (int round = 0; round < 2; ++round) {
      using Answer = absl::StatusOr<google::bigtable::admin::v2::Table>;
      GCP_ASSIGN_OR_RETURN(Answer table, await_admin<Answer>([&](std::function<void(Answer)> done) {
                             admin->async_get_table(t.destination, std::move(done));
                           }));
      GCP_RETURN_IF_ERROR(table.status());
      present.clear();
      for (const auto& [name, f] : table->column_families()) present.insert(name);
      std::vector<std::string> missing;
      for (const auto& [name, f] : options.families()) {
        if (present.count(name) == 0) missing.push_back(name);
      }
      if (missing.empty()) break;
      GCP_ASSIGN_OR_RETURN(absl::Status added,
                           await_admin<absl::Status>([&](std::function<void(absl::Status)> done) {
                             admin->async_add_families(t.destination, missing, options,
                                                       std::move(done));
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
  // A family the entries name, that the table lacks and the options do not declare, cannot be
  // repaired: fail now instead of spending the recovery budget.
  for (const auto& p : batch) {
    if (!p.tracked.entry) continue;
    for (const auto& family : FamiliesOf(*p.tracked.entry)) {
      if (present.count(family) == 0 && options.families().count(family) == 0) {
        return absl::FailedPreconditionError(fmt::format(
            "Bigtable table {} has no column family '{}' and table_create_options does not "
            "declare it, so the sink cannot add it",
            t.destination.resource_name(), family));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<BigtableWriterCore::SoloResult> BigtableWriterCore::submit_solo_and_wait(
    Table& t, Tracked tracked, Entry&& entry) {
  tracked.solo = true;
  const std::uint64_t sequence = tracked.sequence;
  dispatch(t, std::move(tracked), std::move(entry));
  GCP_RETURN_IF_ERROR(gate_.await("isolating a rejected request",
                                  [&] { return solo_results_.count(sequence) > 0; }));
  SoloResult result = std::move(solo_results_[sequence]);
  solo_results_.erase(sequence);
  return result;
}

absl::Status BigtableWriterCore::repair(Table& t) {
  connector::RecoveryBackoff backoff(config_.options.recovery);
  bool created = false;
  int routed = 0;
  absl::Status last_cause;
  while (true) {
    for (auto& [k, inst] : instances_) {
      for (auto& [name, table] : inst.tables) table.batcher->flush();
    }
    GCP_RETURN_IF_ERROR(drain("draining before a repair"));
    GCP_RETURN_IF_ERROR(captured_);
    if (t.parked.empty()) return absl::OkStatus();
    std::vector<Parked> batch = std::move(t.parked);
    t.parked.clear();
    parked_count_.fetch_sub(static_cast<std::int64_t>(batch.size()));
    std::sort(batch.begin(), batch.end(), [](const Parked& a, const Parked& b) {
      return a.tracked.sequence < b.tracked.sequence;
    });
    const bool not_found = std::any_of(batch.begin(), batch.end(), [](const Parked& p) {
      return p.reason == ParkReason::kNotFound;
    });
    if (not_found) {
      last_cause = batch.front().status;
      absl::Status s = ensure_table(t, batch, &created);
      if (s.code() == absl::StatusCode::kFailedPrecondition) return s;  // undeclared family
      if (!s.ok()) {
        // A creation that fails spends an attempt of the same budget.
        last_cause = s;
        for (auto& p : batch) park(t, std::move(p.tracked), p.reason, p.status);
        auto delay = backoff.next();
        if (!delay) {
          return absl::Status(
              s.code(),
              fmt::format(
                  "Bigtable sink: could not create or repair table {} within the recovery budget "
                  "(recovery_max_attempts {}): {}",
                  t.destination.resource_name(), config_.options.recovery.max_attempts,
                  s.message()));
        }
        GCP_RETURN_IF_ERROR(connector::SleepYielding(context_.mailbox_executor(), *delay));
        continue;
      }
    }
    for (auto& p : batch) {
      if (!p.tracked.entry) {
        return absl::InternalError("a parked Bigtable entry was not handed back by its batcher");
      }
      Entry entry = std::move(*p.tracked.entry);
      p.tracked.entry.reset();
      p.tracked.solo = false;
      if (p.reason == ParkReason::kNotFound) {
        dispatch(t, std::move(p.tracked), std::move(entry));
        continue;
      }
      // The isolation pass: this entry alone.
      t.batcher->flush();
      Tracked again = p.tracked;
      GCP_ASSIGN_OR_RETURN(SoloResult solo,
                           submit_solo_and_wait(t, std::move(p.tracked), std::move(entry)));
      if (solo.status.ok()) {
        router_.on_success();
        continue;
      }
      connector::ClassifierRules rules;
      rules.not_found_is_repairable =
          config_.create_disposition == CreateDisposition::kCreateIfNeeded;
      const auto cls = connector::Classify(solo.status, rules);
      if (cls == connector::FailureClass::kRecordLevel) {
        ++routed;
        if (t.send_errors != nullptr) t.send_errors->inc();
        GCP_RETURN_IF_ERROR(router_.route_rejection(
            FailedMutation(t.destination, std::move(solo.entry), solo.status, true)));
        continue;
      }
      if (cls == connector::FailureClass::kRepairable) {
        router_.count_error_class(absl::StatusCode::kNotFound);
        again.solo = false;
        again.entry = std::move(solo.entry);
        park(t, std::move(again), ParkReason::kNotFound, solo.status);
        continue;
      }
      router_.count_error_class(solo.status.code());
      return absl::Status(solo.status.code(),
                          fmt::format("writing to Bigtable table {} failed: {}",
                                      t.destination.resource_name(), solo.status.message()));
    }
    t.batcher->flush();
    GCP_RETURN_IF_ERROR(drain("re-applying parked entries"));
    GCP_RETURN_IF_ERROR(captured_);
    if (t.parked.empty()) return absl::OkStatus();
    last_cause = t.parked.front().status;
    auto delay = backoff.next();
    if (!delay) {
      return absl::Status(
          last_cause.ok() ? absl::StatusCode::kUnavailable : last_cause.code(),
          fmt::format("Bigtable sink: {} entries for {} still failed after the recovery budget "
                      "(recovery_max_attempts {}){}{}; last cause: {}",
                      t.parked.size(), t.destination.resource_name(),
                      config_.options.recovery.max_attempts,
                      created ? "; the table was created by this repair" : "",
                      routed > 0 ? fmt::format("; {} entries went to the failure handler", routed)
                                 : std::string(),
                      last_cause.message()));
    }
    GCP_RETURN_IF_ERROR(connector::SleepYielding(context_.mailbox_executor(), *delay));
  }
}

absl::Status BigtableWriterCore::route_serialization_failure(
    const connector::TableDestination& table, absl::Status status) {
  return router_.route_serialization_failure(
      FailedMutation(table, std::nullopt, std::move(status), /*service_rejection=*/false));
}

absl::Status BigtableWriterCore::flush(bool end_of_input) {
  GCP_RETURN_IF_ERROR(captured_);
  for (auto& [k, inst] : instances_) {
    for (auto& [name, t] : inst.tables) t.batcher->flush();
  }
  GCP_RETURN_IF_ERROR(
      drain(end_of_input ? "flushing at end of input" : "flushing for a checkpoint"));
  GCP_RETURN_IF_ERROR(repair_all());
  GCP_RETURN_IF_ERROR(captured_);
  GCP_RETURN_IF_ERROR(router_.flush());
  if (!end_of_input) GCP_RETURN_IF_ERROR(idle_sweep());
  return absl::OkStatus();
}

absl::Status BigtableWriterCore::evict_instance(const std::pair<std::string, std::string>& key) {
  auto it = instances_.find(key);
  if (it == instances_.end()) return absl::OkStatus();
  std::vector<connector::ShutdownTask> tasks;
  for (auto& [name, t] : it->second.tables) {
    std::shared_ptr<MutationBatcher> batcher = t.batcher;
    tasks.push_back({"batcher for " + t.destination.resource_name(),
                     [batcher] { return batcher->shutdown(); }});
  }
  std::shared_ptr<InstanceClient> client = it->second.client;
  last_destination_ = nullptr;
  last_table_ = nullptr;
  instances_.erase(it);
  active_clients_.store(static_cast<std::int64_t>(instances_.size()));
  auto result = connector::BoundedShutdown(std::move(tasks), kReleaseTimeout, kAbandoned);
  absl::Status closed = client->close();
  GCP_RETURN_IF_ERROR(result.error);
  return closed;
}

absl::Status BigtableWriterCore::idle_sweep() {
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, std::string>> empty_instances;
  for (auto& [k, inst] : instances_) {
    if (inst.used_since_flush) {
      inst.last_used = now;
      inst.used_since_flush = false;
    }
    std::vector<std::string> idle;
    for (auto& [name, t] : inst.tables) {
      if (t.used_since_flush) {
        t.last_used = now;
        t.used_since_flush = false;
      }
      if (clean(t) && now - t.last_used > config_.options.destination_idle_timeout) {
        idle.push_back(name);
      }
    }
    for (const auto& name : idle) {
      auto it = inst.tables.find(name);
      std::shared_ptr<MutationBatcher> batcher = it->second.batcher;
      if (last_table_ == &it->second) {
        last_destination_ = nullptr;
        last_table_ = nullptr;
      }
      inst.tables.erase(it);
      (void)connector::BoundedShutdown({{"batcher", [batcher] { return batcher->shutdown(); }}},
                                       kReleaseTimeout, kAbandoned);
    }
    if (inst.tables.empty()) empty_instances.push_back(k);
  }
  // The client goes when its instance's last live table did.
  for (const auto& k : empty_instances) {
    idle_evictions_.inc();
    GCP_RETURN_IF_ERROR(evict_instance(k));
  }
  return absl::OkStatus();
}

absl::Status BigtableWriterCore::close() {
  std::vector<connector::ShutdownTask> tasks;
  std::vector<std::shared_ptr<InstanceClient>> clients;
  for (auto& [k, inst] : instances_) {
    for (auto& [name, t] : inst.tables) {
      std::shared_ptr<MutationBatcher> batcher = t.batcher;
      tasks.push_back({"batcher for " + t.destination.resource_name(),
                       [batcher] { return batcher->shutdown(); }});
    }
    clients.push_back(inst.client);
  }
  instances_.clear();
  last_destination_ = nullptr;
  last_table_ = nullptr;
  active_clients_.store(0);
  if (!tasks.empty()) {
    auto result = connector::BoundedShutdown(std::move(tasks), kReleaseTimeout, kAbandoned);
    // Failures the writer already acted on are not reported again at close.
    if (!result.error.ok()) spdlog::info("Bigtable sink: at close: {}", result.error);
  }
  // The clients are released whatever the batchers' shutdown did.
  absl::Status status;
  for (auto& c : clients) status.Update(c->close());
  completions_->detach();
  *alive_ = false;
  in_flight_.clear();
  status.Update(router_.close());
  return status;
}

}  // namespace gcpstream::bigtable
