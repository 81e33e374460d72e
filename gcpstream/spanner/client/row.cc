#include "gcpstream/spanner/client/row.h"

#include <fmt/format.h>

#include "absl/strings/str_join.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::spanner {

const std::string& Row::name(std::size_t i) const {
  return columns_->fields(static_cast<int>(i)).name();
}

const google::spanner::v1::Type& Row::type(std::size_t i) const {
  return columns_->fields(static_cast<int>(i)).type();
}

absl::StatusOr<Value> Row::get(std::size_t i) const {
  if (i >= values_.size() || static_cast<int>(i) >= columns_->fields_size()) {
    return absl::OutOfRangeError(
        fmt::format("column {} of a row with {} columns", i, values_.size()));
  }
  absl::StatusOr<Value> value = Value::FromProto(type(i), values_[i]);
  if (!value.ok()) {
    return absl::Status(value.status().code(),
                        fmt::format("column {}: {}", name(i), value.status().message()));
  }
  return value;
}

absl::StatusOr<Value> Row::get(std::string_view name) const {
  for (int i = 0; i < columns_->fields_size(); ++i) {
    if (columns_->fields(i).name() == name) return get(static_cast<std::size_t>(i));
  }
  std::vector<std::string> names;
  for (const auto& f : columns_->fields()) names.push_back(f.name());
  return absl::NotFoundError(fmt::format("the row has no column \"{}\" (its columns: {})", name,
                                         absl::StrJoin(names, ", ")));
}

}  // namespace gcpstream::spanner
