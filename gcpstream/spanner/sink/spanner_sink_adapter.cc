#include "gcpstream/spanner/sink/spanner_sink_adapter.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/cord.h"
#include "gcpstream/connector/await_on_mailbox.h"
#include "gcpstream/connector/failure_router.h"
#include "gcpstream/connector/status_classifier.h"
#include "gcpstream/spanner/admin/database_admin.h"
#include "gcpstream/spanner/client/batch_write.h"
#include "gcpstream/spanner/client/mutation.h"
#include "gcpstream/spanner/client/session_pool.h"
#include "gcpstream/spanner/sink/index_weights.h"
#include "gcpstream/util/absl_fmt.h"
#include "gcpstream/util/timer_thread.h"

namespace gcpstream::spanner {
namespace {

namespace sp = google::spanner::v1;
using connector::DatabaseDestination;

constexpr char kAbandonedCounter[] = "spannerShutdownsAbandoned";
// One database per sink, on one client.
constexpr char kOneGroup[] = "spanner";
// Marks a failure of the schema read: it fails the job whatever its code (a read that fails is
// no record's fault, so it must never reach a failure handler).
constexpr char kSchemaReadPayload[] = "gcpstream.dev/spanner-schema-read";
// Attempts of the schema read on transient codes, each with the generated client's ExecuteSql
// deadline.
constexpr int kSchemaReadAttempts = 3;
constexpr std::chrono::milliseconds kSchemaReadTimeout = std::chrono::seconds(30);
constexpr std::array<absl::StatusCode, 4> kRetriedCodes = {
    absl::StatusCode::kAborted, absl::StatusCode::kUnavailable, absl::StatusCode::kDeadlineExceeded,
    absl::StatusCode::kResourceExhausted};

// What the writer's gauges and the cell counter read from other threads. Two locks, never held
// together and never held while calling into a batcher: the batcher calls the cell counter
// (weights) under its own lock, and the gauges call the batchers.
struct Shared {
  std::mutex weights_mu;
  std::shared_ptr<const IndexWeights> weights = std::make_shared<IndexWeights>();
  std::mutex batchers_mu;
  std::vector<std::weak_ptr<BatchWriteBatcher>> batchers;

  std::shared_ptr<const IndexWeights> current_weights() {
    std::lock_guard lock(weights_mu);
    return weights;
  }
  void set_weights(IndexWeights w) {
    auto next = std::make_shared<const IndexWeights>(std::move(w));
    std::lock_guard lock(weights_mu);
    weights = std::move(next);
  }
  void add(const std::shared_ptr<BatchWriteBatcher>& batcher) {
    std::lock_guard lock(batchers_mu);
    std::erase_if(batchers, [](const auto& w) { return w.expired(); });
    batchers.push_back(batcher);
  }
  std::vector<std::shared_ptr<BatchWriteBatcher>> live() {
    std::vector<std::weak_ptr<BatchWriteBatcher>> copy;
    {
      std::lock_guard lock(batchers_mu);
      copy = batchers;
    }
    std::vector<std::shared_ptr<BatchWriteBatcher>> out;
    for (const auto& w : copy) {
      if (auto b = w.lock()) out.push_back(std::move(b));
    }
    return out;
  }
  // {bytes, cells} of the requests being filled.
  std::pair<std::int64_t, std::int64_t> buffered() {
    std::pair<std::int64_t, std::int64_t> sum{0, 0};
    for (const auto& b : live()) {
      const auto [bytes, cells] = b->open_load();
      sum.first += bytes;
      sum.second += cells;
    }
    return sum;
  }
  // Mutations waiting out a backoff.
  std::int64_t waiting_retry() {
    std::int64_t n = 0;
    for (const auto& b : live()) n += b->waiting_retry();
    return n;
  }
};

class DatabaseClient final : public connector::DestinationClient<sp::Mutation> {
 public:
  DatabaseClient(std::shared_ptr<SessionPool> pool, std::shared_ptr<BatchWriteBatcher> batcher)
      : pool_(std::move(pool)), batcher_(std::move(batcher)) {}
  void submit(sp::Mutation&& m, std::uint64_t token) override {
    batcher_->add(std::move(m), token);
  }
  void submit_solo(sp::Mutation&& m, std::uint64_t token) override {
    batcher_->add_solo(std::move(m), token);
  }
  void flush() override { batcher_->flush(); }
  absl::Status shutdown() override {
    absl::Status s = batcher_->shutdown();
    pool_->shutdown();
    return s;
  }

