#ifndef GCPSTREAM_PIPELINE_SPEC_PARSER_H_
#define GCPSTREAM_PIPELINE_SPEC_PARSER_H_

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "gcpstream/pipeline/pipeline_spec.h"

namespace gcpstream::pipeline {

// Environment lookup for ${VAR} substitution: a variable's value, or nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// Parses a pipeline file's text. `file_name` prefixes error messages. String values may use
// ${VAR} and ${VAR:-default} (from `env`, the process environment by default).
//
// Errors are INVALID_ARGUMENT "file:line:column: key.path: what", naming an unknown key with
// the keys allowed there, a wrong type with the type expected, or a value outside its allowed
// values with the list; YAML syntax errors carry yaml-cpp's position. Only the first problem
// is reported.
absl::StatusOr<PipelineSpec> ParsePipelineSpec(const std::string& text,
                                               const std::string& file_name,
                                               const EnvLookup& env = {});

// Reads and parses a file; NOT_FOUND naming the path when it cannot be read.
// Reads and parses a pipeline file of at most kMaxPipelineFileBytes (INVALID_ARGUMENT beyond).
absl::StatusOr<PipelineSpec> LoadPipelineSpec(const std::string& path, const EnvLookup& env = {});
inline constexpr std::size_t kMaxPipelineFileBytes = 1024 * 1024;

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_SPEC_PARSER_H_
