#include "gcpstream/runtime/checkpoint_coordinator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "gcpstream/runtime/checkpoint_storage.h"
#include "gcpstream/runtime/job_status.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::runtime {

CheckpointCoordinator::CheckpointCoordinator(JobServices& services,
                                             std::vector<CheckpointParticipant*> participants,
                                             std::vector<SourceCoordinatorBase*> sources,
                                             std::map<std::string, int> operator_parallelism,
                                             std::int64_t last_checkpoint_id,
                                             OnCompleted on_completed)
    : services_(services),
      participants_(std::move(participants)),
      sources_(std::move(sources)),
      parallelism_(std::move(operator_parallelism)),
      on_completed_(std::move(on_completed)),
      next_id_(last_checkpoint_id + 1) {}

CheckpointCoordinator::~CheckpointCoordinator() {
  *alive_ = false;
  if (periodic_timer_) periodic_timer_->cancel();
  if (pending_ && pending_->timeout) pending_->timeout->cancel();
}

void CheckpointCoordinator::start() {
  const auto interval = services_.config.checkpointing.interval;
  if (interval.count() <= 0) return;
  services_.coordinator->execute([this, interval] { schedule_periodic(interval); });
}

void CheckpointCoordinator::shutdown() {
  shut_down_ = true;
  // A checkpoint still being written will not be finalized: its writer removes it (below).
  if (pending_ && pending_->writing) *alive_ = false;
  if (periodic_timer_) periodic_timer_->cancel();
  if (pending_ && pending_->savepoint) {
    pending_->savepoint->done(absl::AbortedError("the job ended before the savepoint completed"));
    pending_->savepoint.reset();
  }
  for (auto& request : savepoint_queue_) {
    request.done(absl::AbortedError("the job ended before the savepoint was taken"));
  }
  savepoint_queue_.clear();
}

void CheckpointCoordinator::schedule_periodic(std::chrono::milliseconds delay) {
  if (shut_down_) return;
  if (periodic_timer_) periodic_timer_->cancel();
  std::weak_ptr<bool> alive = alive_;
  CoordinatorExecutor* executor = services_.coordinator;
  periodic_timer_ =
      services_.timers->schedule(std::chrono::steady_clock::now() + delay, [this, alive, executor] {
        executor->execute([this, alive] {
          auto a = alive.lock();
          if (a && *a) trigger(std::nullopt, /*periodic=*/true);
        });
      });
}

void CheckpointCoordinator::trigger_savepoint(
    std::string directory, bool stop, std::function<void(absl::StatusOr<std::string>)> done) {
  std::weak_ptr<bool> alive = alive_;
  services_.coordinator->execute(
      [this, alive,
       request = SavepointRequest{std::move(directory), stop, std::move(done)}]() mutable {
        auto a = alive.lock();
        if (!a || !*a) {
          request.done(absl::AbortedError("the job is shutting down"));
          return;
        }
        trigger(std::move(request), /*periodic=*/false);
      });
}

void CheckpointCoordinator::trigger_checkpoint_now() {
  std::weak_ptr<bool> alive = alive_;
  services_.coordinator->execute([this, alive] {
    auto a = alive.lock();
    if (a && *a) trigger(std::nullopt, /*periodic=*/false);
  });
}

