#ifndef GCPSTREAM_BIGTABLE_SINK_FAILED_MUTATION_H_
#define GCPSTREAM_BIGTABLE_SINK_FAILED_MUTATION_H_

#include <optional>
#include <string>

#include "gcpstream/bigtable/client/mutation_batcher.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/failed_element.h"

namespace gcpstream::bigtable {

// A mutation the Bigtable sink could not apply: its table, its entry (none when serialization
// itself failed) and row key. The payload is the serialized MutateRowsRequest.Entry, so a
// dead-letter consumer recovers every mutation of the row with Entry::ParseFromString.
class FailedMutation final : public connector::FailedElement {
 public:
  FailedMutation(connector::TableDestination table, std::optional<Entry> entry, absl::Status status,
                 bool service_rejection)
      : table_(std::move(table)),
        entry_(std::move(entry)),
        status_(std::move(status)),
        service_rejection_(service_rejection) {}

  std::string_view connector() const override { return "bigtable"; }
  std::string describe_destination() const override { return table_.resource_name(); }
  std::string payload_bytes() const override {
    return entry_ ? entry_->SerializeAsString() : std::string();
  }
  absl::Status status() const override { return status_; }
  bool is_service_rejection() const override { return service_rejection_; }

  const connector::TableDestination& table() const { return table_; }
  const std::optional<Entry>& entry() const { return entry_; }
  std::string row_key() const { return entry_ ? entry_->row_key() : std::string(); }

 private:
  connector::TableDestination table_;
  std::optional<Entry> entry_;
  absl::Status status_;
  bool service_rejection_;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_SINK_FAILED_MUTATION_H_
