#include "gcpstream/bigquery/sink/buffered_stream_committer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <map>
#include <thread>

#include "gcpstream/bigquery/sink/append_retry.h"

namespace gcpstream::bigquery {
namespace {

using storage_v1::StorageError;

}  // namespace

BufferedStreamCommitter::BufferedStreamCommitter(std::shared_ptr<BigQueryWriteStub> stub,
                                                 connector::RecoveryOptions recovery,
                                                 bool create_if_needed, MetricGroup& metrics,
                                                 std::chrono::milliseconds call_timeout)
    : stub_(std::move(stub)),
      recovery_(recovery),
      create_if_needed_(create_if_needed),
      call_timeout_(call_timeout),
      total_(metrics.counter("totalCommittables")),
      successful_(metrics.counter("successfulCommittables")),
      failed_(metrics.counter("failedCommittables")),
      calls_(metrics.counter("flushRowsCalls")),
      retries_(metrics.counter("flushRowsRetries")) {}

absl::Status BufferedStreamCommitter::commit(
    std::vector<CommitRequest<BufferedStreamPosition>>& requests) {
  // One flush per stream, at the highest offset any of its committables names.
  std::map<std::string, BufferedStreamPosition> highest;
  for (const auto& r : requests) {
    total_.inc();
    const auto& c = r.committable();
    auto [it, inserted] = highest.try_emplace(c.stream, c);
    if (!inserted && c.offset > it->second.offset) it->second = c;
  }
  std::map<std::string, absl::Status> result;
  for (const auto& [stream, position] : highest) result[stream] = flush(position);
  for (auto& r : requests) {
    const absl::Status& s = result[r.committable().stream];
    if (s.ok()) {
      successful_.inc();
      continue;
    }
    failed_.inc();
    if (TransientCode(s.code())) {
      r.signal_failed_with_unknown_reason(s);
    } else {
      r.signal_failed_with_known_reason(s);
    }
  }
  return absl::OkStatus();
}

absl::Status BufferedStreamCommitter::flush(const BufferedStreamPosition& p) {
  if (p.offset <= 0) return absl::OkStatus();
  storage_v1::FlushRowsRequest request;
  request.set_write_stream(p.stream);
  request.mutable_offset()->set_value(p.offset - 1);  // inclusive
  connector::RecoveryBackoff backoff(recovery_);
  for (;;) {
    calls_.inc();
    absl::StatusOr<storage_v1::FlushRowsResponse> flushed =
        stub_->flush_rows(request, call_timeout_);
    if (flushed.ok()) return absl::OkStatus();
    const absl::Status& s = flushed.status();
    // Flushing again what is flushed already is done.
    if (s.code() == absl::StatusCode::kAlreadyExists &&
        StorageErrorOf(s) != StorageError::STREAM_FINALIZED) {
      return absl::OkStatus();
    }
    const auto storage = StorageErrorOf(s);
    const bool propagating = create_if_needed_ &&
                             (s.code() == absl::StatusCode::kPermissionDenied ||
                              s.code() == absl::StatusCode::kNotFound) &&
                             storage != StorageError::STREAM_NOT_FOUND;
    if (TransientCode(s.code()) || propagating) {
      if (auto delay = backoff.next()) {
        retries_.inc();
        spdlog::info(
            "BigQuery committer: FlushRows of {} to offset {} failed ({}), attempt {}; "
            "retrying in {} ms",
            p.stream, p.offset - 1, Describe(s), backoff.attempts(), delay->count());
        std::this_thread::sleep_for(*delay);
        continue;
      }
    }
    std::string why;
    if (storage == StorageError::STREAM_FINALIZED) {
      why = "the stream is finalized and can no longer be flushed";
    } else if (storage == StorageError::STREAM_NOT_FOUND) {
      // Whether the rows were flushed before the stream expired cannot be known any more.
      return absl::Status(
          s.code(),
          fmt::format("committing the checkpointed rows of {} (FlushRows on {} up to offset {}) "
                      "failed: the stream is gone (a buffered stream expires after 7 days "
                      "without traffic): {}. If this checkpoint was committed before the job "
                      "stopped, its rows are visible; if not, they are lost. Restoring this state "
                      "fails the same way every time: start without it, with the source rewound "
                      "to before this checkpoint (duplicates are then possible)",
                      p.table, p.stream, p.offset - 1, s.message()));
    } else if (storage == StorageError::OFFSET_OUT_OF_RANGE) {
      why = "the stream ends before the checkpointed offset";
    } else {
      why = fmt::format("after {} attempt(s)", backoff.attempts() + 1);
    }
    return absl::Status(
        s.code(),
        fmt::format("committing the checkpointed rows of {} (FlushRows on {} up to offset {}) "
                    "failed: {}; {}. The rows stay invisible; a restart commits them again",
                    p.table, p.stream, p.offset - 1, why, s.message()));
  }
}

}  // namespace gcpstream::bigquery
