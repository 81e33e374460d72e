#include "gcpstream/pubsub/sink/pubsub_dead_letter_queue.h"

#include <fmt/format.h>

#include <mutex>

#include "gcpstream/api/status_macros.h"
#include "gcpstream/connector/bounded_shutdown.h"
#include "gcpstream/pubsub/admin/resource_names.h"
#include "gcpstream/pubsub/client/batching_publisher.h"
#include "gcpstream/pubsub/client/publisher_stub.h"
#include "gcpstream/pubsub/sink/pubsub_sink.h"
#include "gcpstream/util/absl_fmt.h"
#include "gcpstream/util/utf8.h"

namespace gcpstream::pubsub {
namespace {

constexpr char kAbandoned[] = "deadLetterPublisherShutdownsAbandoned";
constexpr std::size_t kMaxErrorBytes = 1024;

}  // namespace

// Hands publish outcomes to the writer's thread (one mail per batch); detached at close so a
// publisher abandoned at shutdown finds nobody listening.
class PubSubDeadLetterQueue::Listener final
    : public PublishListener,
      public std::enable_shared_from_this<PubSubDeadLetterQueue::Listener> {
 public:
  Listener(PubSubDeadLetterQueue* queue, MailboxExecutor* mailbox)
      : queue_(queue), mailbox_(mailbox) {}
  void detach() {
    std::lock_guard lock(mu_);
    detached_ = true;
  }
  void on_published(std::vector<PublishOutcome> outcomes, RetiredMessages) override {
    std::lock_guard lock(mu_);
    if (detached_) return;
    mailbox_->execute(
        [self = shared_from_this(), outcomes = std::move(outcomes)]() -> absl::Status {
          {
            std::lock_guard lock(self->mu_);
            if (self->detached_) return absl::OkStatus();
          }
          for (const auto& o : outcomes) self->queue_->on_outcome(o);
          return absl::OkStatus();
        },
        "dead-letter publish completions");
  }

 private:
  PubSubDeadLetterQueue* queue_;
  MailboxExecutor* mailbox_;
  std::mutex mu_;
  bool detached_ = false;
};

absl::StatusOr<std::shared_ptr<PubSubDeadLetterQueue>> PubSubDeadLetterQueue::Builder::build()
    const {
  GCP_RETURN_IF_ERROR(error_);
  if (!topic_) return absl::InvalidArgumentError("PubSubDeadLetterQueue needs topic(...)");
  GCP_RETURN_IF_ERROR(ValidateResourceId("topic", topic_->topic));
  GCP_RETURN_IF_ERROR(client_.validate());
  if (max_in_flight_ < -1) {
    return absl::InvalidArgumentError(
        "max_in_flight_messages must be >= 0, or -1 to buffer until flush");
  }
  if (flush_timeout_.count() <= 0) {
    return absl::InvalidArgumentError(
        "flush_timeout must be positive (there is no unbounded "
        "setting)");
  }
  if (shutdown_timeout_.count() <= 0) {
    return absl::InvalidArgumentError("shutdown_timeout must be positive");
  }
  return std::shared_ptr<PubSubDeadLetterQueue>(new PubSubDeadLetterQueue(*this));
}

google::pubsub::v1::PubsubMessage PubSubDeadLetterQueue::ToMessage(
    const connector::FailedElement& element) {
  google::pubsub::v1::PubsubMessage m;
  std::string payload = element.payload_bytes();
  auto& a = *m.mutable_attributes();
  if (payload.size() > kMaxDeadLetterPayloadBytes) {
    // A dead letter must always fit in a publish request: a payload that cannot is left out
    // (a cut serialized message would not parse) and its size said instead.
    a["gcpstream.payload_omitted_bytes"] = std::to_string(payload.size());
  } else {
    m.set_data(std::move(payload));
  }
  // Attributes are protobuf strings: an error quoting a record's bytes (a row key, a value),
  // or one cut in the middle of a character, must not make the dead letter unpublishable.
  a["gcpstream.connector"] = util::ToValidUtf8(element.connector(), kMaxErrorBytes);
  a["gcpstream.destination"] = util::ToValidUtf8(element.describe_destination(), kMaxErrorBytes);
  a["gcpstream.status_code"] = absl::StatusCodeToString(element.status().code());
  a["gcpstream.error"] = util::ToValidUtf8(element.message(), kMaxErrorBytes);
  a["gcpstream.service_rejection"] = element.is_service_rejection() ? "true" : "false";
  return m;
}

absl::Status PubSubDeadLetterQueue::open(const connector::DeadLetterQueueContext& context) {
  context_ = context;
  std::shared_ptr<PublisherFactory> factory = b_.factory_;
  if (!factory) {
    // Its own credentials, independent of the hosting sink's.
    GCP_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                         connector::CreateChannel(b_.client_, kPubSubTarget));
    factory = std::make_shared<BatchingPublisherFactory>(MakeGrpcPublisherStub(channel),
                                                         PublisherSettings{});
  }
  listener_ = std::make_shared<Listener>(this, context_.mailbox_executor);
  GCP_ASSIGN_OR_RETURN(publisher_, factory->create(*b_.topic_, listener_));
  if (context_.metric_group != nullptr) {
    MetricGroup& g = *context_.metric_group;
    published_ = &g.counter("deadLettersPublished");
    g.gauge("inFlightDeadLetters", [this] { return static_cast<double>(in_flight_.load()); });
    g.gauge("deadLetterFlushMillis", [this] { return static_cast<double>(last_wait_ms_.load()); });
    g.gauge("longestDeadLetterFlushMillis",
            [this] { return static_cast<double>(longest_wait_ms_.load()); });
    g.gauge(kAbandoned,
            [] { return static_cast<double>(connector::ProcessCounter(kAbandoned).get()); });
  }
  return absl::OkStatus();
}

