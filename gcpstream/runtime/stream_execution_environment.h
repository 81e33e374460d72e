#ifndef GCPSTREAM_RUNTIME_STREAM_EXECUTION_ENVIRONMENT_H_
#define GCPSTREAM_RUNTIME_STREAM_EXECUTION_ENVIRONMENT_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "gcpstream/api/collector.h"
#include "gcpstream/api/lineage.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/api/source.h"
#include "gcpstream/api/watermark.h"
#include "gcpstream/runtime/basic_operators.h"
#include "gcpstream/runtime/execution_config.h"
#include "gcpstream/runtime/job_graph.h"
#include "gcpstream/runtime/job_result.h"
#include "gcpstream/runtime/job_runner.h"
#include "gcpstream/runtime/keyed_reduce_operator.h"
#include "gcpstream/runtime/sink_operator.h"
#include "gcpstream/runtime/source_operator.h"

namespace gcpstream {

template <typename T>
class DataStream;
template <typename T, typename K>
class KeyedStream;
struct AsyncDataStream;

// Builds a job (a graph of sources, operators and sinks) and runs it in this process.
//
//   StreamExecutionEnvironment env;
//   env.set_parallelism(2);
//   env.from_source(source, WatermarkStrategy<Line>::no_watermarks(), "lines")
//       .flat_map<std::string>(split_words)
//       .key_by([](const std::string& w) { return w; })
//       .map(...)
//       .sink_to(sink, "counts");
//   runtime::JobResult result = env.execute("wordcount");
//
// Not thread-safe: build the graph from one thread. execute() blocks until the job ends.
class StreamExecutionEnvironment {
 public:
  explicit StreamExecutionEnvironment(runtime::ExecutionConfig config = {})
      : config_(std::move(config)) {}

  runtime::ExecutionConfig& config() { return config_; }
  StreamExecutionEnvironment& set_parallelism(int parallelism) {
    config_.parallelism = parallelism;
    return *this;
  }
  StreamExecutionEnvironment& enable_checkpointing(
      std::chrono::milliseconds interval,
      runtime::CheckpointingMode mode = runtime::CheckpointingMode::kExactlyOnce) {
    config_.checkpointing.interval = interval;
    config_.checkpointing.mode = mode;
    return *this;
  }

  template <typename SourceT>
  DataStream<typename SourceT::value_type> from_source(
      std::shared_ptr<SourceT> source,
      WatermarkStrategy<typename SourceT::value_type> watermark_strategy, std::string name);

  // Runs the job to its end (blocking).
  runtime::JobResult execute(std::string job_name) {
    runtime::JobRunner runner(std::move(job_name), graph_, config_);
    return runner.run();
  }
  // A runner for the current graph, for callers that need to cancel (or, later, savepoint) a
  // running job from another thread.
  std::unique_ptr<runtime::JobRunner> create_runner(std::string job_name) const {
    return std::make_unique<runtime::JobRunner>(std::move(job_name), graph_, config_);
  }

  runtime::JobGraph& graph() { return graph_; }
  // The lineage of every source and sink that can report it, by node name. Reads configuration
  // only (no credentials, clients or RPCs).
  std::vector<std::pair<std::string, LineageVertex>> lineage() const {
    std::vector<std::pair<std::string, LineageVertex>> out;
    for (const auto& n : graph_.nodes) {
      if (n.lineage) out.emplace_back(n.name, *n.lineage);
    }
    return out;
  }
  runtime::GraphNode& node(int id) { return graph_.nodes[static_cast<std::size_t>(id)]; }

  // Adds a node and links it to its input. Returns its id.
  int add_node(runtime::GraphNode node) {
    node.id = static_cast<int>(graph_.nodes.size());
    if (node.uid.empty()) node.uid = std::to_string(node.id) + "-" + node.name;
    if (node.input >= 0)
      graph_.nodes[static_cast<std::size_t>(node.input)].consumers.push_back(node.id);
    graph_.nodes.push_back(std::move(node));
    return graph_.nodes.back().id;
  }

 private:
  runtime::ExecutionConfig config_;
  runtime::JobGraph graph_;
};

// A stream of T. Cheap to copy (a handle on a graph node and the partitioning the next
// operator will read it through).
template <typename T>
class DataStream {
 public:
  DataStream(StreamExecutionEnvironment* env, int node,
             std::shared_ptr<const runtime::EdgeOps> edge = nullptr,
             runtime::Partitioning partitioning = runtime::Partitioning::kForward,
             bool explicit_partitioning = false)
      : env_(env),
        node_(node),
        edge_(edge ? std::move(edge) : std::make_shared<runtime::TypedEdgeOps<T>>()),
        partitioning_(partitioning),
        explicit_(explicit_partitioning) {}

