#ifndef GCPSTREAM_SPANNER_CLIENT_ROW_H_
#define GCPSTREAM_SPANNER_CLIENT_ROW_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/spanner/client/value.h"
#include "google/spanner/v1/result_set.pb.h"

namespace gcpstream::spanner {

// One row of a read: the result's column names and types (shared by every row of the result)
// and the row's values in their wire form. Typed access goes through Value (FromProto), so a
// row reads the same way from a GoogleSQL and a PostgreSQL database; only the type annotations
// differ (PG_NUMERIC, PG_JSONB). Immutable; cheap to move; thread-compatible.
class Row {
 public:
  Row(std::shared_ptr<const google::spanner::v1::StructType> columns,
      std::vector<google::protobuf::Value> values)
      : columns_(std::move(columns)), values_(std::move(values)) {}

  std::size_t size() const { return values_.size(); }
  // Name and type of column `i` (< size()).
  const std::string& name(std::size_t i) const;
  const google::spanner::v1::Type& type(std::size_t i) const;
  // The value of column `i`: OUT_OF_RANGE past the end; what Value::FromProto answers for a
  // value that does not match its type (INVALID_ARGUMENT, UNIMPLEMENTED), naming the column.
  absl::StatusOr<Value> get(std::size_t i) const;
  // The first column named `name` (exact match): NOT_FOUND naming the columns there are.
  absl::StatusOr<Value> get(std::string_view name) const;
  const std::vector<google::protobuf::Value>& values() const { return values_; }
  const google::spanner::v1::StructType& columns() const { return *columns_; }

 private:
  std::shared_ptr<const google::spanner::v1::StructType> columns_;
  std::vector<google::protobuf::Value> values_;
};

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_CLIENT_ROW_H_
