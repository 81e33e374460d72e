#include "gcpstream/bigtable/sink/bigtable_writer_options.h"

#include <fmt/format.h>

namespace gcpstream::bigtable {

absl::Status BigtableWriterOptions::validate() const {
  if (absl::Status s = thresholds().validate(); !s.ok()) return s;
  if (max_in_flight_entries < 1) {
    return absl::InvalidArgumentError("max_in_flight_entries must be >= 1");
  }
  if (max_in_flight_bytes < 1)
    return absl::InvalidArgumentError("max_in_flight_bytes must be >= 1");
  if (max_consecutive_rejections < -1 || max_consecutive_rejections == 0) {
    return absl::InvalidArgumentError(
        "max_consecutive_rejections must be >= 1, or -1 to remove the bound");
  }
  if (destination_idle_timeout.count() <= 0) {
    return absl::InvalidArgumentError("destination_idle_timeout must be positive");
  }
  if (max_active_instances < 1) {
    return absl::InvalidArgumentError("max_active_instances must be >= 1");
  }
  return recovery.validate();
}

std::vector<std::string> BigtableWriterOptions::warnings() const {
  std::vector<std::string> out;
  if (max_in_flight_entries > 20'000) {
    out.push_back(fmt::format(
        "max_in_flight_entries {} is above 20,000, the outstanding-entry budget Google's "
        "Bigtable clients keep per client; gcpstream's client has no flow controller of its "
        "own, so this bound alone limits the writer's memory and the load one subtask puts on "
        "the instance",
        max_in_flight_entries));
  }
  if (max_in_flight_bytes > 100LL * 1024 * 1024) {
    out.push_back(fmt::format(
        "max_in_flight_bytes {} is above 100 MiB, the byte budget Google's Bigtable clients "
        "keep per client; this bound alone limits the memory the writer holds in requests",
        max_in_flight_bytes));
  }
  return out;
}

BatchingThresholds BigtableWriterOptions::thresholds() const {
  BatchingThresholds t;
  if (batch_element_count) t.element_count = *batch_element_count;
  if (batch_byte_size) t.byte_size = *batch_byte_size;
  return t;
}

}  // namespace gcpstream::bigtable
