#include "gcpstream/spanner/changestream/change_stream_enumerator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <limits>

#include "gcpstream/api/status_macros.h"
#include "gcpstream/spanner/changestream/change_stream_events.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::spanner {

using State = ChangeStreamLedgerEntry::State;

ChangeStreamEnumerator::ChangeStreamEnumerator(
    SplitEnumeratorContext<ChangeStreamPartitionSplit>& context, SpannerReadClientFactory clients,
    std::string stream, SpannerChangeStreamOptions options,
    std::optional<ChangeStreamEnumState> restored, Clock now)
    : context_(context),
      clients_(std::move(clients)),
      stream_(std::move(stream)),
      options_(std::move(options)),
      restored_(restored.has_value() && restored->started),
      now_(now ? std::move(now) : Clock([] { return absl::Now(); })),
      emitted_watermark_ms_(restored ? restored->emitted_watermark_ms
                                     : std::numeric_limits<std::int64_t>::min()) {
  if (restored_) ledger_ = ChangeStreamLedger(std::move(restored->entries));
  MetricGroup& m = context_.metric_group();
  assigned_ = &m.counter("splitsAssigned");
  auto g = gauges_;
  m.gauge("changeStreamPartitionLedgerSize", [g] { return g->ledger.load(); });
  m.gauge("unassignedChangeStreamPartitions", [g] { return g->unassigned.load(); });
  m.gauge("waitingChangeStreamPartitions", [g] { return g->waiting.load(); });
  m.gauge("finishedParentProofs", [g] { return g->proofs.load(); });
  m.gauge("unassignedPartitionLagMs", [g] {
    const double oldest = g->oldest_unassigned_ms.load();
    if (oldest <= 0) return 0.0;
    return static_cast<double>(absl::ToUnixMillis(absl::Now())) - oldest;
  });
}

ChangeStreamEnumerator::~ChangeStreamEnumerator() = default;

absl::Status ChangeStreamEnumerator::start() {
  context_.template call_async<absl::StatusOr<ChangeStreamMetadata>>(
      [clients = clients_, stream = stream_,
       absent = options_.absent_retention_fallback]() -> absl::StatusOr<ChangeStreamMetadata> {
        GCP_ASSIGN_OR_RETURN(std::shared_ptr<SpannerReadClient> client, clients());
        return ReadChangeStreamMetadata(client->data(), stream, absent);
      },
      [this](absl::StatusOr<ChangeStreamMetadata> metadata) { on_metadata(std::move(metadata)); });
  return absl::OkStatus();
}

void ChangeStreamEnumerator::on_metadata(absl::StatusOr<ChangeStreamMetadata> metadata) {
  if (!metadata.ok()) {
    context_.fail_job(metadata.status());
    return;
  }
  metadata_ = *std::move(metadata);
  const auto& f = options_.filters;
  spdlog::info(
      "SpannerChangeStreamSource: change stream {}: {}; table include {}, table exclude {}, "
      "column include {}, column exclude {}, skip_messages_without_change {}",
      stream_, metadata_->describe(), f.table_include, f.table_exclude, f.column_include,
      f.column_exclude, f.skip_messages_without_change);
  if (!metadata_->explicit_column_tables.empty()) {
    spdlog::warn(
        "SpannerChangeStreamSource: change stream {} watches an explicit column list of {}: "
        "columns added to those tables later are not watched until the change stream is "
        "altered",
        stream_, metadata_->explicit_column_tables);
  }
  if (!restored_) {
    const absl::Time start = options_.start_position.resolve(now_());
    spdlog::info("SpannerChangeStreamSource: change stream {} starts at {} ({})", stream_,
                 FormatTimestamp(start), options_.start_position.describe());
    ledger_.start_fresh(start);
  }
  maybe_release();
  update_gauges();
}

absl::Status ChangeStreamEnumerator::add_reader(int subtask) {
  (void)subtask;  // a reader announces itself with ChangeStreamReaderHello
  return absl::OkStatus();
}

void ChangeStreamEnumerator::maybe_release() {
  if (released_ || !metadata_) return;
  if (static_cast<int>(hello_.size()) < context_.current_parallelism()) return;
  std::map<std::string, std::pair<int, ChangeStreamPartitionSplit>> held;
  for (const auto& [subtask, splits] : hello_) {
    for (const auto& split : splits) held[split.split_id()] = {subtask, split};
  }
  ledger_.reconcile(held);
  if (restored_) {
    // With the readers' own (newer) positions in: the oldest place any query would open at.
    const absl::Time now = now_();
    if (auto oldest = ledger_.low_watermark()) {
      absl::Status within = CheckWithinRetention(*oldest, now, *metadata_);
      if (!within.ok()) {
        if (!options_.resume_fallback) {
          context_.fail_job(within);
          return;
        }
        const absl::Time restart = options_.resume_fallback->resolve(now);
        spdlog::warn(
            "SpannerChangeStreamSource: {} resume_fallback ({}) discards the restored partitions "
            "and starts over at {}: the changes between are not read",
            within.message(), options_.resume_fallback->describe(), FormatTimestamp(restart));
        ledger_.start_fresh(restart);
        discard_held_ = true;
      }
    } else {
      ledger_.start_fresh(options_.start_position.resolve(now));
    }
  }
  released_ = true;
  auto release = std::make_shared<ChangeStreamRelease>();
  release->discard_held = discard_held_;
  release->dialect = metadata_->dialect;
  for (const auto& [subtask, splits] : hello_)
    context_.send_event_to_source_reader(subtask, release);
  serve();
  broadcast_watermark();
}

