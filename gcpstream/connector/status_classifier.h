#ifndef GCPSTREAM_CONNECTOR_STATUS_CLASSIFIER_H_
#define GCPSTREAM_CONNECTOR_STATUS_CLASSIFIER_H_

#include <set>
#include <string_view>

#include "absl/status/status.h"

namespace gcpstream::connector {

// What a failure means for the record (or request) behind it.
enum class FailureClass {
  kRecordLevel,  // the record itself is refused; may be routed to a failure handler
  kRepairable,   // NOT_FOUND under a create disposition: create, then apply again
  kTransient,    // the service is unstable; never routed, never dropped
  kAmbiguous,    // a single-row request ended without an answer: it may or may not have applied
  kFatal,        // everything else: fail the job
};

std::string_view FailureClassName(FailureClass c);

// Per-connector knobs of the one classifier.
struct ClassifierRules {
  // Codes that identify a bad record when they are the chain's first classifiable status
  // (INVALID_ARGUMENT everywhere; Spanner adds ALREADY_EXISTS for inserts).
  std::set<absl::StatusCode> record_level = {absl::StatusCode::kInvalidArgument};
  // NOT_FOUND anywhere in the chain is repairable (a create disposition allows creation).
  // Checked ahead of everything else: acting on it is safe because a repair re-applies and
  // never discards.
  bool not_found_is_repairable = false;
  // Single-row request-response RPCs: one attempt, no retry, so a failure that ended the call
  // before an answer is ambiguous rather than transient.
  bool single_row_request = false;
};

// Codes that mean "the service was unstable": UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED,
// RESOURCE_EXHAUSTED, CANCELLED.
bool IsTransientCode(absl::StatusCode code);

// Classifies `status` with its cause chain (see status_chain.h). A record-level verdict needs
// both: no transient status anywhere in the chain (an unstable service never produces a dead
// letter, even behind a data-shaped status), and the chain's first classifiable status (the
// outermost that is not OK) being a record-level code (one buried under INTERNAL or UNKNOWN
// describes an inner call, not this record).
FailureClass Classify(const absl::Status& status, const ClassifierRules& rules = {});

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_STATUS_CLASSIFIER_H_
