#ifndef GCPSTREAM_PUBSUB_SOURCE_PUBSUB_SOURCE_READER_H_
#define GCPSTREAM_PUBSUB_SOURCE_PUBSUB_SOURCE_READER_H_

#include <fmt/format.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gcpstream/api/source_reader_base.h"
#include "gcpstream/pubsub/source/pubsub_deserialization_schema.h"
#include "gcpstream/pubsub/source/pubsub_reader_core.h"
#include "gcpstream/pubsub/source/undecodable_message_log.h"

namespace gcpstream::pubsub {

struct PubSubSplitState {
  std::string split_id;
  PubSubSplit split;
};

// Deserializes one message into records, emits them with the publish time as their event
// timestamp, and moves the message along its acknowledgement lifecycle. Subtask thread.
template <typename T>
class PubSubRecordEmitter final : public RecordEmitter<PubSubElement, T, PubSubSplitState> {
 public:
  PubSubRecordEmitter(std::shared_ptr<PubSubReaderCore> core,
                      PubSubDeserializationSchema<T> deserializer)
      : core_(std::move(core)), deserializer_(std::move(deserializer)) {}

  absl::Status emit_record(PubSubElement element, SourceOutput<T>& output,
                           PubSubSplitState& state) override {
    core_->on_taken(element);
    const auto& received = element.received;
    collector_.values.clear();
    absl::Status parsed = deserializer_.deserialize(received.message, collector_);
    const auto& time = received.message.publish_time();
    const std::int64_t ts = time.seconds() * 1000 + time.nanos() / 1000000;
    // Records collected before a failure are emitted under every policy but FAIL's.
    const auto policy = core_->config().deserialization_failure_policy;
    if (!parsed.ok()) {
      core_->num_records_in_errors().inc_single_writer();
      if (policy != DeserializationFailurePolicy::kFail) {
        undecodable_log_.log(received.message.message_id(),
                             state.split.subscription.resource_name(), parsed,
                             policy == DeserializationFailurePolicy::kDrop ? "dropped" : "nacked");
      }
      if (policy == DeserializationFailurePolicy::kFail) {
        core_->nack_now(state.split_id, received.ack_id);
        return absl::Status(
            parsed.code(), fmt::format("Pub/Sub source: deserializing message {} from {} failed "
                                       "(deserialization_failure_policy FAIL): {}",
                                       received.message.message_id(),
                                       state.split.subscription.resource_name(), parsed.message()));
      }
    }
    for (auto& value : collector_.values) {
      absl::Status s = output.collect(std::move(value), ts);
      if (!s.ok()) {
        // The downstream failed, not the message: release it at once for redelivery.
        core_->nack_now(state.split_id, received.ack_id);
        return s;
      }
    }
    core_->num_records_in().inc_single_writer(static_cast<std::int64_t>(collector_.values.size()));
    if (collector_.values.empty() && parsed.ok()) core_->records_skipped().inc_single_writer();
    if (!parsed.ok() && policy == DeserializationFailurePolicy::kNack) {
      core_->nack_now(state.split_id, received.ack_id);
    } else {
      core_->on_emitted(state.split_id, received.ack_id);
    }
    return absl::OkStatus();
  }

 private:
  struct VectorCollector final : Collector<T> {
    std::vector<T> values;
    void collect(T value) override { values.push_back(std::move(value)); }
  };
  std::shared_ptr<PubSubReaderCore> core_;
  PubSubDeserializationSchema<T> deserializer_;
  VectorCollector collector_;
  UndecodableMessageLog undecodable_log_;
};

// The Pub/Sub source reader: SourceReaderBase over the subscriber buffers, plus the
// acknowledgement hooks. It checkpoints no splits (the enumerator re-plans them).
template <typename T>
class PubSubSourceReader final
    : public SourceReaderBase<PubSubElement, T, PubSubSplit, PubSubSplitState> {
  using Base = SourceReaderBase<PubSubElement, T, PubSubSplit, PubSubSplitState>;

 public:
  static std::unique_ptr<PubSubSourceReader> create(
      std::shared_ptr<const PubSubSourceConfig> config, PubSubDeserializationSchema<T> deserializer,
      SourceReaderContext& context) {
    auto core = std::make_shared<PubSubReaderCore>(std::move(config), context);
    core->register_gauges();
    return std::unique_ptr<PubSubSourceReader>(
        new PubSubSourceReader(core, std::move(deserializer), context));
  }

  absl::StatusOr<std::vector<PubSubSplit>> snapshot_state(std::int64_t checkpoint_id) override {
    core_->on_snapshot(checkpoint_id);
    return std::vector<PubSubSplit>{};
  }
  absl::Status notify_checkpoint_complete(std::int64_t checkpoint_id) override {
    return core_->on_checkpoint_complete(checkpoint_id);
  }

  PubSubReaderCore& core() { return *core_; }

 protected:
  PubSubSplitState initialized_state(const PubSubSplit& split) override {
    return PubSubSplitState{split.split_id(), split};
  }
  PubSubSplit to_split_type(const std::string&, const PubSubSplitState& state) override {
    return state.split;
  }
  absl::Status on_split_finished(const std::map<std::string, PubSubSplitState>&) override {
    return absl::OkStatus();  // Pub/Sub splits never finish
  }

 private:
  PubSubSourceReader(std::shared_ptr<PubSubReaderCore> core,
                     PubSubDeserializationSchema<T> deserializer, SourceReaderContext& context)
      : Base(std::make_unique<PubSubSplitReader>(core),
             std::make_unique<PubSubRecordEmitter<T>>(core, std::move(deserializer)), context),
        core_(std::move(core)) {}

  std::shared_ptr<PubSubReaderCore> core_;
};

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_SOURCE_PUBSUB_SOURCE_READER_H_
