#include "gcpstream/bigquery/source/read_stream_reader.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gcpstream/connector/grpc_status.h"

namespace gcpstream::bigquery {

std::optional<std::chrono::milliseconds> ReadRetryDelay(const absl::Status& status,
                                                        std::chrono::milliseconds backoff) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable: {
      thread_local std::minstd_rand random(std::random_device{}());
      const auto ceiling = std::max<std::int64_t>(1, backoff.count());
      return std::chrono::milliseconds(
          std::uniform_int_distribution<std::int64_t>(0, ceiling)(random));
    }
    case absl::StatusCode::kInternal: {
      const std::string_view m(status.message().data(), status.message().size());
      for (std::string_view fault : {"RST_STREAM", "Rst Stream", "Received unexpected EOS",
                                     "INTERNAL_ERROR", "Connection closed with unknown cause"}) {
        if (m.find(fault) != std::string_view::npos) return std::chrono::milliseconds(1);
      }
      return std::nullopt;
    }
    case absl::StatusCode::kResourceExhausted:
      return connector::RetryDelayOf(status);
    default:
      return std::nullopt;
  }
}

ReadStreamReader::ReadStreamReader(BigQueryReadStubFactory stubs, BigQueryReadOptions options,
                                   Counter& read_retries)
    : StreamThreadSplitReader(static_cast<std::size_t>(std::max(1, options.max_records_per_fetch)),
                              std::size_t{64} << 20, options.stall_timeout),
      stubs_(std::move(stubs)),
      options_(std::move(options)),
      read_retries_(read_retries) {}

ReadStreamReader::~ReadStreamReader() { stop(); }

absl::Status ReadStreamReader::open() {
  auto stub = stubs_();
  if (!stub.ok()) return stub.status();
  stub_ = *std::move(stub);
  return absl::OkStatus();
}

absl::StatusOr<AvroRowDecoder*> ReadStreamReader::decoder_for(const std::string& avro_schema) {
  auto it = decoders_.find(avro_schema);
  if (it != decoders_.end()) return it->second.get();
  auto decoder = AvroRowDecoder::Create(avro_schema);
  if (!decoder.ok()) return decoder.status();
  return decoders_.emplace(avro_schema, *std::move(decoder)).first->second.get();
}

namespace {

// The words a failure gets when the session it read has expired, or its offset was refused.
absl::Status Explain(const absl::Status& status, const ReadStreamSplit& split, std::int64_t offset,
                     int attempts) {
  std::string why;
  const absl::Time expiry = absl::FromUnixMicros(split.session_expire_micros);
  const absl::string_view message = status.message();
  // The service's word or the split's expiry decides; the local clock alone never refuses a
  // read, it only explains one that failed.
  const bool expired_word = status.code() == absl::StatusCode::kFailedPrecondition &&
                            absl::StrContains(message, "expired");
  if (split.session_expire_micros > 0 && (expired_word || absl::Now() >= expiry)) {
    why = absl::StrCat(
        "; the read session expired at ", absl::FormatTime(expiry, absl::UTCTimeZone()),
        " (a session lives 6 hours from its creation). A read that outlives its session cannot "
        "be resumed, and a second session would read another snapshot of the table: start the "
        "job over without this state, with more parallelism or fewer columns so the read "
        "finishes in time (what the sink already committed from this read stays committed)");
  } else if (status.code() == absl::StatusCode::kFailedPrecondition &&
             absl::StrContains(message, "offset")) {
    why = absl::StrCat("; the offset ", offset,
                       " is past the rows this stream holds (restored from a checkpoint of "
                       "another session, or corrupt state)");
  }
  std::string tries = attempts > 1 ? absl::StrCat(" (", attempts, " attempts without a row)") : "";
  return absl::Status(status.code(),
                      absl::StrCat("BigQuerySource: reading ", split.stream, " at offset ", offset,
                                   tries, ": ", message, why));
}

}  // namespace

bool ReadStreamReader::read_split(const ReadStreamSplit& split) {
  std::int64_t offset = split.offset;
  int failures = 0;
  std::chrono::milliseconds backoff = options_.initial_retry_delay;
  auto end = [&](absl::Status status) { return push_end(split.stream, std::move(status)); };
  auto decoder = decoder_for(split.avro_schema);
  if (!decoder.ok()) {
    end(Explain(decoder.status(), split, offset, 0));
    return false;
  }
  std::vector<BigQueryReadRow> decoded;
  Elements items;
  while (true) {
    storage_v1::ReadRowsRequest request;
    request.set_read_stream(split.stream);
    request.set_offset(offset);
    if (closing()) return false;
    std::unique_ptr<ReadRowsCall> call = stub_->read_rows(request);
    if (!set_call([c = call.get()] { c->cancel(); })) return false;
    storage_v1::ReadRowsResponse response;
    bool progress = false;
    absl::Status consumed;
    while (read_call([&] { return call->read(&response); })) {
      if (response.row_count() == 0) continue;
      if (!response.has_avro_rows() || response.row_count() < 0) {
        consumed = absl::DataLossError(absl::StrCat("a response claims ", response.row_count(),
                                                    " rows and carries no Avro rows"));
        call->cancel();
        break;
      }
      decoded.clear();
      const std::string& block = response.avro_rows().serialized_binary_rows();
      consumed = (*decoder)->decode(block, response.row_count(), decoded);
      if (!consumed.ok()) {
        call->cancel();
        break;
      }
      // Handed over a fetch's worth at a time, each waiting for room: a block of many rows does
      // not pile up behind the hand-off.
      const auto chunk = static_cast<std::size_t>(std::max(1, options_.max_records_per_fetch));
      const std::size_t size = block.size() / decoded.size() + 1;
      bool open = true;
      for (std::size_t start = 0; start < decoded.size() && open; start += chunk) {
        items.clear();
        for (std::size_t i = start; i < std::min(decoded.size(), start + chunk); ++i) {
          const std::int64_t bytes = i == 0 ? static_cast<std::int64_t>(block.size()) : 0;
          items.emplace_back(Item{split.stream, ReadStreamRow{std::move(decoded[i]), bytes}, {}},
                             size);
        }
        open = push(items);
      }
      offset += response.row_count();
      progress = true;
      if (!open) {
        call->cancel();
        consumed = absl::CancelledError("the source reader is closing");
        break;
      }
    }
    absl::Status status = call->finish();
    const bool stalled = clear_call();
    if (closing()) return false;
    if (!consumed.ok()) {
      end(Explain(consumed, split, offset, 0));
      return false;
    }
    if (stalled) {
      status = absl::UnavailableError(absl::StrCat("no response for ", stall_timeout().count(),
                                                   " ms: the stream was cancelled"));
    }
    if (status.ok()) return end(absl::OkStatus());
    if (progress) {
      failures = 0;
      backoff = options_.initial_retry_delay;
    }
    std::optional<std::chrono::milliseconds> delay = ReadRetryDelay(status, backoff);
    // Only attempts that delivered no row count towards the bound.
    if (!delay || (!progress && ++failures >= options_.retry_max_attempts)) {
      end(Explain(status, split, offset, failures));
      return false;
    }
    read_retries_.inc();
    spdlog::warn("BigQuerySource: ReadRows of {} failed ({}); resuming at offset {} in {} ms",
                 split.stream, status.ToString(), offset, delay->count());
    if (sleep_unless_closing(*delay)) return false;
    backoff = std::min<std::chrono::milliseconds>(
        std::chrono::milliseconds(backoff.count() * 13 / 10 + 1), std::chrono::seconds(60));
  }
}

}  // namespace gcpstream::bigquery
