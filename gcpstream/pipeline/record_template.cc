#include "gcpstream/pipeline/record_template.h"

#include <fmt/format.h>

namespace gcpstream::pipeline {

absl::StatusOr<RecordTemplate> RecordTemplate::parse(const std::string& text) {
  RecordTemplate t;
  t.text_ = text;
  std::string literal;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '{' && i + 1 < text.size() && text[i + 1] == '{') {
      literal += '{';
      ++i;
      continue;
    }
    if (c == '}' && i + 1 < text.size() && text[i + 1] == '}') {
      literal += '}';
      ++i;
      continue;
    }
    if (c == '}') {
      return absl::InvalidArgumentError(fmt::format(
          "template \"{}\": '}}' at position {} closes nothing (write '}}}}' for a literal brace)",
          text, i));
    }
    if (c != '{') {
      literal += c;
      continue;
    }
    const std::size_t close = text.find('}', i + 1);
    if (close == std::string::npos) {
      return absl::InvalidArgumentError(
          fmt::format("template \"{}\": '{{' at position {} is never closed", text, i));
    }
    std::string name = text.substr(i + 1, close - i - 1);
    if (name.empty() || name.find('{') != std::string::npos) {
      return absl::InvalidArgumentError(fmt::format(
          "template \"{}\": placeholder at position {} must be a field or attribute name", text,
          i));
    }
    if (!literal.empty()) t.parts_.push_back(Part{false, std::move(literal)});
    literal.clear();
    t.parts_.push_back(Part{true, std::move(name)});
    i = close;
  }
  if (!literal.empty()) t.parts_.push_back(Part{false, std::move(literal)});
  return t;
}

RecordTemplate RecordTemplate::of_field(const std::string& field) {
  RecordTemplate t;
  t.text_ = "{" + field + "}";
  t.parts_.push_back(Part{true, field});
  return t;
}

absl::StatusOr<std::string> RecordTemplate::render(const PipelineRecord& record) const {
  std::string out;
  for (const auto& part : parts_) {
    if (!part.placeholder) {
      out += part.text;
      continue;
    }
    std::optional<std::string> value = record.lookup(part.text);
    if (!value) {
      return absl::InvalidArgumentError(fmt::format(
          "the record has no field or attribute '{}' (template \"{}\")", part.text, text_));
    }
    out += *value;
  }
  return out;
}

std::vector<std::string> RecordTemplate::names() const {
  std::vector<std::string> out;
  for (const auto& p : parts_) {
    if (p.placeholder) out.push_back(p.text);
  }
  return out;
}

}  // namespace gcpstream::pipeline
