#include "gcpstream/pubsub/sink/pubsub_sink_adapter.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gcpstream/api/status_macros.h"
#include "gcpstream/connector/await_on_mailbox.h"
#include "gcpstream/connector/status_classifier.h"
#include "gcpstream/pubsub/admin/resource_names.h"
#include "gcpstream/pubsub/sink/failed_message.h"
#include "gcpstream/util/utf8.h"

namespace gcpstream::pubsub {
namespace {

using Message = google::pubsub::v1::PubsubMessage;
using connector::TopicDestination;

constexpr char kAbandonedCounter[] = "publisherShutdownsAbandoned";
// Pub/Sub refuses a publish request over 10 MB (its documented quota: "Publish request: 10 MB
// total size"; the same figure bounds a message). The emulator answers such a request with
// RESOURCE_EXHAUSTED, which reads as an outage and would stall the job: a message that cannot
// fit alone in a request is a failure of that record, known before any RPC. The margin covers
// the request's other fields (topic name and framing) with room to spare.
constexpr std::size_t kMaxPublishRequestBytes = 10'000'000;
constexpr std::size_t kRequestFramingBytes = 1024;

// Publish outcomes in the writer core's shape. Retired messages travel as the outcome batch's
// `spent` memory, so the writer frees them on its own thread.
class OutcomeBridge final : public PublishListener {
 public:
  explicit OutcomeBridge(std::shared_ptr<connector::SinkOutcomeListener<Message>> listener)
      : listener_(std::move(listener)) {}
  void on_published(std::vector<PublishOutcome> outcomes, RetiredMessages retired) override {
    std::vector<connector::SinkOutcome<Message>> out;
    out.reserve(outcomes.size());
    for (auto& o : outcomes) {
      out.push_back({o.token, o.message_id.status(), std::move(o.message)});
    }
    std::shared_ptr<void> spent;
    if (!retired.empty()) spent = std::make_shared<RetiredMessages>(std::move(retired));
    listener_->on_outcomes(std::move(out), std::move(spent));
  }

 private:
  std::shared_ptr<connector::SinkOutcomeListener<Message>> listener_;
};

// One topic's publisher as the core drives it, with the ordering keys its failures paused.
class PublisherClient final : public connector::DestinationClient<Message> {
 public:
  explicit PublisherClient(std::shared_ptr<Publisher> publisher)
      : publisher_(std::move(publisher)) {}
  void submit(Message&& m, std::uint64_t token) override {
    publisher_->publish(std::move(m), token);
  }
  void submit_solo(Message&& m, std::uint64_t token) override {
    publisher_->publish_solo(std::move(m), token);
  }
  void flush() override { publisher_->flush(); }
  absl::Status shutdown() override { return publisher_->shutdown(); }
  void on_parked(const Message& m) override {
    if (!m.ordering_key().empty()) paused_.insert(m.ordering_key());
  }
  void resume_parked() override {
    for (const auto& key : paused_) publisher_->resume_publish(key);
    paused_.clear();
  }
  void on_routed(const Message& m) override {
    if (!m.ordering_key().empty()) publisher_->resume_publish(m.ordering_key());
  }

 private:
  std::shared_ptr<Publisher> publisher_;
  std::set<std::string> paused_;
};

class PubSubSinkAdapter final : public connector::AsyncSinkAdapter<TopicDestination, Message> {
 public:
  PubSubSinkAdapter(PubSubWriterConfig config, WriterInitContext& context)
      : config_(std::move(config)),
        mailbox_(context.mailbox_executor()),
        topics_created_(context.metric_group().counter("topicsCreated")) {
    rules_.not_found_is_repairable =
        config_.create_disposition == CreateDisposition::kCreateIfNeeded;
  }

  std::string describe(const TopicDestination& t) const override { return t.resource_name(); }
  std::string metric_scope(const TopicDestination& t) const override { return t.topic; }

  absl::StatusOr<std::shared_ptr<connector::DestinationClient<Message>>> open(
      const TopicDestination& topic,
      std::shared_ptr<connector::SinkOutcomeListener<Message>> listener) override {
    if (absl::Status s = ValidateResourceId("topic", topic.topic); !s.ok()) {
      // A configuration error, not a failure of the record: never routed.
      return absl::FailedPreconditionError(
          fmt::format("the Pub/Sub sink's destination resolver returned {}: {}",
                      topic.resource_name(), s.message()));
    }
    GCP_ASSIGN_OR_RETURN(
        std::shared_ptr<Publisher> publisher,
        config_.publishers->create(topic, std::make_shared<OutcomeBridge>(std::move(listener))));
    return std::shared_ptr<connector::DestinationClient<Message>>(
        std::make_shared<PublisherClient>(std::move(publisher)));
  }

  std::int64_t size_of(const Message& m) const override {
    return static_cast<std::int64_t>(m.ByteSizeLong());
  }