  template <typename F, typename R = std::decay_t<std::invoke_result_t<F, T>>>
  DataStream<R> map(F fn, std::string name = "Map") {
    std::function<R(T)> f = std::move(fn);
    return add<R>(std::move(name), [f](runtime::OutputBase* down, runtime::OperatorContext& ctx,
                                       runtime::JobServices&) {
      return make<runtime::MapOperator<T, R>, R>(down, ctx, f);
    });
  }

  DataStream<T> filter(std::function<bool(const T&)> fn, std::string name = "Filter") {
    return add<T>(std::move(name), [fn](runtime::OutputBase* down, runtime::OperatorContext& ctx,
                                        runtime::JobServices&) {
      return make<runtime::FilterOperator<T>, T>(down, ctx, fn);
    });
  }

  template <typename R>
  DataStream<R> flat_map(std::function<void(T, Collector<R>&)> fn, std::string name = "FlatMap") {
    return add<R>(std::move(name), [fn](runtime::OutputBase* down, runtime::OperatorContext& ctx,
                                        runtime::JobServices&) {
      return make<runtime::FlatMapOperator<T, R>, R>(down, ctx, fn);
    });
  }

  // Partitions by key: records with equal keys reach the same subtask of the next operator.
  template <typename F, typename K = std::decay_t<std::invoke_result_t<F, const T&>>>
  KeyedStream<T, K> key_by(F key_selector);

  // Round-robin redistribution to the next operator's subtasks.
  DataStream<T> rebalance() const {
    return DataStream<T>(env_, node_, std::make_shared<runtime::TypedEdgeOps<T>>(),
                         runtime::Partitioning::kRebalance, true);
  }

  template <typename SinkT>
  void sink_to(std::shared_ptr<SinkT> sink, std::string name = "Sink") {
    static_assert(std::is_same_v<typename SinkT::input_type, T>,
                  "the sink's input type must be the stream's element type");
    std::shared_ptr<const SinkT> s = std::move(sink);
    runtime::GraphNode node;
    node.kind = runtime::GraphNode::Kind::kSink;
    node.name = std::move(name);
    fill_input(node);
    if (const auto* provider = dynamic_cast<const LineageVertexProvider*>(s.get())) {
      node.lineage = provider->lineage_vertex();
    }
    node.create_operator = [s](runtime::OutputBase*, runtime::OperatorContext& ctx,
                               runtime::JobServices& services) {
      const bool commit_at_end = !runtime::FinalCheckpointEnabled(services.config);
      auto op = std::make_unique<runtime::SinkWriterOperator<SinkT>>(s, ctx, commit_at_end);
      runtime::OutputBase* in = static_cast<runtime::Output<T>*>(op.get());
      return runtime::InstantiatedOperator{std::move(op), in};
    };
    last_sink_ = env_->add_node(std::move(node));
  }

  // Sets the parallelism of the operator that produces this stream.
  DataStream<T>& set_parallelism(int parallelism) {
    env_->node(node_).parallelism = parallelism;
    return *this;
  }
  // A stable id for the operator producing this stream (state is matched by it on restore).
  DataStream<T>& uid(std::string id) {
    env_->node(node_).uid = std::move(id);
    return *this;
  }
  int node_id() const { return node_; }
  // The sink node added by the last sink_to() on this handle (-1 before).
  int last_sink_node() const { return last_sink_; }
  StreamExecutionEnvironment* environment() const { return env_; }

 protected:
  friend struct AsyncDataStream;

  template <typename Op, typename Out, typename... Args>
  static runtime::InstantiatedOperator make(runtime::OutputBase* down,
                                            runtime::OperatorContext& ctx, const Args&... args) {
    auto op = std::make_unique<Op>(args..., static_cast<runtime::Output<Out>*>(down), ctx);
    runtime::OutputBase* in = static_cast<runtime::Output<T>*>(op.get());
    return runtime::InstantiatedOperator{std::move(op), in};
  }

  void fill_input(runtime::GraphNode& node) const {
    node.input = node_;
    node.input_ops = edge_;
    node.partitioning = partitioning_;
    node.partitioning_explicit = explicit_;
  }

  template <typename R, typename Create>
  DataStream<R> add(std::string name, Create create) {
    runtime::GraphNode node;
    node.kind = runtime::GraphNode::Kind::kOperator;
    node.name = std::move(name);
    node.output_ops = std::make_shared<runtime::TypedEdgeOps<R>>();
    fill_input(node);
    node.create_operator = std::move(create);
    return DataStream<R>(env_, env_->add_node(std::move(node)));
  }

