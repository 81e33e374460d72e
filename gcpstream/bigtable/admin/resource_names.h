#ifndef GCPSTREAM_BIGTABLE_ADMIN_RESOURCE_NAMES_H_
#define GCPSTREAM_BIGTABLE_ADMIN_RESOURCE_NAMES_H_

#include <string_view>

#include "absl/status/status.h"

namespace gcpstream::bigtable {

// Checks a table id against Bigtable's documented form ([_a-zA-Z0-9][-_.a-zA-Z0-9]*, at most 50
// characters). INVALID_ARGUMENT naming the id and the rule: a malformed id is refused by the
// service on every request, so it is a configuration error, never a failure of a record.
absl::Status ValidateTableId(std::string_view id);

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_ADMIN_RESOURCE_NAMES_H_
