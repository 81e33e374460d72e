#ifndef GCPSTREAM_API_STATUS_MACROS_H_
#define GCPSTREAM_API_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/util/absl_fmt.h"

// Early-return helpers for absl::Status / absl::StatusOr, used across gcpstream.
//
//   GCP_RETURN_IF_ERROR(writer->flush(false));
//   GCP_ASSIGN_OR_RETURN(auto entry, serializer.serialize(element));

#define GCP_STATUS_CONCAT_INNER_(a, b) a##b
#define GCP_STATUS_CONCAT_(a, b) GCP_STATUS_CONCAT_INNER_(a, b)

#define GCP_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::absl::Status gcp_status_ = (expr);       \
    if (!gcp_status_.ok()) return gcp_status_; \
  } while (false)

#define GCP_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return std::move(tmp).status();   \
  lhs = std::move(tmp).value()

#define GCP_ASSIGN_OR_RETURN(lhs, expr) \
  GCP_ASSIGN_OR_RETURN_IMPL_(GCP_STATUS_CONCAT_(gcp_statusor_, __LINE__), lhs, expr)

#endif  // GCPSTREAM_API_STATUS_MACROS_H_
