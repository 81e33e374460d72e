#ifndef GCPSTREAM_CONNECTOR_ASYNC_SINK_WRITER_H_
#define GCPSTREAM_CONNECTOR_ASYNC_SINK_WRITER_H_

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "gcpstream/api/metrics.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/connector/async_sink_adapter.h"
#include "gcpstream/connector/bounded_shutdown.h"
#include "gcpstream/connector/failure_router.h"
#include "gcpstream/connector/in_flight_gate.h"
#include "gcpstream/connector/internal/outcome_queue.h"
#include "gcpstream/connector/recovery_backoff.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::connector {

// The asynchronous sink writer every sink is built on (Flink's AsyncSinkWriter is the model):
// it owns the mechanism and knows no service; an AsyncSinkAdapter supplies the service. D is
// the destination type (TopicDestination, TableDestination, ...), E the element the service
// client takes (a PubsubMessage, a MutateRowsRequest.Entry, ...).
//
// Everything runs on the writer's thread; outcomes reported on client threads come back as
// one mail per batch (internal/outcome_queue.h). What it does:
//  - destinations opened lazily, grouped by the channel they share; at max_active_groups the
//    least recently used clean group is released (everything is drained and repaired first if
//    none is clean); a destination idle past destination_idle_timeout is released after a
//    successful checkpoint flush, and its group's channel with its last destination;
//  - admission by count and bytes through InFlightGate, with mailbox backpressure (a write at
//    a cap first sends what the clients hold);
//  - a failure captured from an outcome is returned by the next write() / flush(), so none
//    slips past a barrier;
//  - a record-level status answering a batched request is only a candidate: the element is
//    parked and re-submitted alone (the isolation pass); only a solo rejection is routed;
//  - a repairable status (NOT_FOUND under a create disposition) parks the element, the adapter
//    repairs the destination, and the parked elements are re-submitted in write order under
//    the jittered recovery budget; ordering units paused by a failure are resumed first;
//  - an outage (transient or fatal status) never reaches the failure handler: it fails the job;
//  - flush() sends everything, waits for every outcome, repairs until nothing is parked, then
//    flushes the failure handler (a dead-letter queue);
//  - close() releases every client under one bounded deadline whatever they do.
// Metrics: numRecordsSend, numBytesSend, recordsSkipped, numRecordsSendErrors and
// errorClass.<CODE>.errors (FailureRouter), inFlight<X>, inFlightBytes, parked<X>,
// capacityEvictions, idleEvictions, the abandoned-shutdown gauge, and per destination
// destination.<scope>.recordsSend / sendErrors when asked.
template <typename D, typename E>
class AsyncSinkWriter {
 public:
  using Adapter = AsyncSinkAdapter<D, E>;

