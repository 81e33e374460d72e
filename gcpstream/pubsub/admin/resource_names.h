#ifndef GCPSTREAM_PUBSUB_ADMIN_RESOURCE_NAMES_H_
#define GCPSTREAM_PUBSUB_ADMIN_RESOURCE_NAMES_H_

#include <string_view>

#include "absl/status/status.h"

namespace gcpstream::pubsub {

// Checks a topic or subscription id against Pub/Sub's documented naming rules ("Resource names"):
// 3 to 255 characters, starting with a letter, using only letters, digits and - _ . ~ + %, and
// not starting with "goog". `kind` ("topic", "subscription") names it in the error.
// INVALID_ARGUMENT naming the id and the rule. The service (and the emulator) refuse such a name
// with INVALID_ARGUMENT on every request, which reads like a bad record: checking first keeps a
// mistyped name from being "dropped" record by record under a dropping failure handler.
absl::Status ValidateResourceId(std::string_view kind, std::string_view id);

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_ADMIN_RESOURCE_NAMES_H_
