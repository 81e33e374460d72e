#include "gcpstream/bigquery/schema/proto_schema_options.h"

#include <fmt/format.h>

#include "absl/strings/str_split.h"

namespace gcpstream::bigquery {
namespace {

using google::protobuf::FieldDescriptor;

constexpr int kMaxFieldNumber = FieldDescriptor::kMaxNumber;

absl::Status CheckPaths(const std::set<std::string>& paths, const char* what) {
  for (const std::string& path : paths) {
    for (absl::string_view segment : absl::StrSplit(path, '.')) {
      if (segment.empty()) {
        return absl::InvalidArgumentError(
            fmt::format("{} \"{}\" has an empty segment; write declared field names joined by "
                        "dots, from the root message",
                        what, path));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckNumbers(const std::map<int, ProtoSchemaOptions::FieldOption>& options,
                          const char* what) {
  for (const auto& [number, option] : options) {
    if (number < 1 || number > kMaxFieldNumber) {
      return absl::InvalidArgumentError(fmt::format(
          "{} number {} is outside protobuf's field numbers 1..{}", what, number, kMaxFieldNumber));
    }
  }
  return absl::OkStatus();
}

}  // namespace

void ProtoSchemaOptions::AddOption(std::map<int, FieldOption>& to, FieldOption option) {
  auto it = to.find(option.number);
  if (it != to.end() && option.full_name.empty() && !it->second.full_name.empty()) return;
  to[option.number] = std::move(option);
}

void ProtoSchemaOptions::AddOption(std::map<int, FieldOption>& to, const FieldDescriptor* ext) {
  if (ext == nullptr) {
    extension_errors_.push_back("a field option marker was given as a null extension");
    return;
  }
  if (!ext->is_extension() || ext->containing_type() == nullptr ||
      ext->containing_type()->full_name() != "google.protobuf.FieldOptions") {
    extension_errors_.push_back(
        fmt::format("field option marker {} is not an extension of google.protobuf.FieldOptions",
                    ext->full_name()));
    return;
  }
  if (ext->type() != FieldDescriptor::TYPE_BOOL || ext->is_repeated()) {
    extension_errors_.push_back(
        fmt::format("field option marker {} must be a singular bool extension, it is a {}{}",
                    ext->full_name(), ext->is_repeated() ? "repeated " : "", ext->type_name()));
    return;
  }
  AddOption(to, FieldOption{ext->number(), std::string(ext->full_name())});
}

absl::Status ProtoSchemaOptions::validate() const {
  if (!extension_errors_.empty()) return absl::InvalidArgumentError(extension_errors_.front());
  if (auto s = CheckPaths(json_paths_, "jsonFieldPath"); !s.ok()) return s;
  if (auto s = CheckPaths(geography_paths_, "geographyFieldPath"); !s.ok()) return s;
  if (auto s = CheckNumbers(json_options_, "jsonFieldOption"); !s.ok()) return s;
  if (auto s = CheckNumbers(geography_options_, "geographyFieldOption"); !s.ok()) return s;
  for (const auto& [number, option] : json_options_) {
    if (geography_options_.contains(number)) {
      return absl::InvalidArgumentError(fmt::format(
          "field option number {} is registered both as a JSON and as a GEOGRAPHY marker; a "
          "column has one type",
          number));
    }
  }
  return absl::OkStatus();
}

}  // namespace gcpstream::bigquery
