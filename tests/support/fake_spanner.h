#ifndef GCPSTREAM_TESTS_SUPPORT_FAKE_SPANNER_H_
#define GCPSTREAM_TESTS_SUPPORT_FAKE_SPANNER_H_

#include <array>
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gcpstream/spanner/client/spanner_stub.h"

namespace gcpstream::testing {

// A SpannerStub that records every BatchWrite and answers it when told to (or at once through
// `on_batch_write`; unset answers every group OK). Sessions are "sessions/s<N>"; the schema
// read answers `dialect` and `index_rows`. Cancelling a pending call answers it CANCELLED, as
// gRPC does. Thread-safe.
class FakeSpannerStub final : public spanner::SpannerStub {
 public:
  using BatchWriteRequest = google::spanner::v1::BatchWriteRequest;
  struct Call {
    BatchWriteRequest request;
    std::chrono::milliseconds timeout{0};
    std::function<void(connector::BatchCallResult)> done;  // empty once answered
    bool cancelled = false;
  };
  // The answer to call `index`; nullopt leaves it pending.
  std::function<std::optional<connector::BatchCallResult>(std::size_t, const BatchWriteRequest&)>
      on_batch_write;
  std::string dialect = "GOOGLE_STANDARD_SQL";
  std::vector<std::array<std::string, 4>> index_rows;  // schema, table, index, column
  absl::Status session_error;  // what BatchCreateSessions answers, when not OK
  absl::Status schema_error;   // what the schema read answers, when not OK

  // Every group of `request` with `status`.
  static connector::BatchCallResult All(const BatchWriteRequest& request, absl::Status status) {
    connector::BatchCallResult r;
    for (int i = 0; i < request.mutation_groups_size(); ++i) r.entries.emplace_back(i, status);
    return r;
  }

  std::function<void()> async_batch_write(
      std::shared_ptr<const BatchWriteRequest> request, std::chrono::milliseconds timeout,
      std::function<void(connector::BatchCallResult)> done) override {
    std::size_t index;
    decltype(on_batch_write) responder;
    {
      std::lock_guard lock(mu_);
      index = calls_.size();
      calls_.push_back(Call{*request, timeout, std::move(done), false});
      responder = on_batch_write;
    }
    std::optional<connector::BatchCallResult> answer =
        responder ? responder(index, *request) : std::optional(All(*request, absl::OkStatus()));
    if (answer) complete(index, std::move(*answer));
    return [this, index] {
      {
        std::lock_guard lock(mu_);
        calls_[index].cancelled = true;
      }
      connector::BatchCallResult r;
      r.rpc = absl::CancelledError("cancelled");
      complete(index, std::move(r));
    };
  }

  // Answers call `i` (ignored when it was answered already).
  void complete(std::size_t i, connector::BatchCallResult result) {
    std::function<void(connector::BatchCallResult)> done;
    {
      std::lock_guard lock(mu_);
      if (i >= calls_.size()) return;
      done = std::move(calls_[i].done);
      calls_[i].done = nullptr;
    }
    if (done) done(std::move(result));
  }

  void async_batch_create_sessions(
      std::string, int count, std::chrono::milliseconds,
      std::function<void(absl::StatusOr<std::vector<std::string>>)> done) override {
    if (!session_error.ok()) return done(session_error);
    std::vector<std::string> names;
    for (int i = 0; i < count; ++i) {
      names.push_back("sessions/s" + std::to_string(sessions_created_.fetch_add(1)));
    }
    done(std::move(names));
  }

  void async_execute_sql(
      std::shared_ptr<const google::spanner::v1::ExecuteSqlRequest> request,
      std::chrono::milliseconds,
      std::function<void(absl::StatusOr<google::spanner::v1::ResultSet>)> done) override {
    if (!schema_error.ok()) return done(schema_error);
    google::spanner::v1::ResultSet result;
    if (request->sql().find("DATABASE_OPTIONS") != std::string::npos) {
      result.add_rows()->add_values()->set_string_value(dialect);
    } else if (request->sql().find("INDEX_COLUMNS") != std::string::npos) {
      for (const auto& row : index_rows) {
        auto* r = result.add_rows();
        for (const auto& v : row) r->add_values()->set_string_value(v);
      }
    } else {
      result.add_rows()->add_values()->set_string_value("1");
    }
    done(std::move(result));
  }

  void async_delete_session(std::string, std::chrono::milliseconds,
                            std::function<void(absl::Status)> done) override {
    sessions_deleted_++;
    done(absl::OkStatus());
  }

  std::size_t size() const {
    std::lock_guard lock(mu_);
    return calls_.size();
  }
  Call call(std::size_t i) const {
    std::lock_guard lock(mu_);
    Call c = calls_.at(i);
    c.done = nullptr;
    return c;
  }
  int sessions_created() const { return sessions_created_.load(); }
  int sessions_deleted() const { return sessions_deleted_.load(); }

 private:
  mutable std::mutex mu_;
  std::vector<Call> calls_;
  std::atomic<int> sessions_created_{0};
  std::atomic<int> sessions_deleted_{0};
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_SUPPORT_FAKE_SPANNER_H_
