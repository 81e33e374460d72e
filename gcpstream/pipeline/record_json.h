#ifndef GCPSTREAM_PIPELINE_RECORD_JSON_H_
#define GCPSTREAM_PIPELINE_RECORD_JSON_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace gcpstream::pipeline {

// The deepest nesting of arrays and objects a record's JSON may have. Records are flat in
// practice; the cap exists because code that walks a value recursively (copying it, dumping it,
// reading a template's path) would overflow the stack on hostile input (100,000 nested arrays
// crashed the process before the cap).
inline constexpr std::size_t kMaxRecordJsonDepth = 256;

// Parses one record's JSON text. INVALID_ARGUMENT when it is not valid JSON (with the parser's
// explanation and byte position) or nests deeper than kMaxRecordJsonDepth (with the byte where
// the limit was crossed). Never throws; the depth is checked before any parsing.
absl::StatusOr<nlohmann::json> ParseRecordJson(std::string_view text);

// Puts service bytes (a row key, a qualifier, a cell value) into `out`: as text under `name`
// when they are valid UTF-8, otherwise in padded standard Base64 under `name` + "_base64", so no
// byte is lost or guessed.
void PutBytesField(nlohmann::json& out, const std::string& name, const std::string& bytes);

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_RECORD_JSON_H_