absl::Status PubSubDeadLetterQueue::offer(const connector::FailedElement& element) {
  GCP_RETURN_IF_ERROR(failure_);
  if (!publisher_) return absl::FailedPreconditionError("the dead-letter queue is not open");
  in_flight_.fetch_add(1);
  publisher_->publish(ToMessage(element), next_token_++);
  if (b_.max_in_flight_ == 0 || (b_.max_in_flight_ > 0 && in_flight_.load() >= b_.max_in_flight_)) {
    return await_all("an offer at max_in_flight_messages");
  }
  return absl::OkStatus();
}

void PubSubDeadLetterQueue::on_outcome(const PublishOutcome& outcome) {
  in_flight_.fetch_sub(1);
  if (outcome.message_id.ok()) {
    if (published_ != nullptr) published_->inc();
  } else if (failure_.ok()) {
    failure_ =
        absl::Status(outcome.message_id.status().code(),
                     fmt::format("dead-letter publish to {} failed: {}", b_.topic_->resource_name(),
                                 outcome.message_id.status().message()));
  }
}

absl::Status PubSubDeadLetterQueue::await_all(const char* wait) {
  if (in_flight_.load() == 0) return failure_;
  publisher_->flush();
  const auto start = std::chrono::steady_clock::now();
  absl::Status s = context_.mailbox_executor->yield_until([this] { return in_flight_.load() == 0; },
                                                          start + b_.flush_timeout_);
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now() - start)
                          .count();
  last_wait_ms_.store(waited);
  if (waited > longest_wait_ms_.load()) longest_wait_ms_.store(waited);
  if (s.code() == absl::StatusCode::kDeadlineExceeded) {
    return absl::DeadlineExceededError(fmt::format(
        "dead-letter queue: {} publishes to {} still outstanding after flush_timeout ({} ms) "
        "during {}",
        in_flight_.load(), b_.topic_->resource_name(), b_.flush_timeout_.count(), wait));
  }
  GCP_RETURN_IF_ERROR(s);
  return failure_;
}

absl::Status PubSubDeadLetterQueue::flush() {
  GCP_RETURN_IF_ERROR(failure_);
  if (!publisher_) return absl::OkStatus();
  return await_all("flush");
}

absl::Status PubSubDeadLetterQueue::close() {
  if (!publisher_) return absl::OkStatus();
  std::shared_ptr<Publisher> publisher = std::move(publisher_);
  std::vector<connector::ShutdownTask> tasks;
  tasks.push_back({fmt::format("dead-letter publisher for {}", b_.topic_->resource_name()),
                   [publisher] { return publisher->shutdown(); }});
  auto result = connector::BoundedShutdown(std::move(tasks), b_.shutdown_timeout_, kAbandoned);
  listener_->detach();
  return result.error;
}

}  // namespace gcpstream::pubsub
