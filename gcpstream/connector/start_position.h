#ifndef GCPSTREAM_CONNECTOR_START_POSITION_H_
#define GCPSTREAM_CONNECTOR_START_POSITION_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace gcpstream::connector {

// Where a fresh change-stream read begins (Spanner and Bigtable change streams), resolved once
// on the coordinator against its clock. A restore never uses it: it resumes from checkpointed
// positions. Value type.
class StartPosition {
 public:
  // The moment the coordinator starts (the default).
  static StartPosition latest() { return StartPosition(Kind::kLatest); }
  // A commit timestamp (inclusive). The service refuses one before the stream existed or beyond
  // its retention.
  static StartPosition absolute(absl::Time at) {
    StartPosition p(Kind::kAbsolute);
    p.at_ = at;
    return p;
  }
  // `ago` before the moment the coordinator starts.
  static StartPosition relative(absl::Duration ago) {
    StartPosition p(Kind::kRelative);
    p.ago_ = ago;
    return p;
  }
  absl::Time resolve(absl::Time now) const;
  std::string describe() const;
  // INVALID_ARGUMENT, prefixed with `source`, for a negative or absurd relative offset or an
  // absolute time outside years 1 to 9999.
  absl::Status validate(std::string_view source) const;

 private:
  enum class Kind { kLatest, kAbsolute, kRelative };
  explicit StartPosition(Kind kind) : kind_(kind) {}
  Kind kind_;
  absl::Time at_;
  absl::Duration ago_;
};

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_START_POSITION_H_