  AsyncSinkWriter(AsyncSinkWriterSettings settings, std::unique_ptr<Adapter> adapter,
                  std::shared_ptr<FailureHandler> handler, WriterInitContext& context)
      : settings_(std::move(settings)),
        adapter_(std::move(adapter)),
        context_(context),
        metrics_(context.metric_group()),
        gate_(settings_.max_in_flight_count, settings_.max_in_flight_bytes, settings_.progress,
              context.mailbox_executor()),
        router_(settings_.words.metric_connector, std::move(handler),
                settings_.max_consecutive_rejections, context.metric_group()),
        records_send_(metrics_.counter(metric_names::kNumRecordsSend)),
        bytes_send_(metrics_.counter(metric_names::kNumBytesSend)),
        records_skipped_(metrics_.counter(metric_names::kRecordsSkipped)),
        capacity_evictions_(metrics_.counter("capacityEvictions")),
        idle_evictions_(metrics_.counter("idleEvictions")),
        outcomes_(std::make_shared<internal::OutcomeQueue<E>>(
            &context.mailbox_executor(), alive_,
            [this](SinkOutcome<E>&& o) { on_complete(std::move(o)); })) {
    const std::string& noun = settings_.words.element_metric;
    // Elements a client holds in a retry backoff are in flight for the caps, but reported as
    // parked, not in flight.
    metrics_.gauge("inFlight" + noun, [this] {
      const std::int64_t in_clients = settings_.client_parked ? settings_.client_parked() : 0;
      return static_cast<double>(std::max<std::int64_t>(0, gate_.count() - in_clients));
    });
    metrics_.gauge("inFlightBytes", [this] { return static_cast<double>(gate_.bytes()); });
    metrics_.gauge("parked" + noun, [this] {
      const std::int64_t in_clients = settings_.client_parked ? settings_.client_parked() : 0;
      return static_cast<double>(parked_count_.load() + in_clients);
    });
    metrics_.gauge(settings_.abandoned_counter, [name = settings_.abandoned_counter] {
      return static_cast<double>(ProcessCounter(name).get());
    });
    if (!settings_.active_groups_gauge.empty()) {
      metrics_.gauge(settings_.active_groups_gauge,
                     [this] { return static_cast<double>(active_groups_.load()); });
    }
    // The stall warning names what it waits on: the destinations with work in flight, the
    // busiest first (at most three), and the call that carries it.
    gate_.set_stall_detail([this] {
      std::vector<std::pair<int, const Destination*>> busy;
      for (const auto& [key, d] : destinations_) {
        if (d.in_flight > 0) busy.emplace_back(d.in_flight, &d);
      }
      std::sort(busy.begin(), busy.end(),
                [](const auto& a, const auto& b) { return a.first > b.first; });
      std::string out =
          fmt::format("{} {}", destinations_.size(), settings_.words.live_destinations);
      for (std::size_t i = 0; i < busy.size() && i < 3; ++i) {
        out += fmt::format("{} {} {} to {} {}", i == 0 ? "; pending:" : ",", busy[i].first,
                           busy[i].first == 1 ? settings_.words.element : settings_.words.elements,
                           settings_.words.destination, adapter_->describe(busy[i].second->key));
      }
      if (busy.size() > 3) out += fmt::format(" and {} more", busy.size() - 3);
      if (!busy.empty() && !settings_.words.request.empty()) {
        out += fmt::format(" (awaiting {} responses)", settings_.words.request);
      }
      return out;
    });
  }

  ~AsyncSinkWriter() {
    *alive_ = false;
    outcomes_->detach();
  }

  AsyncSinkWriter(const AsyncSinkWriter&) = delete;
  AsyncSinkWriter& operator=(const AsyncSinkWriter&) = delete;

  // Opens the failure handler (a dead-letter queue opens its own clients here).
  absl::Status open() {
    DeadLetterQueueContext dlq;
    dlq.subtask_index = context_.subtask_index();
    dlq.parallelism = context_.parallelism();
    dlq.metric_group = &metrics_;
    dlq.mailbox_executor = &context_.mailbox_executor();
    GCP_RETURN_IF_ERROR(router_.open(dlq));
    if (settings_.flush_interval.count() > 0) schedule_periodic_flush();
    return absl::OkStatus();
  }

  // Before every record: a captured failure, then any pending repair or isolation pass.
  absl::Status before_record() {
    GCP_RETURN_IF_ERROR(captured_);
    if (parked_count_.load() > 0 && !repairing_) GCP_RETURN_IF_ERROR(repair_all());
    return captured_;
  }

  // Sends one element to `destination`, waiting at the in-flight caps.
  absl::Status write(const D& destination, E&& element) {
    if (absl::Status s = adapter_->precheck(destination, element); !s.ok()) {
      if (adapter_->classify(s) != FailureClass::kRecordLevel) return s;
      // Refused before any RPC: a failure of the record, not a service rejection.
      return router_.route_serialization_failure(
          *adapter_->failed_element(destination, std::move(element), std::move(s), false));
    }
    Tracked tracked;
    tracked.sequence = next_sequence_++;
    tracked.bytes = adapter_->size_of(element);
    GCP_RETURN_IF_ERROR(gate_.admit("admitting a record", [this] { flush_clients(); }));
    GCP_ASSIGN_OR_RETURN(Destination * d, find_or_open(destination));
    tracked.destination = d;
    records_send_.inc_single_writer();
    bytes_send_.inc_single_writer(tracked.bytes);
    if (d->records_send != nullptr) d->records_send->inc_single_writer();
    dispatch(*d, std::move(tracked), std::move(element));
    return absl::OkStatus();
  }

