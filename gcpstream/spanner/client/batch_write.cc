#include "gcpstream/spanner/client/batch_write.h"

#include <google/protobuf/io/coded_stream.h>

#include <mutex>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "gcpstream/connector/status_classifier.h"

namespace gcpstream::spanner {
namespace {

namespace sp = google::spanner::v1;

constexpr char kRequestLevelPayload[] = "gcpstream.dev/spanner-request-level";

absl::Status MarkRequestLevel(absl::Status status) {
  status.SetPayload(kRequestLevelPayload, absl::Cord("1"));
  return status;
}

// Cancels the call of the current attempt step, and remembers a cancel asked for before that
// call started. Each step (a first send, a re-send on a new session) takes a new generation, so
// a step's cancel registered late (its call may finish before the stub returns) never replaces
// a newer step's.
struct CancelSlot {
  std::mutex mu;
  std::function<void()> cancel;
  int generation = 0;
  bool cancelled = false;
  int next_generation() {
    std::lock_guard lock(mu);
    cancel = nullptr;
    return ++generation;
  }
  void set(int g, std::function<void()> c) {
    bool now;
    {
      std::lock_guard lock(mu);
      if (g != generation) return;
      cancel = c;
      now = cancelled;
    }
    if (now && c) c();
  }
  void fire() {
    std::function<void()> c;
    {
      std::lock_guard lock(mu);
      cancelled = true;
      c = cancel;
    }
    if (c) c();
  }
  bool is_cancelled() {
    std::lock_guard lock(mu);
    return cancelled;
  }
};

class BatchWriteService final
    : public connector::BatchService<sp::Mutation, sp::BatchWriteRequest> {
 public:
  BatchWriteService(std::shared_ptr<SpannerStub> stub, std::shared_ptr<SessionPool> pool,
                    sp::RequestOptions::Priority priority, int session_replacements,
                    std::shared_ptr<util::Scheduler> clock)
      : stub_(std::move(stub)),
        pool_(std::move(pool)),
        priority_(priority),
        session_replacements_(session_replacements),
        clock_(std::move(clock)) {}

  std::shared_ptr<sp::BatchWriteRequest> new_request() override {
    auto request = std::make_shared<sp::BatchWriteRequest>();
    if (priority_ != sp::RequestOptions::PRIORITY_UNSPECIFIED) {
      request->mutable_request_options()->set_priority(priority_);
    }
    return request;
  }
  void append(sp::BatchWriteRequest& request, sp::Mutation&& mutation) override {
    *request.add_mutation_groups()->add_mutations() = std::move(mutation);
  }
  sp::Mutation& element(sp::BatchWriteRequest& request, std::size_t index) override {
    return *request.mutable_mutation_groups(static_cast<int>(index))->mutable_mutations(0);
  }
  absl::Status unreported(const absl::Status& rpc) override { return MarkRequestLevel(rpc); }

  std::function<void()> send(std::shared_ptr<sp::BatchWriteRequest> request,
                             std::chrono::milliseconds timeout,
                             std::function<void(connector::BatchCallResult)> done) override {
    auto slot = std::make_shared<CancelSlot>();
    const auto deadline = clock_->now() + timeout;
    attempt(std::move(request), deadline, session_replacements_, slot, std::move(done));
    return [slot] { slot->fire(); };
  }

 private:
  void attempt(std::shared_ptr<sp::BatchWriteRequest> request,
               std::chrono::steady_clock::time_point deadline, int replacements_left,
               std::shared_ptr<CancelSlot> slot,
               std::function<void(connector::BatchCallResult)> done) {
    pool_->acquire([this, request, deadline, replacements_left, slot,
                    done = std::move(done)](absl::StatusOr<std::string> session) mutable {
      if (!session.ok()) {
        // No session means no call: a request-level failure with the pool's code (CANCELLED at
        // shutdown, NOT_FOUND for a database that does not exist, a transient code).
        connector::BatchCallResult result;
        result.rpc = session.status();
        done(std::move(result));
        return;
      }
      if (slot->is_cancelled()) {
        pool_->release(*session);
        connector::BatchCallResult result;
        result.rpc = absl::CancelledError("BatchWrite cancelled before it was sent");
        done(std::move(result));
        return;
      }
      request->set_session(*session);
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_->now());
      const int generation = slot->next_generation();
      slot->set(
          generation,
          stub_->async_batch_write(
              request, std::max(std::chrono::milliseconds(1), left),
              [this, request, deadline, replacements_left, slot, session = *session,
               done = std::move(done)](connector::BatchCallResult result) mutable {
                if (!IsSessionNotFound(result.rpc)) {
                  pool_->release(session);
                  done(std::move(result));
                  return;
                }
                pool_->discard(session);
                if (result.entries.empty() && replacements_left > 0 && !slot->is_cancelled()) {
                  // Nothing was applied: the same request again, on a new session.
                  attempt(std::move(request), deadline, replacements_left - 1, slot,
                          std::move(done));
                  return;
                }
                if (!result.entries.empty()) {
                  // Lost after some groups were reported: the others are undecided, so they are
                  // retried (on a new session) like any call that failed part-way.
                  result.rpc = absl::UnavailableError(absl::StrCat(
                      "the session was lost part-way through BatchWrite: ", result.rpc.message()));
                }
                done(std::move(result));
              }));
    });
  }

