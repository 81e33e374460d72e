#include "gcpstream/bigtable/changestream/change_stream_enumerator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "gcpstream/api/status_macros.h"
#include "gcpstream/bigtable/changestream/change_stream_events.h"
#include "gcpstream/bigtable/client/bigtable_stub.h"

namespace gcpstream::bigtable {

namespace v2 = google::bigtable::v2;

bool CallCanceller::enter(grpc::ClientContext& context) {
  std::lock_guard lock(mu_);
  if (cancelled_) return false;
  context_ = &context;
  return true;
}

void CallCanceller::leave() {
  std::lock_guard lock(mu_);
  context_ = nullptr;
}

void CallCanceller::cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
  if (context_ != nullptr) context_->TryCancel();
  cv_.notify_all();
}

bool CallCanceller::sleep(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  return !cv_.wait_for(lock, d, [&] { return cancelled_; });
}

namespace {

// Runs `call` with a context `canceller` can cancel.
template <typename Call>
grpc::Status Cancellable(CallCanceller* canceller, Call call) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  if (canceller != nullptr && !canceller->enter(context)) {
    return grpc::Status(grpc::StatusCode::CANCELLED, "the source is closing");
  }
  grpc::Status status = call(context);
  if (canceller != nullptr) canceller->leave();
  return status;
}

bool TransientAtStart(absl::StatusCode code) {
  return code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kDeadlineExceeded ||
         code == absl::StatusCode::kResourceExhausted || code == absl::StatusCode::kAborted ||
         code == absl::StatusCode::kInternal;
}

// Tries `fn` up to 5 times while it fails with a transient code (0.2, 0.5, 1 and 2 s apart).
template <typename T, typename Fn>
absl::StatusOr<T> WithRetries(CallCanceller& canceller, Fn fn) {
  constexpr std::chrono::milliseconds kWaits[] = {
      std::chrono::milliseconds(200), std::chrono::milliseconds(500),
      std::chrono::milliseconds(1000), std::chrono::milliseconds(2000)};
  absl::StatusOr<T> result = fn();
  for (auto wait : kWaits) {
    if (result.ok() || !TransientAtStart(result.status().code())) break;
    spdlog::warn("BigtableChangeStreamSource: {}; trying again in {} ms", result.status().message(),
                 wait.count());
    if (!canceller.sleep(wait)) break;
    result = fn();
  }
  return result;
}

}  // namespace