absl::Status ChangeStreamEnumerator::handle_split_request(int subtask) {
  ++requests_[subtask];
  serve();
  return absl::OkStatus();
}

void ChangeStreamEnumerator::serve() {
  if (!released_) return;
  bool assigned = true;
  while (assigned) {
    assigned = false;
    for (auto& [subtask, wanted] : requests_) {
      if (wanted <= 0) continue;
      auto split = ledger_.take_ready(subtask);
      if (!split) {
        update_gauges();
        return;
      }
      --wanted;
      assigned_->inc();
      context_.assign_split(subtask, *std::move(split));
      assigned = true;
    }
  }
  update_gauges();
}

absl::Status ChangeStreamEnumerator::add_splits_back(std::vector<ChangeStreamPartitionSplit> splits,
                                                     int subtask) {
  // A reader failed alone: what it held since the last checkpoint is ready again.
  std::vector<std::string> ids;
  for (const auto& split : splits) ids.push_back(split.split_id());
  requests_.erase(subtask);
  ledger_.return_assigned(ids);
  serve();
  return absl::OkStatus();
}

absl::Status ChangeStreamEnumerator::handle_source_event(int subtask,
                                                         std::shared_ptr<const SourceEvent> event) {
  if (auto* hello = dynamic_cast<const ChangeStreamReaderHello*>(event.get())) {
    hello_[subtask] = hello->held;
    if (released_) {
      // A reader that started again after the release (its subtask restarted alone).
      auto release = std::make_shared<ChangeStreamRelease>();
      release->dialect = metadata_->dialect;
      release->discard_held = discard_held_;
      context_.send_event_to_source_reader(subtask, release);
    }
    maybe_release();
  } else if (auto* children = dynamic_cast<const ChangeStreamChildrenReported*>(event.get())) {
    ledger_.on_children(children->split_id, children->record);
    serve();
  } else if (auto* progress = dynamic_cast<const ChangeStreamProgress*>(event.get())) {
    ledger_.on_progress(progress->split_id, progress->position);
    broadcast_watermark();
  } else if (auto* finished = dynamic_cast<const ChangeStreamPartitionFinished*>(event.get())) {
    ledger_.on_finished(finished->split_id);
    serve();
    broadcast_watermark();
  }
  return absl::OkStatus();
}

void ChangeStreamEnumerator::broadcast_watermark() {
  if (!released_) return;
  auto low = ledger_.low_watermark();
  if (!low) return;
  // A later nanosecond can share the millisecond, so the watermark stays 1 ms below it.
  const std::int64_t wm = absl::ToUnixMillis(*low) - 1;
  if (wm <= emitted_watermark_ms_) return;
  emitted_watermark_ms_ = wm;
  auto event = std::make_shared<ChangeStreamWatermark>();
  event->watermark_ms = wm;
  for (int subtask : context_.registered_readers()) {
    context_.send_event_to_source_reader(subtask, event);
  }
}

void ChangeStreamEnumerator::update_gauges() {
  gauges_->ledger.store(static_cast<double>(ledger_.unfinished()));
  gauges_->unassigned.store(static_cast<double>(ledger_.count(State::kReady)));
  gauges_->waiting.store(static_cast<double>(ledger_.count(State::kWaiting)));
  gauges_->proofs.store(static_cast<double>(ledger_.count(State::kFinished)));
  auto oldest = ledger_.oldest_ready();
  gauges_->oldest_unassigned_ms.store(oldest ? static_cast<double>(absl::ToUnixMillis(*oldest))
                                             : 0.0);
}

absl::StatusOr<ChangeStreamEnumState> ChangeStreamEnumerator::snapshot_state(std::int64_t) {
  ChangeStreamEnumState state;
  if (!metadata_ && restored_) {
    // Not checked yet: keep the restored ledger as it was.
    state.started = true;
  } else {
    state.started = metadata_.has_value();
  }
  state.entries = ledger_.entries();
  state.emitted_watermark_ms = emitted_watermark_ms_;
  return state;
}

}  // namespace gcpstream::spanner
