#include "gcpstream/bigtable/changestream/change_stream_options.h"

#include <fmt/format.h>

#include "gcpstream/api/status_macros.h"

namespace gcpstream::bigtable {

absl::Status BigtableChangeStreamOptions::validate() const {
  constexpr std::string_view kSource = "BigtableChangeStreamSource";
  GCP_RETURN_IF_ERROR(start_position.validate(kSource));
  if (resume_fallback) GCP_RETURN_IF_ERROR(resume_fallback->validate(kSource));
  if (max_concurrent_streams_per_subtask < 1 ||
      max_concurrent_streams_per_subtask > kMaxStreamsPerSubtask) {
    return absl::InvalidArgumentError(
        fmt::format("{}: max_concurrent_streams_per_subtask must be 1 to {}, got {}", kSource,
                    kMaxStreamsPerSubtask, max_concurrent_streams_per_subtask));
  }
  return absl::OkStatus();
}

}  // namespace gcpstream::bigtable
