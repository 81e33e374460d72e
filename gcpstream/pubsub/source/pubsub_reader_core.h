#ifndef GCPSTREAM_PUBSUB_SOURCE_PUBSUB_READER_CORE_H_
#define GCPSTREAM_PUBSUB_SOURCE_PUBSUB_READER_CORE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/api/source_reader.h"
#include "gcpstream/api/split_reader.h"
#include "gcpstream/pubsub/client/subscriber.h"
#include "gcpstream/pubsub/source/ack_tracker.h"
#include "gcpstream/pubsub/source/pubsub_source_config.h"
#include "gcpstream/pubsub/source/pubsub_split.h"

namespace gcpstream::pubsub {

// What a fetch hands the subtask: one received message.
struct PubSubElement {
  ReceivedMessage received;
};

// The type-independent half of a Pub/Sub source reader: one Subscriber per assigned split, the
// per-split buffers the subscribers' callbacks fill, the reader-wide hard budget over them, the
// parking of paused splits, the acknowledgement tracker, and the metrics.
//
// Threads: subscriber callbacks (deliveries, failures) on the subscribers' stream threads; the
// SplitReader half (add_splits, fetch, pause_or_resume, close) on the fetcher thread; the
// checkpoint and emission half on the subtask thread; gauges on the reporter's. Everything
// shared is behind one mutex or atomic.
class PubSubReaderCore : public std::enable_shared_from_this<PubSubReaderCore> {
 public:
  PubSubReaderCore(std::shared_ptr<const PubSubSourceConfig> config, SourceReaderContext& context);
  ~PubSubReaderCore();
  // Registers the gauges (call once, after construction through make_shared).
  void register_gauges();

  // --- fetcher thread ---
  absl::Status add_splits(std::vector<PubSubSplit> splits);
  absl::StatusOr<RecordsWithSplitIds<PubSubElement>> fetch();
  void wake_up();  // any thread
  absl::Status pause_or_resume(const std::vector<std::string>& to_pause,
                               const std::vector<std::string>& to_resume);
  // Nacks every split's messages (held, emitted, bound), asks every subscriber to stop, then
  // waits for them under one shutdown_timeout. Idempotent.
  absl::Status close();

  // --- subtask thread ---
  // A checkpoint barrier: staged acknowledgements become bound to `checkpoint_id`.
  void on_snapshot(std::int64_t checkpoint_id);
  // Acknowledges everything bound to checkpoints <= `checkpoint_id`; with
  // await_ack_confirmation, waits for the service (DEADLINE_EXCEEDED on timeout).
  absl::Status on_checkpoint_complete(std::int64_t checkpoint_id);
  // An element reached the emitter: it is no longer in the fetcher's queues.
  void on_taken(const PubSubElement& element);
  // The message's records were emitted: acknowledge it with the next checkpoint.
  void on_emitted(const std::string& split_id, const std::string& ack_id);
  // Release the message for immediate redelivery.
  void nack_now(const std::string& split_id, const std::string& ack_id);

  const PubSubSourceConfig& config() const { return *config_; }
  Counter& num_records_in() { return *num_records_in_; }
  Counter& num_records_in_errors() { return *num_records_in_errors_; }
  Counter& records_skipped() { return *records_skipped_; }

  // For tests.
  std::int64_t buffered_messages() const { return buffered_messages_.load(); }
  std::int64_t parked_splits() const { return parked_splits_.load(); }
  std::int64_t pending_acks() const { return tracker_.outstanding(); }

 private:
  struct Slot {
    PubSubSplit split;
    std::shared_ptr<Subscriber> subscriber;  // null while parked or after close
    int generation = 0;                      // bumped when the subscriber is replaced
    std::deque<ReceivedMessage> buffer;
    std::int64_t bytes = 0;
    bool paused = false;
    bool parked = false;
    absl::Status failure;
    bool failure_reported = false;  // handed to the fetcher (the job fails with it)
  };
  struct Teardown {
    std::string split_id;
    std::shared_ptr<Subscriber> subscriber;
    std::vector<std::string> nacks;
  };

  void open_subscriber_locked(Slot& slot);
  void on_messages(const std::string& split_id, int generation, std::vector<ReceivedMessage> batch);
  void on_failure(const std::string& split_id, int generation, absl::Status status);
  // Takes a slot's subscriber and every ack id it owns (buffer and tracker) for a teardown.
  Teardown detach_locked(Slot& slot);
  // Nacks, stops and waits (one deadline for all); unlocked.
  void teardown(std::vector<Teardown> teardowns);
  void park_locked(Slot& slot, std::vector<Teardown>& out);
  std::shared_ptr<Subscriber> subscriber_of(const std::string& split_id);

  const std::shared_ptr<const PubSubSourceConfig> config_;
  SourceReaderContext& context_;
  const SubscriberSettings subscriber_settings_;
  std::shared_ptr<SubscriberStub> stub_;
  AckTracker tracker_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Slot> slots_;
  bool woken_ = false;
  bool closed_ = false;
  bool park_paused_requested_ = false;
  bool overflow_reported_ = false;
  std::optional<std::chrono::steady_clock::time_point> first_assignment_;

  std::atomic<bool> barrier_seen_{false};
  std::atomic<std::int64_t> buffered_messages_{0};
  std::atomic<std::int64_t> buffered_bytes_{0};
  std::atomic<std::int64_t> fetcher_messages_{0};
  std::atomic<std::int64_t> fetcher_bytes_{0};
  std::atomic<std::int64_t> parked_splits_{0};

  Counter* messages_acked_;
  Counter* messages_nacked_;
  Counter* splits_parked_;
  Counter* num_records_in_;
  Counter* num_records_in_errors_;
  Counter* records_skipped_;
};

// The SplitReader the runtime's fetcher drives: a thin forwarder to the core.
class PubSubSplitReader final : public SplitReader<PubSubElement, PubSubSplit> {
 public:
  explicit PubSubSplitReader(std::shared_ptr<PubSubReaderCore> core) : core_(std::move(core)) {}
  absl::StatusOr<RecordsWithSplitIds<PubSubElement>> fetch() override { return core_->fetch(); }
  absl::Status handle_splits_addition(SplitsAddition<PubSubSplit> addition) override {
    return core_->add_splits(std::move(addition.splits));
  }
  void wake_up() override { core_->wake_up(); }
  absl::Status pause_or_resume_splits(const std::vector<std::string>& to_pause,
                                      const std::vector<std::string>& to_resume) override {
    return core_->pause_or_resume(to_pause, to_resume);
  }
  absl::Status close() override { return core_->close(); }

 private:
  std::shared_ptr<PubSubReaderCore> core_;
};

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_SOURCE_PUBSUB_READER_CORE_H_