 private:
  std::shared_ptr<SessionPool> pool_;
  std::shared_ptr<BatchWriteBatcher> batcher_;
};

// Reads the dialect, then the secondary-index columns, on one session.
void ReadIndexWeights(std::shared_ptr<SessionPool> pool, std::shared_ptr<SpannerStub> stub,
                      std::chrono::milliseconds timeout,
                      std::function<void(absl::StatusOr<IndexWeights>)> done) {
  pool->acquire([pool, stub, timeout, done = std::move(done)](absl::StatusOr<std::string> session) {
    if (!session.ok()) return done(session.status());
    auto dialect_query = std::make_shared<sp::ExecuteSqlRequest>();
    dialect_query->set_session(*session);
    dialect_query->set_sql(
        "SELECT OPTION_VALUE FROM INFORMATION_SCHEMA.DATABASE_OPTIONS "
        "WHERE OPTION_NAME = 'database_dialect'");
    stub->async_execute_sql(
        dialect_query, timeout,
        [pool, stub, timeout, session = *session, done](absl::StatusOr<sp::ResultSet> r) {
          if (!r.ok()) {
            pool->release(session);
            return done(r.status());
          }
          Dialect dialect = Dialect::kGoogleSql;
          if (r->rows_size() == 1 && r->rows(0).values_size() == 1 &&
              r->rows(0).values(0).string_value() == "POSTGRESQL") {
            dialect = Dialect::kPostgreSql;
          }
          auto index_query = std::make_shared<sp::ExecuteSqlRequest>();
          index_query->set_session(session);
          index_query->set_sql(std::string(IndexWeights::Query()));
          stub->async_execute_sql(
              index_query, timeout,
              [pool, session, dialect, done](absl::StatusOr<sp::ResultSet> rows) {
                pool->release(session);
                if (!rows.ok()) return done(rows.status());
                auto parsed = IndexWeights::Rows(*rows);
                if (!parsed.ok()) return done(parsed.status());
                done(IndexWeights(dialect, *parsed));
              });
        });
  });
}

class SpannerSinkAdapter final
    : public connector::AsyncSinkAdapter<DatabaseDestination, sp::Mutation> {
 public:
  SpannerSinkAdapter(SpannerWriterConfig config, WriterInitContext& context,
                     std::shared_ptr<Shared> shared)
      : config_(std::move(config)),
        mailbox_(context.mailbox_executor()),
        timers_(config_.scheduler ? config_.scheduler : std::make_shared<util::TimerThread>()),
        shared_(std::move(shared)),
        retried_mutations_(context.metric_group().counter("mutationsRetried")) {
    for (auto code : kRetriedCodes) {
      retried_[static_cast<std::size_t>(code)] = &context.metric_group()
                                                      .add_group("errorClass")
                                                      .add_group(connector::ErrorClassName(code))
                                                      .counter("errors");
    }
    rules_.record_level = {absl::StatusCode::kInvalidArgument, absl::StatusCode::kAlreadyExists};
    if (config_.constraint_violation_policy == ConstraintViolationPolicy::kRouteToFailureHandler) {
      rules_.record_level.insert(absl::StatusCode::kFailedPrecondition);
      rules_.record_level.insert(absl::StatusCode::kOutOfRange);
    }
  }

  // A pool the schema read made for a database never opened (every record refused before
  // reaching it) still holds a session: delete it.
  ~SpannerSinkAdapter() override {
    for (auto& [name, pool] : pools_) pool->shutdown();
  }

  std::string describe(const DatabaseDestination& d) const override { return d.resource_name(); }
  std::string metric_scope(const DatabaseDestination& d) const override { return d.database; }
  std::string group_of(const DatabaseDestination&) const override { return kOneGroup; }

  absl::StatusOr<std::shared_ptr<connector::DestinationClient<sp::Mutation>>> open(
      const DatabaseDestination& d,
      std::shared_ptr<connector::SinkOutcomeListener<sp::Mutation>> listener) override {
    if (absl::Status s = ValidateDatabaseDestination(d); !s.ok()) {
      return absl::FailedPreconditionError(fmt::format(
          "the Spanner sink's database {} is invalid: {}", d.resource_name(), s.message()));
    }
    const SpannerWriterOptions& o = config_.options;
    // The client owns the pool from here (its shutdown shuts the pool down); a reopened
    // database gets a new one.
    std::shared_ptr<SessionPool> pool = pool_for(d);
    pools_.erase(d.resource_name());
    BatchWriteSettings settings;
    settings.max_cells = o.max_batch_cells;
    settings.max_mutations = o.max_batch_mutations;
    // The groups' bytes; the rest of a request stays inside the service's limit.
    settings.max_bytes =
        std::min(o.max_batch_bytes, SpannerWriterOptions::kMaxBatchBytes - kRequestOverheadBytes);
    if (o.rpc_priority) {
      switch (*o.rpc_priority) {
        case RpcPriority::kLow:
          settings.priority = sp::RequestOptions::PRIORITY_LOW;
          break;
        case RpcPriority::kMedium:
          settings.priority = sp::RequestOptions::PRIORITY_MEDIUM;
          break;
        case RpcPriority::kHigh:
          settings.priority = sp::RequestOptions::PRIORITY_HIGH;
          break;
      }
    }
    settings.retry = {o.retry_initial_backoff, o.retry_max_backoff, o.retry_max_attempts - 1, 0.25};
    settings.attempt_timeout = o.batch_write_timeout;
    settings.uniform01 = config_.uniform01;
    // Counted on gRPC threads: the hook holds the metric group's counters, never the adapter.
    settings.on_retry = [counters = retried_, total = &retried_mutations_](const absl::Status& s) {
      total->inc();
      const auto i = static_cast<std::size_t>(s.code());
      if (i < counters.size() && counters[i] != nullptr) counters[i]->inc();
    };
    auto batcher = MakeBatchWriteBatcher(
        d.resource_name(), config_.stub, pool, std::move(settings),
        [shared = shared_](const sp::Mutation& m) { return shared->current_weights()->cells(m); },
        timers_, std::move(listener));
    shared_->add(batcher);
    return std::shared_ptr<connector::DestinationClient<sp::Mutation>>(
        std::make_shared<DatabaseClient>(std::move(pool), std::move(batcher)));
  }

  absl::Status check(const DatabaseDestination& d) override { return ensure_weights(d); }

  std::int64_t size_of(const sp::Mutation& m) const override {
    return static_cast<std::int64_t>(m.ByteSizeLong());
  }

  absl::Status precheck(const DatabaseDestination& d, const sp::Mutation& m) override {
    if (absl::Status s = ensure_weights(d); !s.ok()) {
      s.SetPayload(kSchemaReadPayload, absl::Cord("1"));
      return s;
    }
    // What no request can carry is the record's failure, known before any RPC.
    if (const std::int64_t bytes = GroupWireBytes(m);
        bytes > SpannerWriterOptions::kMaxBatchBytes - kRequestOverheadBytes) {
      return absl::InvalidArgumentError(fmt::format(
          "a mutation of {} bytes (as a mutation group) for {} cannot travel in a request under "
          "the 104,857,600 bytes Spanner refuses",
          bytes, d.resource_name()));
    }
    if (const std::int64_t cells = shared_->current_weights()->cells(m);
        cells > SpannerWriterOptions::kMaxBatchCells) {
      return absl::InvalidArgumentError(fmt::format(
          "a mutation costing {} cells (columns plus index entries) for {} is over Spanner's "
          "80,000 mutations per mutation group",
          cells, d.resource_name()));
    }
    return absl::OkStatus();
  }

  connector::FailureClass classify(const absl::Status& status) const override {
    if (status.GetPayload(kSchemaReadPayload).has_value()) return connector::FailureClass::kFatal;
    if (IsRequestLevelFailure(status)) {
      return IsRetriedCode(status.code()) ? connector::FailureClass::kTransient
                                          : connector::FailureClass::kFatal;
    }
    return connector::Classify(status, rules_);
  }

  connector::RepairResult repair(const DatabaseDestination& d,
                                 const std::vector<const sp::Mutation*>&) override {
    // Unreachable: NOT_FOUND is never repairable here (the sink creates nothing).
    return {absl::FailedPreconditionError(
                fmt::format("the Spanner sink never creates anything ({})", d.resource_name())),
            true};
  }

  absl::Status fatal_failure(const DatabaseDestination& d,
                             const absl::Status& cause) const override {
    if (IsRequestLevelFailure(cause) && IsRetriedCode(cause.code())) {
      return absl::Status(
          cause.code(),
          fmt::format("BatchWrite to {} still failed as a whole after {} attempts of up to "
                      "batch_write_timeout ({} ms) each: {}. Its mutations have no outcome of "
                      "their own, so the job fails rather than drop them",
                      d.resource_name(), config_.options.retry_max_attempts,
                      config_.options.batch_write_timeout.count(), cause.message()));
    }
    if (IsRequestLevelFailure(cause) && cause.code() == absl::StatusCode::kUnimplemented) {
      return absl::UnimplementedError(fmt::format(
          "BatchWrite to {} is not implemented by the endpoint ({}). If that endpoint is the "
          "Spanner emulator, which has no BatchWrite, start the BatchWrite stand-in in front of "
          "it and point emulator_endpoint at the stand-in (docs/spanner.md, \"the stand-in\")",
          d.resource_name(), cause.message().empty() ? "no detail" : cause.message()));
    }
    if (IsRequestLevelFailure(cause)) {
      return absl::Status(
          cause.code(),
          fmt::format("BatchWrite to {} failed as a whole: {}. A failed call names no mutation "
                      "group, so its mutations have no outcome of their own and the job fails "
                      "rather than drop them",
                      d.resource_name(), cause.message()));
    }
    switch (cause.code()) {
      case absl::StatusCode::kNotFound:
        return absl::NotFoundError(fmt::format(
            "Spanner answered NOT_FOUND writing to {}: {}. The sink creates nothing (no "
            "database, table or column); a missing table or column refuses every record alike, "
            "so the job fails instead of routing. If rows may legitimately be gone, write them "
            "with insert_or_update",
            d.resource_name(), cause.message()));
      case absl::StatusCode::kFailedPrecondition:
      case absl::StatusCode::kOutOfRange:
        return absl::Status(
            cause.code(),
            fmt::format("Spanner refused a mutation to {} for violating a constraint: {}. "
                        "constraint_violation_policy is FAIL_JOB: such refusals usually mean "
                        "the mapping from records to columns is wrong (and FAILED_PRECONDITION "
                        "also means an unavailable CMEK key); set ROUTE_TO_FAILURE_HANDLER to "
                        "route them instead",
                        d.resource_name(), cause.message()));
      default:
        if (IsRetriedCode(cause.code())) {
          return absl::Status(
              cause.code(),
              fmt::format("writing to {} still failed after {} attempts: {}", d.resource_name(),
                          config_.options.retry_max_attempts, cause.message()));
        }
        return absl::Status(cause.code(), fmt::format("writing to {} failed: {}", d.resource_name(),
                                                      cause.message()));
    }
  }

  std::unique_ptr<connector::FailedElement> failed_element(const DatabaseDestination& d,
                                                           std::optional<sp::Mutation> m,
                                                           absl::Status status,
                                                           bool service_rejection) const override {
    return std::make_unique<connector::BasicFailedElement>(
        "spanner", d.resource_name(), m ? m->SerializeAsString() : std::string(), std::move(status),
        service_rejection);
  }

 private:
  // The database's sessions, made on first use (the schema read may come before open()).
  std::shared_ptr<SessionPool> pool_for(const DatabaseDestination& d) {
    auto& pool = pools_[d.resource_name()];
    if (!pool) {
      SessionPoolOptions options;
      options.max_sessions = config_.options.max_sessions;
      pool = std::make_shared<SessionPool>(d.resource_name(), config_.stub, timers_, options);
    }
    return pool;
  }

  // Reads the dialect and the secondary-index columns once, before the first mutation is
  // counted (precheck runs before the destination is opened) and at the latest when it opens.
  absl::Status ensure_weights(const DatabaseDestination& d) {
    if (weights_loaded_) return absl::OkStatus();
    auto pool = pool_for(d);
    absl::StatusOr<IndexWeights> weights = absl::UnknownError("not read");
    for (int attempt = 1; attempt <= kSchemaReadAttempts; ++attempt) {
      GCP_ASSIGN_OR_RETURN(
          weights, connector::AwaitOnMailbox<absl::StatusOr<IndexWeights>>(
                       mailbox_, "spanner schema read",
                       [&](std::function<void(absl::StatusOr<IndexWeights>)> done) {
                         ReadIndexWeights(pool, config_.stub, kSchemaReadTimeout, std::move(done));
                       }));
      if (weights.ok() || !IsRetriedCode(weights.status().code())) break;
    }
    if (!weights.ok()) {
      if (weights.status().code() == absl::StatusCode::kNotFound) {
        return absl::NotFoundError(fmt::format(
            "Spanner database {} was not found: {}. The sink creates nothing; create the "
            "database and its tables first",
            d.resource_name(), weights.status().message()));
      }
      return absl::Status(
          weights.status().code(),
          fmt::format("reading the secondary indexes of {} from INFORMATION_SCHEMA (needs "
                      "spanner.databases.select besides write access) failed: {}",
                      d.resource_name(), weights.status().message()));
    }
    shared_->set_weights(*std::move(weights));
    weights_loaded_ = true;
    return absl::OkStatus();
  }

  SpannerWriterConfig config_;
  MailboxExecutor& mailbox_;
  std::shared_ptr<util::Scheduler> timers_;
  std::shared_ptr<Shared> shared_;
  Counter& retried_mutations_;
  std::array<Counter*, 17> retried_{};
  connector::ClassifierRules rules_;
  std::map<std::string, std::shared_ptr<SessionPool>> pools_;
  bool weights_loaded_ = false;
};

connector::AsyncSinkWriterSettings Settings(const SpannerWriterOptions& o) {
  connector::AsyncSinkWriterSettings s;
  s.words = {.connector = "Spanner",
             .metric_connector = "spanner",
             .element = "mutation",
             .elements = "mutations",
             .element_metric = "Mutations",
             .destination = "database",
             .client = "batch writer",
             .live_destinations = "databases",
             .request = "BatchWrite"};
  s.max_in_flight_count = o.max_in_flight_mutations;
  s.max_in_flight_bytes = o.max_in_flight_bytes;
  s.progress.connector = "Spanner";
  s.progress.completion = "BatchWrite";
  s.progress.stall_warning_interval = o.stall_warning_interval;
  s.max_consecutive_rejections = o.max_consecutive_rejections;
  s.shutdown_timeout = o.shutdown_timeout;
  s.abandoned_counter = kAbandonedCounter;
  // Every mutation is its own mutation group, so each verdict is about that record alone.
  s.one_element_per_request = true;
  return s;
}

}  // namespace

std::unique_ptr<SpannerWriterCore> MakeSpannerWriterCore(SpannerWriterConfig config,
                                                         WriterInitContext& context) {
  connector::AsyncSinkWriterSettings settings = Settings(config.options);
  auto shared = std::make_shared<Shared>();
  settings.client_parked = [shared] { return shared->waiting_retry(); };
  context.metric_group().gauge("bufferedBytes",
                               [shared] { return static_cast<double>(shared->buffered().first); });
  context.metric_group().gauge("bufferedCells",
                               [shared] { return static_cast<double>(shared->buffered().second); });
  std::shared_ptr<connector::FailureHandler> handler = config.failure_handler;
  return std::make_unique<SpannerWriterCore>(
      std::move(settings),
      std::make_unique<SpannerSinkAdapter>(std::move(config), context, std::move(shared)),
      std::move(handler), context);
}

}  // namespace gcpstream::spanner
