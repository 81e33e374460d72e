#include "gcpstream/bigtable/staged/staged_committer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gcpstream/bigtable/client/bigtable_stub.h"
#include "gcpstream/bigtable/client/row_mutation_entry.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::bigtable {

namespace v2 = google::bigtable::v2;
namespace admin = google::bigtable::admin::v2;

namespace {

// "projects/p/instances/i/tables/t" -> "projects/p/instances/i".
std::string InstanceOf(const std::string& table_name) {
  const auto at = table_name.find("/tables/");
  return at == std::string::npos ? table_name : table_name.substr(0, at);
}

// Worth sending the same request again within the commit.
bool Retryable(absl::StatusCode code) {
  return code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kDeadlineExceeded ||
         code == absl::StatusCode::kAborted;
}

bool Ambiguous(absl::StatusCode code) {
  return code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kDeadlineExceeded ||
         code == absl::StatusCode::kAborted || code == absl::StatusCode::kUnknown ||
         code == absl::StatusCode::kInternal || code == absl::StatusCode::kCancelled ||
         code == absl::StatusCode::kResourceExhausted;
}

}  // namespace

StagedTargetValidator MakeStagedTargetValidator(
    std::shared_ptr<admin::BigtableTableAdmin::StubInterface> tables,
    std::shared_ptr<admin::BigtableInstanceAdmin::StubInterface> instances,
    std::string marker_family, bool emulator) {
  return [tables = std::move(tables), instances = std::move(instances),
          family = std::move(marker_family),
          emulator](const std::string& table_name, const std::string& profile) -> absl::Status {
    admin::GetTableRequest get;
    get.set_name(table_name);
    get.set_view(admin::Table::SCHEMA_VIEW);
    admin::Table table;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    absl::Status read = FromGrpc(tables->GetTable(&ctx, get, &table));
    if (!read.ok()) {
      return absl::Status(
          read.code(), fmt::format("staged Bigtable sink: reading the schema of {}: {}", table_name,
                                   read.message()));
    }
    auto it = table.column_families().find(family);
    if (it == table.column_families().end()) {
      return absl::FailedPreconditionError(fmt::format(
          "staged Bigtable sink: {} has no column family '{}' for replay markers; create it as "
          "a raw family without a GC rule before the job writes",
          table_name, family));
    }
    if (it->second.has_gc_rule() &&
        it->second.gc_rule().rule_case() != admin::GcRule::RULE_NOT_SET) {
      return absl::FailedPreconditionError(fmt::format(
          "staged Bigtable sink: the marker family '{}' of {} has a GC rule; garbage-collected "
          "markers would let a replay apply an envelope twice. Use a family without one",
          family, table_name));
    }
    if (it->second.has_value_type()) {
      return absl::FailedPreconditionError(fmt::format(
          "staged Bigtable sink: the marker family '{}' of {} has a value type; markers need a "
          "raw family",
          family, table_name));
    }
    if (profile.empty()) {
      return absl::FailedPreconditionError(
          "staged Bigtable sink: an app profile with single-cluster routing and transactional "
          "writes is required");
    }
    admin::GetAppProfileRequest get_profile;
    get_profile.set_name(InstanceOf(table_name) + "/appProfiles/" + profile);
    admin::AppProfile app_profile;
    grpc::ClientContext pctx;
    pctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    absl::Status got = FromGrpc(instances->GetAppProfile(&pctx, get_profile, &app_profile));
    if (got.code() == absl::StatusCode::kUnimplemented && emulator) {
      spdlog::warn(
          "staged Bigtable sink: the emulator serves no app profiles; '{}' is not checked for "
          "single-cluster routing with transactional writes",
          profile);
      return absl::OkStatus();
    }
    if (!got.ok()) {
      return absl::Status(got.code(),
                          fmt::format("staged Bigtable sink: reading app profile {}: {}",
                                      get_profile.name(), got.message()));
    }
    if (!app_profile.has_single_cluster_routing() ||
        !app_profile.single_cluster_routing().allow_transactional_writes()) {
      return absl::FailedPreconditionError(
          fmt::format("staged Bigtable sink: app profile {} must use single-cluster routing with "
                      "transactional writes allowed (CheckAndMutateRow needs them)",
                      get_profile.name()));
    }
    return absl::OkStatus();
  };
}

BigtableStagedCommitter::BigtableStagedCommitter(std::shared_ptr<BigtableDataStub> data,
                                                 StagedTargetValidator validator,
                                                 BigtableRequestOptions options,
                                                 MetricGroup& metrics)
    : data_(std::move(data)),
      validator_(std::move(validator)),
      options_(options),
      completed_(metrics.counter("requestsCompleted")),
      deduplicated_(metrics.counter("requestsDeduplicated")),
      failed_(metrics.counter("requestsFailed")),
      sent_(metrics.counter(metric_names::kNumRecordsSend)) {}

