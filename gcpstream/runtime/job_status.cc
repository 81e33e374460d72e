#include "gcpstream/runtime/job_status.h"

#include <fmt/format.h>

#include <chrono>
#include <functional>

#include "gcpstream/runtime/job_graph.h"

namespace gcpstream::runtime {

const char* JobStateName(JobState state) {
  switch (state) {
    case JobState::kCreated:
      return "CREATED";
    case JobState::kRunning:
      return "RUNNING";
    case JobState::kRestarting:
      return "RESTARTING";
    case JobState::kFinished:
      return "FINISHED";
    case JobState::kFailed:
      return "FAILED";
    case JobState::kCanceled:
      return "CANCELED";
  }
  return "UNKNOWN";
}

const char* CheckpointStatusName(CheckpointStats::Status status) {
  switch (status) {
    case CheckpointStats::Status::kInProgress:
      return "IN_PROGRESS";
    case CheckpointStats::Status::kCompleted:
      return "COMPLETED";
    case CheckpointStats::Status::kFailed:
      return "FAILED";
  }
  return "UNKNOWN";
}

std::int64_t WallNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

const char* KindName(GraphNode::Kind kind) {
  switch (kind) {
    case GraphNode::Kind::kSource:
      return "source";
    case GraphNode::Kind::kOperator:
      return "operator";
    case GraphNode::Kind::kSink:
      return "sink";
  }
  return "operator";
}

const char* ShipStrategy(const GraphNode& node, bool chained) {
  if (chained) return "FORWARD";
  // Without an explicit partitioning a parallelism change redistributes round-robin.
  if (!node.partitioning_explicit) return "REBALANCE";
  switch (node.partitioning) {
    case Partitioning::kForward:
      return "FORWARD";
    case Partitioning::kRebalance:
      return "REBALANCE";
    case Partitioning::kHash:
      return "HASH";
  }
  return "REBALANCE";
}

}  // namespace

JobPlan PlanOf(const JobGraph& graph, int default_parallelism) {
  JobPlan plan;
  const auto& nodes = graph.nodes;
  std::vector<int> parallelism(nodes.size());
  for (const auto& node : nodes) {
    parallelism[static_cast<std::size_t>(node.id)] =
        node.parallelism > 0 ? node.parallelism : default_parallelism;
  }
  auto chained = [&](const GraphNode& node) {
    return node.input >= 0 && ChainedToInput(node, parallelism[static_cast<std::size_t>(node.id)],
                                             parallelism[static_cast<std::size_t>(node.input)]);
  };
  std::vector<int> task_of(nodes.size(), -1);
  std::function<void(int, JobPlan::Task&)> walk = [&](int id, JobPlan::Task& task) {
    const GraphNode& n = nodes[static_cast<std::size_t>(id)];
    task_of[static_cast<std::size_t>(id)] = task.id;
    task.operators.push_back(id);
    task.name += task.name.empty() ? n.name : " -> " + n.name;
    for (int c : n.consumers) {
      if (chained(nodes[static_cast<std::size_t>(c)])) walk(c, task);
    }
  };
  for (const auto& node : nodes) {
    if (chained(node)) continue;
    JobPlan::Task task;
    task.id = node.id;
    task.parallelism = parallelism[static_cast<std::size_t>(node.id)];
    walk(node.id, task);
    plan.tasks.push_back(std::move(task));
  }
  for (const auto& node : nodes) {
    JobPlan::Operator op;
    op.id = node.id;
    op.name = node.name;
    op.uid = node.uid;
    op.kind = KindName(node.kind);
    op.parallelism = parallelism[static_cast<std::size_t>(node.id)];
    op.task = task_of[static_cast<std::size_t>(node.id)];
    plan.operators.push_back(std::move(op));
    if (node.input >= 0) {
      const bool is_chained = chained(node);
      plan.edges.push_back({node.input, node.id, ShipStrategy(node, is_chained), is_chained});
    }
  }
  return plan;
}

void JobStatusTracker::set_job(std::string name, std::string id, int parallelism, JobPlan plan) {
  std::lock_guard lock(mu_);
  s_.job_name = std::move(name);
  s_.job_id = std::move(id);
  s_.parallelism = parallelism;
  s_.plan = std::move(plan);
}

void JobStatusTracker::set_job_id(std::string id) {
  std::lock_guard lock(mu_);
  s_.job_id = std::move(id);
}

