#ifndef GCPSTREAM_CONNECTOR_STATUS_CHAIN_H_
#define GCPSTREAM_CONNECTOR_STATUS_CHAIN_H_

#include <vector>

#include "absl/status/status.h"

namespace gcpstream::connector {

// A failure and its causes. absl::Status has no cause of its own, so the cause travels in a
// payload: WithCause(outer, inner) returns `outer` carrying `inner` (and inner's own chain).
// The gRPC code of every link is preserved, which is what classification reads.
absl::Status WithCause(absl::Status status, const absl::Status& cause);

// The chain, outermost first: the status itself, its cause, that cause's cause, ...
std::vector<absl::Status> CauseChain(const absl::Status& status);

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_STATUS_CHAIN_H_