void CheckpointCoordinator::trigger(std::optional<SavepointRequest> savepoint, bool periodic) {
  if (shut_down_) {
    if (savepoint) savepoint->done(absl::AbortedError("the job is shutting down"));
    return;
  }
  if (pending_) {
    // One checkpoint at a time: a savepoint waits for the pending one; a periodic trigger is
    // dropped (the next one is scheduled when the pending one ends).
    if (savepoint) savepoint_queue_.push_back(std::move(*savepoint));
    return;
  }
  const auto& config = services_.config.checkpointing;
  if (periodic && config.min_pause_between.count() > 0) {
    const auto since = std::chrono::steady_clock::now() - last_completion_;
    if (since < config.min_pause_between) {
      schedule_periodic(
          std::chrono::duration_cast<std::chrono::milliseconds>(config.min_pause_between - since));
      return;
    }
  }
  const std::int64_t id = next_id_++;
  if (!final_id_ && !participants_.empty() && finished_.size() == participants_.size()) {
    final_id_ = id;  // every subtask has finished: this one covers them all
  }
  Pending p;
  p.barrier.checkpoint_id = id;
  p.barrier.timestamp_ms = WallNowMs();
  p.barrier.is_savepoint = savepoint.has_value();
  p.barrier.stop_with_savepoint = savepoint && savepoint->stop;
  p.started = std::chrono::steady_clock::now();
  p.checkpoint.id = id;
  p.checkpoint.job_id = services_.job_id;
  p.checkpoint.job_name = services_.job_name;
  p.checkpoint.operator_identities = services_.operator_identities;
  p.checkpoint.timestamp_ms = p.barrier.timestamp_ms;
  p.checkpoint.is_savepoint = savepoint.has_value();
  p.checkpoint.mode = config.mode;
  for (std::size_t i = 0; i < participants_.size(); ++i) {
    if (exited_.count(static_cast<int>(i)) == 0) p.awaiting.insert(static_cast<int>(i));
  }
  p.savepoint = std::move(savepoint);
  if (services_.status != nullptr) {
    services_.status->checkpoint_triggered(id, p.checkpoint.is_savepoint, p.barrier.timestamp_ms,
                                           static_cast<int>(p.awaiting.size()));
  }
  pending_ = std::move(p);
  // Coordinators first: split assignments they make after this point reach the readers after
  // the trigger (mailboxes are FIFO), so reader and enumerator states stay consistent.
  for (auto* source : sources_) {
    OperatorStateWriter state;
    absl::Status s = source->snapshot(id, state);
    if (!s.ok()) {
      abort(id, s);
      return;
    }
    auto& op = pending_->checkpoint.operators[source->uid()];
    op.parallelism = parallelism_[source->uid()];
    op.subtasks[kCoordinatorSubtask] = state.lists();
    if (services_.status != nullptr) {
      services_.status->checkpoint_state_added(id, StateBytes(state.lists()));
    }
  }
  std::weak_ptr<bool> alive = alive_;
  CoordinatorExecutor* executor = services_.coordinator;
  const auto timeout = config.timeout;
  pending_->timeout = services_.timers->schedule(
      std::chrono::steady_clock::now() + timeout, [this, alive, executor, id, timeout] {
        executor->execute([this, alive, id, timeout] {
          auto a = alive.lock();
          if (!a || !*a || !pending_ || pending_->barrier.checkpoint_id != id ||
              pending_->writing) {
            return;
          }
          abort(id, absl::DeadlineExceededError(
                        fmt::format("checkpoint {} expired after {} ms before completing; {}", id,
                                    timeout.count(), describe_awaiting())));
        });
      });
  const CheckpointBarrier barrier = pending_->barrier;
  const std::set<int> targets = pending_->awaiting;
  for (int i : targets) participants_[static_cast<std::size_t>(i)]->trigger_checkpoint(barrier);
  if (targets.empty()) on_acknowledged();
}

std::string CheckpointCoordinator::describe_awaiting() const {
  if (!pending_) return "nothing pending";
  std::string out = "not acknowledged by: ";
  bool first = true;
  for (int i : pending_->awaiting) {
    const CheckpointParticipant* p = participants_[static_cast<std::size_t>(i)];
    const std::string wait = p->waiting_on();
    out += fmt::format("{}{}{}", first ? "" : "; ", p->name(),
                       wait.empty() ? std::string() : fmt::format(" (waiting: {})", wait));
    first = false;
  }
  return out;
}

void CheckpointCoordinator::acknowledge(std::int64_t checkpoint_id, int participant,
                                        SubtaskSnapshot snapshot) {
  std::weak_ptr<bool> alive = alive_;
  services_.coordinator->execute(
      [this, alive, checkpoint_id, participant, snapshot = std::move(snapshot)]() mutable {
        auto a = alive.lock();
        if (!a || !*a || !pending_ || pending_->writing ||
            pending_->barrier.checkpoint_id != checkpoint_id) {
          return;  // late acknowledgement of an aborted checkpoint
        }
        if (services_.status != nullptr) {
          std::int64_t bytes = 0;
          for (const auto& op : snapshot.operators) bytes += StateBytes(op.lists);
          services_.status->checkpoint_acknowledged(checkpoint_id, bytes, snapshot.alignment_ms,
                                                    WallNowMs());
        }
        for (auto& op : snapshot.operators) {
          auto& state = pending_->checkpoint.operators[op.uid];
          state.parallelism = op.parallelism;
          if (!op.lists.empty()) state.subtasks[op.subtask_index] = std::move(op.lists);
        }
        pending_->awaiting.erase(participant);
        if (pending_->awaiting.empty()) on_acknowledged();
      });
}

