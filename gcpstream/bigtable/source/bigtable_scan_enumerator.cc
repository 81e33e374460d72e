#include "gcpstream/bigtable/source/bigtable_scan_enumerator.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gcpstream/bigtable/client/bigtable_stub.h"

namespace gcpstream::bigtable {

namespace v2 = google::bigtable::v2;

absl::StatusOr<std::vector<std::string>> SampleRowKeys(v2::Bigtable::StubInterface& stub,
                                                       const std::string& table_name,
                                                       const std::string& app_profile_id) {
  v2::SampleRowKeysRequest request;
  request.set_table_name(table_name);
  if (!app_profile_id.empty()) request.set_app_profile_id(app_profile_id);
  std::chrono::milliseconds backoff(100);
  absl::Status status;
  for (int attempt = 1; attempt <= 5; ++attempt) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    auto stream = stub.SampleRowKeys(&context, request);
    std::vector<std::string> keys;
    v2::SampleRowKeysResponse response;
    while (stream->Read(&response)) keys.push_back(response.row_key());
    status = FromGrpc(stream->Finish());
    if (status.ok()) return keys;
    const absl::StatusCode code = status.code();
    if (code != absl::StatusCode::kUnavailable && code != absl::StatusCode::kDeadlineExceeded &&
        code != absl::StatusCode::kAborted) {
      break;
    }
    std::this_thread::sleep_for(backoff);
    backoff *= 2;
  }
  return absl::Status(status.code(), absl::StrCat("BigtableSource: SampleRowKeys on ", table_name,
                                                  ": ", status.message()));
}

BigtableScanEnumerator::BigtableScanEnumerator(SplitEnumeratorContext<BigtableScanSplit>& context,
                                               BigtableStubFactory stubs, std::string table_name,
                                               std::string app_profile_id,
                                               std::vector<RowKeyRange> ranges,
                                               BigtableScanEnumState restored)
    : context_(context),
      stubs_(std::move(stubs)),
      table_name_(std::move(table_name)),
      app_profile_id_(std::move(app_profile_id)),
      ranges_(std::move(ranges)),
      state_(std::move(restored)),
      assigner_(context),
      samples_(&context.metric_group().counter("rowKeySamplesTaken")) {}

absl::Status BigtableScanEnumerator::start() {
  if (state_.planned) {
    if (!state_.ranges.empty() && state_.ranges != ranges_) {
      auto render = [](const std::vector<RowKeyRange>& ranges) {
        std::string out;
        for (const auto& r : ranges) out += (out.empty() ? "" : " ") + FormatRowRange(r);
        return out;
      };
      return absl::FailedPreconditionError(absl::StrCat(
          "BigtableSource: the restored scan was planned for the ranges ", render(state_.ranges),
          " of ", table_name_, ", but the source now reads ", render(ranges_),
          "; its restored splits would read the old ranges. Restore with the same ranges, or "
          "start the scan afresh without this state"));
    }
    spdlog::info("BigtableSource: restored; {} of {} split(s) of {} not yet assigned",
                 state_.unassigned.size(), state_.split_count, table_name_);
    on_planned(std::move(state_.unassigned));
    return absl::OkStatus();
  }
  auto stub = stubs_();
  if (!stub.ok()) return stub.status();
  samples_->inc();
  context_.call_async<absl::StatusOr<std::vector<BigtableScanSplit>>>(
      [stub = *std::move(stub), table = table_name_, profile = app_profile_id_,
       ranges = ranges_]() -> absl::StatusOr<std::vector<BigtableScanSplit>> {
        auto keys = SampleRowKeys(*stub, table, profile);
        if (!keys.ok()) return keys.status();
        return PlanScanSplits(ranges, *std::move(keys));
      },
      [this](absl::StatusOr<std::vector<BigtableScanSplit>> planned) {
        on_planned(std::move(planned));
      });
  return absl::OkStatus();
}

void BigtableScanEnumerator::on_planned(absl::StatusOr<std::vector<BigtableScanSplit>> planned) {
  if (!planned.ok()) {
    context_.fail_job(planned.status());
    return;
  }
  if (!state_.planned) {
    state_.planned = true;
    state_.split_count = static_cast<std::int64_t>(planned->size());
    spdlog::info("BigtableSource: {} split(s) of {} planned from its row-key samples",
                 planned->size(), table_name_);
    if (state_.split_count < context_.current_parallelism()) {
      spdlog::warn(
          "BigtableSource: {} split(s) for a parallelism of {}: Bigtable stores the table in "
          "that few sections, and the subtasks left without a split finish at once",
          state_.split_count, context_.current_parallelism());
    }
  }
  state_.unassigned.clear();
  assigner_.set_planned(*std::move(planned));
}

absl::Status BigtableScanEnumerator::handle_split_request(int subtask) {
  assigner_.handle_split_request(subtask);
  return absl::OkStatus();
}

absl::Status BigtableScanEnumerator::add_splits_back(std::vector<BigtableScanSplit> splits,
                                                     int subtask) {
  (void)subtask;
  assigner_.add_back(std::move(splits));
  return absl::OkStatus();
}

absl::Status BigtableScanEnumerator::add_reader(int subtask) {
  (void)subtask;
  return absl::OkStatus();
}

absl::StatusOr<BigtableScanEnumState> BigtableScanEnumerator::snapshot_state(std::int64_t) {
  BigtableScanEnumState out;
  out.planned = state_.planned;
  out.split_count = state_.split_count;
  out.unassigned = assigner_.unassigned();
  out.ranges = ranges_;
  return out;
}

}  // namespace gcpstream::bigtable