  // A record the serializer rejected (or threw on): routed, never counted as a rejection.
  absl::Status route_serialization_failure(const D& destination, absl::Status status) {
    return router_.route_serialization_failure(
        *adapter_->failed_element(destination, std::nullopt, std::move(status), false));
  }
  // A record the serializer skipped (returned nothing).
  void record_skipped() { records_skipped_.inc_single_writer(); }

  absl::Status flush(bool end_of_input) {
    GCP_RETURN_IF_ERROR(captured_);
    flush_clients();
    GCP_RETURN_IF_ERROR(
        gate_.drain(end_of_input ? "flushing at end of input" : "flushing for a checkpoint"));
    GCP_RETURN_IF_ERROR(repair_all());
    GCP_RETURN_IF_ERROR(captured_);
    // The failure handler's own queue is flushed after the sink's writes drained.
    GCP_RETURN_IF_ERROR(router_.flush());
    if (!end_of_input) GCP_RETURN_IF_ERROR(release_idle());
    return absl::OkStatus();
  }

  // Releases every client under one bounded deadline, whatever their shutdown does; failures
  // the writer already acted on are not reported again.
  absl::Status close() {
    if (flush_timer_) flush_timer_->cancel();
    flush_timer_.reset();
    std::vector<ShutdownTask> tasks;
    for (auto& [key, d] : destinations_) tasks.push_back(shutdown_task(d));
    destinations_.clear();
    last_key_ = nullptr;
    last_destination_ = nullptr;
    std::map<std::string, Group> groups = std::move(groups_);
    groups_.clear();
    active_groups_.store(0);
    if (!tasks.empty()) {
      auto result = BoundedShutdown(std::move(tasks), settings_.shutdown_timeout,
                                    settings_.abandoned_counter);
      if (!result.error.ok()) {
        spdlog::info("{} sink: at close: {}", settings_.words.connector, result.error);
      }
    }
    absl::Status status;
    for (const auto& [name, g] : groups) status.Update(adapter_->release_group(name));
    // Clients abandoned by the shutdown may still report: they find nobody listening.
    outcomes_->detach();
    *alive_ = false;
    in_flight_.clear();
    status.Update(router_.close());
    return status;
  }

  // For tests, gauges and adapters.
  std::int64_t in_flight_count() const { return gate_.count(); }
  std::int64_t in_flight_bytes() const { return gate_.bytes(); }
  std::int64_t parked_count() const { return parked_count_.load(); }
  std::size_t live_destinations() const { return destinations_.size(); }
  MailboxExecutor& mailbox() { return context_.mailbox_executor(); }
  MetricGroup& metrics() { return metrics_; }
  const AsyncSinkWriterSettings& settings() const { return settings_; }

 private:
  // kRejectedAlone: a record-level refusal of a request that carried this element only
  // (settings.one_element_per_request), routed without the isolation pass's resend.
  enum class ParkReason { kRepairable, kCascade, kRejectedInBatch, kRejectedAlone };
  struct Destination;
  // One accepted element, kept until its outcome (and while parked). Destinations have stable
  // addresses (node_hash_map) and are released only when clean, so the pointer stays valid.
  struct Tracked {
    std::uint64_t sequence = 0;
    Destination* destination = nullptr;
    std::int64_t bytes = 0;
    bool solo = false;
    std::optional<E> element;  // with the client while in flight; handed back on failure
  };
  struct Parked {
    Tracked tracked;
    ParkReason reason;
    absl::Status status;
    // kRejectedAlone: counted toward max_consecutive_rejections when it arrived; the bound's
    // error when that count reached it (the job fails once this element is routed).
    absl::Status bound;
  };
  struct SoloResult {
    absl::Status status;
    std::optional<E> element;
  };
  struct Destination {
    D key;
    std::string group;
    std::shared_ptr<DestinationClient<E>> client;
    SteadyTime last_used;
    bool used_since_flush = false;
    int in_flight = 0;
    std::vector<Parked> parked;
    Counter* records_send = nullptr;
    Counter* send_errors = nullptr;
  };
  struct Group {
    int destinations = 0;
    SteadyTime last_used;
    bool used_since_flush = false;
  };

