#ifndef GCPSTREAM_BIGTABLE_ADMIN_RESOURCE_NAMES_H_
#define GCPSTREAM_BIGTABLE_ADMIN_RESOURCE_NAMES_H_

#include <optional>
#include <string_view>

#include "absl/status/status.h"
#include "gcpstream/connector/destinations.h"

namespace gcpstream::bigtable {

// Checks a table id against Bigtable's documented form ([_a-zA-Z0-9][-_.a-zA-Z0-9]*, at most 50
// characters). INVALID_ARGUMENT naming the id and the rule: a malformed id is refused by the
// service on every request, so it is a configuration error, never a failure of a record.
absl::Status ValidateTableId(std::string_view id);

// INVALID_ARGUMENT unless `id` is an app profile id (Bigtable's rule: a letter, digit or '_',
// then letters, digits, '_', '-' and '.', at most 50 characters). `who` starts the message.
absl::Status ValidateAppProfileId(std::string_view who, std::string_view id);

// INVALID_ARGUMENT naming `who` unless `table` is set with a project, an instance and a valid
// table id (a builder's table(...)).
absl::Status ValidateTableDestination(std::string_view who,
                                      const std::optional<connector::TableDestination>& table);

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_ADMIN_RESOURCE_NAMES_H_
