#ifndef GCPSTREAM_SPANNER_SINK_INDEX_WEIGHTS_H_
#define GCPSTREAM_SPANNER_SINK_INDEX_WEIGHTS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "gcpstream/spanner/client/value.h"
#include "google/spanner/v1/mutation.pb.h"
#include "google/spanner/v1/result_set.pb.h"

namespace gcpstream::spanner {

// What a mutation costs in cells, counted the way Spanner counts mutations against its limits:
// a written column costs one cell for the table plus one for every secondary index containing
// it (as a key or a STORING column: both rewrite an index entry); a delete costs one plus the
// table's index count for each key or range it names (a range's real cost depends on the rows
// it matches, which no client can know). A table the weights do not know costs its columns
// alone (no index entries): an undercount, which the default cell limit's headroom absorbs.
//
// Table names match the way the dialect matches identifiers: case-insensitively in GoogleSQL,
// exactly in PostgreSQL. A name may carry its schema ("sales.Orders"); an unqualified name is
// in the default schema ("" in GoogleSQL, "public" in PostgreSQL). Immutable; thread-safe.
class IndexWeights {
 public:
  // One row of INFORMATION_SCHEMA.INDEX_COLUMNS for a secondary index.
  struct IndexColumn {
    std::string table_schema;
    std::string table_name;
    std::string index_name;
    std::string column_name;
  };

  IndexWeights() = default;  // knows no table
  IndexWeights(Dialect dialect, const std::vector<IndexColumn>& rows);

  // The query that reads the rows, in one text both dialects accept (unquoted identifiers are
  // case-insensitive in GoogleSQL and folded to lower case in PostgreSQL). It needs the
  // spanner.databases.select permission.
  static std::string_view Query();
  // The rows of that query's result (four STRING columns in order); INVALID_ARGUMENT when the
  // result has another shape.
  static absl::StatusOr<std::vector<IndexColumn>> Rows(
      const google::spanner::v1::ResultSet& result);

  std::int64_t cells(const google::spanner::v1::Mutation& mutation) const;
  // Secondary indexes of a table (0 when unknown).
  int indexes(std::string_view table) const;

 private:
  struct Table {
    absl::flat_hash_map<std::string, int> index_names;     // name -> 1
    absl::flat_hash_map<std::string, int> column_indexes;  // column -> indexes containing it
  };
  std::string table_key(std::string_view schema, std::string_view table) const;
  std::string table_key_of(std::string_view qualified) const;
  std::string column_key(std::string_view column) const;
  const Table* find(std::string_view table) const;

  Dialect dialect_ = Dialect::kGoogleSql;
  absl::flat_hash_map<std::string, Table> tables_;
};

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_SINK_INDEX_WEIGHTS_H_
