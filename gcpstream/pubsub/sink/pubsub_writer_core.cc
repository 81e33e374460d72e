#include "gcpstream/pubsub/sink/pubsub_writer_core.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>

#include "gcpstream/api/status_macros.h"
#include "gcpstream/connector/bounded_shutdown.h"
#include "gcpstream/connector/recovery_backoff.h"
#include "gcpstream/connector/status_classifier.h"
#include "gcpstream/pubsub/sink/failed_message.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::pubsub {
namespace {

constexpr char kAbandonedCounter[] = "publisherShutdownsAbandoned";

connector::ProgressPolicy Progress(const PubSubPublisherOptions& o) {
  connector::ProgressPolicy p;
  p.connector = "Pub/Sub";
  p.completion = "publish";
  p.progress_timeout = o.publish_progress_timeout;
  p.stall_warning_interval =
      std::max(std::chrono::milliseconds(1), o.publish_progress_timeout / 10);
  p.progress_timeout_option = "publish_progress_timeout";
  return p;
}

}  // namespace

// Publish outcomes arrive on client threads; they are queued, and a single mail (posted when
// the queue turns non-empty) hands everything queued to the writer's thread. A whole batch of
// outcomes therefore costs one mail, not one per message.
class PubSubWriterCore::Completions final : public PublishListener {
 public:
  Completions(PubSubWriterCore* core, MailboxExecutor* mailbox, std::weak_ptr<bool> alive)
      : core_(core), mailbox_(mailbox), alive_(std::move(alive)) {}

  // After detach() nothing is posted any more: a publisher abandoned at shutdown may report
  // long after the writer (and its mailbox) are gone.
  void detach() {
    std::lock_guard lock(mu_);
    detached_ = true;
    queue_.clear();
    retired_.clear();
  }

  void on_published(std::vector<PublishOutcome> outcomes, RetiredMessages retired) override {
    std::lock_guard lock(mu_);
    if (detached_) return;
    if (queue_.empty()) {
      queue_ = std::move(outcomes);
    } else {
      for (auto& o : outcomes) queue_.push_back(std::move(o));
    }
    // Freed by the mail below, on the writer's thread, which allocated them.
    if (!retired.empty()) retired_.push_back(std::move(retired));
    if (scheduled_) return;
    scheduled_ = true;
    // Posted under the lock, so detach() cannot complete while a post is under way.
    mailbox_->execute(
        [this, alive = alive_]() -> absl::Status {
          auto a = alive.lock();
          if (!a || !*a) return absl::OkStatus();
          std::vector<PublishOutcome> batch;
          std::vector<RetiredMessages> retired;
          {
            std::lock_guard lock(mu_);
            batch.swap(queue_);
            retired.swap(retired_);
            scheduled_ = false;
          }
          for (auto& o : batch) core_->on_complete(std::move(o));
          return absl::OkStatus();
        },
        "pubsub publish completions");
  }

 private:
  PubSubWriterCore* core_;
  MailboxExecutor* mailbox_;
  std::weak_ptr<bool> alive_;
  std::mutex mu_;
  std::vector<PublishOutcome> queue_;
  std::vector<RetiredMessages> retired_;
  bool scheduled_ = false;
  bool detached_ = false;
};

