#ifndef GCPSTREAM_PUBSUB_CLIENT_SUBSCRIBER_H_
#define GCPSTREAM_PUBSUB_CLIENT_SUBSCRIBER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "gcpstream/pubsub/client/subscriber_stub.h"
#include "google/pubsub/v1/pubsub.pb.h"

namespace gcpstream::pubsub {

// How a Subscriber pulls and keeps leases. Defaults are those of Google's client libraries
// (the Java Subscriber's, which the reference documents): flow control 1,000 messages and
// 100 MB, one streaming-pull connection, leases extended for at most one hour.
struct SubscriberSettings {
  // Messages / bytes the subscriber holds (received and neither acknowledged, nacked nor
  // expired) before it stops reading from its streams. Sent to the service too, as the
  // stream's max_outstanding_messages / max_outstanding_bytes.
  std::int64_t max_outstanding_messages = 1000;
  std::int64_t max_outstanding_bytes = 100 * 1000 * 1000;
  // Streaming-pull connections. Each has its own dispatch thread, so per-ordering-key order
  // holds only with one.
  int parallel_pull_count = 1;
  // How long a message's lease is extended, measured from its receipt. 0 disables extension
  // (the subscription's own acknowledgement deadline then applies).
  std::chrono::milliseconds max_ack_extension_period{std::chrono::hours(1)};
  // Bounds on one extension's length. Unset: adaptive between 10 s and 600 s (the 99th
  // percentile of how long this subscriber took to settle a message, Google's clients' rule).
  std::optional<std::chrono::seconds> min_duration_per_ack_extension;
  std::optional<std::chrono::seconds> max_duration_per_ack_extension;
  // Acknowledge / ModifyAckDeadline batching: a request carries at most 2,500 ids (Google's
  // client limit, which keeps requests under the 512 KB request cap) and waits at most this.
  std::chrono::milliseconds ack_batch_delay{100};
  // Deadline of each Acknowledge / ModifyAckDeadline call.
  std::chrono::milliseconds settle_rpc_timeout{std::chrono::seconds(60)};
  // Reconnect backoff after a retryable stream failure: doubles up to the maximum, resets once
  // a response arrives.
  std::chrono::milliseconds reconnect_initial_backoff{100};
  std::chrono::milliseconds reconnect_max_backoff{std::chrono::seconds(10)};

  // INVALID_ARGUMENT naming the field.
  absl::Status validate() const;
};

// A message as the subscriber hands it over.
struct ReceivedMessage {
  google::pubsub::v1::PubsubMessage message;
  std::string ack_id;
  int delivery_attempt = 0;  // 0 unless the subscription has a dead-letter policy
  std::int64_t bytes = 0;    // the serialized message size, what flow control counts
};

// Callbacks of a Subscriber. Both run on a stream's dispatch thread; one stream dispatches in
// the order it received (so per-key order holds with one stream). on_messages must not block
// for long: it holds back its stream.
struct SubscriberCallbacks {
  // The messages of one StreamingPull response (never empty), in the order received. A whole
  // response at a time, so the receiver takes its lock and wakes its consumer once per response
  // rather than once per message.
  std::function<void(std::vector<ReceivedMessage>)> on_messages;
  // A failure the subscriber will not retry (a non-retryable stream status). Called at most
  // once; the subscriber stops pulling afterwards.
  std::function<void(absl::Status)> on_failure;
};

// A streaming-pull subscriber for one subscription, in the shape of Google's high-level
// clients: it keeps `parallel_pull_count` StreamingPull streams open (reconnecting with backoff
// on UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, RESOURCE_EXHAUSTED, ABORTED, UNKNOWN and
// CANCELLED), applies flow control, extends the lease of every message it handed over until it
// is settled or max_ack_extension_period has passed (then it stops extending and releases the
// message's flow-control permit, leaving it to redelivery), and batches acks, nacks
// (ModifyAckDeadline 0) and extensions on a settle thread.
//
// Thread-safe. stop() is asynchronous; await_terminated() waits for the threads.
class Subscriber {
 public:
  Subscriber(std::shared_ptr<SubscriberStub> stub, std::string subscription,
             SubscriberSettings settings, SubscriberCallbacks callbacks);
  ~Subscriber();  // stops and joins (use stop() + await_terminated() to bound the wait)

