#include "gcpstream/bigtable/source/bigtable_scan_reader.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "gcpstream/bigtable/client/bigtable_stub.h"

namespace gcpstream::bigtable {

namespace v2 = google::bigtable::v2;

namespace {

bool Transient(absl::StatusCode code) {
  return code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kDeadlineExceeded ||
         code == absl::StatusCode::kAborted;
}

}  // namespace

BigtableScanReader::BigtableScanReader(BigtableStubFactory stubs, BigtableScanRequest request)
    : stubs_(std::move(stubs)),
      request_(std::move(request)),
      handoff_(static_cast<std::size_t>(std::max(1, request_.max_rows_per_fetch)),
               request_.max_bytes_per_fetch) {}

BigtableScanReader::~BigtableScanReader() { stop_stream(); }

absl::Status BigtableScanReader::handle_splits_addition(
    SplitsAddition<BigtableScanSplit> addition) {
  for (auto& split : addition.splits) pending_.push_back(std::move(split));
  return absl::OkStatus();
}

void BigtableScanReader::wake_up() { handoff_.wake_up(); }

bool BigtableScanReader::closing() const {
  std::lock_guard lock(mu_);
  return closing_;
}

void BigtableScanReader::read(const BigtableScanSplit& split) {
  RowKeyRange remaining = split.range;
  ReadRowsAssembler assembler;
  int failures = 0;
  std::chrono::milliseconds backoff = request_.initial_backoff;
  auto fail = [&](const absl::Status& status) {
    handoff_.finish(absl::Status(status.code(),
                                 absl::StrCat("BigtableSource: reading ", split.id, " ",
                                              FormatRowRange(remaining), ": ", status.message())));
  };
  while (true) {
    // Used up: finish without a call (an empty row set would read the whole table).
    if (IsEmptyRange(remaining)) {
      handoff_.finish(absl::OkStatus());
      return;
    }
    v2::ReadRowsRequest request;
    request.set_table_name(request_.table_name);
    if (!request_.app_profile_id.empty()) request.set_app_profile_id(request_.app_profile_id);
    *request.mutable_rows()->add_row_ranges() = ToRowRangeProto(remaining);
    if (request_.filter) *request.mutable_filter() = *request_.filter;

    grpc::ClientContext context;
    {
      std::lock_guard lock(mu_);
      if (closing_) {
        handoff_.finish(absl::CancelledError("the source reader is closing"));
        return;
      }
      call_ = &context;
    }
    auto stream = stub_->ReadRows(&context, request);
    v2::ReadRowsResponse response;
    bool progress = false;
    absl::Status consumed;
    const auto sink = [&](BigtableRow row) -> absl::Status {
      remaining = RangeAfter(remaining, row.key);
      progress = true;
      const std::size_t bytes = row.estimated_bytes();
      if (!handoff_.push(std::move(row), bytes)) {
        return absl::CancelledError("the source reader is closing");
      }
      return absl::OkStatus();
    };
    while (stream->Read(&response)) {
      consumed = assembler.consume(response, sink);
      if (!consumed.ok()) {
        context.TryCancel();
        break;
      }
      // The service read this far with nothing for us: a re-opened stream may start past it.
      if (!response.last_scanned_row_key().empty() && !assembler.mid_row()) {
        remaining = RangeAfter(remaining, response.last_scanned_row_key());
      }
    }
    absl::Status status = FromGrpc(stream->Finish());
    {
      std::lock_guard lock(mu_);
      call_ = nullptr;
    }
    if (closing()) {
      handoff_.finish(absl::CancelledError("the source reader is closing"));
      return;
    }
    if (!consumed.ok()) {
      fail(consumed);
      return;
    }
    if (status.ok() && assembler.mid_row()) {
      status = absl::UnavailableError("the stream ended in the middle of a row");
    }
    if (status.ok()) {
      handoff_.finish(absl::OkStatus());
      return;
    }
    if (progress) {
      failures = 0;
      backoff = request_.initial_backoff;
    }
    if (!Transient(status.code()) || ++failures >= request_.max_attempts_without_progress) {
      fail(status);
      return;
    }
    assembler.restart();
    spdlog::warn("BigtableSource: ReadRows for {} failed ({}); reading {} again in {} ms", split.id,
                 status.ToString(), FormatRowRange(remaining), backoff.count());
    std::unique_lock lock(mu_);
    if (cv_.wait_for(lock, backoff, [&] { return closing_; })) {
      lock.unlock();
      handoff_.finish(absl::CancelledError("the source reader is closing"));
      return;
    }
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::seconds(5));
  }
}

void BigtableScanReader::stop_stream() {
  if (!stream_thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    closing_ = true;
    if (call_ != nullptr) call_->TryCancel();
  }
  cv_.notify_all();
  handoff_.close();
  stream_thread_.join();
  std::lock_guard lock(mu_);
  closing_ = false;
}

absl::StatusOr<RecordsWithSplitIds<BigtableRow>> BigtableScanReader::fetch() {
  RecordsWithSplitIds<BigtableRow> batch;
  if (!current_) {
    if (pending_.empty()) return batch;
    if (!stub_) {
      auto stub = stubs_();
      if (!stub.ok()) return stub.status();
      stub_ = *std::move(stub);
    }
    current_ = std::move(pending_.front());
    pending_.pop_front();
    handoff_.reset();
    stream_thread_ = std::thread([this, split = *current_] { read(split); });
  }
  const std::string id = current_->id;
  FetchHandoff<BigtableRow>::Taken taken = handoff_.take();
  for (BigtableRow& row : taken.elements) batch.add(id, std::move(row));
  if (taken.finished) {
    stream_thread_.join();
    if (!taken.status.ok()) return taken.status;
    batch.finish_split(id);
    current_.reset();
  }
  return batch;
}

absl::Status BigtableScanReader::close() {
  stop_stream();
  stub_.reset();
  return absl::OkStatus();
}

}  // namespace gcpstream::bigtable
