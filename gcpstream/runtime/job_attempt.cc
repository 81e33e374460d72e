#include "gcpstream/runtime/job_attempt.h"

#include <fmt/format.h>

#include "gcpstream/api/status_macros.h"
#include "gcpstream/runtime/job_status.h"
#include "gcpstream/runtime/state_redistribution.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::runtime {

JobAttempt::JobAttempt(const JobGraph& graph, JobServices services,
                       std::shared_ptr<const CompletedCheckpoint> restored,
                       CheckpointCoordinator::OnCompleted on_completed)
    : graph_(graph),
      services_(std::move(services)),
      restored_checkpoint_(std::move(restored)),
      on_completed_(std::move(on_completed)) {
  timers_ = std::make_unique<TimerThread>();
  coordinator_ = std::make_unique<CoordinatorExecutor>();
  alignment_ =
      std::make_unique<AlignmentCoordinator>(coordinator_.get(), timers_.get(), services_.status);
  services_.timers = timers_.get();
  services_.coordinator = coordinator_.get();
  services_.alignment = alignment_.get();
  services_.fail_job = [this](absl::Status status) {
    record_exception("job coordinator", status);
    fail(std::move(status));
  };
}

JobAttempt::~JobAttempt() {
  for (auto& s : subtasks_) s->cancel();
  for (auto& s : subtasks_) s->join();
  // Coordinators are closed on their own thread, then the threads stop.
  std::mutex m;
  std::condition_variable cv;
  bool closed = false;
  coordinator_->execute([&] {
    if (checkpoints_) checkpoints_->shutdown();
    for (auto& [id, c] : sources_) c->close();
    std::lock_guard lock(m);
    closed = true;
    cv.notify_all();
  });
  {
    std::unique_lock lock(m);
    cv.wait_for(lock, std::chrono::seconds(30), [&] { return closed; });
  }
  coordinator_->shutdown();
  checkpoints_.reset();
  alignment_.reset();
  subtasks_.clear();
  sources_.clear();
  timers_.reset();
}

bool JobAttempt::chained(int node_id) const {
  const GraphNode& node = graph_.nodes[static_cast<std::size_t>(node_id)];
  if (node.input < 0) return false;
  return ChainedToInput(node, parallelism_[static_cast<std::size_t>(node_id)],
                        parallelism_[static_cast<std::size_t>(node.input)]);
}

OutputBase* JobAttempt::build_outputs(int node_id, Subtask& subtask, int depth) {
  const GraphNode& node = graph_.nodes[static_cast<std::size_t>(node_id)];
  std::vector<OutputBase*> outputs;
  for (int consumer : node.consumers) {
    if (chained(consumer)) {
      outputs.push_back(build_chain(consumer, subtask, depth + 1));
      continue;
    }
    const GraphNode& c = graph_.nodes[static_cast<std::size_t>(consumer)];
    OperatorContext& ctx =
        subtask.new_operator_context(node.name, fmt::format("{}->{}", node.uid, c.uid), depth + 1);
    Partitioning partitioning = c.partitioning;
    if (!c.partitioning_explicit) partitioning = Partitioning::kRebalance;  // parallelism change
    InstantiatedOperator out = c.input_ops->create_exchange_output(
        gates_.at(consumer), partitioning, services_.config.exchange, ctx);
    outputs.push_back(out.input);
    subtask.add_operator(std::move(out.op), ctx.operator_uid);
  }
  if (outputs.empty()) {
    if (node.kind == GraphNode::Kind::kSink || !node.output_ops) return nullptr;
    auto discard = node.output_ops->create_discard();
    OutputBase* raw = discard.get();
    subtask.keep(std::move(discard));
    return raw;
  }
  if (outputs.size() == 1) return outputs.front();
  auto broadcast = node.output_ops->create_broadcast(outputs);
  OutputBase* raw = broadcast.get();
  subtask.keep(std::move(broadcast));
  return raw;
}

OutputBase* JobAttempt::build_chain(int node_id, Subtask& subtask, int depth) {
  const GraphNode& node = graph_.nodes[static_cast<std::size_t>(node_id)];
  OutputBase* downstream = build_outputs(node_id, subtask, depth);
  OperatorContext& ctx = subtask.new_operator_context(node.name, node.uid, depth);
  InstantiatedOperator inst = node.create_operator(downstream, ctx, services_);
  subtask.add_operator(std::move(inst.op), node.uid);
  return inst.input;
}