PubSubWriterCore::PubSubWriterCore(PubSubWriterConfig config, WriterInitContext& context)
    : config_(std::move(config)),
      context_(context),
      metrics_(context.metric_group()),
      gate_(config_.options.max_in_flight_messages, config_.options.max_in_flight_bytes,
            Progress(config_.options), context.mailbox_executor()),
      router_("pubsub", config_.failure_handler, config_.options.max_consecutive_rejections,
              context.metric_group()),
      records_send_(metrics_.counter(metric_names::kNumRecordsSend)),
      bytes_send_(metrics_.counter(metric_names::kNumBytesSend)),
      records_skipped_(metrics_.counter(metric_names::kRecordsSkipped)),
      topics_created_(metrics_.counter("topicsCreated")),
      completions_(std::make_shared<Completions>(this, &context.mailbox_executor(), alive_)) {
  metrics_.gauge("inFlightMessages", [this] { return static_cast<double>(gate_.count()); });
  metrics_.gauge("inFlightBytes", [this] { return static_cast<double>(gate_.bytes()); });
  metrics_.gauge("parkedMessages", [this] { return static_cast<double>(parked_count_.load()); });
  metrics_.gauge(kAbandonedCounter, [] {
    return static_cast<double>(connector::ProcessCounter(kAbandonedCounter).get());
  });
  gate_.set_stall_detail([this] { return fmt::format("{} topics", destinations_.size()); });
}

PubSubWriterCore::~PubSubWriterCore() {
  *alive_ = false;
  completions_->detach();
}

absl::Status PubSubWriterCore::open() {
  connector::DeadLetterQueueContext dlq;
  dlq.subtask_index = context_.subtask_index();
  dlq.parallelism = context_.parallelism();
  dlq.metric_group = &metrics_;
  dlq.mailbox_executor = &context_.mailbox_executor();
  return router_.open(dlq);
}

void PubSubWriterCore::capture(absl::Status status) {
  if (captured_.ok()) captured_ = std::move(status);
}

absl::Status PubSubWriterCore::before_record() {
  GCP_RETURN_IF_ERROR(captured_);
  if (parked_count_.load() > 0 && !repairing_) GCP_RETURN_IF_ERROR(repair_all());
  return captured_;
}

absl::StatusOr<PubSubWriterCore::Destination*> PubSubWriterCore::destination(
    const connector::TopicDestination& topic) {
  if (last_topic_ != nullptr && *last_topic_ == topic) return last_destination_;
  auto it = destinations_.find(topic);
  if (it != destinations_.end()) {
    it->second.used_since_flush = true;
    last_topic_ = &it->first;
    last_destination_ = &it->second;
    return &it->second;
  }
  if (static_cast<int>(destinations_.size()) >= config_.options.max_active_publishers) {
    // Release the least recently used publisher that has no work; if every one has work, drain
    // everything first. Work is never discarded to make room.
    const auto now = std::chrono::steady_clock::now();
    for (auto& [t, d] : destinations_) {
      if (d.used_since_flush) d.last_used = now;  // refreshed lazily (see release_idle)
    }
    auto pick = [&]() -> std::optional<connector::TopicDestination> {
      std::optional<connector::TopicDestination> best;
      SteadyTime oldest = SteadyTime::max();
      for (const auto& [t, d] : destinations_) {
        if (clean(d) && d.last_used < oldest) {
          oldest = d.last_used;
          best = t;
        }
      }
      return best;
    };
    auto victim = pick();
    if (!victim) {
      for (auto& [t, d] : destinations_) d.publisher->flush();
      GCP_RETURN_IF_ERROR(drain("releasing a publisher at max_active_publishers"));
      GCP_RETURN_IF_ERROR(repair_all());
      victim = pick();
    }
    if (victim) GCP_RETURN_IF_ERROR(release({*victim}));
  }
  GCP_ASSIGN_OR_RETURN(std::shared_ptr<Publisher> publisher,
                       config_.publishers->create(topic, completions_));
  Destination d;
  d.topic = topic;
  d.publisher = std::move(publisher);
  d.last_used = std::chrono::steady_clock::now();
  if (config_.options.per_destination_metrics) {
    auto& group = metrics_.add_group("destination").add_group(topic.topic);
    d.records_send = &group.counter("recordsSend");
    d.send_errors = &group.counter("sendErrors");
  }
  d.used_since_flush = true;
  auto [pos, inserted] = destinations_.emplace(topic, std::move(d));
  last_topic_ = &pos->first;
  last_destination_ = &pos->second;
  return &pos->second;
}

