#ifndef GCPSTREAM_PUBSUB_SOURCE_STARTUP_CHECK_H_
#define GCPSTREAM_PUBSUB_SOURCE_STARTUP_CHECK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/pubsub/admin/subscription_admin.h"
#include "gcpstream/pubsub/source/pubsub_source_config.h"

namespace gcpstream::pubsub {

struct StartupCheckResult {
  std::vector<std::string> created;   // subscriptions this check created
  bool seeked = false;                // the start position's seek ran now
  std::vector<std::string> warnings;  // also logged at WARN
};

// The enumerator's check before it assigns any split. Blocking (run it on a worker thread).
// In order, so a rejection never leaves a subscription already rewound:
//  1. describe every subscription; a missing one without create options fails (NOT_FOUND,
//     naming the option that authorises creation); other errors keep their code;
//  2. create the missing ones that have options (ALREADY_EXISTS counts as success) and
//     describe them;
//  3. reject (FAILED_PRECONDITION) PER_KEY on an unordered subscription, exactly-once delivery
//     subscriptions, and NACK without a dead-letter policy;
//  4. unless `seek_already_done`, seek every subscription to the start position (`now_ms` is
//     the clock for latest / earliest_retained), warning when a backwards seek cannot reach
//     acknowledged messages (no retain_acked_messages and no topic retention).
absl::StatusOr<StartupCheckResult> RunStartupCheck(SubscriptionAdmin& admin,
                                                   const PubSubSourceConfig& config,
                                                   bool seek_already_done, std::int64_t now_ms);

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_SOURCE_STARTUP_CHECK_H_