absl::Status JobAttempt::map_restored_state() {
  if (!restored_checkpoint_) return absl::OkStatus();
  std::map<std::string, int> uids;
  for (const auto& node : graph_.nodes) {
    uids[node.uid] = parallelism_[static_cast<std::size_t>(node.id)];
  }
  for (const auto& [uid, state] : restored_checkpoint_->operators) {
    auto it = uids.find(uid);
    if (it == uids.end()) {
      return absl::FailedPreconditionError(fmt::format(
          "checkpoint {} holds state of operator '{}', which this job does not have (operators "
          "are matched by uid; give the operator the uid it had)",
          restored_checkpoint_->path.empty() ? std::to_string(restored_checkpoint_->id)
                                             : restored_checkpoint_->path,
          uid));
    }
    restored_[uid] = Redistribute(state, it->second);
  }
  return absl::OkStatus();
}

absl::Status JobAttempt::build() {
  const auto& nodes = graph_.nodes;
  parallelism_.resize(nodes.size());
  for (const auto& node : nodes) {
    int p = node.parallelism > 0 ? node.parallelism : services_.config.parallelism;
    if (p < 1) return absl::InvalidArgumentError(fmt::format("'{}': parallelism {}", node.name, p));
    if (p > services_.config.max_parallelism) {
      return absl::InvalidArgumentError(
          fmt::format("'{}': parallelism {} exceeds max_parallelism {}", node.name, p,
                      services_.config.max_parallelism));
    }
    parallelism_[static_cast<std::size_t>(node.id)] = p;
  }
  GCP_RETURN_IF_ERROR(map_restored_state());
  // Chain names: "Source: a -> Map -> Sink: b".
  std::map<int, std::string> chain_names;
  std::function<void(int, std::string&)> collect_names = [&](int id, std::string& out) {
    const auto& n = nodes[static_cast<std::size_t>(id)];
    out += out.empty() ? n.name : " -> " + n.name;
    for (int c : n.consumers) {
      if (chained(c)) collect_names(c, out);
    }
  };
  for (const auto& node : nodes) {
    if (chained(node.id)) continue;
    std::string name;
    collect_names(node.id, name);
    chain_names[node.id] = name;
  }
  // Subtasks first (gates notify their mailboxes), then gates, then chains.
  for (const auto& [head, name] : chain_names) {
    const int p = parallelism_[static_cast<std::size_t>(head)];
    for (int i = 0; i < p; ++i) {
      subtasks_.push_back(std::make_unique<Subtask>(name, i, p, services_));
      subtasks_by_head_[head].push_back(subtasks_.back().get());
    }
  }
  for (const auto& [head, name] : chain_names) {
    const GraphNode& node = nodes[static_cast<std::size_t>(head)];
    if (node.kind == GraphNode::Kind::kSource) continue;
    const int channels = parallelism_[static_cast<std::size_t>(node.input)];
    for (Subtask* s : subtasks_by_head_[head]) {
      MailboxProcessor* mb = &s->mailbox();
      gates_[head].push_back(
          node.input_ops->create_gate(channels, services_.config.exchange.buffers_per_channel,
                                      [mb] { mb->resume_default_action(); }));
    }
  }
  for (const auto& node : nodes) {
    if (node.kind != GraphNode::Kind::kSource) continue;
    auto& metrics = services_.metrics->group(
        {{"job", services_.job_name}, {"operator", node.name}, {"subtask", "coordinator"}});
    sources_[node.id] = node.source->create_coordinator(
        node.name, node.uid, parallelism_[static_cast<std::size_t>(node.id)], services_, metrics);
  }
  for (const auto& [head, name] : chain_names) {
    const GraphNode& node = nodes[static_cast<std::size_t>(head)];
    for (Subtask* s : subtasks_by_head_[head]) {
      if (node.kind == GraphNode::Kind::kSource) {
        OutputBase* downstream = build_outputs(head, *s, 1);
        OperatorContext& ctx = s->new_operator_context(node.name, node.uid, 1);
        auto [op, input] = node.source->create_operator(*sources_.at(head), downstream, ctx,
                                                        s->mailbox(), services_);
        s->add_operator(std::move(op), node.uid);
        s->set_input(input);
        s->set_is_source(true);
      } else {
        OutputBase* head_input = build_chain(head, *s, 1);
        auto input = node.input_ops->create_network_input(
            gates_.at(head)[static_cast<std::size_t>(s->index())], head_input, s,
            services_.config.checkpointing.mode == CheckpointingMode::kExactlyOnce);
        InputProcessor* raw = input.get();
        s->set_input(raw, std::move(input));
      }
      // Restored state of every operator of this subtask.
      std::map<std::string, OperatorStateReader> state;
      for (const auto& [uid, by_subtask] : restored_) {
        auto it = by_subtask.find(s->index());
        if (it != by_subtask.end()) state.emplace(uid, it->second);
      }
      s->set_restored_state(std::move(state));
    }
  }
  std::vector<CheckpointParticipant*> participants;
  for (auto& s : subtasks_) {
    s->set_participant_index(static_cast<int>(participants.size()));
    participants.push_back(s.get());
  }
  std::vector<SourceCoordinatorBase*> sources;
  for (auto& [id, c] : sources_) sources.push_back(c.get());
  std::map<std::string, int> parallelism;
  for (const auto& node : nodes)
    parallelism[node.uid] = parallelism_[static_cast<std::size_t>(node.id)];
  checkpoints_ = std::make_unique<CheckpointCoordinator>(
      services_, std::move(participants), std::move(sources), std::move(parallelism),
      restored_checkpoint_ ? restored_checkpoint_->id : 0, on_completed_);
  services_.checkpoints = checkpoints_.get();
  return absl::OkStatus();
}