absl::Status PubSubWriterCore::publish(const connector::TopicDestination& topic,
                                       google::pubsub::v1::PubsubMessage&& message) {
  if (!message.ordering_key().empty() && !config_.options.enable_message_ordering) {
    return absl::FailedPreconditionError(fmt::format(
        "a message for {} carries ordering key '{}' but enable_message_ordering is false; "
        "enable it in the publisher options or do not set ordering keys",
        topic.resource_name(), message.ordering_key()));
  }
  Tracked tracked;
  tracked.sequence = next_sequence_++;
  tracked.bytes = static_cast<std::int64_t>(message.ByteSizeLong());
  GCP_RETURN_IF_ERROR(gate_.admit("write", [&] {
    for (auto& [t, d] : destinations_) d.publisher->flush();
  }));
  GCP_ASSIGN_OR_RETURN(Destination * d, destination(topic));
  tracked.destination = d;
  records_send_.inc_single_writer();
  bytes_send_.inc_single_writer(tracked.bytes);
  if (d->records_send != nullptr) d->records_send->inc_single_writer();
  dispatch(*d, std::move(tracked), std::move(message));
  return absl::OkStatus();
}

void PubSubWriterCore::dispatch(Destination& d, Tracked tracked,
                                google::pubsub::v1::PubsubMessage&& message) {
  gate_.acquire(tracked.bytes);
  ++d.in_flight;
  const std::uint64_t token = tracked.sequence;
  const bool solo = tracked.solo;
  in_flight_.emplace(token, std::move(tracked));
  if (solo) {
    d.publisher->publish_solo(std::move(message), token);
  } else {
    d.publisher->publish(std::move(message), token);
  }
}

void PubSubWriterCore::park(Destination& d, Tracked tracked, ParkReason reason,
                            absl::Status status) {
  if (tracked.message && !tracked.message->ordering_key().empty()) {
    d.paused_keys.insert(tracked.message->ordering_key());
  }
  d.parked.push_back({std::move(tracked), reason, std::move(status)});
  parked_count_.fetch_add(1);
}

void PubSubWriterCore::on_complete(PublishOutcome outcome) {
  auto found = in_flight_.find(outcome.token);
  if (found == in_flight_.end()) return;  // not ours (already settled)
  Tracked tracked = std::move(found->second);
  in_flight_.erase(found);
  gate_.release(tracked.bytes);
  Destination& d = *tracked.destination;
  --d.in_flight;
  if (tracked.solo) {
    solo_results_[tracked.sequence] = {outcome.message_id.status(), std::move(outcome.message)};
    return;
  }
  if (outcome.message_id.ok()) {
    router_.on_success();
    return;
  }
  const absl::Status status = outcome.message_id.status();
  tracked.message = std::move(outcome.message);
  if (IsOrderingKeyPaused(status)) {
    // A cascade of an earlier failure of the same key: never a root cause, never counted.
    park(d, std::move(tracked), ParkReason::kCascade, status);
    return;
  }
  connector::ClassifierRules rules;
  rules.not_found_is_repairable = config_.create_disposition == CreateDisposition::kCreateIfNeeded;
  switch (connector::Classify(status, rules)) {
    case connector::FailureClass::kRepairable:
      router_.count_error_class(absl::StatusCode::kNotFound);
      park(d, std::move(tracked), ParkReason::kNotFound, status);
      return;
    case connector::FailureClass::kRecordLevel:
      // Publish is a batch RPC: the whole batch got this status. Only a solo republish can
      // tell which message the service refuses.
      park(d, std::move(tracked), ParkReason::kRejectedInBatch, status);
      return;
    default:
      break;
  }
  router_.count_error_class(status.code());
  if (d.send_errors != nullptr) d.send_errors->inc();
  if (status.code() == absl::StatusCode::kNotFound) {
    capture(absl::NotFoundError(
        fmt::format("Pub/Sub topic {} does not exist and create_disposition is CREATE_NEVER ({})",
                    d.topic.resource_name(), status.message())));
    return;
  }
  capture(absl::Status(status.code(), fmt::format("publishing to {} failed: {}",
                                                  d.topic.resource_name(), status.message())));
}

