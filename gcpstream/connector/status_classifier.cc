#include "gcpstream/connector/status_classifier.h"

#include "gcpstream/connector/status_chain.h"

namespace gcpstream::connector {

std::string_view FailureClassName(FailureClass c) {
  switch (c) {
    case FailureClass::kRecordLevel:
      return "record-level";
    case FailureClass::kRepairable:
      return "repairable";
    case FailureClass::kTransient:
      return "transient";
    case FailureClass::kAmbiguous:
      return "ambiguous";
    case FailureClass::kFatal:
      return "fatal";
  }
  return "unknown";
}

bool IsTransientCode(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kCancelled:
      return true;
    default:
      return false;
  }
}

namespace {

bool IsAmbiguousCode(absl::StatusCode code) {
  return code == absl::StatusCode::kDeadlineExceeded || code == absl::StatusCode::kUnavailable ||
         code == absl::StatusCode::kAborted || code == absl::StatusCode::kCancelled;
}

}  // namespace

FailureClass Classify(const absl::Status& status, const ClassifierRules& rules) {
  if (status.ok()) return FailureClass::kFatal;  // not a failure: never route it
  const auto chain = CauseChain(status);
  if (rules.not_found_is_repairable && !rules.single_row_request) {
    for (const auto& s : chain) {
      if (s.code() == absl::StatusCode::kNotFound) return FailureClass::kRepairable;
    }
  }
  for (const auto& s : chain) {
    if (rules.single_row_request && IsAmbiguousCode(s.code())) return FailureClass::kAmbiguous;
    if (!rules.single_row_request && IsTransientCode(s.code())) return FailureClass::kTransient;
  }
  for (const auto& s : chain) {
    if (s.ok()) continue;  // a link without a status of its own is not classifiable
    return rules.record_level.count(s.code()) > 0 ? FailureClass::kRecordLevel
                                                  : FailureClass::kFatal;
  }
  return FailureClass::kFatal;
}

}  // namespace gcpstream::connector