void JobAttempt::trigger_savepoint(std::string directory, bool stop,
                                   std::function<void(absl::StatusOr<std::string>)> done) {
  {
    std::lock_guard lock(mu_);
    if (!started_ || running_ == 0 || !failure_.ok()) {
      done(absl::FailedPreconditionError("the job is not running"));
      return;
    }
  }
  checkpoints_->trigger_savepoint(std::move(directory), stop, std::move(done));
}

void JobAttempt::fail(absl::Status status) {
  {
    std::lock_guard lock(mu_);
    if (!failure_.ok()) return;
    failure_ = std::move(status);
  }
  for (auto& s : subtasks_) s->cancel();
  for (const auto& [node, gates] : gates_) {
    const auto& ops = graph_.nodes[static_cast<std::size_t>(node)].input_ops;
    for (const auto& g : gates) ops->close_gate(g);
  }
  cv_.notify_all();
}

void JobAttempt::record_exception(const std::string& where, const absl::Status& status) {
  if (services_.status == nullptr) return;
  services_.status->record_exception(services_.attempt_number, where, status, WallNowMs());
}

void JobAttempt::on_subtask_done(Subtask& subtask, absl::Status status) {
  if (!status.ok() && status.code() != absl::StatusCode::kCancelled) {
    record_exception(subtask.name(), status);
    fail(status);
  } else if (!status.ok()) {
    // A cancellation nobody asked for (no failure recorded) is itself a failure.
    std::lock_guard lock(mu_);
    if (failure_.ok()) {
      failure_ = absl::CancelledError(fmt::format("{} was cancelled", subtask.name()));
    }
  }
  std::lock_guard lock(mu_);
  --running_;
  cv_.notify_all();
}

absl::Status JobAttempt::run() {
  if (absl::Status built = build(); !built.ok()) {
    record_exception("job graph", built);
    return built;
  }
  // Coordinators start on their thread; a start failure fails the attempt.
  for (auto& [id, coordinator] : sources_) {
    const OperatorStateReader* state = nullptr;
    auto it = restored_.find(coordinator->uid());
    if (it != restored_.end()) {
      auto c = it->second.find(kCoordinatorSubtask);
      if (c != it->second.end()) state = &c->second;
    }
    coordinator_->execute([this, c = coordinator.get(), state] {
      absl::Status s = c->start(state);
      if (!s.ok()) {
        record_exception(fmt::format("{} (coordinator)", c->uid()), s);
        fail(s);
      }
    });
  }
  {
    std::lock_guard lock(mu_);
    running_ = static_cast<int>(subtasks_.size());
    started_ = true;
  }
  for (auto& s : subtasks_) {
    s->start([this](Subtask& subtask, absl::Status status) {
      on_subtask_done(subtask, std::move(status));
    });
  }
  checkpoints_->start();
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return running_ == 0; });
  return failure_;
}

}  // namespace gcpstream::runtime