  std::shared_ptr<SpannerStub> stub_;
  std::shared_ptr<SessionPool> pool_;
  const sp::RequestOptions::Priority priority_;
  const int session_replacements_;
  // The clock the per-attempt deadline is read on (the batcher's scheduler).
  const std::shared_ptr<util::Scheduler> clock_;
};

}  // namespace

std::int64_t GroupWireBytes(const sp::Mutation& mutation) {
  using google::protobuf::io::CodedOutputStream;
  const std::size_t m = mutation.ByteSizeLong();
  // MutationGroup.mutations (tag, length, message), then BatchWriteRequest.mutation_groups.
  const std::size_t group = 1 + CodedOutputStream::VarintSize64(m) + m;
  return static_cast<std::int64_t>(1 + CodedOutputStream::VarintSize64(group) + group);
}

bool IsRetriedCode(absl::StatusCode code) {
  // The transient codes but CANCELLED, which only the sink's own shutdown produces here.
  return connector::IsTransientCode(code) && code != absl::StatusCode::kCancelled;
}

bool IsRequestLevelFailure(const absl::Status& status) {
  return status.GetPayload(kRequestLevelPayload).has_value();
}

std::shared_ptr<BatchWriteBatcher> MakeBatchWriteBatcher(
    std::string database, std::shared_ptr<SpannerStub> stub, std::shared_ptr<SessionPool> pool,
    BatchWriteSettings settings, std::function<std::int64_t(const sp::Mutation&)> cells,
    std::shared_ptr<util::Scheduler> timers,
    std::shared_ptr<connector::SinkOutcomeListener<sp::Mutation>> listener) {
  (void)database;  // the session names the database
  connector::RequestBatcherSettings s;
  s.max_count = settings.max_mutations;
  s.max_bytes = settings.max_bytes;
  s.bytes_is_cap = true;
  s.max_units = settings.max_cells;
  for (int code = 0; code <= static_cast<int>(absl::StatusCode::kUnauthenticated); ++code) {
    if (IsRetriedCode(static_cast<absl::StatusCode>(code))) {
      s.retryable_codes.insert(static_cast<absl::StatusCode>(code));
    }
  }
  s.retry_policy = [retry = settings.retry, timeout = settings.attempt_timeout,
                    uniform01 = settings.uniform01] {
    return std::make_unique<connector::AttemptBudgetPolicy>(retry, timeout, uniform01);
  };
  s.on_retry = settings.on_retry;
  return std::make_shared<BatchWriteBatcher>(
      std::make_shared<BatchWriteService>(std::move(stub), std::move(pool), settings.priority,
                                          settings.session_replacements, timers),
      std::move(s),
      [cells = std::move(cells)](const sp::Mutation& m) {
        return std::pair<std::int64_t, std::int64_t>(GroupWireBytes(m), cells(m));
      },
      std::move(timers), std::move(listener));
}

}  // namespace gcpstream::spanner
