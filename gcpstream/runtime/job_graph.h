#ifndef GCPSTREAM_RUNTIME_JOB_GRAPH_H_
#define GCPSTREAM_RUNTIME_JOB_GRAPH_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gcpstream/api/lineage.h"
#include "gcpstream/runtime/exchange.h"
#include "gcpstream/runtime/input_processor.h"
#include "gcpstream/runtime/job_services.h"
#include "gcpstream/runtime/output.h"
#include "gcpstream/runtime/source_coordinator.h"
#include "gcpstream/runtime/stream_operator.h"

namespace gcpstream::runtime {

class MailboxProcessor;

// An operator instance and the face it shows its upstream.
struct InstantiatedOperator {
  std::unique_ptr<StreamOperator> op;
  OutputBase* input = nullptr;  // the operator as Output<In> (null for nothing upstream)
};

// Type-erased operations on the element type of an edge, created where the type is known
// (DataStream<T>) and used by the runtime, which is not templated.
class EdgeOps {
 public:
  virtual ~EdgeOps() = default;
  virtual std::shared_ptr<void> create_gate(int channels, int capacity,
                                            std::function<void()> on_data) const = 0;
  virtual void close_gate(const std::shared_ptr<void>& gate) const = 0;
  virtual InstantiatedOperator create_exchange_output(
      const std::vector<std::shared_ptr<void>>& gates, Partitioning partitioning,
      const ExchangeOptions& options, OperatorContext& ctx) const = 0;
  virtual std::unique_ptr<InputProcessor> create_network_input(const std::shared_ptr<void>& gate,
                                                               OutputBase* head,
                                                               BarrierHandler* barriers,
                                                               bool exactly_once) const = 0;
  // Fan-out inside a chain (ownership stays with the caller).
  virtual std::unique_ptr<OutputBase> create_broadcast(
      const std::vector<OutputBase*>& outputs) const = 0;
  // Where an operator whose output nobody consumes sends its records.
  virtual std::unique_ptr<OutputBase> create_discard() const = 0;
};

// Accepts and drops everything (the output of an operator with no consumer).
template <typename T>
class DiscardingOutput final : public Output<T> {
 public:
  absl::Status collect(StreamRecord<T>&&) override { return absl::OkStatus(); }
  absl::Status emit_watermark(std::int64_t) override { return absl::OkStatus(); }
  absl::Status emit_watermark_status(bool) override { return absl::OkStatus(); }
};

template <typename T>
class TypedEdgeOps final : public EdgeOps {
 public:
  using KeyHash = typename ExchangeOutput<T>::KeyHash;
  explicit TypedEdgeOps(KeyHash key_hash = nullptr) : key_hash_(std::move(key_hash)) {}

  std::shared_ptr<void> create_gate(int channels, int capacity,
                                    std::function<void()> on_data) const override {
    return std::make_shared<InputGate<T>>(channels, capacity, std::move(on_data));
  }
  void close_gate(const std::shared_ptr<void>& gate) const override {
    std::static_pointer_cast<InputGate<T>>(gate)->close();
  }
  InstantiatedOperator create_exchange_output(const std::vector<std::shared_ptr<void>>& gates,
                                              Partitioning partitioning,
                                              const ExchangeOptions& options,
                                              OperatorContext& ctx) const override {
    std::vector<std::shared_ptr<InputGate<T>>> typed;
    typed.reserve(gates.size());
    for (const auto& g : gates) typed.push_back(std::static_pointer_cast<InputGate<T>>(g));
    auto out = std::make_unique<ExchangeOutput<T>>(std::move(typed), partitioning, key_hash_,
                                                   options, ctx);
    OutputBase* input = static_cast<Output<T>*>(out.get());
    return {std::move(out), input};
  }
  std::unique_ptr<InputProcessor> create_network_input(const std::shared_ptr<void>& gate,
                                                       OutputBase* head, BarrierHandler* barriers,
                                                       bool exactly_once) const override {
    return std::make_unique<NetworkInput<T>>(std::static_pointer_cast<InputGate<T>>(gate),
                                             static_cast<Output<T>*>(head), barriers, exactly_once);
  }
  std::unique_ptr<OutputBase> create_broadcast(
      const std::vector<OutputBase*>& outputs) const override {
    std::vector<Output<T>*> typed;
    for (auto* o : outputs) typed.push_back(static_cast<Output<T>*>(o));
    return std::make_unique<BroadcastOutput<T>>(std::move(typed));
  }
  std::unique_ptr<OutputBase> create_discard() const override {
    return std::make_unique<DiscardingOutput<T>>();
  }

 private:
  KeyHash key_hash_;
};

// A source vertex, type-erased.
class SourceVertex {
 public:
  virtual ~SourceVertex() = default;
  virtual std::unique_ptr<SourceCoordinatorBase> create_coordinator(const std::string& name,
                                                                    const std::string& uid,
                                                                    int parallelism,
                                                                    JobServices& services,
                                                                    MetricGroup& metrics) const = 0;
  // The reader operator at the head of a source subtask; it is also the subtask's input.
  virtual std::pair<std::unique_ptr<StreamOperator>, InputProcessor*> create_operator(
      SourceCoordinatorBase& coordinator, OutputBase* downstream, OperatorContext& ctx,
      MailboxProcessor& mailbox, JobServices& services) const = 0;
  virtual bool bounded() const = 0;
};

// One node of the logical graph (a source, an operator or a sink).
struct GraphNode {
  enum class Kind { kSource, kOperator, kSink };
  int id = 0;
  Kind kind = Kind::kOperator;
  std::string name;
  std::string uid;      // defaults to "<id>-<name>"; set explicitly to keep state across edits
  int parallelism = 0;  // 0: the job's default
  int input = -1;       // upstream node (single input)
  Partitioning partitioning = Partitioning::kForward;
  bool partitioning_explicit = false;         // key_by / rebalance: never chained
  std::shared_ptr<const EdgeOps> input_ops;   // element type of the input edge
  std::shared_ptr<const EdgeOps> output_ops;  // element type of this node's output
  std::function<InstantiatedOperator(OutputBase* downstream, OperatorContext& ctx,
                                     JobServices& services)>
      create_operator;                         // operators and sinks
  std::shared_ptr<const SourceVertex> source;  // sources
  std::vector<int> consumers;
  // What the source or sink reads or writes, when it can say (LineageVertexProvider).
  std::optional<LineageVertex> lineage;
};

struct JobGraph {
  std::vector<GraphNode> nodes;
};

// Whether `node` runs in its input's subtask (is chained to it): it has an input, the edge is
// not an explicit repartitioning (key_by, rebalance), and both sides have the same
// parallelism. The rule JobAttempt builds subtasks by, shared with what observers are shown.
inline bool ChainedToInput(const GraphNode& node, int parallelism, int input_parallelism) {
  if (node.kind == GraphNode::Kind::kSource || node.input < 0) return false;
  if (node.partitioning_explicit) return false;
  return parallelism == input_parallelism;
}

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_JOB_GRAPH_H_
