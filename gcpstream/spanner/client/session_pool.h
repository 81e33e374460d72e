#ifndef GCPSTREAM_SPANNER_CLIENT_SESSION_POOL_H_
#define GCPSTREAM_SPANNER_CLIENT_SESSION_POOL_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "gcpstream/spanner/client/spanner_stub.h"
#include "gcpstream/util/scheduler.h"

namespace gcpstream::spanner {

// Defaults follow Google's Spanner clients: sessions are created with BatchCreateSessions and a
// session that sat idle is pinged ("SELECT 1") every 30 minutes, well inside the hour after
// which the service deletes an idle session (Spanner "Sessions" documentation).
struct SessionPoolOptions {
  // Sessions at most; each BatchWrite call holds one for its duration, so this bounds the calls
  // in flight per database.
  int max_sessions = 100;
  std::chrono::milliseconds rpc_timeout{std::chrono::seconds(30)};
  std::chrono::milliseconds keep_alive_interval{std::chrono::minutes(30)};
};

// Sessions of one database, each handed to one caller at a time. Grows on demand up to
// max_sessions (one BatchCreateSessions per missing session); a caller beyond that waits for a
// release. Non-blocking except shutdown(). Thread-safe. Create with std::make_shared.
class SessionPool : public std::enable_shared_from_this<SessionPool> {
 public:
  SessionPool(std::string database, std::shared_ptr<SpannerStub> stub,
              std::shared_ptr<util::Scheduler> timers, SessionPoolOptions options = {});
  ~SessionPool();

  // Hands a session to `done` (possibly at once, on the caller's thread), or the error of
  // creating one (its gRPC code kept: NOT_FOUND for a missing database fails fast), or
  // CANCELLED after shutdown().
  void acquire(std::function<void(absl::StatusOr<std::string>)> done);
  // Gives a session back for the next caller.
  void release(const std::string& session);
  // A session the service no longer knows (IsSessionNotFound): forgotten, and replaced on the
  // next demand.
  void discard(const std::string& session);

  // Fails waiting callers with CANCELLED and deletes idle sessions, including those out for a
  // keep-alive ping (waits for the ping to answer); best effort, bounded by 2 x rpc_timeout +
  // 1 s. Sessions a caller still holds are deleted when released. Idempotent.
  void shutdown();

  // Sessions alive (idle and in use), and sessions being created. Thread-safe.
  int size() const;
  // Keep-alive pings sent so far (for tests).
  int pings() const;

 private:
  using Waiter = std::function<void(absl::StatusOr<std::string>)>;
  void maybe_create_locked(std::vector<std::function<void()>>& later);
  void on_created(absl::StatusOr<std::vector<std::string>> names);
  void arm_keep_alive_locked();
  void keep_alive();
  void ping_done(const std::string& session, bool lost);
  void release_locked(const std::string& session, std::vector<std::function<void()>>& later);
  void discard_locked(std::vector<std::function<void()>>& later);
  // Deletes a session after shutdown, counted in deleting_ so shutdown() can wait for it.
  void delete_after_shutdown_locked(const std::string& session,
                                    std::vector<std::function<void()>>& later);

  const std::string database_;
  std::shared_ptr<SpannerStub> stub_;
  std::shared_ptr<util::Scheduler> timers_;
  const SessionPoolOptions options_;

  mutable std::mutex mu_;
  std::condition_variable deleted_;
  std::deque<std::pair<std::string, std::chrono::steady_clock::time_point>> idle_;
  std::deque<Waiter> waiters_;
  int live_ = 0;      // sessions that exist (idle or in use)
  int creating_ = 0;  // BatchCreateSessions calls in flight
  int deleting_ = 0;  // DeleteSession calls in flight at or after shutdown
  int pinging_ = 0;   // keep-alive pings in flight (their sessions are out of idle_)
  int pings_ = 0;
  bool shut_down_ = false;
  std::shared_ptr<util::TimerHandle> keep_alive_timer_;
};

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_CLIENT_SESSION_POOL_H_
