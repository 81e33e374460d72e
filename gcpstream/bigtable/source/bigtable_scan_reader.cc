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
    : StreamThreadSplitReader(static_cast<std::size_t>(std::max(1, request.max_rows_per_fetch)),
                              request.max_bytes_per_fetch, request.stall_timeout),
      stubs_(std::move(stubs)),
      request_(std::move(request)) {}

BigtableScanReader::~BigtableScanReader() { stop(); }

absl::Status BigtableScanReader::open() {
  auto stub = stubs_();
  if (!stub.ok()) return stub.status();
  stub_ = *std::move(stub);
  return absl::OkStatus();
}

bool BigtableScanReader::read_split(const BigtableScanSplit& split) {
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
    return push_end(split.id, std::move(status));
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
    if (!set_call([&context] { context.TryCancel(); })) return false;
    auto stream = stub_->ReadRows(&context, request);
    v2::ReadRowsResponse response;
    bool progress = false;
    absl::Status consumed;
    // The rows one response completes go over together: one wake-up per response.
    Elements rows;
    const auto sink = [&](BigtableRow row) -> absl::Status {
      remaining = RangeAfter(remaining, row.key);
      progress = true;
      const std::size_t bytes = row.estimated_bytes();
      rows.emplace_back(Item{split.id, std::move(row), absl::OkStatus()}, bytes);
      return absl::OkStatus();
    };
    while (read_call([&] { return stream->Read(&response); })) {
      consumed = assembler.consume(response, sink);
      if (consumed.ok() && !push(rows)) {
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
    const bool stalled = clear_call();
    if (closing()) return false;
    if (stalled) {
      status = absl::UnavailableError(absl::StrCat("no response for ", stall_timeout().count(),
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
    if (sleep_unless_closing(backoff)) return false;
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::seconds(5));
  }
}

}  // namespace gcpstream::bigtable
