#ifndef GCPSTREAM_CONNECTOR_SERIALIZATION_H_
#define GCPSTREAM_CONNECTOR_SERIALIZATION_H_

#include <exception>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/cord.h"

// The serializer contract shared by every sink:
// - a serializer returns the connector's message, or nothing (std::nullopt) to SKIP the record:
//   a skip is not a failure, is written nowhere, never reaches the failure handler, and is
//   counted by recordsSkipped;
// - a serializer that throws (or returns an error) produces a serialization failure, which the
//   sink routes to its failure handler (counted by numRecordsSendErrors, never toward
//   max_consecutive_rejections).
namespace gcpstream::connector {

// Calls a serializer `fn` returning std::optional<R> (or absl::StatusOr<std::optional<R>>),
// turning a thrown exception into an INVALID_ARGUMENT status that says the serializer threw.
template <typename R, typename F>
absl::StatusOr<std::optional<R>> CallSerializer(F&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(std::string("the serializer threw: ") + e.what());
  } catch (...) {
    return absl::InvalidArgumentError("the serializer threw a non-standard exception");
  }
}

// A serialization error that is a configuration error rather than a bad record (a serializer
// that returns what the sink never accepts, for every record alike): AsyncSinkWriterFront fails
// the job with it instead of routing the record, so a dropping handler cannot empty the stream
// under a green job. The mark is a status payload; the code and message are kept.
inline constexpr char kConfigurationErrorPayload[] = "gcpstream.dev/configuration-error";
inline absl::Status ConfigurationError(absl::Status status) {
  status.SetPayload(kConfigurationErrorPayload, absl::Cord("1"));
  return status;
}
inline bool IsConfigurationError(const absl::Status& status) {
  return status.GetPayload(kConfigurationErrorPayload).has_value();
}

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_SERIALIZATION_H_
