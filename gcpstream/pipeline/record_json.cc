#include "gcpstream/pipeline/record_json.h"

#include "absl/strings/escaping.h"
#include "gcpstream/util/json.h"
#include "gcpstream/util/utf8.h"

namespace gcpstream::pipeline {

absl::StatusOr<nlohmann::json> ParseRecordJson(std::string_view text) {
  return util::ParseJsonBounded(text, kMaxRecordJsonDepth);
}

void PutBytesField(nlohmann::json& out, const std::string& name, const std::string& bytes) {
  if (!util::InvalidUtf8At(bytes)) {
    out[name] = bytes;
  } else {
    out[name + "_base64"] = absl::Base64Escape(bytes);
  }
}

}  // namespace gcpstream::pipeline
