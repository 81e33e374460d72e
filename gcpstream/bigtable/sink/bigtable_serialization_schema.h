#ifndef GCPSTREAM_BIGTABLE_SINK_BIGTABLE_SERIALIZATION_SCHEMA_H_
#define GCPSTREAM_BIGTABLE_SINK_BIGTABLE_SERIALIZATION_SCHEMA_H_

#include <functional>
#include <optional>

#include "absl/status/status.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/bigtable/client/row_mutation_entry.h"

namespace gcpstream::bigtable {

// Turns a record into the RowMutationEntry to apply, or into nothing to skip it (a skip is not
// a failure: it is counted by recordsSkipped). The row key, cells, timestamps and deletes are all
// the serializer's decision; the table is the resolver's. Runs on the writer's thread; throwing
// is a serialization failure, routed to the failure handler.
//
// The cell timestamp decides what a replay does: an explicit, stable timestamp (e.g. the event
// time — context.timestamp_ms * 1000) overwrites the same version; the writer clock adds a
// version.
template <typename T>
class BigtableSerializationSchema {
 public:
  using Fn = std::function<std::optional<RowMutationEntry>(const T&, const SinkWriterContext&)>;
  static BigtableSerializationSchema of(Fn fn) {
    return BigtableSerializationSchema(std::move(fn));
  }
  // Called once per writer before the first record.
  BigtableSerializationSchema with_open(std::function<absl::Status()> open) const {
    BigtableSerializationSchema copy = *this;
    copy.open_ = std::move(open);
    return copy;
  }

  absl::Status open() const { return open_ ? open_() : absl::OkStatus(); }
  std::optional<RowMutationEntry> serialize(const T& value, const SinkWriterContext& ctx) const {
    return fn_(value, ctx);
  }
  bool valid() const { return static_cast<bool>(fn_); }
  BigtableSerializationSchema() = default;

 private:
  explicit BigtableSerializationSchema(Fn fn) : fn_(std::move(fn)) {}
  Fn fn_;
  std::function<absl::Status()> open_;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_SINK_BIGTABLE_SERIALIZATION_SCHEMA_H_