void CheckpointCoordinator::decline(std::int64_t checkpoint_id, int participant,
                                    absl::Status reason) {
  std::weak_ptr<bool> alive = alive_;
  services_.coordinator->execute([this, alive, checkpoint_id, participant, reason]() {
    auto a = alive.lock();
    if (!a || !*a) return;
    abort(checkpoint_id,
          absl::Status(reason.code(),
                       fmt::format("checkpoint {} declined by {}: {}", checkpoint_id,
                                   participants_[static_cast<std::size_t>(participant)]->name(),
                                   reason.message())));
  });
}

void CheckpointCoordinator::participant_finished(int participant) {
  std::weak_ptr<bool> alive = alive_;
  services_.coordinator->execute([this, alive, participant] {
    auto a = alive.lock();
    if (!a || !*a) return;
    finished_.insert(participant);
    if (finished_.size() == participants_.size() && !final_triggered_ &&
        services_.config.checkpointing.final_checkpoint_on_end_of_input) {
      final_triggered_ = true;
      if (!pending_) trigger(std::nullopt, /*periodic=*/false);
      // Otherwise the pending checkpoint covers the finished subtasks or after_checkpoint()
      // triggers the final one.
    }
  });
}

void CheckpointCoordinator::participant_exited(int participant) {
  std::weak_ptr<bool> alive = alive_;
  services_.coordinator->execute([this, alive, participant] {
    auto a = alive.lock();
    if (!a || !*a) return;
    exited_.insert(participant);
    if (pending_ && !pending_->writing && pending_->awaiting.erase(participant) > 0 &&
        pending_->awaiting.empty()) {
      on_acknowledged();
    }
  });
}

void CheckpointCoordinator::on_acknowledged() {
  pending_->writing = true;
  const auto& config = services_.config.checkpointing;
  std::string dir;
  if (pending_->savepoint) {
    dir = fmt::format("{}/savepoint-{}-{}", pending_->savepoint->directory,
                      services_.job_id.substr(0, 8), pending_->barrier.checkpoint_id);
  } else if (!config.directory.empty()) {
    dir = CheckpointStorage::checkpoint_dir(config.directory, services_.job_id,
                                            pending_->barrier.checkpoint_id);
  }
  if (dir.empty()) {
    finalize(absl::OkStatus());
    return;
  }
  pending_->checkpoint.path = dir;
  // The write (fsync) runs on a worker; the result comes back to the coordinator thread.
  auto copy = std::make_shared<const CompletedCheckpoint>(pending_->checkpoint);
  std::weak_ptr<bool> alive = alive_;
  CoordinatorExecutor* executor = services_.coordinator;
  executor->execute_on_worker([this, alive, executor, copy, dir] {
    absl::Status written = CheckpointStorage::write(dir, *copy);
    {
      // The attempt ended while this checkpoint was being written: nobody will finalize it
      // (no retention, no notify), so it must not stay on disk looking complete, where a
      // restore would take it over the checkpoint the job reported last.
      auto a = alive.lock();
      if (!a || !*a) {
        if (written.ok()) (void)CheckpointStorage::remove(dir);
        return;
      }
    }
    executor->execute([this, alive, written, dir] {
      auto a = alive.lock();
      if (a && *a) {
        finalize(written);
      } else if (written.ok()) {
        (void)CheckpointStorage::remove(dir);
      }
    });
  });
}

