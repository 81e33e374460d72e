#include "gcpstream/pipeline/record_json.h"

#include "gcpstream/util/json.h"

namespace gcpstream::pipeline {

absl::StatusOr<nlohmann::json> ParseRecordJson(std::string_view text) {
  return util::ParseJsonBounded(text, kMaxRecordJsonDepth);
}

}  // namespace gcpstream::pipeline