  // The acknowledgement deadline, in seconds, a stopping subscriber gives the messages it
  // hands back. Not 0: a plain nack makes a message available at once, and the service may
  // deliver it straight back onto this subscriber's own stream, still open because a deadline
  // changed after a stream closed is ignored (measured on the emulator: 50 nacked messages came
  // back on the same stream within 50 ms, then were held 10-150 s after the cancel). The
  // deadline must outlast the hand-back requests and the cancel: 1 s did on a quiet machine
  // (redelivery after about 1.1 s) but not always on a loaded 2-core CI run, so 5 s.
  static constexpr int kReleaseOnStopSeconds = 5;

  void start();

  // Settles messages. Unknown or already settled ids are ignored. `done`, if given, runs once
  // the service answered every Acknowledge request carrying these ids (OK, or the first error).
  void ack(const std::vector<std::string>& ack_ids,
           std::function<void(absl::Status)> done = nullptr);
  void nack(const std::vector<std::string>& ack_ids);

  // Stops pulling: sends what is queued to settle, hands every message still leased back with
  // a kReleaseOnStopSeconds deadline (so it is redelivered that much later, to another stream:
  // a deadline of 0 would bounce it into this subscriber's closing stream), then cancels the
  // streams and ends the threads. Idempotent.
  void stop();
  // Waits for the threads stop() ended; false at the deadline.
  bool await_terminated(std::chrono::steady_clock::time_point deadline);

  // Counters for tests and metrics.
  std::int64_t outstanding_messages() const;
  std::int64_t leases_expired() const { return leases_expired_.load(); }
  std::int64_t streams_opened() const { return streams_opened_.load(); }
  // The extension length in use now.
  std::chrono::seconds current_extension() const;

 private:
  struct Lease {
    std::int64_t bytes = 0;
    std::chrono::steady_clock::time_point received;
    std::chrono::steady_clock::time_point next_extension;
  };
  struct PendingAck {
    std::string ack_id;
    std::shared_ptr<struct AckWaiter> waiter;
  };

  void stream_loop(int index);
  bool run_stream(int index, std::chrono::milliseconds& backoff);
  void settle_loop();
  void release(const std::string& ack_id, bool record_latency);
  void fail(absl::Status status);
  void cancel_streams();
  std::chrono::seconds extension_locked() const;

  const std::shared_ptr<SubscriberStub> stub_;
  const std::string subscription_;
  const SubscriberSettings settings_;
  const SubscriberCallbacks callbacks_;
  std::string client_id_;

  mutable std::mutex mu_;
  std::condition_variable flow_cv_;    // stream threads wait for permits
  std::condition_variable settle_cv_;  // the settle thread waits for work
  bool stopping_ = false;
  bool failed_ = false;
  bool streams_cancelled_ = false;
  // The settle thread took the leases for the final release: a stream thread releases what
  // arrives after that itself.
  bool final_release_taken_ = false;
  absl::flat_hash_map<std::string, Lease> leases_;
  std::int64_t outstanding_bytes_ = 0;
  std::deque<PendingAck> acks_;
  std::deque<std::string> nacks_;
  std::vector<std::shared_ptr<StreamingPullStream>> streams_;
  // Seconds from receipt to settlement, for the adaptive extension (10..600 buckets).
  std::vector<std::int64_t> latency_buckets_;
  std::int64_t latency_count_ = 0;

  std::atomic<std::int64_t> leases_expired_{0};
  std::atomic<std::int64_t> streams_opened_{0};
  std::vector<std::thread> threads_;
  std::mutex join_mu_;
  std::condition_variable joined_cv_;
  int running_threads_ = 0;
  bool started_ = false;
};

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_CLIENT_SUBSCRIBER_H_