absl::Status BigtableStagedCommitter::commit(std::vector<CommitRequest<StagedBatch>>& requests) {
  bool failed = false;
  for (auto& request : requests) {
    if (failed) {
      // Not attempted after an earlier batch failed: kept, never reported as committed.
      request.retry_later();
      continue;
    }
    absl::Status status = send(request.committable());
    if (status.ok()) continue;
    failed = true;
    failed_.inc();
    if (Ambiguous(status.code())) {
      request.signal_failed_with_unknown_reason(status);
    } else {
      request.signal_failed_with_known_reason(status);
    }
  }
  return absl::OkStatus();
}

absl::Status BigtableStagedCommitter::send(const StagedBatch& batch) {
  std::vector<std::shared_ptr<const v2::CheckAndMutateRowRequest>> parsed;
  parsed.reserve(batch.requests.size());
  for (const std::string& bytes : batch.requests) {
    auto r = std::make_shared<v2::CheckAndMutateRowRequest>();
    if (!r->ParseFromString(bytes)) {
      return absl::DataLossError("staged Bigtable sink: a staged request does not parse");
    }
    auto target = std::make_pair(r->table_name(), r->app_profile_id());
    if (validated_.count(target) == 0) {
      absl::Status valid = validator_(target.first, target.second);
      if (!valid.ok()) return valid;
      validated_.insert(std::move(target));
    }
    parsed.push_back(std::move(r));
  }
  // A transient answer (UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED) is sent again, the same bytes,
  // after the round: its marker makes a repeat harmless whether or not it was applied. Only
  // when kStagedAttempts rounds did not land it does the commit fail.
  std::vector<std::shared_ptr<const v2::CheckAndMutateRowRequest>> round = std::move(parsed);
  std::chrono::milliseconds backoff(100);
  for (int attempt = 1;; ++attempt) {
    std::vector<std::shared_ptr<const v2::CheckAndMutateRowRequest>> again;
    absl::Status failure = send_round(round, attempt < kStagedAttempts ? &again : nullptr);
    if (!failure.ok()) return failure;
    if (again.empty()) return absl::OkStatus();
    spdlog::warn(
        "staged Bigtable sink: {} CheckAndMutateRow call(s) answered with a transient failure; "
        "sending the same requests again in {} ms (attempt {} of {})",
        again.size(), backoff.count(), attempt + 1, kStagedAttempts);
    std::this_thread::sleep_for(backoff);
    backoff *= 4;
    round = std::move(again);
  }
}

absl::Status BigtableStagedCommitter::send_round(
    const std::vector<std::shared_ptr<const v2::CheckAndMutateRowRequest>>& requests,
    std::vector<std::shared_ptr<const v2::CheckAndMutateRowRequest>>* again) {
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  absl::Status failure;
  std::uint64_t next_id = 0;
  std::map<std::uint64_t, std::function<void()>> cancels;
  std::set<std::uint64_t> answered_early;
  const int window = std::max(1, options_.max_in_flight_requests);
  for (const auto& r : requests) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return in_flight < window || !failure.ok(); });
    if (!failure.ok()) break;
    ++in_flight;
    const std::uint64_t id = next_id++;
    lock.unlock();
    auto cancel = data_->async_check_and_mutate_row(
        r, options_.request_timeout,
        [&, id, r](absl::StatusOr<v2::CheckAndMutateRowResponse> answer) {
          std::lock_guard guard(mu);
          if (cancels.erase(id) == 0) answered_early.insert(id);
          if (answer.ok()) {
            completed_.inc();
            if (answer->predicate_matched()) {
              deduplicated_.inc();
            } else {
              sent_.inc();
            }
          } else if (again != nullptr && Retryable(answer.status().code())) {
            again->push_back(r);
          } else if (failure.ok()) {
            failure = absl::Status(
                answer.status().code(),
                fmt::format("staged Bigtable sink: CheckAndMutateRow on {} row {} failed ({}); "
                            "whether it was applied is unknown, so the commit fails and a "
                            "restore of the checkpoint sends the same request again: {}",
                            r->table_name(), RowKeyForMessages(r->row_key()),
                            absl::StatusCodeToString(answer.status().code()),
                            answer.status().message()));
          }
          --in_flight;
          cv.notify_all();
        });
    lock.lock();
    // Kept only while the call may still run: an answer that came first left its id behind.
    if (answered_early.erase(id) == 0) cancels.emplace(id, std::move(cancel));
  }
  std::unique_lock lock(mu);
  if (!failure.ok()) {
    std::vector<std::function<void()>> outstanding;
    for (auto& [id, cancel] : cancels) outstanding.push_back(cancel);
    lock.unlock();
    for (auto& cancel : outstanding) cancel();
    lock.lock();
  }
  cv.wait(lock, [&] { return in_flight == 0; });
  return failure;
}

}  // namespace gcpstream::bigtable
