#ifndef GCPSTREAM_CONNECTOR_FAILED_ELEMENT_H_
#define GCPSTREAM_CONNECTOR_FAILED_ELEMENT_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace gcpstream::connector {

// A record a sink could not deliver, as every failure handler sees it. Connectors derive typed
// elements (FailedMessage, FailedMutation, ...) that add their own fields; a handler written
// against FailedElement serves every connector.
class FailedElement {
 public:
  virtual ~FailedElement() = default;
  // "pubsub", "bigtable", "spanner", "bigquery", "cloudtasks".
  virtual std::string_view connector() const = 0;
  // The destination's resource name, e.g. projects/p/topics/t.
  virtual std::string describe_destination() const = 0;
  // The connector's wire form of what failed (a serialized PubsubMessage, a serialized
  // MutateRowsRequest.Entry, ...); empty when the failure happened before there was one
  // (a serializer failure) — so data length alone does not classify a failure.
  virtual std::string payload_bytes() const = 0;
  // What went wrong, for humans.
  virtual std::string message() const { return std::string(status().message()); }
  // The failure's status; its code is the gRPC code where the service answered.
  virtual absl::Status status() const = 0;
  // Whether the service refused it (false: the serializer did).
  virtual bool is_service_rejection() const { return true; }
};

// A FailedElement assembled from its parts; connectors may use it directly.
class BasicFailedElement : public FailedElement {
 public:
  BasicFailedElement(std::string connector, std::string destination, std::string payload,
                     absl::Status status, bool service_rejection = true)
      : connector_(std::move(connector)),
        destination_(std::move(destination)),
        payload_(std::move(payload)),
        status_(std::move(status)),
        service_rejection_(service_rejection) {}
  std::string_view connector() const override { return connector_; }
  std::string describe_destination() const override { return destination_; }
  std::string payload_bytes() const override { return payload_; }
  absl::Status status() const override { return status_; }
  bool is_service_rejection() const override { return service_rejection_; }

 private:
  std::string connector_;
  std::string destination_;
  std::string payload_;
  absl::Status status_;
  bool service_rejection_;
};

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_FAILED_ELEMENT_H_
