#ifndef GCPSTREAM_BIGQUERY_SINK_FILE_LOADS_OPTIONS_H_
#define GCPSTREAM_BIGQUERY_SINK_FILE_LOADS_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "gcpstream/gcs/storage_client.h"

namespace gcpstream::bigquery {

// What a load job does with the rows already in its table (BigQuery's writeDisposition).
// WRITE_TRUNCATE_DATA is not built.
enum class WriteDisposition { kWriteAppend, kWriteTruncate, kWriteEmpty };

// "WRITE_APPEND", "WRITE_TRUNCATE", "WRITE_EMPTY".
std::string_view WriteDispositionName(WriteDisposition d);
// The disposition from its name, case-insensitively; INVALID_ARGUMENT for any other.
absl::StatusOr<WriteDisposition> ParseWriteDisposition(std::string_view name);

// The FILE_LOADS options (../shared/reference/options-bigquery.md, FileLoadsOptions); required
// by write_method FILE_LOADS and refused by the other methods.
struct FileLoadsOptions {
  // Where staged files go: "gs://BUCKET" or "gs://BUCKET/PREFIX" [required]. Use a bucket of
  // its own with a lifecycle rule deleting objects after a few days: files a failed attempt
  // staged are never loaded and stay behind (docs/bigquery.md).
  std::string staging_path;
  WriteDisposition write_disposition = WriteDisposition::kWriteAppend;
  // The smallest checkpoint interval a streaming job may have: BigQuery allows 1,500 load jobs
  // per table per day, and every checkpoint makes at least one [2 min]. Checked where the
  // interval is known (pipeline files); the C++ API cannot see it.
  std::chrono::milliseconds min_checkpoint_interval{std::chrono::minutes(2)};
  // An open staging file is finished and the next begun at this size [16 MiB; at least
  // 1 MiB]: the spec's measured basin of load duration against file size.
  std::int64_t max_staging_file_bytes = 16LL << 20;
  // Polling a submitted load job: first backoff, and its cap (before ±25 % jitter); no attempt
  // cap [1 s, 30 s].
  std::chrono::milliseconds load_job_poll_initial_backoff{1000};
  std::chrono::milliseconds load_job_poll_max_backoff{30000};

  // INVALID_ARGUMENT naming the option: a staging_path ParseGcsUri refuses, a file size below
  // 1 MiB, backoffs not positive or a cap below the first backoff, a negative
  // min_checkpoint_interval.
  absl::Status validate() const;
  // staging_path split, the prefix ending in '/' when not empty.
  absl::StatusOr<gcs::GcsUri> staging_location() const;
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SINK_FILE_LOADS_OPTIONS_H_