absl::StatusOr<absl::Duration> ReadChangeStreamRetention(
    google::bigtable::admin::v2::BigtableTableAdmin::StubInterface& admin,
    const std::string& table_name, CallCanceller* canceller) {
  google::bigtable::admin::v2::GetTableRequest request;
  request.set_name(table_name);
  request.set_view(google::bigtable::admin::v2::Table::FULL);
  google::bigtable::admin::v2::Table table;
  grpc::Status status = Cancellable(canceller, [&](grpc::ClientContext& context) {
    return admin.GetTable(&context, request, &table);
  });
  if (!status.ok()) {
    absl::Status s = FromGrpc(status);
    return absl::Status(s.code(),
                        "BigtableChangeStreamSource: reading the change stream "
                        "configuration of " +
                            table_name + " failed: " + std::string(s.message()));
  }
  if (!table.has_change_stream_config()) {
    return absl::FailedPreconditionError(
        "BigtableChangeStreamSource: change streams are not "
        "enabled on " +
        table_name);
  }
  const auto& d = table.change_stream_config().retention_period();
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

absl::StatusOr<std::vector<RowKeyRange>> ListChangeStreamPartitions(
    v2::Bigtable::StubInterface& stub, const std::string& table_name,
    const std::string& app_profile_id, CallCanceller* canceller) {
  v2::GenerateInitialChangeStreamPartitionsRequest request;
  request.set_table_name(table_name);
  request.set_app_profile_id(app_profile_id);
  std::vector<RowKeyRange> out;
  grpc::Status status = Cancellable(canceller, [&](grpc::ClientContext& context) {
    auto reader = stub.GenerateInitialChangeStreamPartitions(&context, request);
    v2::GenerateInitialChangeStreamPartitionsResponse response;
    while (reader->Read(&response)) out.push_back(PartitionFromProto(response.partition()));
    return reader->Finish();
  });
  if (!status.ok()) {
    absl::Status s = FromGrpc(status);
    return absl::Status(s.code(),
                        "BigtableChangeStreamSource: listing the change stream "
                        "partitions of " +
                            table_name + " failed: " + std::string(s.message()));
  }
  if (out.empty()) {
    return absl::FailedPreconditionError("BigtableChangeStreamSource: " + table_name +
                                         " reported no change stream partitions");
  }
  return out;
}

BigtableChangeStreamEnumerator::BigtableChangeStreamEnumerator(
    SplitEnumeratorContext<BigtableChangeStreamSplit>& context, BigtableStubFactory stubs,
    BigtableAdminStubFactory admin, ChangeStreamRequestBase request,
    BigtableChangeStreamOptions options, std::optional<BigtableChangeStreamEnumState> restored,
    Clock now)
    : context_(context),
      stubs_(std::move(stubs)),
      admin_(std::move(admin)),
      request_(std::move(request)),
      options_(std::move(options)),
      now_(now ? std::move(now) : Clock([] { return absl::Now(); })),
      restored_(restored && restored->started) {
  if (restored_) ledger_ = ChangeStreamLedger(*std::move(restored));
  MetricGroup& m = context_.metric_group();
  assigned_ = &m.counter("splitsAssigned");
  returned_ = &m.counter("splitsReturned");
  discovered_ = &m.counter("changeStreamPartitionsDiscovered");
  splits_ = &m.counter("changeStreamPartitionSplits");
  merges_ = &m.counter("changeStreamPartitionMerges");
  auto g = gauges_;
  m.gauge("unassignedSplits", [g] { return g->unassigned.load(); });
  m.gauge("unassignedChangeStreamPartitionLagMillis", [g] {
    const double oldest = g->oldest_unassigned_ms.load();
    if (oldest <= 0) return 0.0;
    return static_cast<double>(absl::ToUnixMillis(absl::Now())) - oldest;
  });
}

absl::Status BigtableChangeStreamEnumerator::start() {
  context_.template call_async<absl::StatusOr<Metadata>>(
      [stubs = stubs_, admin = admin_, request = request_, fresh = !restored_,
       canceller = canceller_]() -> absl::StatusOr<Metadata> {
        Metadata out;
        GCP_ASSIGN_OR_RETURN(auto admin_stub, admin());
        GCP_ASSIGN_OR_RETURN(out.retention, WithRetries<absl::Duration>(*canceller, [&] {
                               return ReadChangeStreamRetention(*admin_stub, request.table_name,
                                                                canceller.get());
                             }));
        if (fresh) {
          GCP_ASSIGN_OR_RETURN(auto stub, stubs());
          GCP_ASSIGN_OR_RETURN(
              out.partitions, WithRetries<std::vector<RowKeyRange>>(*canceller, [&] {
                return ListChangeStreamPartitions(*stub, request.table_name, request.app_profile_id,
                                                  canceller.get());
              }));
        }
        return out;
      },
      [this](absl::StatusOr<Metadata> metadata) { on_metadata(std::move(metadata)); });
  return absl::OkStatus();
}

void BigtableChangeStreamEnumerator::on_metadata(absl::StatusOr<Metadata> metadata) {
  if (!metadata.ok()) {
    context_.fail_job(metadata.status());
    return;
  }
  retention_ = metadata->retention;
  if (!restored_) {
    const absl::Time start = options_.start_position.resolve(now_());
    if (options_.end_time && *options_.end_time < start) {
      context_.fail_job(absl::InvalidArgumentError(fmt::format(
          "BigtableChangeStreamSource: end_time {} is before the start position {} ({}): there "
          "is nothing to read",
          absl::FormatTime(absl::RFC3339_full, *options_.end_time, absl::UTCTimeZone()),
          absl::FormatTime(absl::RFC3339_full, start, absl::UTCTimeZone()),
          options_.start_position.describe())));
      return;
    }
    spdlog::info(
        "BigtableChangeStreamSource: {} has {} change stream partitions and a retention of {}; "
        "reading from {} ({})",
        request_.table_name, metadata->partitions.size(), absl::FormatDuration(*retention_),
        absl::FormatTime(absl::RFC3339_full, start, absl::UTCTimeZone()),
        options_.start_position.describe());
    ledger_.start_fresh(metadata->partitions, start);
    discovered_->inc(static_cast<std::int64_t>(metadata->partitions.size()));
  }
  started_ = true;
  maybe_release();
}

bool BigtableChangeStreamEnumerator::check_retention(std::set<std::string>& drop) {
  // One minute of margin: a position that close to the edge may expire before its stream opens.
  const absl::Time now = now_();
  const absl::Time cutoff = now - *retention_ + absl::Minutes(1);
  auto oldest = ledger_.oldest_position();
  if (!oldest || oldest->second >= cutoff) return true;
  const std::string where = fmt::format(
      "partition {} was checkpointed at {}, outside the change stream retention of {} of {}",
      FormatRowRange(oldest->first),
      absl::FormatTime(absl::RFC3339_full, oldest->second, absl::UTCTimeZone()),
      absl::FormatDuration(*retention_), request_.table_name);
  if (!options_.resume_fallback) {
    context_.fail_job(absl::FailedPreconditionError(fmt::format(
        "BigtableChangeStreamSource: cannot restore: {} (the changes since are no longer "
        "kept). Set resume_fallback to restart expired partitions without their tokens, "
        "accepting the gap",
        where)));
    return false;
  }
  const absl::Time restart = options_.resume_fallback->resolve(now);
  const std::set<std::string> replaced = ledger_.restart_expired(cutoff, restart);
  drop.insert(replaced.begin(), replaced.end());
  spdlog::warn(
      "BigtableChangeStreamSource: {}; resume_fallback ({}) restarts every expired partition "
      "and handed-over token at {} without its token: the changes before are not read",
      where, options_.resume_fallback->describe(),
      absl::FormatTime(absl::RFC3339_full, restart, absl::UTCTimeZone()));
  return true;
}

absl::Status BigtableChangeStreamEnumerator::add_reader(int) { return absl::OkStatus(); }

void BigtableChangeStreamEnumerator::maybe_release() {
  if (released_ || !started_ || !retention_) return;
  if (static_cast<int>(hello_.size()) < context_.current_parallelism()) return;
  std::map<std::string, std::pair<int, BigtableChangeStreamSplit>> held;
  for (const auto& [subtask, splits] : hello_) {
    for (const auto& split : splits) held[split.id] = {subtask, split};
  }
  std::set<std::string> drop = ledger_.reconcile(held);
  if (!drop.empty()) {
    spdlog::info(
        "BigtableChangeStreamSource: {} restored partition reads closed before the "
        "coordinator's checkpoint; their successors are read instead",
        drop.size());
  }
  if (restored_ && !options_.end_time) {
    if (auto gap = ledger_.first_gap()) {
      context_.fail_job(absl::DataLossError(fmt::format(
          "BigtableChangeStreamSource: the checkpointed partitions do not cover the key space "
          "exactly (around {}): corrupt state, refusing to leave changes unread",
          FormatRowRange(*gap))));
      return;
    }
  }
  if (restored_ && !check_retention(drop)) return;
  released_ = true;
  for (const auto& [subtask, splits] : hello_) {
    auto release = std::make_shared<BigtableChangeStreamRelease>();
    for (const auto& split : splits) {
      if (drop.count(split.id) > 0) release->drop.insert(split.id);
    }
    context_.send_event_to_source_reader(subtask, release);
  }
  serve();
  maybe_finish();
}

absl::Status BigtableChangeStreamEnumerator::handle_split_request(int) {
  serve();  // readers do not ask: every partition is assigned as soon as it is ready
  return absl::OkStatus();
}

void BigtableChangeStreamEnumerator::serve() {
  if (!released_) return;
  // Every ready partition goes at once to the reader holding the fewest: a reader queues what
  // exceeds its stream slots and rotates through them, so nothing waits here for a free slot.
  std::map<int, int> load;
  for (const auto& [subtask, held] : hello_) load[subtask] = ledger_.held_by(subtask);
  while (!load.empty() && ledger_.ready() > 0) {
    auto least = std::min_element(load.begin(), load.end(),
                                  [](const auto& a, const auto& b) { return a.second < b.second; });
    auto split = ledger_.take_ready(least->first);
    if (!split) break;
    ++least->second;
    assigned_->inc();
    context_.assign_split(least->first, *std::move(split));
  }
  update_gauges();
}

void BigtableChangeStreamEnumerator::maybe_finish() {
  if (finished_ || !released_ || !options_.end_time || !ledger_.done()) return;
  finished_ = true;
  spdlog::info("BigtableChangeStreamSource: every partition of {} reached the end time",
               request_.table_name);
  for (int subtask : context_.registered_readers()) context_.signal_no_more_splits(subtask);
}

absl::Status BigtableChangeStreamEnumerator::add_splits_back(
    std::vector<BigtableChangeStreamSplit> splits, int subtask) {
  std::vector<std::string> ids;
  for (const auto& split : splits) ids.push_back(split.id);
  returned_->inc(static_cast<std::int64_t>(ids.size()));
  hello_.erase(subtask);  // until it says hello again
  ledger_.return_assigned(ids);
  serve();
  return absl::OkStatus();
}

absl::Status BigtableChangeStreamEnumerator::handle_source_event(
    int subtask, std::shared_ptr<const SourceEvent> event) {
  if (auto* hello = dynamic_cast<const BigtableChangeStreamHello*>(event.get())) {
    hello_[subtask] = hello->held;
    if (released_) {
      // A reader that started again on its own after the release.
      auto release = std::make_shared<BigtableChangeStreamRelease>();
      context_.send_event_to_source_reader(subtask, release);
      if (finished_) context_.signal_no_more_splits(subtask);
      serve();
    }
    maybe_release();
  } else if (auto* progress = dynamic_cast<const BigtableChangeStreamProgress*>(event.get())) {
    ledger_.on_progress(progress->split_id, progress->tokens, progress->low_watermark);
  } else if (auto* closed = dynamic_cast<const BigtableChangeStreamClosed*>(event.get())) {
    auto released = ledger_.on_close(closed->split_id, closed->close);
    if (!released.ok()) {
      context_.fail_job(released.status());
      return absl::OkStatus();
    }
    splits_->inc(released->splits);
    merges_->inc(released->merges);
    discovered_->inc(released->splits + released->merges);
    // A successor goes to the reader whose partition just closed: it has the slot free now. (Sent
    // elsewhere it would wait for a rotation there, and under frequent topology changes it could
    // be stale again by its turn, over and over.)
    if (released_ && hello_.count(subtask) > 0) {
      for (const auto& id : released->ids) {
        if (auto split = ledger_.take(id, subtask)) {
          assigned_->inc();
          context_.assign_split(subtask, *std::move(split));
        }
      }
    }
    serve();
    maybe_finish();
  }
  return absl::OkStatus();
}

absl::Status BigtableChangeStreamEnumerator::close() {
  canceller_->cancel();
  return absl::OkStatus();
}

void BigtableChangeStreamEnumerator::update_gauges() {
  gauges_->unassigned.store(static_cast<double>(ledger_.ready()));
  auto oldest = ledger_.oldest_ready();
  gauges_->oldest_unassigned_ms.store(oldest ? static_cast<double>(absl::ToUnixMillis(*oldest))
                                             : 0.0);
}

absl::StatusOr<BigtableChangeStreamEnumState> BigtableChangeStreamEnumerator::snapshot_state(
    std::int64_t) {
  // A restored ledger stays the restored one even before the metadata came back.
  return ledger_.state(started_ || restored_);
}

}  // namespace gcpstream::bigtable