absl::Status PubSubWriterCore::drain(std::string_view wait) { return gate_.drain(wait); }

absl::Status PubSubWriterCore::repair_all() {
  repairing_ = true;
  absl::Status status;
  for (bool again = true; again && status.ok();) {
    again = false;
    std::vector<connector::TopicDestination> topics;
    for (const auto& [t, d] : destinations_) {
      if (!d.parked.empty()) topics.push_back(t);
    }
    for (const auto& t : topics) {
      status = repair(t);
      if (!status.ok()) break;
      again = true;
    }
  }
  repairing_ = false;
  GCP_RETURN_IF_ERROR(status);
  return captured_;
}

absl::Status PubSubWriterCore::ensure_topic(const connector::TopicDestination& topic) {
  GCP_ASSIGN_OR_RETURN(std::shared_ptr<TopicAdmin> admin, config_.admin_factory());
  auto result = std::make_shared<std::optional<absl::StatusOr<bool>>>();
  std::weak_ptr<bool> alive = alive_;
  MailboxExecutor* mailbox = &context_.mailbox_executor();
  admin->async_create_topic(topic, config_.topic_create_options,
                            [result, mailbox](absl::StatusOr<bool> created) {
                              mailbox->execute(
                                  [result, created = std::move(created)]() mutable {
                                    *result = std::move(created);
                                    return absl::OkStatus();
                                  },
                                  "pubsub topic created");
                            });
  // The admin client has its own deadline; this wait is outside the publish progress budget.
  GCP_RETURN_IF_ERROR(context_.mailbox_executor().yield_until([&] { return result->has_value(); }));
  const absl::StatusOr<bool>& created = **result;
  if (!created.ok()) return created.status();
  topics_created_.inc();
  if (*created) {
    spdlog::info("Pub/Sub sink: created topic {}", topic.resource_name());
  }
  return absl::OkStatus();
}

absl::StatusOr<PubSubWriterCore::SoloResult> PubSubWriterCore::publish_solo_and_wait(
    Destination& d, Tracked tracked, google::pubsub::v1::PubsubMessage&& message) {
  tracked.solo = true;
  const std::uint64_t sequence = tracked.sequence;
  dispatch(d, std::move(tracked), std::move(message));
  GCP_RETURN_IF_ERROR(
      gate_.await("isolating a rejected batch", [&] { return solo_results_.count(sequence) > 0; }));
  SoloResult result = std::move(solo_results_[sequence]);
  solo_results_.erase(sequence);
  return result;
}

