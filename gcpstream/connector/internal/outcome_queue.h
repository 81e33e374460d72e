#ifndef GCPSTREAM_CONNECTOR_INTERNAL_OUTCOME_QUEUE_H_
#define GCPSTREAM_CONNECTOR_INTERNAL_OUTCOME_QUEUE_H_

#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "gcpstream/api/mailbox.h"
#include "gcpstream/connector/sink_outcome.h"

namespace gcpstream::connector::internal {

// Hands outcomes from client threads to the writer's thread: they are queued, and a single
// mail (posted when the queue turns non-empty) drains whatever has accumulated by the time it
// runs, so a batch of outcomes costs one mail, not one per element. After detach() nothing is
// posted any more: a client abandoned at shutdown may report long after the writer and its
// mailbox are gone.
template <typename E>
class OutcomeQueue final : public SinkOutcomeListener<E> {
 public:
  using Handler = std::function<void(SinkOutcome<E>&&)>;
  OutcomeQueue(MailboxExecutor* mailbox, std::weak_ptr<bool> alive, Handler handler)
      : mailbox_(mailbox), alive_(std::move(alive)), handler_(std::move(handler)) {}

  void detach() {
    std::lock_guard lock(mu_);
    detached_ = true;
    queue_.clear();
    spent_.clear();
  }

  void on_outcomes(std::vector<SinkOutcome<E>> outcomes, std::shared_ptr<void> spent) override {
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
    // Posted under the lock, so detach() cannot complete while a post is under way.
    mailbox_->execute(
        [this, alive = alive_]() -> absl::Status {
          auto a = alive.lock();
          if (!a || !*a) return absl::OkStatus();
          std::vector<SinkOutcome<E>> batch;
          std::vector<std::shared_ptr<void>> spent;
          {
            std::lock_guard lock(mu_);
            batch.swap(queue_);
            spent.swap(spent_);
            scheduled_ = false;
          }
          for (auto& o : batch) handler_(std::move(o));
          spent.clear();  // freed here, on the thread that allocated the elements
          return absl::OkStatus();
        },
        "sink completions");
  }

 private:
  MailboxExecutor* mailbox_;
  std::weak_ptr<bool> alive_;
  Handler handler_;
  std::mutex mu_;
  std::vector<SinkOutcome<E>> queue_;
  std::vector<std::shared_ptr<void>> spent_;
  bool scheduled_ = false;
  bool detached_ = false;
};

}  // namespace gcpstream::connector::internal

#endif  // GCPSTREAM_CONNECTOR_INTERNAL_OUTCOME_QUEUE_H_