void JobStatusTracker::set_state(JobState state, std::int64_t now_ms) {
  std::lock_guard lock(mu_);
  if (s_.start_time_ms == 0 && state != JobState::kCreated) s_.start_time_ms = now_ms;
  const bool terminal =
      state == JobState::kFinished || state == JobState::kFailed || state == JobState::kCanceled;
  s_.end_time_ms = terminal ? now_ms : 0;
  s_.state = state;
}

void JobStatusTracker::set_restarts(int restarts) {
  std::lock_guard lock(mu_);
  s_.restarts = restarts;
}

void JobStatusTracker::set_restored(const CheckpointStats& restored, std::int64_t now_ms) {
  std::lock_guard lock(mu_);
  s_.restored = restored;
  s_.restore_timestamp_ms = now_ms;
}

CheckpointStats* JobStatusTracker::find(std::int64_t id) {
  for (auto it = s_.checkpoints.rbegin(); it != s_.checkpoints.rend(); ++it) {
    if (it->id == id) return &*it;
  }
  return nullptr;
}

void JobStatusTracker::checkpoint_triggered(std::int64_t id, bool is_savepoint,
                                            std::int64_t trigger_ms, int num_subtasks) {
  std::lock_guard lock(mu_);
  CheckpointStats stats;
  stats.id = id;
  stats.is_savepoint = is_savepoint;
  stats.trigger_timestamp_ms = trigger_ms;
  stats.num_subtasks = num_subtasks;
  s_.checkpoints.push_back(std::move(stats));
  while (s_.checkpoints.size() > history_size_) s_.checkpoints.erase(s_.checkpoints.begin());
}

void JobStatusTracker::checkpoint_acknowledged(std::int64_t id, std::int64_t state_bytes,
                                               std::int64_t alignment_ms, std::int64_t now_ms) {
  std::lock_guard lock(mu_);
  CheckpointStats* c = find(id);
  if (c == nullptr || c->status != CheckpointStats::Status::kInProgress) return;
  ++c->num_acknowledged_subtasks;
  c->state_size_bytes += state_bytes;
  c->alignment_duration_ms = std::max(c->alignment_duration_ms, alignment_ms);
  c->latest_ack_timestamp_ms = now_ms;
}

void JobStatusTracker::checkpoint_state_added(std::int64_t id, std::int64_t state_bytes) {
  std::lock_guard lock(mu_);
  CheckpointStats* c = find(id);
  if (c != nullptr) c->state_size_bytes += state_bytes;
}

void JobStatusTracker::checkpoint_completed(std::int64_t id, std::int64_t duration_ms,
                                            std::string path) {
  std::lock_guard lock(mu_);
  ++s_.completed_checkpoints;
  CheckpointStats* c = find(id);
  if (c == nullptr) return;
  c->status = CheckpointStats::Status::kCompleted;
  c->duration_ms = duration_ms;
  c->external_path = std::move(path);
}

void JobStatusTracker::checkpoint_failed(std::int64_t id, std::int64_t duration_ms,
                                         const absl::Status& reason) {
  std::lock_guard lock(mu_);
  ++s_.failed_checkpoints;
  CheckpointStats* c = find(id);
  if (c == nullptr) return;
  c->status = CheckpointStats::Status::kFailed;
  c->duration_ms = duration_ms;
  c->failure_message =
      fmt::format("{}: {}", absl::StatusCodeToString(reason.code()), reason.message());
}

void JobStatusTracker::record_exception(int attempt, std::string task, const absl::Status& status,
                                        std::int64_t now_ms) {
  std::lock_guard lock(mu_);
  JobException e;
  e.timestamp_ms = now_ms;
  e.attempt = attempt;
  e.task = std::move(task);
  e.code = absl::StatusCodeToString(status.code());
  e.message = std::string(status.message());
  e.root_cause = !attempts_with_exception_[attempt];
  attempts_with_exception_[attempt] = true;
  s_.exceptions.push_back(std::move(e));
  while (s_.exceptions.size() > history_size_) s_.exceptions.erase(s_.exceptions.begin());
}

void JobStatusTracker::update_alignment(AlignmentGroupStatus group) {
  std::lock_guard lock(mu_);
  for (auto& g : s_.alignment) {
    if (g.group == group.group) {
      g = std::move(group);
      return;
    }
  }
  s_.alignment.push_back(std::move(group));
}

JobStatusSnapshot JobStatusTracker::snapshot() const {
  std::lock_guard lock(mu_);
  return s_;
}

}  // namespace gcpstream::runtime
