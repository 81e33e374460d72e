#include "gcpstream/bigtable/source/bigtable_scan_reader.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

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
  {
    std::lock_guard lock(mu_);
    for (auto& split : addition.splits) pending_.push_back(std::move(split));
  }
  cv_.notify_all();
  return absl::OkStatus();
}

void BigtableScanReader::wake_up() { handoff_.wake_up(); }

bool BigtableScanReader::closing() const {
  std::lock_guard lock(mu_);
  return closing_;
}

void BigtableScanReader::run() {
  while (true) {
    BigtableScanSplit split;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return closing_ || !pending_.empty(); });
      if (closing_) return;
      split = std::move(pending_.front());
      pending_.pop_front();
    }
    if (!read(split)) return;
  }
}

bool BigtableScanReader::read(const BigtableScanSplit& split) {
  RowKeyRange remaining = split.range;
  ReadRowsAssembler assembler;
  int failures = 0;
  std::chrono::milliseconds backoff = request_.initial_backoff;
  // Hands over the split's end; false when the hand-off is closed (the reader is closing).
  auto end = [&](absl::Status status) {
    if (!status.ok()) {
      status = absl::Status(status.code(),
                            absl::StrCat("BigtableSource: reading ", split.id, " ",
                                         FormatRowRange(remaining), ": ", status.message()));
    }
    return handoff_.push(Item{split.id, std::nullopt, std::move(status)}, 0);
  };
  while (true) {
    // Used up: finish without a call (an empty row set would read the whole table).
    if (IsEmptyRange(remaining)) return end(absl::OkStatus());
    v2::ReadRowsRequest request;
    request.set_table_name(request_.table_name);
    if (!request_.app_profile_id.empty()) request.set_app_profile_id(request_.app_profile_id);
    *request.mutable_rows()->add_row_ranges() = ToRowRangeProto(remaining);
    if (request_.filter) *request.mutable_filter() = *request_.filter;

    grpc::ClientContext context;
    {
      std::lock_guard lock(mu_);
      if (closing_) return false;
      call_ = &context;
    }
    auto stream = stub_->ReadRows(&context, request);
    v2::ReadRowsResponse response;
    bool progress = false;
    absl::Status consumed;
    // The rows one response completes go over together: one wake-up per response.
    std::vector<std::pair<Item, std::size_t>> rows;
    const auto sink = [&](BigtableRow row) -> absl::Status {
      remaining = RangeAfter(remaining, row.key);
      progress = true;
      const std::size_t bytes = row.estimated_bytes();
      rows.emplace_back(Item{split.id, std::move(row), absl::OkStatus()}, bytes);
      return absl::OkStatus();
    };
    auto read = [&] {
      {
        std::lock_guard lock(mu_);
        reading_since_ = std::chrono::steady_clock::now();
      }
      const bool got = stream->Read(&response);
      std::lock_guard lock(mu_);
      reading_since_.reset();
      return got;
    };
    while (read()) {
      consumed = assembler.consume(response, sink);
      if (consumed.ok() && !handoff_.push_all(rows)) {
        consumed = absl::CancelledError("the source reader is closing");
      }
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
    bool stalled = false;
    {
      std::lock_guard lock(mu_);
      call_ = nullptr;
      stalled = std::exchange(stalled_, false);
    }
    if (closing()) return false;
    if (stalled) {
      status =
          absl::UnavailableError(absl::StrCat("no response for ", request_.stall_timeout.count(),
                                              " ms: the stream stalled and was cancelled"));
    }
    if (!consumed.ok()) {
      end(consumed);
      return false;
    }
    if (status.ok() && assembler.mid_row()) {
      status = absl::UnavailableError("the stream ended in the middle of a row");
    }
    if (status.ok()) return end(absl::OkStatus());
    if (progress) {
      failures = 0;
      backoff = request_.initial_backoff;
    }
    if (!Transient(status.code()) || ++failures >= request_.max_attempts_without_progress) {
      end(status);
      return false;
    }
    assembler.restart();
    spdlog::warn("BigtableSource: ReadRows for {} failed ({}); reading {} again in {} ms", split.id,
                 status.ToString(), FormatRowRange(remaining), backoff.count());
    std::unique_lock lock(mu_);
    if (cv_.wait_for(lock, backoff, [&] { return closing_; })) return false;
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::seconds(5));
  }
}

void BigtableScanReader::watch() {
  const auto tick = std::min<std::chrono::milliseconds>(
      std::chrono::milliseconds(1000), request_.stall_timeout / 4 + std::chrono::milliseconds(1));
  std::unique_lock lock(mu_);
  while (!closing_) {
    cv_.wait_for(lock, tick, [&] { return closing_; });
    if (closing_ || call_ == nullptr || !reading_since_) continue;
    if (std::chrono::steady_clock::now() - *reading_since_ >= request_.stall_timeout) {
      stalled_ = true;
      reading_since_.reset();
      call_->TryCancel();
    }
  }
}

void BigtableScanReader::stop_stream() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
    if (call_ != nullptr) call_->TryCancel();
  }
  cv_.notify_all();
  handoff_.close();
  if (stream_thread_.joinable()) stream_thread_.join();
  if (watchdog_.joinable()) watchdog_.join();
}

absl::StatusOr<RecordsWithSplitIds<BigtableRow>> BigtableScanReader::fetch() {
  RecordsWithSplitIds<BigtableRow> batch;
  if (!stub_) {
    auto stub = stubs_();
    if (!stub.ok()) return stub.status();
    stub_ = *std::move(stub);
    stream_thread_ = std::thread([this] { run(); });
    watchdog_ = std::thread([this] { watch(); });
  }
  FetchHandoff<Item>::Taken taken = handoff_.take();
  for (Item& item : taken.elements) {
    if (item.row) {
      batch.add(item.split_id, *std::move(item.row));
    } else if (item.end.ok()) {
      batch.finish_split(item.split_id);
    } else {
      // The rows before it are dropped with the batch: the job fails, and a restore reads them
      // again from the checkpointed range.
      return item.end;
    }
  }
  return batch;
}

absl::Status BigtableScanReader::close() {
  stop_stream();
  stub_.reset();
  return absl::OkStatus();
}

}  // namespace gcpstream::bigtable