void CheckpointCoordinator::finalize(absl::Status written) {
  if (!pending_) return;
  const std::int64_t id = pending_->barrier.checkpoint_id;
  if (!written.ok()) {
    pending_->writing = false;
    abort(id, written);
    return;
  }
  if (pending_->timeout) pending_->timeout->cancel();
  auto checkpoint = std::make_shared<const CompletedCheckpoint>(std::move(pending_->checkpoint));
  auto savepoint = std::move(pending_->savepoint);
  const auto took = std::chrono::steady_clock::now() - pending_->started;
  pending_.reset();
  if (services_.status != nullptr) {
    services_.status->checkpoint_completed(
        id, std::chrono::duration_cast<std::chrono::milliseconds>(took).count(), checkpoint->path);
  }
  last_completed_id_ = id;
  consecutive_failures_ = 0;
  last_completion_ = std::chrono::steady_clock::now();
  spdlog::debug("job '{}': {} {} completed in {} ms", services_.job_name,
                checkpoint->is_savepoint ? "savepoint" : "checkpoint", id,
                std::chrono::duration_cast<std::chrono::milliseconds>(took).count());
  if (!checkpoint->is_savepoint && !checkpoint->path.empty()) {
    // Over the whole job folder: a restored job continues in the folder of the run it restored
    // from, whose checkpoints (and incomplete leftovers) this attempt never wrote.
    auto removed = CheckpointStorage::apply_retention(
        std::filesystem::path(checkpoint->path).parent_path().string(), id,
        services_.config.checkpointing.retained);
    if (!removed.ok()) spdlog::warn("job '{}': {}", services_.job_name, removed.status());
  }
  if (on_completed_) on_completed_(checkpoint);
  // Only now that the checkpoint is durable may anything act on it.
  for (auto* source : sources_) source->notify_checkpoint_complete(id);
  for (auto* participant : participants_) participant->notify_checkpoint_complete(id);
  if (savepoint) savepoint->done(checkpoint->path);
  after_checkpoint();
}

void CheckpointCoordinator::abort(std::int64_t checkpoint_id, absl::Status reason) {
  if (!pending_ || pending_->barrier.checkpoint_id != checkpoint_id || pending_->writing) return;
  if (pending_->timeout) pending_->timeout->cancel();
  auto savepoint = std::move(pending_->savepoint);
  if (services_.status != nullptr) {
    services_.status->checkpoint_failed(checkpoint_id,
                                        std::chrono::duration_cast<std::chrono::milliseconds>(
                                            std::chrono::steady_clock::now() - pending_->started)
                                            .count(),
                                        reason);
  }
  pending_.reset();
  if (final_id_ == checkpoint_id) final_id_.reset();  // the final checkpoint must be retried
  for (auto* source : sources_) source->notify_checkpoint_aborted(checkpoint_id);
  for (auto* participant : participants_) participant->notify_checkpoint_aborted(checkpoint_id);
  if (savepoint) {
    savepoint->done(reason);
  } else {
    ++consecutive_failures_;
    const int tolerable = services_.config.checkpointing.tolerable_failed_checkpoints;
    spdlog::warn("job '{}': checkpoint {} failed: {}", services_.job_name, checkpoint_id, reason);
    if (consecutive_failures_ > tolerable) {
      services_.fail_job(absl::Status(
          reason.code(), fmt::format("{} ({} consecutive failed checkpoints; "
                                     "tolerable_failed_checkpoints is {})",
                                     reason.message(), consecutive_failures_, tolerable)));
      return;
    }
  }
  after_checkpoint();
}

void CheckpointCoordinator::after_checkpoint() {
  if (shut_down_) return;
  if (!savepoint_queue_.empty()) {
    auto next = std::move(savepoint_queue_.front());
    savepoint_queue_.pop_front();
    trigger(std::move(next), /*periodic=*/false);
    return;
  }
  if (final_triggered_ && finished_.size() == participants_.size()) {
    // Every subtask has finished. Until a checkpoint triggered after that has completed (the
    // final one), take one; after it, none: the subtasks exit.
    if (!final_id_) trigger(std::nullopt, /*periodic=*/false);
    return;
  }
  const auto interval = services_.config.checkpointing.interval;
  if (interval.count() > 0) {
    schedule_periodic(std::max(interval, services_.config.checkpointing.min_pause_between));
  }
}

}  // namespace gcpstream::runtime