  StreamExecutionEnvironment* env_;
  int node_;
  std::shared_ptr<const runtime::EdgeOps> edge_;
  runtime::Partitioning partitioning_;
  bool explicit_;
  int last_sink_ = -1;
};

// A stream partitioned by key.
template <typename T, typename K>
class KeyedStream : public DataStream<T> {
 public:
  KeyedStream(StreamExecutionEnvironment* env, int node, std::function<K(const T&)> key)
      : DataStream<T>(env, node,
                      std::make_shared<runtime::TypedEdgeOps<T>>(
                          [key](const T& v) -> std::uint64_t { return std::hash<K>{}(key(v)); }),
                      runtime::Partitioning::kHash, true),
        key_(std::move(key)) {}

  // A rolling reduce per key; emits the updated value for every input.
  DataStream<T> reduce(std::function<T(const T&, const T&)> fn, std::string name = "Reduce") {
    auto key = key_;
    return this->template add<T>(
        std::move(name),
        [key, fn](runtime::OutputBase* down, runtime::OperatorContext& ctx, runtime::JobServices&) {
          return DataStream<T>::template make<runtime::KeyedReduceOperator<T, K>, T>(down, ctx, key,
                                                                                     fn);
        });
  }

  const std::function<K(const T&)>& key_selector() const { return key_; }

 private:
  std::function<K(const T&)> key_;
};

template <typename T>
template <typename F, typename K>
KeyedStream<T, K> DataStream<T>::key_by(F key_selector) {
  return KeyedStream<T, K>(env_, node_, std::function<K(const T&)>(std::move(key_selector)));
}

namespace runtime {

// The SourceVertex of a typed FLIP-27 source.
template <typename T, typename SplitT, typename EnumT>
class TypedSourceVertex final : public SourceVertex {
 public:
  using SourceT = Source<T, SplitT, EnumT>;
  TypedSourceVertex(std::shared_ptr<const SourceT> source, WatermarkStrategy<T> strategy)
      : source_(std::move(source)), strategy_(std::move(strategy)) {}

  std::unique_ptr<SourceCoordinatorBase> create_coordinator(const std::string& name,
                                                            const std::string& uid, int parallelism,
                                                            JobServices& services,
                                                            MetricGroup& metrics) const override {
    return std::make_unique<SourceCoordinator<T, SplitT, EnumT>>(name, uid, source_, parallelism,
                                                                 services, metrics);
  }
  std::pair<std::unique_ptr<StreamOperator>, InputProcessor*> create_operator(
      SourceCoordinatorBase& coordinator, OutputBase* downstream, OperatorContext& ctx,
      MailboxProcessor& mailbox, JobServices& services) const override {
    auto op = std::make_unique<SourceOperator<T, SplitT, EnumT>>(
        source_, strategy_, static_cast<SourceCoordinator<T, SplitT, EnumT>*>(&coordinator),
        static_cast<Output<T>*>(downstream), ctx, mailbox, services);
    InputProcessor* input = op.get();
    return {std::move(op), input};
  }
  bool bounded() const override { return source_->boundedness() == Boundedness::kBounded; }

 private:
  std::shared_ptr<const SourceT> source_;
  WatermarkStrategy<T> strategy_;
};

}  // namespace runtime

template <typename SourceT>
DataStream<typename SourceT::value_type> StreamExecutionEnvironment::from_source(
    std::shared_ptr<SourceT> source,
    WatermarkStrategy<typename SourceT::value_type> watermark_strategy, std::string name) {
  using T = typename SourceT::value_type;
  using SplitT = typename SourceT::split_type;
  using EnumT = typename SourceT::enumerator_state_type;
  runtime::GraphNode node;
  node.kind = runtime::GraphNode::Kind::kSource;
  node.name = std::move(name);
  node.output_ops = std::make_shared<runtime::TypedEdgeOps<T>>();
  if (const auto* provider = dynamic_cast<const LineageVertexProvider*>(source.get())) {
    node.lineage = provider->lineage_vertex();
  }
  std::shared_ptr<const Source<T, SplitT, EnumT>> base = std::move(source);
  node.source = std::make_shared<runtime::TypedSourceVertex<T, SplitT, EnumT>>(
      std::move(base), std::move(watermark_strategy));
  return DataStream<T>(this, add_node(std::move(node)));
}

}  // namespace gcpstream

#endif  // GCPSTREAM_RUNTIME_STREAM_EXECUTION_ENVIRONMENT_H_