  // flush_interval: sends what the clients batched, then schedules the next one.
  void schedule_periodic_flush() {
    std::weak_ptr<bool> alive = alive_;
    flush_timer_ = context_.processing_time_service().register_timer(
        context_.processing_time_service().now() + settings_.flush_interval,
        [this, alive]() -> absl::Status {
          auto live = alive.lock();
          if (!live || !*live || !flush_timer_) return absl::OkStatus();  // closed meanwhile
          flush_clients();
          schedule_periodic_flush();
          return absl::OkStatus();
        });
  }

  bool clean(const Destination& d) const {
    return d.in_flight == 0 && d.parked.empty() && adapter_->releasable(d.key);
  }

  void flush_clients() {
    for (auto& [key, d] : destinations_) d.client->flush();
  }

  void capture(absl::Status status) {
    if (captured_.ok()) captured_ = std::move(status);
  }

  ShutdownTask shutdown_task(const Destination& d) {
    std::shared_ptr<DestinationClient<E>> client = d.client;
    return {fmt::format("{} for {} ({})", settings_.words.client, adapter_->describe(d.key),
                        context_.task_name()),
            [client] { return client->shutdown(); }};
  }

  absl::StatusOr<Destination*> find_or_open(const D& key) {
    if (last_key_ != nullptr && *last_key_ == key) return last_destination_;
    auto it = destinations_.find(key);
    if (it == destinations_.end()) {
      GCP_ASSIGN_OR_RETURN(it, open_destination(key));
    }
    Destination& d = it->second;
    d.used_since_flush = true;
    groups_[d.group].used_since_flush = true;
    last_key_ = &it->first;
    last_destination_ = &d;
    return &d;
  }

  using DestinationMap = absl::node_hash_map<D, Destination>;

  absl::StatusOr<typename DestinationMap::iterator> open_destination(const D& key) {
    std::string group = adapter_->group_of(key);
    if (groups_.count(group) == 0 &&
        static_cast<int>(groups_.size()) >= settings_.max_active_groups) {
      GCP_RETURN_IF_ERROR(make_room());
    }
    GCP_ASSIGN_OR_RETURN(std::shared_ptr<DestinationClient<E>> client,
                         adapter_->open(key, outcomes_));
    const auto now = std::chrono::steady_clock::now();
    Destination d;
    d.key = key;
    d.group = group;
    d.client = std::move(client);
    d.last_used = now;
    if (settings_.per_destination_metrics) {
      auto& scope = metrics_.add_group("destination").add_group(adapter_->metric_scope(key));
      d.records_send = &scope.counter("recordsSend");
      d.send_errors = &scope.counter("sendErrors");
    }
    auto [g, inserted] = groups_.try_emplace(group);
    if (inserted) g->second.last_used = now;
    ++g->second.destinations;
    active_groups_.store(static_cast<std::int64_t>(groups_.size()));
    auto it = destinations_.emplace(key, std::move(d)).first;
    GCP_RETURN_IF_ERROR(adapter_->check(key));
    return it;
  }

  // Releases the least recently used group whose destinations are all clean; when none is,
  // sends and waits for everything first. Work is never discarded to make room.
  absl::Status make_room() {
    auto pick = [&]() -> std::optional<std::string> {
      const auto now = std::chrono::steady_clock::now();
      std::map<std::string, bool> busy;
      for (const auto& [key, d] : destinations_) busy[d.group] |= !clean(d);
      std::optional<std::string> best;
      SteadyTime oldest = SteadyTime::max();
      for (auto& [name, g] : groups_) {
        if (g.used_since_flush) g.last_used = now;  // refreshed lazily (see release_idle)
        if (!busy[name] && g.last_used < oldest) {
          oldest = g.last_used;
          best = name;
        }
      }
      return best;
    };
    auto victim = pick();
    if (!victim) {
      flush_clients();
      GCP_RETURN_IF_ERROR(gate_.drain(
          fmt::format("releasing a {} at the cap of active clients", settings_.words.client)));
      GCP_RETURN_IF_ERROR(repair_all());
      victim = pick();
    }
    if (!victim) return absl::OkStatus();
    capacity_evictions_.inc();
    return release_group(*victim);
  }

