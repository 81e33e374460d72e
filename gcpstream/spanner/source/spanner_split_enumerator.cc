#include "gcpstream/spanner/source/spanner_split_enumerator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cctype>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/spanner/client/value.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::spanner {

namespace sp = google::spanner::v1;

namespace {

absl::Status WithContext(const absl::Status& status, absl::string_view context) {
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

absl::Time FromProto(const google::protobuf::Timestamp& ts) {
  return absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
}

}  // namespace

absl::StatusOr<SpannerSourceEnumState> PlanBatchRead(SpannerDataClient& client,
                                                     const SpannerReadOperation& op,
                                                     const SpannerSourceOptions& options) {
  auto acquired = client.AcquireSession();
  if (!acquired.ok()) {
    return WithContext(acquired.status(),
                       absl::StrCat("SpannerSource: opening a session on ", client.database()));
  }
  const std::string session = *std::move(acquired);
  auto tx = client.BeginTransaction(session, options.timestamp_bound.transaction_options());
  if (!tx.ok()) {
    client.ReleaseSession(session);
    return WithContext(tx.status(), "SpannerSource: opening the batch read-only transaction");
  }
  sp::PartitionOptions partition_options;
  if (options.max_partitions) partition_options.set_max_partitions(*options.max_partitions);
  if (options.partition_size_bytes) {
    partition_options.set_partition_size_bytes(*options.partition_size_bytes);
  }
  absl::StatusOr<sp::PartitionResponse> partitions;
  if (op.kind() == SpannerReadOperation::Kind::kQuery) {
    sp::PartitionQueryRequest request = op.partition_query_request();
    request.set_session(session);
    request.mutable_transaction()->set_id(tx->id());
    *request.mutable_partition_options() = partition_options;
    partitions = client.PartitionQuery(std::move(request));
  } else {
    sp::PartitionReadRequest request = op.partition_read_request();
    request.set_session(session);
    request.mutable_transaction()->set_id(tx->id());
    *request.mutable_partition_options() = partition_options;
    partitions = client.PartitionRead(std::move(request));
  }
  if (!partitions.ok()) {
    client.ReleaseSession(session);
    // The service's own text is what tells the user which part of the query to change.
    return WithContext(partitions.status(), "SpannerSource: Spanner refused to partition the read");
  }
  SpannerSourceEnumState state;
  state.planned = true;
  state.transaction.session = session;
  state.transaction.transaction_id = tx->id();
  state.transaction.read_timestamp = FormatTimestamp(FromProto(tx->read_timestamp()));
  state.partition_count = partitions->partitions_size();
  for (int i = 0; i < partitions->partitions_size(); ++i) {
    SpannerPartitionSplit split;
    split.index = i;
    split.partition_token = partitions->partitions(i).partition_token();
    split.transaction = state.transaction;
    state.unassigned.push_back(std::move(split));
  }
  return state;
}

absl::StatusOr<absl::Duration> ParseRetentionPeriod(std::string_view text) {
  if (text.size() < 2) {
    return absl::InvalidArgumentError(fmt::format("retention period \"{}\"", text));
  }
  std::int64_t n = 0;
  for (char c : text.substr(0, text.size() - 1)) {
    if (!std::isdigit(static_cast<unsigned char>(c)) || n > 1000000000) {
      return absl::InvalidArgumentError(fmt::format("retention period \"{}\"", text));
    }
    n = n * 10 + (c - '0');
  }
  switch (text.back()) {
    case 's':
      return absl::Seconds(n);
    case 'm':
      return absl::Minutes(n);
    case 'h':
      return absl::Hours(n);
    case 'd':
      return absl::Hours(24 * n);
    default:
      return absl::InvalidArgumentError(fmt::format("retention period \"{}\"", text));
  }
}

absl::Status LostBatchTransactionError(const BatchTransactionRef& tx, const absl::Status& cause) {
  return absl::FailedPreconditionError(fmt::format(
      "SpannerSource: the batch read-only transaction at snapshot {} can no longer be rejoined: "
      "its session {} no longer exists (Spanner deletes a session left idle for an hour). The "
      "partitions of this state cannot be read again; start the read afresh (a new snapshot) "
      "without restoring this source's state. Cause: {}",
      tx.read_timestamp, tx.session, cause.message()));
}

absl::Status CheckBatchReadRestorable(SpannerDataClient& client, const BatchTransactionRef& tx,
                                      absl::Time now) {
  GCP_ASSIGN_OR_RETURN(absl::Time snapshot, ParseTimestamp(tx.read_timestamp));
  // Both dialects accept this spelling (PostgreSQL folds the unquoted names to lower case).
  sp::ExecuteSqlRequest retention_query;
  retention_query.set_sql(
      "SELECT OPTION_VALUE FROM INFORMATION_SCHEMA.DATABASE_OPTIONS "
      "WHERE OPTION_NAME = 'version_retention_period'");
  std::string reported;
  absl::Status read = client.ExecuteStreamingSql(
      std::move(retention_query),
      [&](const sp::ResultSetMetadata&, std::vector<google::protobuf::Value> row) {
        if (!row.empty() && row[0].has_string_value()) reported = row[0].string_value();
        return absl::OkStatus();
      });
  if (!read.ok()) return WithContext(read, "SpannerSource: reading version_retention_period");
  // Spanner's default when the database sets none.
  absl::Duration retention = absl::Hours(1);
  std::string retention_text = "1h (the default)";
  if (!reported.empty()) {
    auto parsed = ParseRetentionPeriod(reported);
    if (parsed.ok()) {
      retention = *parsed;
      retention_text = reported;
    } else {
      retention_text = fmt::format("1h (assumed: the database reported \"{}\")", reported);
      spdlog::warn("SpannerSource: version_retention_period \"{}\" not understood; assuming 1h",
                   reported);
    }
  }
  if (now - snapshot > retention) {
    return absl::FailedPreconditionError(fmt::format(
        "SpannerSource: the restored read is at snapshot {}, which is {} old, beyond the "
        "database's version_retention_period of {}: Spanner no longer has the data of that "
        "snapshot. Start the read afresh without this state, or raise the retention before a "
        "long read",
        tx.read_timestamp, absl::FormatDuration(absl::Trunc(now - snapshot, absl::Seconds(1))),
        retention_text));
  }
  sp::ExecuteSqlRequest probe;
  probe.set_sql("SELECT 1");
  probe.set_session(tx.session);
  probe.mutable_transaction()->set_id(tx.transaction_id);
  absl::Status alive = client.ExecuteStreamingSql(
      std::move(probe), [](const sp::ResultSetMetadata&, std::vector<google::protobuf::Value>) {
        return absl::OkStatus();
      });
  if (IsSessionNotFound(alive)) return LostBatchTransactionError(tx, alive);
  if (!alive.ok()) return WithContext(alive, "SpannerSource: rejoining the batch transaction");
  return absl::OkStatus();
}

SpannerSplitEnumerator::SpannerSplitEnumerator(
    SplitEnumeratorContext<SpannerPartitionSplit>& context, SpannerReadClientFactory clients,
    SpannerReadOperation op, SpannerSourceOptions options, SpannerSourceEnumState restored)
    : context_(context),
      clients_(std::move(clients)),
      op_(std::move(op)),
      options_(std::move(options)),
      state_(std::move(restored)),
      planned_count_(std::make_shared<std::atomic<int>>(0)) {
  MetricGroup& group = context_.metric_group();
  assigned_ = &group.counter("splitsAssigned");
  returned_ = &group.counter("splitsReturned");
  group.gauge("partitionsPlanned", [count = planned_count_] { return count->load(); });
}

SpannerSplitEnumerator::~SpannerSplitEnumerator() = default;

absl::Status SpannerSplitEnumerator::start() {
  GCP_ASSIGN_OR_RETURN(client_, clients_());
  auto client = client_;
  if (!state_.planned) {
    context_.call_async<absl::StatusOr<SpannerSourceEnumState>>(
        [client, op = op_, options = options_]() {
          return PlanBatchRead(client->data(), op, options);
        },
        [this](absl::StatusOr<SpannerSourceEnumState> planned) { on_ready(std::move(planned)); });
    return absl::OkStatus();
  }
  spdlog::info("SpannerSource: restored at snapshot {}; {} of {} partitions not yet assigned",
               state_.transaction.read_timestamp, state_.unassigned.size(), state_.partition_count);
  context_.call_async<absl::StatusOr<SpannerSourceEnumState>>(
      [client, state = state_]() -> absl::StatusOr<SpannerSourceEnumState> {
        GCP_RETURN_IF_ERROR(
            CheckBatchReadRestorable(client->data(), state.transaction, absl::Now()));
        return state;
      },
      [this](absl::StatusOr<SpannerSourceEnumState> checked) { on_ready(std::move(checked)); });
  return absl::OkStatus();
}

void SpannerSplitEnumerator::on_ready(absl::StatusOr<SpannerSourceEnumState> ready) {
  if (!ready.ok()) {
    context_.fail_job(ready.status());
    return;
  }
  const bool fresh = !state_.planned;
  state_ = *std::move(ready);
  unassigned_.assign(state_.unassigned.begin(), state_.unassigned.end());
  state_.unassigned.clear();
  planned_count_->store(state_.partition_count);
  if (fresh) {
    spdlog::info("SpannerSource: Spanner planned {} partition(s) at snapshot {}",
                 state_.partition_count, state_.transaction.read_timestamp);
    if (state_.partition_count < context_.current_parallelism()) {
      spdlog::warn(
          "SpannerSource: {} partition(s) for a parallelism of {}: the subtasks left without a "
          "partition finish at once (maxPartitions and partitionSizeBytes are only hints)",
          state_.partition_count, context_.current_parallelism());
    }
  }
  ready_ = true;
  std::set<int> waiting;
  waiting.swap(waiting_);
  for (int subtask : waiting) serve(subtask);
}

void SpannerSplitEnumerator::serve(int subtask) {
  if (unassigned_.empty()) {
    context_.signal_no_more_splits(subtask);
    return;
  }
  SpannerPartitionSplit split = std::move(unassigned_.front());
  unassigned_.pop_front();
  assigned_->inc();
  context_.assign_split(subtask, std::move(split));
}

absl::Status SpannerSplitEnumerator::handle_split_request(int subtask) {
  if (!ready_) {
    waiting_.insert(subtask);
    return absl::OkStatus();
  }
  serve(subtask);
  return absl::OkStatus();
}

absl::Status SpannerSplitEnumerator::add_splits_back(std::vector<SpannerPartitionSplit> splits,
                                                     int subtask) {
  (void)subtask;
  returned_->inc(static_cast<std::int64_t>(splits.size()));
  for (auto it = splits.rbegin(); it != splits.rend(); ++it) unassigned_.push_front(*it);
  return absl::OkStatus();
}

absl::Status SpannerSplitEnumerator::add_reader(int subtask) {
  (void)subtask;
  return absl::OkStatus();
}

absl::StatusOr<SpannerSourceEnumState> SpannerSplitEnumerator::snapshot_state(std::int64_t) {
  SpannerSourceEnumState out;
  out.planned = ready_ ? true : state_.planned;
  out.transaction = state_.transaction;
  out.partition_count = state_.partition_count;
  if (ready_) {
    out.unassigned.assign(unassigned_.begin(), unassigned_.end());
  } else {
    out.unassigned = state_.unassigned;  // restored and not yet checked: kept as it came
  }
  return out;
}

absl::Status SpannerSplitEnumerator::close() {
  client_.reset();
  return absl::OkStatus();
}

}  // namespace gcpstream::spanner
