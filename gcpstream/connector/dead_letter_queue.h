#ifndef GCPSTREAM_CONNECTOR_DEAD_LETTER_QUEUE_H_
#define GCPSTREAM_CONNECTOR_DEAD_LETTER_QUEUE_H_

#include "absl/status/status.h"
#include "gcpstream/api/mailbox.h"
#include "gcpstream/api/metrics.h"
#include "gcpstream/connector/failed_element.h"

namespace gcpstream::connector {

// What a dead-letter queue is given when its sink writer opens it.
struct DeadLetterQueueContext {
  int subtask_index = 0;
  int parallelism = 1;
  MetricGroup* metric_group = nullptr;          // the hosting sink writer's group
  MailboxExecutor* mailbox_executor = nullptr;  // the writer's thread
};

// Where a failure handler sends failed records. Driven by the sink writer, on its thread:
//   open(context) once when the writer is created;
//   offer(element) per failed record (buffering allowed);
//   flush() at every checkpoint barrier and at end of input, always after the sink's own write
//     path drained: on OK return everything offered is durable; an error fails the checkpoint;
//   close() when the writer closes — not a persistence point.
// Delivery is at-least-once for failures that recur on replay.
class DeadLetterQueue {
 public:
  virtual ~DeadLetterQueue() = default;
  virtual absl::Status open(const DeadLetterQueueContext& context) = 0;
  virtual absl::Status offer(const FailedElement& element) = 0;
  virtual absl::Status flush() = 0;
  virtual absl::Status close() = 0;
};

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_DEAD_LETTER_QUEUE_H_