absl::Status PubSubWriterCore::repair(const connector::TopicDestination& topic) {
  connector::RecoveryBackoff backoff(config_.options.recovery);
  bool created = false;
  int routed = 0;
  while (true) {
    // Drain the writer to empty first: the repair republishes without re-checking the caps.
    for (auto& [t, d] : destinations_) d.publisher->flush();
    GCP_RETURN_IF_ERROR(drain("draining before a repair"));
    GCP_RETURN_IF_ERROR(captured_);
    auto it = destinations_.find(topic);
    if (it == destinations_.end() || it->second.parked.empty()) return absl::OkStatus();
    Destination& d = it->second;
    std::vector<Parked> batch = std::move(d.parked);
    d.parked.clear();
    parked_count_.fetch_sub(static_cast<std::int64_t>(batch.size()));
    // Publish order, not the order the failures were observed in (a cascade can be reported
    // before the failure that caused it).
    std::sort(batch.begin(), batch.end(), [](const Parked& a, const Parked& b) {
      return a.tracked.sequence < b.tracked.sequence;
    });
    const bool not_found = std::any_of(batch.begin(), batch.end(), [](const Parked& p) {
      return p.reason == ParkReason::kNotFound;
    });
    if (not_found) {
      absl::Status s = ensure_topic(topic);
      if (!s.ok()) {
        // A failed creation spends an attempt of the same budget.
        for (auto& p : batch) park(d, std::move(p.tracked), p.reason, p.status);
        auto delay = backoff.next();
        if (!delay) {
          return absl::Status(
              s.code(),
              fmt::format("Pub/Sub sink: could not create topic {} within the recovery budget "
                          "(recovery_max_attempts {}): {}",
                          topic.resource_name(), config_.options.recovery.max_attempts,
                          s.message()));
        }
        GCP_RETURN_IF_ERROR(connector::SleepYielding(context_.mailbox_executor(), *delay));
        continue;
      }
      created = true;
    }
    for (const auto& key : d.paused_keys) d.publisher->resume_publish(key);
    d.paused_keys.clear();
    for (auto& p : batch) {
      if (!p.tracked.message) {
        return absl::InternalError("a parked Pub/Sub message was not handed back by its publisher");
      }
      google::pubsub::v1::PubsubMessage message = std::move(*p.tracked.message);
      p.tracked.message.reset();
      p.tracked.solo = false;
      if (p.reason != ParkReason::kRejectedInBatch) {
        dispatch(d, std::move(p.tracked), std::move(message));
        continue;
      }
      // The isolation pass: this message alone, one round trip at a time.
      d.publisher->flush();
      Tracked again = p.tracked;
      GCP_ASSIGN_OR_RETURN(SoloResult solo,
                           publish_solo_and_wait(d, std::move(p.tracked), std::move(message)));
      if (solo.status.ok()) {
        router_.on_success();
        continue;
      }
      const absl::Status& verdict = solo.status;
      google::pubsub::v1::PubsubMessage returned =
          solo.message.value_or(google::pubsub::v1::PubsubMessage());
      connector::ClassifierRules rules;
      rules.not_found_is_repairable =
          config_.create_disposition == CreateDisposition::kCreateIfNeeded;
      const auto cls = connector::Classify(verdict, rules);
      if (cls == connector::FailureClass::kRecordLevel) {
        ++routed;
        if (d.send_errors != nullptr) d.send_errors->inc();
        GCP_RETURN_IF_ERROR(router_.route_rejection(
            FailedMessage(topic, returned, verdict, /*service_rejection=*/true)));
        // A rejected keyed message pauses its key again: hand it back before the next one.
        if (!returned.ordering_key().empty()) d.publisher->resume_publish(returned.ordering_key());
        continue;
      }
      again.solo = false;
      again.message = std::move(returned);
      if (cls == connector::FailureClass::kRepairable) {
        router_.count_error_class(absl::StatusCode::kNotFound);
        park(d, std::move(again), ParkReason::kNotFound, verdict);
        continue;
      }
      if (IsOrderingKeyPaused(verdict)) {
        park(d, std::move(again), ParkReason::kCascade, verdict);
        continue;
      }
      router_.count_error_class(verdict.code());
      return absl::Status(verdict.code(), fmt::format("publishing to {} failed: {}",
                                                      topic.resource_name(), verdict.message()));
    }
    d.publisher->flush();
    GCP_RETURN_IF_ERROR(drain("republishing parked messages"));
    GCP_RETURN_IF_ERROR(captured_);
    auto again = destinations_.find(topic);
    if (again == destinations_.end() || again->second.parked.empty()) return absl::OkStatus();
    auto delay = backoff.next();
    if (!delay) {
      return absl::UnavailableError(fmt::format(
          "Pub/Sub sink: could not drain {} parked messages for {} within the recovery budget "
          "(recovery_max_attempts {}){}{}",
          again->second.parked.size(), topic.resource_name(), config_.options.recovery.max_attempts,
          created ? "; the topic was created by this repair" : "",
          routed > 0 ? fmt::format("; {} messages were handed to the failure handler", routed)
                     : std::string()));
    }
    GCP_RETURN_IF_ERROR(connector::SleepYielding(context_.mailbox_executor(), *delay));
  }
}

