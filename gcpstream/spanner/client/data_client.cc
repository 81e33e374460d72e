#include "gcpstream/spanner/client/data_client.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gcpstream/connector/grpc_status.h"
#include "gcpstream/spanner/client/partial_result_set.h"

namespace gcpstream::spanner {
namespace {

namespace sp = google::spanner::v1;

// Runs one asynchronous stub call and waits for its answer.
template <typename T>
T Await(const std::function<void(std::function<void(T)>)>& start) {
  std::promise<T> promise;
  auto answer = promise.get_future();
  start([&promise](T value) { promise.set_value(std::move(value)); });
  return answer.get();
}

absl::Status Annotate(const absl::Status& status, absl::string_view what) {
  absl::Status out(status.code(), absl::StrCat(what, ": ", status.message()));
  status.ForEachPayload(
      [&out](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

}  // namespace

// Cancels a stream that delivers nothing for `timeout`: kick() at every message. A thread of
// its own while armed (one per open stream attempt, and only with a timeout set).
class StreamIdleWatchdog {
 public:
  StreamIdleWatchdog(std::chrono::milliseconds timeout, PartialResultSetStream* stream)
      : timeout_(timeout) {
    if (timeout_.count() <= 0) return;
    kick();
    thread_ = std::thread([this, stream] {
      std::unique_lock lock(mu_);
      while (!stopped_) {
        const auto last = std::chrono::steady_clock::time_point(
            std::chrono::steady_clock::duration(last_.load(std::memory_order_relaxed)));
        const auto deadline = last + timeout_;
        if (std::chrono::steady_clock::now() >= deadline) {
          fired_ = true;
          stream->cancel();
          return;
        }
        cv_.wait_until(lock, deadline);
      }
    });
  }
  ~StreamIdleWatchdog() { stop(); }
  void kick() {
    last_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                std::memory_order_relaxed);
  }
  // Disarms it; true when it had cut the stream.
  bool stop() {
    if (thread_.joinable()) {
      {
        std::lock_guard lock(mu_);
        stopped_ = true;
      }
      cv_.notify_all();
      thread_.join();
    }
    std::lock_guard lock(mu_);
    return fired_;
  }

 private:
  const std::chrono::milliseconds timeout_;
  std::atomic<std::chrono::steady_clock::rep> last_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  bool fired_ = false;
  std::thread thread_;
};

bool IsResumableReadFailure(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kResourceExhausted;
}

void ReadCancellation::cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
  if (live_) live_->cancel();
  cv_.notify_all();
}

bool ReadCancellation::cancelled() const {
  std::lock_guard lock(mu_);
  return cancelled_;
}

bool ReadCancellation::attach(PartialResultSetStream* stream) {
  std::lock_guard lock(mu_);
  if (cancelled_) {
    stream->cancel();
    return false;  // not kept: the caller drops the stream at once
  }
  live_ = stream;
  return true;
}

void ReadCancellation::detach() {
  std::lock_guard lock(mu_);
  live_ = nullptr;
}

bool ReadCancellation::wait(std::chrono::milliseconds delay) {
  std::unique_lock lock(mu_);
  return !cv_.wait_for(lock, delay, [this] { return cancelled_; });
}

SpannerDataClient::SpannerDataClient(std::string database, std::shared_ptr<SpannerStub> stub,
                                     std::shared_ptr<SessionPool> pool, DataClientOptions options)
    : database_(std::move(database)),
      stub_(std::move(stub)),
      pool_(std::move(pool)),
      options_(std::move(options)) {}

bool SpannerDataClient::Sleep(std::chrono::milliseconds delay, ReadCancellation* cancel) const {
  if (options_.sleep) {
    options_.sleep(delay);
  } else if (cancel) {
    return cancel->wait(delay);
  } else {
    std::this_thread::sleep_for(delay);
  }
  return !cancel || !cancel->cancelled();
}

template <typename T>
absl::StatusOr<T> SpannerDataClient::Idempotent(
    std::string_view what,
    const std::function<void(std::function<void(absl::StatusOr<T>)>)>& start) {
  connector::RecoveryBackoff backoff(options_.retry);
  while (true) {
    auto answer = Await<absl::StatusOr<T>>(start);
    if (answer.ok()) return answer;
    std::optional<std::chrono::milliseconds> delay;
    if (answer.status().code() == absl::StatusCode::kUnavailable) delay = backoff.next();
    if (!delay) return Annotate(answer.status(), absl::string_view(what.data(), what.size()));
    Sleep(*delay);
  }
}

absl::StatusOr<std::string> SpannerDataClient::AcquireSession() {
  return Await<absl::StatusOr<std::string>>(
      [this](std::function<void(absl::StatusOr<std::string>)> done) {
        pool_->acquire(std::move(done));
      });
}

void SpannerDataClient::ReleaseSession(const std::string& session) { pool_->release(session); }
void SpannerDataClient::DiscardSession(const std::string& session) { pool_->discard(session); }

absl::StatusOr<sp::CommitResponse> SpannerDataClient::CommitOnce(
    const std::string& session, const std::vector<Mutation>& mutations,
    const CommitOptions& options) {
  auto request = std::make_shared<sp::CommitRequest>();
  request->set_session(session);
  for (const auto& m : mutations) *request->add_mutations() = m.proto();
  request->set_return_commit_stats(options.return_commit_stats);
  if (options.max_commit_delay) {
    const auto ms = options.max_commit_delay->count();
    request->mutable_max_commit_delay()->set_seconds(ms / 1000);
    request->mutable_max_commit_delay()->set_nanos(static_cast<int>(ms % 1000) * 1000000);
  }
  request->mutable_request_options()->set_priority(options.priority);
  request->mutable_request_options()->set_transaction_tag(options.transaction_tag);
  if (options.mode == CommitMode::kSingleUse) {
    request->mutable_single_use_transaction()->mutable_read_write();
    auto response = Await<absl::StatusOr<sp::CommitResponse>>(
        [&](std::function<void(absl::StatusOr<sp::CommitResponse>)> done) {
          stub_->async_commit(request, options_.rpc_timeout, std::move(done));
        });
    if (!response.ok()) return Annotate(response.status(), "Commit");
    return response;
  }
  auto begin = std::make_shared<sp::BeginTransactionRequest>();
  begin->set_session(session);
  begin->mutable_options()->mutable_read_write();
  begin->mutable_request_options()->set_priority(options.priority);
  begin->mutable_request_options()->set_transaction_tag(options.transaction_tag);
  auto transaction = Idempotent<sp::Transaction>(
      "BeginTransaction", [&](std::function<void(absl::StatusOr<sp::Transaction>)> done) {
        stub_->async_begin_transaction(begin, options_.rpc_timeout, std::move(done));
      });
  if (!transaction.ok()) return transaction.status();
  request->set_transaction_id(transaction->id());
  // A Commit naming a transaction is applied at most once, so an answer lost in transit is
  // asked for again with the same request.
  connector::RecoveryBackoff backoff(options_.retry);
  absl::StatusOr<sp::CommitResponse> response;
  while (true) {
    response = Await<absl::StatusOr<sp::CommitResponse>>(
        [&](std::function<void(absl::StatusOr<sp::CommitResponse>)> done) {
          stub_->async_commit(request, options_.rpc_timeout, std::move(done));
        });
    const auto code = response.status().code();
    if (code != absl::StatusCode::kUnavailable && code != absl::StatusCode::kDeadlineExceeded) {
      break;
    }
    auto delay = backoff.next();
    if (!delay) break;
    Sleep(*delay);
  }
  if (!response.ok() && response.status().code() != absl::StatusCode::kAborted &&
      !IsSessionNotFound(response.status())) {
    // Releases the transaction's locks at once instead of when it times out. Nothing to do
    // when it was aborted (already rolled back) or its session is gone.
    auto rollback = std::make_shared<sp::RollbackRequest>();
    rollback->set_session(session);
    rollback->set_transaction_id(request->transaction_id());
    Await<absl::Status>([&](std::function<void(absl::Status)> done) {
      stub_->async_rollback(rollback, options_.rpc_timeout, std::move(done));
    }).IgnoreError();
  }
  if (!response.ok()) return Annotate(response.status(), "Commit");
  return response;
}

absl::StatusOr<sp::CommitResponse> SpannerDataClient::Commit(std::vector<Mutation> mutations,
                                                             const CommitOptions& options) {
  if (mutations.empty()) return absl::InvalidArgumentError("Commit of no mutation");
  if (options.max_commit_delay &&
      (options.max_commit_delay->count() < 0 || options.max_commit_delay->count() > 500)) {
    return absl::InvalidArgumentError(absl::StrCat("max_commit_delay must be 0 to 500 ms, not ",
                                                   options.max_commit_delay->count(), " ms"));
  }
  connector::RecoveryBackoff backoff(options_.retry);
  std::string session;  // kept across ABORTED retries, as the Commit reference advises
  while (true) {
    if (session.empty()) {
      auto acquired = AcquireSession();
      if (!acquired.ok()) return Annotate(acquired.status(), "no session for Commit");
      session = *acquired;
    }
    auto response = CommitOnce(session, mutations, options);
    if (response.ok()) {
      pool_->release(session);
      return response;
    }
    const bool lost = IsSessionNotFound(response.status());
    const bool aborted = response.status().code() == absl::StatusCode::kAborted;
    if (lost) {
      pool_->discard(session);
      session.clear();
    }
    if (!lost && !aborted) {
      pool_->release(session);
      return response;
    }
    auto delay = backoff.next();
    if (!delay) {
      if (!session.empty()) pool_->release(session);
      return Annotate(response.status(),
                      absl::StrCat("Commit gave up after ", backoff.attempts(), " attempts"));
    }
    // A lost session is replaced at once; an abort waits as the service asks, or backs off.
    if (aborted) Sleep(RetryDelayOf(response.status()).value_or(*delay));
  }
}

absl::Status SpannerDataClient::Stream(const std::string& named_session, const OpenStream& open,
                                       const RowCallback& on_row, ReadCancellation* cancel) {
  const absl::Status cancelled = absl::CancelledError("the streaming read was cancelled");
  connector::RecoveryBackoff backoff(options_.retry);
  bool handed_out = false;  // whether any row reached on_row
  while (true) {
    if (cancel && cancel->cancelled()) return cancelled;
    std::string session = named_session;
    if (session.empty()) {
      auto acquired = AcquireSession();
      if (!acquired.ok()) return Annotate(acquired.status(), "no session for a streaming read");
      session = *acquired;
    }
    PartialResultSetMerger merger(options_.max_unconfirmed_bytes);
    absl::Status failure;
    absl::Status stopped;  // what on_row returned, when not OK
    // Attempts on this session: the first opens the stream, later ones resume it.
    while (true) {
      auto stream = open(session, merger.resume_token());
      if (cancel && !cancel->attach(stream.get())) {
        stopped = cancelled;
        break;
      }
      StreamIdleWatchdog watchdog(options_.stream_idle_timeout, stream.get());
      while (auto part = stream->read()) {
        watchdog.kick();
        if (auto s = merger.add(*part); !s.ok()) {
          failure = s;
          break;
        }
        // Progress since the last failure is a row handed out: the next outage gets the whole
        // budget again. A new resume token alone is not progress (a stream cut inside one huge
        // row gets new tokens for the same row, and would retry forever).
        for (auto& row : merger.take_rows()) {
          if (backoff.attempts() > 0) backoff.reset();
          handed_out = true;
          stopped = on_row(merger.metadata(), std::move(row));
          if (!stopped.ok()) break;
        }
        if (!stopped.ok()) break;
      }
      const bool idle_cut = watchdog.stop();
      if (idle_cut) {
        spdlog::warn(
            "Spanner streaming read sent nothing for {} ms (stream_idle_timeout): cut, "
            "resuming from its last resume token",
            options_.stream_idle_timeout.count());
      }
      if (cancel) cancel->detach();
      if (cancel && cancel->cancelled()) {
        stopped = cancelled;
        break;
      }
      if (!failure.ok() || !stopped.ok()) break;  // the stream is cancelled as it goes
      const absl::Status status =
          idle_cut ? absl::DeadlineExceededError(absl::StrCat(
                         "the streaming read sent nothing for ",
                         options_.stream_idle_timeout.count(), " ms (stream_idle_timeout)"))
                   : stream->status();
      if (status.ok()) {
        failure = merger.finish();
        if (failure.ok()) {
          for (auto& row : merger.take_rows()) {
            stopped = on_row(merger.metadata(), std::move(row));
            if (!stopped.ok()) break;
          }
        }
        break;
      }
      failure = status;
      if (!(idle_cut || IsResumableReadFailure(status)) || !merger.rewind().ok()) break;
      auto delay = backoff.next();
      if (!delay) break;
      if (!Sleep(*delay, cancel)) {
        stopped = cancelled;
        break;
      }
      failure = absl::OkStatus();
    }
    const bool lost = IsSessionNotFound(failure);
    if (named_session.empty()) {
      if (lost) {
        pool_->discard(session);
      } else {
        pool_->release(session);
      }
    }
    if (!stopped.ok()) return stopped;
    if (failure.ok()) return absl::OkStatus();
    // A lost pool session before any row: the whole read again on another session.
    if (lost && named_session.empty() && !handed_out && backoff.next()) continue;
    return Annotate(failure, "streaming read");
  }
}

absl::Status SpannerDataClient::ExecuteStreamingSql(sp::ExecuteSqlRequest request,
                                                    const RowCallback& on_row,
                                                    ReadCancellation* cancel) {
  const std::string named = request.session();
  return Stream(
      named,
      [&](const std::string& session, const std::string& token) {
        auto attempt = std::make_shared<sp::ExecuteSqlRequest>(request);
        attempt->set_session(session);
        attempt->set_resume_token(token);
        return stub_->execute_streaming_sql(std::move(attempt), options_.stream_timeout);
      },
      on_row, cancel);
}

absl::Status SpannerDataClient::StreamingRead(sp::ReadRequest request, const RowCallback& on_row,
                                              ReadCancellation* cancel) {
  const std::string named = request.session();
  return Stream(
      named,
      [&](const std::string& session, const std::string& token) {
        auto attempt = std::make_shared<sp::ReadRequest>(request);
        attempt->set_session(session);
        attempt->set_resume_token(token);
        return stub_->streaming_read(std::move(attempt), options_.stream_timeout);
      },
      on_row, cancel);
}

absl::StatusOr<sp::Transaction> SpannerDataClient::BeginTransaction(
    const std::string& session, sp::TransactionOptions options) {
  auto request = std::make_shared<sp::BeginTransactionRequest>();
  request->set_session(session);
  *request->mutable_options() = std::move(options);
  return Idempotent<sp::Transaction>(
      "BeginTransaction", [&](std::function<void(absl::StatusOr<sp::Transaction>)> done) {
        stub_->async_begin_transaction(request, options_.rpc_timeout, std::move(done));
      });
}

absl::StatusOr<sp::PartitionResponse> SpannerDataClient::PartitionQuery(
    sp::PartitionQueryRequest request) {
  auto shared = std::make_shared<const sp::PartitionQueryRequest>(std::move(request));
  return Idempotent<sp::PartitionResponse>(
      "PartitionQuery", [&](std::function<void(absl::StatusOr<sp::PartitionResponse>)> done) {
        stub_->async_partition_query(shared, options_.rpc_timeout, std::move(done));
      });
}

absl::StatusOr<sp::PartitionResponse> SpannerDataClient::PartitionRead(
    sp::PartitionReadRequest request) {
  auto shared = std::make_shared<const sp::PartitionReadRequest>(std::move(request));
  return Idempotent<sp::PartitionResponse>(
      "PartitionRead", [&](std::function<void(absl::StatusOr<sp::PartitionResponse>)> done) {
        stub_->async_partition_read(shared, options_.rpc_timeout, std::move(done));
      });
}

}  // namespace gcpstream::spanner
