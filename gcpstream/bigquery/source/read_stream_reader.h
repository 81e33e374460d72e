#ifndef GCPSTREAM_BIGQUERY_SOURCE_READ_STREAM_READER_H_
#define GCPSTREAM_BIGQUERY_SOURCE_READ_STREAM_READER_H_

#include <map>
#include <memory>
#include <string>

#include "gcpstream/api/metrics.h"
#include "gcpstream/api/stream_thread_split_reader.h"
#include "gcpstream/bigquery/client/read_stub.h"
#include "gcpstream/bigquery/source/avro_row_decoder.h"
#include "gcpstream/bigquery/source/bigquery_read_options.h"
#include "gcpstream/bigquery/source/read_stream_split.h"

namespace gcpstream::bigquery {

// One decoded row on its way to the emitter, with the wire bytes of its response block when
// it is the block's first row (0 otherwise), for bytesRead.
struct ReadStreamRow {
  BigQueryReadRow row;
  std::int64_t block_bytes = 0;
};

// Whether a failed ReadRows may be resumed, and after how long: UNAVAILABLE after the jittered
// backoff; the transport faults reported as INTERNAL (RST_STREAM, an unexpected end of stream,
// an HTTP/2 INTERNAL_ERROR — the read client libraries' list) after 1 ms; RESOURCE_EXHAUSTED
// only when it names a RetryInfo delay, after that delay. Anything else is not resumed.
std::optional<std::chrono::milliseconds> ReadRetryDelay(const absl::Status& status,
                                                        std::chrono::milliseconds backoff);

// Reads the streams assigned to one subtask, one after the other: one ReadRows call per stream
// from its offset, resumed at the row count it reached when a retryable failure breaks it (see
// ReadRetryDelay), so no row is read twice and none skipped while this reader lives. The
// stream thread (StreamThreadSplitReader) decodes each response block (Avro, AvroRowDecoder)
// and hands the rows to fetch() at most max_records_per_fetch at a time, so a checkpoint can be
// taken inside a block. retry_max_attempts consecutive attempts without a row fail the reader with
// the last status; a stream silent for stall_timeout is cancelled and resumed as such an attempt. A
// failure past the session's expiry says the session expired (a read outlived its 6 hours and
// cannot be resumed); a FAILED_PRECONDITION naming an offset says the restored offset is past
// the stream's rows. Failures keep their gRPC code. Checkpoint progress is the emitter's: the
// split's offset advances when a row's records reached downstream.
// `read_retries` (readRetries) counts resumed attempts.
class ReadStreamReader final : public StreamThreadSplitReader<ReadStreamRow, ReadStreamSplit> {
 public:
  ReadStreamReader(BigQueryReadStubFactory stubs, BigQueryReadOptions options,
                   Counter& read_retries);
  ~ReadStreamReader() override;

 private:
  absl::Status open() override;
  bool read_split(const ReadStreamSplit& split) override;
  // The decoder for a session schema (one per schema; a reader sees one session).
  absl::StatusOr<AvroRowDecoder*> decoder_for(const std::string& avro_schema);

  BigQueryReadStubFactory stubs_;
  const BigQueryReadOptions options_;
  Counter& read_retries_;
  std::shared_ptr<BigQueryReadStub> stub_;  // set by open(), before the stream thread
  std::map<std::string, std::unique_ptr<AvroRowDecoder>> decoders_;  // stream thread only
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SOURCE_READ_STREAM_READER_H_
