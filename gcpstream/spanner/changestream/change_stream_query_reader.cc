#include "gcpstream/spanner/changestream/change_stream_query_reader.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gcpstream/spanner/changestream/change_stream_metadata.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::spanner {

namespace sp = google::spanner::v1;

namespace {
constexpr int kMaxEmptyEnds = 3;
}

ChangeStreamQueryReader::ChangeStreamQueryReader(std::shared_ptr<SpannerReadClient> client,
                                                 std::string stream,
                                                 SpannerChangeStreamOptions options,
                                                 std::shared_ptr<std::atomic<int>> dialect,
                                                 Counter& restarts)
    : client_(std::move(client)),
      stream_(std::move(stream)),
      options_(std::move(options)),
      dialect_(std::move(dialect)),
      restarts_(restarts) {}

ChangeStreamQueryReader::~ChangeStreamQueryReader() { stop_all(); }

absl::Status ChangeStreamQueryReader::handle_splits_addition(
    SplitsAddition<ChangeStreamPartitionSplit> addition) {
  for (auto& split : addition.splits) {
    const std::string id = split.split_id();
    if (queries_.count(id) > 0) continue;
    auto q = std::make_unique<Query>();
    q->split = std::move(split);
    open(*q);
    queries_.emplace(id, std::move(q));
  }
  return absl::OkStatus();
}

void ChangeStreamQueryReader::open(Query& q) {
  {
    std::lock_guard lock(mu_);
    q.done = false;
    q.status = absl::OkStatus();
    q.saw_children = false;
    q.opened_at = q.split.position;
  }
  q.cancel = std::make_unique<ReadCancellation>();
  const Dialect dialect = static_cast<Dialect>(dialect_->load());
  sp::ExecuteSqlRequest request;
  {
    std::lock_guard lock(mu_);
    request = ChangeStreamQuery(dialect, stream_, q.split, options_.heartbeat_interval,
                                options_.rpc_priority);
  }
  q.thread = std::thread([this, &q, request = std::move(request), cancel = q.cancel.get()] {
    const std::string id = q.split.split_id();
    absl::Status status;
    try {
      status = client_->data().ExecuteStreamingSql(
          request,
          [&](const sp::ResultSetMetadata& metadata,
              std::vector<google::protobuf::Value> values) -> absl::Status {
            auto records = ParseChangeStreamRow(metadata.row_type(), values, q.split.token);
            if (!records.ok()) return records.status();
            std::unique_lock lock(mu_);
            for (auto& record : *records) {
              if (std::holds_alternative<ChildPartitionsRecord>(record)) q.saw_children = true;
              if (auto* d = std::get_if<DataChangeRecord>(&record)) {
                if (d->commit_timestamp > q.split.position) q.split.position = d->commit_timestamp;
              } else if (auto* h = std::get_if<HeartbeatRecord>(&record)) {
                if (h->timestamp > q.split.position) q.split.position = h->timestamp;
              }
              q.records.push_back(std::move(record));
            }
            cv_.notify_all();
            cv_.wait(lock, [&] { return closing_ || q.records.empty(); });
            if (closing_) return absl::CancelledError("the source reader is closing");
            return absl::OkStatus();
          },
          cancel);
    } catch (const std::exception& e) {
      // Never std::terminate the process from a query thread: fail the reader instead.
      status = absl::InternalError(e.what());
    }
    {
      std::lock_guard lock(mu_);
      q.done = true;
      q.status = status.ok() ? status
                             : absl::Status(status.code(),
                                            fmt::format("SpannerChangeStreamSource: the query of "
                                                        "partition {} failed: {}",
                                                        id, status.message()));
    }
    cv_.notify_all();
  });
}

void ChangeStreamQueryReader::wake_up() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

absl::StatusOr<RecordsWithSplitIds<ChangeStreamRecord>> ChangeStreamQueryReader::fetch() {
  RecordsWithSplitIds<ChangeStreamRecord> batch;
  std::vector<Query*> ended;
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] {
      if (woken_ || closing_) return true;
      for (const auto& [id, q] : queries_) {
        if (!q->records.empty() || q->done) return true;
      }
      return false;
    });
    woken_ = false;
    for (auto& [id, q] : queries_) {
      while (!q->records.empty()) {
        batch.add(id, std::move(q->records.front()));
        q->records.pop_front();
      }
      if (q->done) ended.push_back(q.get());
    }
  }
  cv_.notify_all();
  for (Query* q : ended) {
    q->thread.join();
    const std::string id = q->split.split_id();
    if (!q->status.ok()) return q->status;
    if (q->saw_children) {
      batch.finish_split(id);
      queries_.erase(id);
      continue;
    }
    // Progress is a position past where the query opened (the boundary record comes again).
    q->empty_ends = q->split.position > q->opened_at ? 0 : q->empty_ends + 1;
    if (q->empty_ends >= kMaxEmptyEnds) {
      return absl::InternalError(fmt::format(
          "SpannerChangeStreamSource: the query of partition {} ended {} times in a row without "
          "progress and without reporting child partitions; it cannot be finished or read",
          id, q->empty_ends));
    }
    restarts_.inc();
    spdlog::warn(
        "SpannerChangeStreamSource: the query of partition {} ended without reporting child "
        "partitions; opening it again at {}",
        id, FormatTimestamp(q->split.position));
    open(*q);
  }
  return batch;
}

void ChangeStreamQueryReader::stop_all() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  cv_.notify_all();
  for (auto& [id, q] : queries_) {
    if (q->cancel) q->cancel->cancel();
  }
  for (auto& [id, q] : queries_) {
    if (q->thread.joinable()) q->thread.join();
  }
  queries_.clear();
}

absl::Status ChangeStreamQueryReader::close() {
  stop_all();
  client_.reset();
  return absl::OkStatus();
}

}  // namespace gcpstream::spanner