  absl::Status precheck(const TopicDestination& topic, const Message& m) override {
    // Per record: the topic's name length without building the name ("projects//topics/").
    const std::size_t bytes = m.ByteSizeLong() + topic.project.size() + topic.topic.size() + 18;
    if (bytes + kRequestFramingBytes > kMaxPublishRequestBytes) {
      return absl::InvalidArgumentError(fmt::format(
          "a message of {} bytes for {} cannot fit in a Pub/Sub publish request (at most {} "
          "bytes with the request's own fields)",
          m.ByteSizeLong(), topic.resource_name(), kMaxPublishRequestBytes));
    }
    // Attributes and the ordering key are protobuf strings: bytes that are not UTF-8 make a
    // request the service cannot parse, so the message fails here, alone, before any RPC.
    auto not_utf8 = [&](std::string_view what, std::string_view bytes) -> absl::Status {
      auto at = util::InvalidUtf8At(bytes);
      if (!at) return absl::OkStatus();
      return absl::InvalidArgumentError(fmt::format(
          "a message for {} has {} that is not valid UTF-8 (byte {}); Pub/Sub attributes and "
          "ordering keys must be UTF-8 (put binary data in the message's data)",
          topic.resource_name(), what, *at));
    };
    GCP_RETURN_IF_ERROR(not_utf8("an ordering key", m.ordering_key()));
    for (const auto& [key, value] : m.attributes()) {
      GCP_RETURN_IF_ERROR(not_utf8("an attribute name", key));
      GCP_RETURN_IF_ERROR(not_utf8(fmt::format("the value of attribute '{}'", key), value));
    }
    if (!m.ordering_key().empty() && !config_.options.enable_message_ordering) {
      return absl::FailedPreconditionError(fmt::format(
          "a message for {} carries ordering key '{}' but enable_message_ordering is false; "
          "enable it in the publisher options or do not set ordering keys",
          topic.resource_name(), m.ordering_key()));
    }
    return absl::OkStatus();
  }

  connector::FailureClass classify(const absl::Status& status) const override {
    return connector::Classify(status, rules_);
  }
  bool is_cascade(const absl::Status& status) const override { return IsOrderingKeyPaused(status); }

  connector::RepairResult repair(const TopicDestination& topic,
                                 const std::vector<const Message*>&) override {
    connector::RepairResult r;
    auto admin = config_.admin_factory();
    if (!admin.ok()) {
      r.status = admin.status();
      return r;
    }
    std::shared_ptr<TopicAdmin> a = *admin;
    // The admin client has its own deadline; this wait is outside the publish progress budget.
    auto created = connector::AwaitOnMailbox<absl::StatusOr<bool>>(
        mailbox_, "pubsub topic created", [&](std::function<void(absl::StatusOr<bool>)> done) {
          a->async_create_topic(topic, config_.topic_create_options, std::move(done));
        });
    if (!created.ok()) {
      r.status = created.status();
      r.permanent = true;  // the subtask is being cancelled
      return r;
    }
    if (!created->ok()) {
      r.status = created->status();
      return r;
    }
    topics_created_.inc();
    if (**created) {
      r.created = true;
      spdlog::info("Pub/Sub sink: created topic {}", topic.resource_name());
    }
    return r;
  }

  absl::Status fatal_failure(const TopicDestination& topic,
                             const absl::Status& cause) const override {
    if (cause.code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(
          fmt::format("Pub/Sub topic {} does not exist and create_disposition is CREATE_NEVER ({})",
                      topic.resource_name(), cause.message()));
    }
    return absl::Status(cause.code(), fmt::format("publishing to {} failed: {}",
                                                  topic.resource_name(), cause.message()));
  }

  std::unique_ptr<connector::FailedElement> failed_element(const TopicDestination& topic,
                                                           std::optional<Message> message,
                                                           absl::Status status,
                                                           bool service_rejection) const override {
    return std::make_unique<FailedMessage>(topic, std::move(message), std::move(status),
                                           service_rejection);
  }

 private:
  PubSubWriterConfig config_;
  MailboxExecutor& mailbox_;
  Counter& topics_created_;
  connector::ClassifierRules rules_;
};

connector::AsyncSinkWriterSettings Settings(const PubSubPublisherOptions& o) {
  connector::AsyncSinkWriterSettings s;
  s.words = {.connector = "Pub/Sub",
             .metric_connector = "pubsub",
             .element = "message",
             .elements = "messages",
             .element_metric = "Messages",
             .destination = "topic",
             .client = "publisher",
             .live_destinations = "topics",
             .request = "Publish"};
  s.max_in_flight_count = o.max_in_flight_messages;
  s.max_in_flight_bytes = o.max_in_flight_bytes;
  s.progress.connector = "Pub/Sub";
  s.progress.completion = "publish";
  s.progress.progress_timeout = o.publish_progress_timeout;
  s.progress.stall_warning_interval =
      std::max(std::chrono::milliseconds(1), o.publish_progress_timeout / 10);
  s.progress.progress_timeout_option = "publish_progress_timeout";
  s.recovery = o.recovery;
  s.max_consecutive_rejections = o.max_consecutive_rejections;
  s.max_active_groups = o.max_active_publishers;
  s.destination_idle_timeout = o.destination_idle_timeout;
  s.shutdown_timeout = o.shutdown_timeout;
  s.per_destination_metrics = o.per_destination_metrics;
  s.abandoned_counter = kAbandonedCounter;
  return s;
}

}  // namespace

std::unique_ptr<PubSubWriterCore> MakePubSubWriterCore(PubSubWriterConfig config,
                                                       WriterInitContext& context) {
  connector::AsyncSinkWriterSettings settings = Settings(config.options);
  std::shared_ptr<connector::FailureHandler> handler = config.failure_handler;
  return std::make_unique<PubSubWriterCore>(
      std::move(settings), std::make_unique<PubSubSinkAdapter>(std::move(config), context),
      std::move(handler), context);
}

}  // namespace gcpstream::pubsub
