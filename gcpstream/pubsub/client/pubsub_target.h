#ifndef GCPSTREAM_PUBSUB_CLIENT_PUBSUB_TARGET_H_
#define GCPSTREAM_PUBSUB_CLIENT_PUBSUB_TARGET_H_

namespace gcpstream::pubsub {

// The production endpoint of the Pub/Sub API (publisher and subscriber alike).
inline constexpr char kPubSubTarget[] = "pubsub.googleapis.com:443";

}  // namespace gcpstream::pubsub

#endif  // GCPSTREAM_PUBSUB_CLIENT_PUBSUB_TARGET_H_