absl::Status PubSubWriterCore::route_serialization_failure(const connector::TopicDestination& topic,
                                                           absl::Status status) {
  return router_.route_serialization_failure(
      FailedMessage(topic, std::nullopt, std::move(status), /*service_rejection=*/false));
}

absl::Status PubSubWriterCore::flush(bool end_of_input) {
  GCP_RETURN_IF_ERROR(captured_);
  for (auto& [t, d] : destinations_) d.publisher->flush();
  GCP_RETURN_IF_ERROR(
      drain(end_of_input ? "flushing at end of input" : "flushing for a checkpoint"));
  GCP_RETURN_IF_ERROR(repair_all());
  GCP_RETURN_IF_ERROR(captured_);
  // The failure handler's queue is flushed after the sink's own writes drained.
  GCP_RETURN_IF_ERROR(router_.flush());
  if (!end_of_input) GCP_RETURN_IF_ERROR(release_idle());
  return absl::OkStatus();
}

absl::Status PubSubWriterCore::release(const std::vector<connector::TopicDestination>& topics) {
  std::vector<connector::ShutdownTask> tasks;
  for (const auto& t : topics) {
    auto it = destinations_.find(t);
    if (it == destinations_.end()) continue;
    std::shared_ptr<Publisher> publisher = it->second.publisher;
    tasks.push_back({fmt::format("publisher for {} ({})", t.resource_name(), context_.task_name()),
                     [publisher] { return publisher->shutdown(); }});
    if (last_destination_ == &it->second) {
      last_topic_ = nullptr;
      last_destination_ = nullptr;
    }
    destinations_.erase(it);
  }
  if (tasks.empty()) return absl::OkStatus();
  auto result = connector::BoundedShutdown(std::move(tasks), config_.options.shutdown_timeout,
                                           kAbandonedCounter);
  if (!result.abandoned.empty()) {
    return absl::DeadlineExceededError(fmt::format(
        "Pub/Sub sink: releasing {} did not finish within shutdown_timeout ({} ms); failing "
        "rather than opening a replacement beside it",
        result.abandoned.front(), config_.options.shutdown_timeout.count()));
  }
  return result.error;
}

absl::Status PubSubWriterCore::release_idle() {
  // last_used is refreshed here, once per flush, rather than per record.
  const auto now = std::chrono::steady_clock::now();
  std::vector<connector::TopicDestination> idle;
  for (auto& [t, d] : destinations_) {
    if (d.used_since_flush) {
      d.last_used = now;
      d.used_since_flush = false;
    }
    if (clean(d) && now - d.last_used > config_.options.destination_idle_timeout) idle.push_back(t);
  }
  return release(idle);
}

absl::Status PubSubWriterCore::close() {
  std::vector<connector::ShutdownTask> tasks;
  for (auto& [t, d] : destinations_) {
    std::shared_ptr<Publisher> publisher = d.publisher;
    tasks.push_back({fmt::format("publisher for {} ({})", t.resource_name(), context_.task_name()),
                     [publisher] { return publisher->shutdown(); }});
  }
  destinations_.clear();
  last_topic_ = nullptr;
  last_destination_ = nullptr;
  absl::Status status;
  if (!tasks.empty()) {
    auto result = connector::BoundedShutdown(std::move(tasks), config_.options.shutdown_timeout,
                                             kAbandonedCounter);
    status = result.error;
  }
  // Publishers abandoned by the shutdown may still report: they find nobody listening.
  completions_->detach();
  *alive_ = false;
  in_flight_.clear();
  status.Update(router_.close());
  return status;
}

}  // namespace gcpstream::pubsub