  absl::Status release_group(const std::string& group) {
    std::vector<D> keys;
    for (const auto& [key, d] : destinations_) {
      if (d.group == group) keys.push_back(key);
    }
    GCP_RETURN_IF_ERROR(release(keys));
    if (groups_.count(group) > 0) {
      groups_.erase(group);
      active_groups_.store(static_cast<std::int64_t>(groups_.size()));
      return adapter_->release_group(group);
    }
    return absl::OkStatus();
  }

  // Shuts the destinations' clients down under one deadline; a group left without
  // destinations keeps its entry until the caller releases it.
  absl::Status release(const std::vector<D>& keys) {
    std::vector<ShutdownTask> tasks;
    for (const auto& key : keys) {
      auto it = destinations_.find(key);
      if (it == destinations_.end()) continue;
      tasks.push_back(shutdown_task(it->second));
      --groups_[it->second.group].destinations;
      if (last_destination_ == &it->second) {
        last_key_ = nullptr;
        last_destination_ = nullptr;
      }
      destinations_.erase(it);
    }
    if (tasks.empty()) return absl::OkStatus();
    auto result =
        BoundedShutdown(std::move(tasks), settings_.shutdown_timeout, settings_.abandoned_counter);
    if (!result.abandoned.empty()) {
      return absl::DeadlineExceededError(fmt::format(
          "{} sink: releasing {} did not finish within the shutdown timeout ({} ms); failing "
          "rather than opening a replacement beside it",
          settings_.words.connector, result.abandoned.front(), settings_.shutdown_timeout.count()));
    }
    return result.error;
  }

  // After a successful checkpoint flush: destinations unused past the idle timeout go, and a
  // group's channel with its last destination. last_used is refreshed here, once per flush.
  absl::Status release_idle() {
    const auto now = std::chrono::steady_clock::now();
    for (auto& [name, g] : groups_) {
      if (g.used_since_flush) {
        g.last_used = now;
        g.used_since_flush = false;
      }
    }
    std::vector<D> idle;
    for (auto& [key, d] : destinations_) {
      if (d.used_since_flush) {
        d.last_used = now;
        d.used_since_flush = false;
      }
      if (clean(d) && now - d.last_used > settings_.destination_idle_timeout) idle.push_back(key);
    }
    GCP_RETURN_IF_ERROR(release(idle));
    std::vector<std::string> empty;
    for (const auto& [name, g] : groups_) {
      if (g.destinations <= 0) empty.push_back(name);
    }
    for (const auto& name : empty) {
      idle_evictions_.inc();
      groups_.erase(name);
      active_groups_.store(static_cast<std::int64_t>(groups_.size()));
      GCP_RETURN_IF_ERROR(adapter_->release_group(name));
    }
    return absl::OkStatus();
  }

  void dispatch(Destination& d, Tracked tracked, E&& element) {
    gate_.acquire(tracked.bytes);
    ++d.in_flight;
    const std::uint64_t token = tracked.sequence;
    const bool solo = tracked.solo;
    in_flight_.emplace(token, std::move(tracked));
    if (solo) {
      d.client->submit_solo(std::move(element), token);
    } else {
      d.client->submit(std::move(element), token);
    }
  }

  void park(Destination& d, Tracked tracked, ParkReason reason, absl::Status status,
            absl::Status bound = absl::OkStatus()) {
    if (tracked.element) d.client->on_parked(*tracked.element);
    d.parked.push_back({std::move(tracked), reason, std::move(status), std::move(bound)});
    parked_count_.fetch_add(1);
  }

