#include "gcpstream/spanner/client/session_pool.h"

#include <vector>

namespace gcpstream::spanner {

SessionPool::SessionPool(std::string database, std::shared_ptr<SpannerStub> stub,
                         std::shared_ptr<util::Scheduler> timers, SessionPoolOptions options)
    : database_(std::move(database)),
      stub_(std::move(stub)),
      timers_(std::move(timers)),
      options_(options) {}

SessionPool::~SessionPool() {
  if (keep_alive_timer_) keep_alive_timer_->cancel();
}

void SessionPool::acquire(Waiter done) {
  std::vector<std::function<void()>> later;
  {
    std::lock_guard lock(mu_);
    if (shut_down_) {
      later.push_back([done] { done(absl::CancelledError("the session pool is shut down")); });
    } else if (!idle_.empty()) {
      std::string session = std::move(idle_.front().first);
      idle_.pop_front();
      later.push_back([done, session = std::move(session)] { done(session); });
    } else {
      waiters_.push_back(std::move(done));
      maybe_create_locked(later);
    }
  }
  for (auto& f : later) f();
}

void SessionPool::maybe_create_locked(std::vector<std::function<void()>>& later) {
  // One creation per waiter that no session in creation will serve, within the cap.
  while (static_cast<int>(waiters_.size()) > creating_ &&
         live_ + creating_ < options_.max_sessions) {
    ++creating_;
    std::weak_ptr<SessionPool> weak = weak_from_this();
    later.push_back([this, weak] {
      stub_->async_batch_create_sessions(database_, 1, options_.rpc_timeout,
                                         [weak](absl::StatusOr<std::vector<std::string>> names) {
                                           if (auto self = weak.lock())
                                             self->on_created(std::move(names));
                                         });
    });
  }
}

void SessionPool::on_created(absl::StatusOr<std::vector<std::string>> names) {
  std::vector<std::function<void()>> later;
  {
    std::lock_guard lock(mu_);
    --creating_;
    if (!names.ok() || names->empty()) {
      const absl::Status error =
          names.ok() ? absl::UnavailableError("BatchCreateSessions returned no session")
                     : names.status();
      // The waiter this creation was for learns why; the others keep their own creations.
      if (!waiters_.empty()) {
        Waiter w = std::move(waiters_.front());
        waiters_.pop_front();
        later.push_back([w = std::move(w), error] { w(error); });
      }
    } else {
      for (auto& name : *names) {
        ++live_;
        if (shut_down_) {
          --live_;
          delete_after_shutdown_locked(name, later);
        } else if (!waiters_.empty()) {
          Waiter w = std::move(waiters_.front());
          waiters_.pop_front();
          later.push_back([w = std::move(w), name] { w(name); });
        } else {
          idle_.emplace_back(name, timers_->now());
        }
      }
      arm_keep_alive_locked();
    }
    maybe_create_locked(later);
  }
  for (auto& f : later) f();
}

void SessionPool::release(const std::string& session) {
  std::vector<std::function<void()>> later;
  {
    std::lock_guard lock(mu_);
    release_locked(session, later);
  }
  for (auto& f : later) f();
}

void SessionPool::release_locked(const std::string& session,
                                 std::vector<std::function<void()>>& later) {
  if (shut_down_) {
    --live_;
    delete_after_shutdown_locked(session, later);
  } else if (!waiters_.empty()) {
    Waiter w = std::move(waiters_.front());
    waiters_.pop_front();
    later.push_back([w = std::move(w), session] { w(session); });
  } else {
    idle_.emplace_back(session, timers_->now());
  }
}

void SessionPool::discard(const std::string&) {
  std::vector<std::function<void()>> later;
  {
    std::lock_guard lock(mu_);
    discard_locked(later);
  }
  for (auto& f : later) f();
}

void SessionPool::discard_locked(std::vector<std::function<void()>>& later) {
  --live_;
  if (!shut_down_) maybe_create_locked(later);
}

void SessionPool::arm_keep_alive_locked() {
  if (keep_alive_timer_ || shut_down_) return;
  std::weak_ptr<SessionPool> weak = weak_from_this();
  keep_alive_timer_ = timers_->schedule(timers_->now() + options_.keep_alive_interval / 2, [weak] {
    if (auto self = weak.lock()) self->keep_alive();
  });
}

void SessionPool::keep_alive() {
  std::vector<std::string> stale;
  {
    std::lock_guard lock(mu_);
    keep_alive_timer_.reset();
    if (shut_down_) return;
    const auto now = timers_->now();
    // Idle sessions are oldest first: take those idle for a whole interval out of the pool
    // while they are pinged.
    while (!idle_.empty() && now - idle_.front().second >= options_.keep_alive_interval) {
      stale.push_back(std::move(idle_.front().first));
      idle_.pop_front();
    }
    pings_ += static_cast<int>(stale.size());
    pinging_ += static_cast<int>(stale.size());
    arm_keep_alive_locked();
  }
  std::weak_ptr<SessionPool> weak = weak_from_this();
  for (auto& session : stale) {
    auto request = std::make_shared<google::spanner::v1::ExecuteSqlRequest>();
    request->set_session(session);
    request->set_sql("SELECT 1");
    stub_->async_execute_sql(std::move(request), options_.rpc_timeout,
                             [weak, session](absl::StatusOr<google::spanner::v1::ResultSet> r) {
                               if (auto self = weak.lock()) {
                                 self->ping_done(session, !r.ok() && IsSessionNotFound(r.status()));
                               }
                             });
  }
}

void SessionPool::ping_done(const std::string& session, bool lost) {
  std::vector<std::function<void()>> later;
  {
    // One critical section: shutdown() never sees the ping finished before its session's
    // deletion is counted.
    std::lock_guard lock(mu_);
    --pinging_;
    if (lost) {
      discard_locked(later);
    } else {
      release_locked(session, later);
    }
    deleted_.notify_all();
  }
  for (auto& f : later) f();
}

void SessionPool::delete_after_shutdown_locked(const std::string& session,
                                               std::vector<std::function<void()>>& later) {
  ++deleting_;
  std::weak_ptr<SessionPool> weak = weak_from_this();
  later.push_back([this, weak, session] {
    stub_->async_delete_session(session, options_.rpc_timeout, [weak](absl::Status) {
      if (auto self = weak.lock()) {
        std::lock_guard lock(self->mu_);
        --self->deleting_;
        self->deleted_.notify_all();
      }
    });
  });
}

void SessionPool::shutdown() {
  std::vector<std::string> idle;
  std::deque<Waiter> waiters;
  {
    std::lock_guard lock(mu_);
    if (shut_down_) return;
    shut_down_ = true;
    if (keep_alive_timer_) {
      keep_alive_timer_->cancel();
      keep_alive_timer_.reset();
    }
    for (auto& [name, since] : idle_) idle.push_back(std::move(name));
    idle_.clear();
    live_ -= static_cast<int>(idle.size());
    deleting_ += static_cast<int>(idle.size());
    waiters.swap(waiters_);
  }
  for (auto& w : waiters) w(absl::CancelledError("the session pool is shut down"));
  std::weak_ptr<SessionPool> weak = weak_from_this();
  for (auto& name : idle) {
    stub_->async_delete_session(name, options_.rpc_timeout, [weak](absl::Status) {
      if (auto self = weak.lock()) {
        std::lock_guard lock(self->mu_);
        --self->deleting_;
        self->deleted_.notify_all();
      }
    });
  }
  // A session out for a keep-alive ping comes back through ping_done() and release(), which
  // deletes it; wait for the pings, then for every deletion.
  std::unique_lock lock(mu_);
  deleted_.wait_for(lock, 2 * options_.rpc_timeout + std::chrono::seconds(1),
                    [&] { return deleting_ <= 0 && pinging_ <= 0; });
}

int SessionPool::size() const {
  std::lock_guard lock(mu_);
  return live_ + creating_;
}

int SessionPool::pings() const {
  std::lock_guard lock(mu_);
  return pings_;
}

}  // namespace gcpstream::spanner
