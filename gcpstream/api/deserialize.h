#ifndef GCPSTREAM_API_DESERIALIZE_H_
#define GCPSTREAM_API_DESERIALIZE_H_

#include <exception>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gcpstream/api/collector.h"

namespace gcpstream {

// Runs a source's zero-to-many deserializer for one input: `call(out)` collects records into
// `records` (cleared first; a scratch vector a reader reuses). A thrown exception becomes
// INTERNAL with its text. A failure comes back with its code kept and `where()` (what failed,
// and on which input) before its message; `where` runs only then. The caller emits `records`
// and counts an empty result as skipped.
template <typename T, typename Call, typename Where>
absl::Status RunDeserializer(std::vector<T>& records, Call&& call, Where&& where) {
  records.clear();
  VectorCollector<T> out(records);
  absl::Status status;
  try {
    status = call(out);
  } catch (const std::exception& e) {
    status = absl::InternalError(e.what());
  }
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(where(), ": ", status.message()));
}

}  // namespace gcpstream

#endif  // GCPSTREAM_API_DESERIALIZE_H_