  void on_complete(SinkOutcome<E>&& outcome) {
    auto found = in_flight_.find(outcome.token);
    if (found == in_flight_.end()) return;  // not ours (already settled)
    Tracked tracked = std::move(found->second);
    in_flight_.erase(found);
    gate_.release(tracked.bytes);
    Destination& d = *tracked.destination;
    --d.in_flight;
    if (tracked.solo) {
      solo_results_[tracked.sequence] = {std::move(outcome.status), std::move(outcome.element)};
      return;
    }
    if (outcome.status.ok()) {
      router_.on_success();
      return;
    }
    const absl::Status& status = outcome.status;
    tracked.element = std::move(outcome.element);
    if (adapter_->is_cascade(status)) {
      park(d, std::move(tracked), ParkReason::kCascade, status);
      return;
    }
    switch (adapter_->classify(status)) {
      case FailureClass::kRepairable:
        // Every element genuinely failed (on the missing resource, say): counted per element.
        router_.count_error_class(adapter_->repair_error_class(status));
        park(d, std::move(tracked), ParkReason::kRepairable, status);
        return;
      case FailureClass::kRecordLevel:
        if (settings_.one_element_per_request) {
          // The service's verdict on this element alone: routed later, in write order, but
          // counted now, in the order verdicts and successes arrive.
          absl::Status bound = router_.count_rejection(status);
          park(d, std::move(tracked), ParkReason::kRejectedAlone, status, std::move(bound));
          return;
        }
        // A batch RPC may be refused whole for one element: confirm each alone first.
        park(d, std::move(tracked), ParkReason::kRejectedInBatch, status);
        return;
      default:
        break;
    }
    router_.count_error_class(status.code());
    if (d.send_errors != nullptr) d.send_errors->inc();
    capture(adapter_->fatal_failure(d.key, status));
  }

  absl::Status repair_all() {
    repairing_ = true;
    absl::Status status;
    for (bool again = true; again && status.ok();) {
      again = false;
      std::vector<D> keys;
      for (const auto& [key, d] : destinations_) {
        if (!d.parked.empty()) keys.push_back(key);
      }
      for (const auto& key : keys) {
        status = repair(key);
        if (!status.ok()) break;
        again = true;
      }
    }
    repairing_ = false;
    GCP_RETURN_IF_ERROR(status);
    return captured_;
  }

  absl::StatusOr<SoloResult> submit_solo_and_wait(Destination& d, Tracked tracked, E&& element) {
    tracked.solo = true;
    const std::uint64_t sequence = tracked.sequence;
    dispatch(d, std::move(tracked), std::move(element));
    GCP_RETURN_IF_ERROR(gate_.await("isolating a rejected request",
                                    [&] { return solo_results_.count(sequence) > 0; }));
    SoloResult result = std::move(solo_results_[sequence]);
    solo_results_.erase(sequence);
    return result;
  }

  // The isolation pass for one parked element: alone, one round trip. Returns whether it was
  // routed; re-parks it when the solo answer is repairable or a cascade; fails on anything else.
  absl::StatusOr<bool> isolate(Destination& d, Parked p, E&& element) {
    d.client->flush();
    Tracked again = p.tracked;
    GCP_ASSIGN_OR_RETURN(SoloResult solo,
                         submit_solo_and_wait(d, std::move(p.tracked), std::move(element)));
    if (solo.status.ok()) {
      router_.on_success();
      return false;
    }
    const absl::Status& verdict = solo.status;
    const FailureClass cls = adapter_->classify(verdict);
    if (cls == FailureClass::kRecordLevel) {
      if (d.send_errors != nullptr) d.send_errors->inc();
      // A rejected element of an ordering unit pauses it again: resume before the next one.
      if (solo.element) d.client->on_routed(*solo.element);
      GCP_RETURN_IF_ERROR(router_.route_rejection(
          *adapter_->failed_element(d.key, std::move(solo.element), verdict, true)));
      return true;
    }
    again.solo = false;
    again.element = std::move(solo.element);
    if (cls == FailureClass::kRepairable) {
      router_.count_error_class(adapter_->repair_error_class(verdict));
      park(d, std::move(again), ParkReason::kRepairable, verdict);
      return false;
    }
    if (adapter_->is_cascade(verdict)) {
      park(d, std::move(again), ParkReason::kCascade, verdict);
      return false;
    }
    router_.count_error_class(verdict.code());
    return adapter_->fatal_failure(d.key, verdict);
  }

