#ifndef GCPSTREAM_TESTS_SUPPORT_PUBSUB_EMULATOR_H_
#define GCPSTREAM_TESTS_SUPPORT_PUBSUB_EMULATOR_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "google/pubsub/v1/pubsub.grpc.pb.h"

namespace gcpstream::testing {

// Direct access to the Pub/Sub emulator for test setup and verification (not through the
// connector under test).
class PubSubEmulatorClient {
 public:
  explicit PubSubEmulatorClient(const std::string& endpoint);

  absl::Status create_topic(const std::string& topic_name);
  absl::StatusOr<google::pubsub::v1::Topic> get_topic(const std::string& topic_name);
  absl::Status create_subscription(const std::string& subscription_name,
                                   const std::string& topic_name, bool ordering = false,
                                   int ack_deadline_seconds = 60);
  // Pulls (and acknowledges) until `count` messages arrived or `timeout` passed; returns what
  // arrived, in delivery order. A shortfall is for the caller to report, naming what came.
  std::vector<google::pubsub::v1::PubsubMessage> pull(const std::string& subscription_name,
                                                      std::size_t count,
                                                      std::chrono::milliseconds timeout);
  absl::Status publish(const std::string& topic_name,
                       const std::vector<google::pubsub::v1::PubsubMessage>& messages);

 private:
  std::unique_ptr<google::pubsub::v1::Publisher::Stub> publisher_;
  std::unique_ptr<google::pubsub::v1::Subscriber::Stub> subscriber_;
};

// "projects/<project>/topics/<id>"
inline std::string TopicName(const std::string& project, const std::string& id) {
  return "projects/" + project + "/topics/" + id;
}
inline std::string SubscriptionName(const std::string& project, const std::string& id) {
  return "projects/" + project + "/subscriptions/" + id;
}

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_SUPPORT_PUBSUB_EMULATOR_H_
