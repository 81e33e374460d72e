#ifndef GCPSTREAM_CONNECTOR_COMMITTING_SINK_WRITER_FRONT_H_
#define GCPSTREAM_CONNECTOR_COMMITTING_SINK_WRITER_FRONT_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "gcpstream/api/sink.h"
#include "gcpstream/connector/async_sink_writer_front.h"

namespace gcpstream::connector {

// What a two-phase sink built on the shared writer core keeps beside it: the positions its
// destination clients reached (writer state) and what the committer must make visible
// (committables). Read on the writer's thread after flush() drained every element.
template <typename StateT, typename CommT>
class CheckpointedWriterState {
 public:
  virtual ~CheckpointedWriterState() = default;
  // One call per checkpoint, after flush(): what became committable since the last call.
  virtual std::vector<CommT> prepare_commit() = 0;
  // The same, knowing the checkpoint (CommittingSinkWriter::prepare_commit_at); by default
  // the checkpoint is not needed.
  virtual std::vector<CommT> prepare_commit_at(std::int64_t /*checkpoint_id*/) {
    return prepare_commit();
  }
  // Where a restored writer resumes.
  virtual std::vector<StateT> snapshot() const = 0;
};

// AsyncSinkWriterFront for a sink with writer state and a committer (Flink's
// StatefulSinkWriter + CommittingSinkWriter): writing, flushing and closing are the core's;
// state and committables come from `state`. A null `state` is a writer that keeps none (both
// lists empty), so one sink type can offer a stateless and a two-phase write method.
template <typename T, typename D, typename E, typename StateT, typename CommT>
class CommittingSinkWriterFront final : public StatefulSinkWriter<T, StateT>,
                                        public CommittingSinkWriter<T, CommT> {
 public:
  CommittingSinkWriterFront(std::unique_ptr<AsyncSinkWriterFront<T, D, E>> front,
                            std::shared_ptr<CheckpointedWriterState<StateT, CommT>> state)
      : front_(std::move(front)), state_(std::move(state)) {}

  absl::Status open() { return front_->open(); }
  absl::Status write(const T& element, const SinkWriterContext& context) override {
    return front_->write(element, context);
  }
  absl::Status flush(bool end_of_input) override { return front_->flush(end_of_input); }
  absl::Status close() override { return front_->close(); }
  absl::StatusOr<std::vector<CommT>> prepare_commit() override {
    if (!state_) return std::vector<CommT>();
    return state_->prepare_commit();
  }
  absl::StatusOr<std::vector<CommT>> prepare_commit_at(std::int64_t checkpoint_id) override {
    if (!state_) return std::vector<CommT>();
    return state_->prepare_commit_at(checkpoint_id);
  }
  absl::StatusOr<std::vector<StateT>> snapshot_state(std::int64_t) override {
    if (!state_) return std::vector<StateT>();
    return state_->snapshot();
  }

 private:
  std::unique_ptr<AsyncSinkWriterFront<T, D, E>> front_;
  std::shared_ptr<CheckpointedWriterState<StateT, CommT>> state_;
};

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_COMMITTING_SINK_WRITER_FRONT_H_