  // A refusal the service made about this element alone, counted when it arrived: routed as
  // confirmed, then the job fails if that count reached max_consecutive_rejections.
  absl::Status route_alone(Destination& d, E&& element, const absl::Status& status,
                           const absl::Status& bound) {
    if (d.send_errors != nullptr) d.send_errors->inc();
    d.client->on_routed(element);
    GCP_RETURN_IF_ERROR(router_.route_counted_rejection(
        *adapter_->failed_element(d.key, std::move(element), status, true)));
    return bound;
  }

  // Routes the destination's parked kRejectedAlone elements, in write order; returns how many.
  absl::StatusOr<int> route_rejected_alone(const D& key) {
    auto it = destinations_.find(key);
    if (it == destinations_.end()) return 0;
    Destination& d = it->second;
    std::vector<Parked> alone;
    auto keep = std::stable_partition(d.parked.begin(), d.parked.end(), [](const Parked& p) {
      return p.reason != ParkReason::kRejectedAlone;
    });
    std::move(keep, d.parked.end(), std::back_inserter(alone));
    d.parked.erase(keep, d.parked.end());
    parked_count_.fetch_sub(static_cast<std::int64_t>(alone.size()));
    std::sort(alone.begin(), alone.end(), [](const Parked& a, const Parked& b) {
      return a.tracked.sequence < b.tracked.sequence;
    });
    int routed = 0;
    for (auto& p : alone) {
      if (!p.tracked.element) {
        return absl::InternalError(fmt::format("a parked {} {} was not handed back by its {}",
                                               settings_.words.connector, settings_.words.element,
                                               settings_.words.client));
      }
      GCP_RETURN_IF_ERROR(route_alone(d, std::move(*p.tracked.element), p.status, p.bound));
      ++routed;
    }
    return routed;
  }

