#include "gcpstream/bigquery/sink/file_loads_options.h"

#include <fmt/format.h>

#include "absl/strings/match.h"

namespace gcpstream::bigquery {
namespace {

absl::Status Invalid(std::string_view option, std::string_view why) {
  return absl::InvalidArgumentError(
      fmt::format("FileLoadsOptions.{}: {}", std::string(option), std::string(why)));
}

}  // namespace

std::string_view WriteDispositionName(WriteDisposition d) {
  switch (d) {
    case WriteDisposition::kWriteTruncate:
      return "WRITE_TRUNCATE";
    case WriteDisposition::kWriteEmpty:
      return "WRITE_EMPTY";
    case WriteDisposition::kWriteAppend:
      break;
  }
  return "WRITE_APPEND";
}

absl::StatusOr<WriteDisposition> ParseWriteDisposition(std::string_view name) {
  for (WriteDisposition d : {WriteDisposition::kWriteAppend, WriteDisposition::kWriteTruncate,
                             WriteDisposition::kWriteEmpty}) {
    if (absl::EqualsIgnoreCase(
            absl::string_view(name.data(), name.size()),
            absl::string_view(WriteDispositionName(d).data(), WriteDispositionName(d).size()))) {
      return d;
    }
  }
  return absl::InvalidArgumentError(
      fmt::format("unknown write disposition \"{}\": WRITE_APPEND, WRITE_TRUNCATE or WRITE_EMPTY "
                  "(WRITE_TRUNCATE_DATA is not built)",
                  std::string(name.substr(0, 64))));
}

absl::StatusOr<gcs::GcsUri> FileLoadsOptions::staging_location() const {
  auto uri = gcs::ParseGcsUri(staging_path, /*allow_prefix_only=*/true);
  if (!uri.ok()) return Invalid("staging_path", std::string(uri.status().message()));
  if (!uri->object.empty() && uri->object.back() != '/') uri->object += '/';
  return uri;
}

absl::Status FileLoadsOptions::validate() const {
  if (staging_path.empty()) {
    return Invalid("staging_path", "is required: the gs://BUCKET[/PREFIX] files are staged under");
  }
  if (auto location = staging_location(); !location.ok()) return location.status();
  // A load job reads '*' in a source URI as a wildcard (it could load objects this sink never
  // staged), and '?', '#', '[' and ']' do not survive URLs: refused before anything is staged.
  if (staging_path.find_first_of("*?#[]\r\n") != std::string::npos) {
    return Invalid("staging_path",
                   "must not contain *, ?, #, [, ] or line breaks (a load job reads * as a "
                   "wildcard)");
  }
  if (max_staging_file_bytes < (1LL << 20)) {
    return Invalid("max_staging_file_bytes", "must be at least 1 MiB (1048576)");
  }
  if (load_job_poll_initial_backoff.count() <= 0) {
    return Invalid("load_job_poll_initial_backoff", "must be positive");
  }
  if (load_job_poll_max_backoff < load_job_poll_initial_backoff) {
    return Invalid("load_job_poll_max_backoff", "must be at least load_job_poll_initial_backoff");
  }
  if (min_checkpoint_interval.count() < 0) {
    return Invalid("min_checkpoint_interval", "must not be negative");
  }
  return absl::OkStatus();
}

}  // namespace gcpstream::bigquery
