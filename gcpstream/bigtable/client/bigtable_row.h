#ifndef GCPSTREAM_BIGTABLE_CLIENT_BIGTABLE_ROW_H_
#define GCPSTREAM_BIGTABLE_CLIENT_BIGTABLE_ROW_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "google/bigtable/v2/data.pb.h"

namespace gcpstream::bigtable {

// One cell version of a row, as ReadRows returned it.
struct BigtableCell {
  std::string family;
  std::string qualifier;              // bytes
  std::int64_t timestamp_micros = 0;  // microseconds since the epoch (Bigtable's granularity)
  std::string value;                  // bytes
  std::vector<std::string> labels;    // set by a filter's apply_label_transformer
  friend bool operator==(const BigtableCell&, const BigtableCell&) = default;
};

// A whole row: its key and every cell the read's filter let through, in the service's order:
// grouped by family (the families in no particular order), qualifiers in byte order within a
// family, and the versions of a column newest first. Immutable once handed to a deserializer.
struct BigtableRow {
  std::string key;  // bytes
  std::vector<BigtableCell> cells;

  // The versions of one column, newest first (empty when the row has none).
  std::vector<const BigtableCell*> cells_of(std::string_view family,
                                            std::string_view qualifier) const;
  // The newest version of one column, or null.
  const BigtableCell* latest(std::string_view family, std::string_view qualifier) const;
  // The input-content estimate the fetch byte bound counts: the key, and per cell its family,
  // qualifier, value, labels and 8 bytes of timestamp. Not the memory the row occupies.
  std::size_t estimated_bytes() const;
  friend bool operator==(const BigtableRow&, const BigtableRow&) = default;
  // The row of a ReadModifyWriteRow (or ReadRows v2.Row) response, cells in its order.
  static BigtableRow from_proto(const google::bigtable::v2::Row& row);
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_CLIENT_BIGTABLE_ROW_H_