  absl::Status repair(const D& key) {
    const SinkVocabulary& w = settings_.words;
    RecoveryBackoff backoff(settings_.recovery);
    bool created = false;
    int routed = 0;
    while (true) {
      // Refusals of one-element requests need no drain, repair or resend: route them now.
      GCP_ASSIGN_OR_RETURN(const int alone, route_rejected_alone(key));
      routed += alone;
      if (auto it = destinations_.find(key);
          it == destinations_.end() || it->second.parked.empty()) {
        return captured_;
      }
      // Drain to empty first: re-submission does not re-check the caps.
      flush_clients();
      GCP_RETURN_IF_ERROR(gate_.drain("draining before a repair"));
      GCP_RETURN_IF_ERROR(captured_);
      auto it = destinations_.find(key);
      if (it == destinations_.end() || it->second.parked.empty()) return absl::OkStatus();
      Destination& d = it->second;
      std::vector<Parked> batch = std::move(d.parked);
      d.parked.clear();
      parked_count_.fetch_sub(static_cast<std::int64_t>(batch.size()));
      // Write order, not the order the failures were observed in (a cascade can be reported
      // before the failure that caused it).
      std::sort(batch.begin(), batch.end(), [](const Parked& a, const Parked& b) {
        return a.tracked.sequence < b.tracked.sequence;
      });
      const bool missing = std::any_of(batch.begin(), batch.end(), [](const Parked& p) {
        return p.reason == ParkReason::kRepairable;
      });
      if (missing) {
        std::vector<const E*> elements;
        for (const auto& p : batch) {
          if (p.tracked.element) elements.push_back(&*p.tracked.element);
        }
        RepairResult r = adapter_->repair(key, elements);
        created |= r.created;
        if (!r.status.ok() && r.permanent) return r.status;
        if (!r.status.ok()) {
          // A failed repair spends an attempt of the same budget.
          for (auto& p : batch) park(d, std::move(p.tracked), p.reason, p.status);
          auto delay = backoff.next();
          if (!delay) {
            return absl::Status(
                r.status.code(),
                fmt::format("{} sink: could not create or repair {} within the recovery budget "
                            "(recovery_max_attempts {}): {}",
                            w.connector, adapter_->describe(key), settings_.recovery.max_attempts,
                            r.status.message()));
          }
          GCP_RETURN_IF_ERROR(SleepYielding(context_.mailbox_executor(), *delay));
          continue;
        }
      }
      d.client->resume_parked();
      for (auto& p : batch) {
        if (!p.tracked.element) {
          return absl::InternalError(fmt::format("a parked {} {} was not handed back by its {}",
                                                 w.connector, w.element, w.client));
        }
        E element = std::move(*p.tracked.element);
        p.tracked.element.reset();
        p.tracked.solo = false;
        if (p.reason == ParkReason::kRejectedAlone) {
          GCP_RETURN_IF_ERROR(route_alone(d, std::move(element), p.status, p.bound));
          ++routed;
          continue;
        }
        if (p.reason != ParkReason::kRejectedInBatch) {
          dispatch(d, std::move(p.tracked), std::move(element));
          continue;
        }
        GCP_ASSIGN_OR_RETURN(bool was_routed, isolate(d, std::move(p), std::move(element)));
        routed += was_routed ? 1 : 0;
      }
      d.client->flush();
      GCP_RETURN_IF_ERROR(gate_.drain(fmt::format("re-sending parked {}", w.elements)));
      GCP_RETURN_IF_ERROR(captured_);
      if (d.parked.empty()) return absl::OkStatus();
      const absl::Status last_cause = d.parked.front().status;
      auto delay = backoff.next();
      if (!delay) {
        return absl::Status(
            last_cause.ok() ? absl::StatusCode::kUnavailable : last_cause.code(),
            fmt::format("{} sink: {} {} for {} still failed after the recovery budget "
                        "(recovery_max_attempts {}){}{}; last cause: {}",
                        w.connector, d.parked.size(), w.elements, adapter_->describe(key),
                        settings_.recovery.max_attempts,
                        created ? "; the destination was created by this repair" : "",
                        routed > 0
                            ? fmt::format("; {} {} went to the failure handler", routed, w.elements)
                            : std::string(),
                        last_cause.message()));
      }
      GCP_RETURN_IF_ERROR(SleepYielding(context_.mailbox_executor(), *delay));
    }
  }

  // Outcomes hold this weakly: a mail arriving after close() does nothing. Declared first:
  // members below capture it while being constructed.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  AsyncSinkWriterSettings settings_;
  std::unique_ptr<Adapter> adapter_;
  WriterInitContext& context_;
  MetricGroup& metrics_;
  InFlightGate gate_;
  FailureRouter router_;
  Counter& records_send_;
  Counter& bytes_send_;
  Counter& records_skipped_;
  Counter& capacity_evictions_;
  Counter& idle_evictions_;
  // flush_interval's timer; a queued timer mail does nothing once *alive_ is false.
  std::shared_ptr<ProcessingTimeService::Timer> flush_timer_;
  DestinationMap destinations_;
  std::map<std::string, Group> groups_;
  absl::flat_hash_map<std::uint64_t, Tracked> in_flight_;
  std::map<std::uint64_t, SoloResult> solo_results_;
  std::shared_ptr<internal::OutcomeQueue<E>> outcomes_;
  // The destination of the previous record (most sinks write one): skips the map lookup.
  const D* last_key_ = nullptr;
  Destination* last_destination_ = nullptr;
  absl::Status captured_;
  std::uint64_t next_sequence_ = 0;
  std::atomic<std::int64_t> parked_count_{0};
  std::atomic<std::int64_t> active_groups_{0};
  bool repairing_ = false;
};

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_ASYNC_SINK_WRITER_H_
