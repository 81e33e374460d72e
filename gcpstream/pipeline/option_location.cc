#include "gcpstream/pipeline/option_location.h"

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace gcpstream::pipeline {
namespace {

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Where `word` first appears in `text` as a whole word, or npos.
std::size_t FindWord(std::string_view text, std::string_view word) {
  for (std::size_t at = text.find(word); at != std::string_view::npos;
       at = text.find(word, at + 1)) {
    const bool starts = at == 0 || !IsWordChar(text[at - 1]);
    const std::size_t end = at + word.size();
    const bool ends = end == text.size() || !IsWordChar(text[end]);
    if (starts && ends) return at;
  }
  return std::string_view::npos;
}

}  // namespace

absl::Status LocateOptionError(const std::vector<OptionRecord>& options,
                               const absl::Status& error) {
  if (error.ok()) return error;
  const std::string_view message(error.message().data(), error.message().size());
  const OptionRecord* best = nullptr;
  std::size_t best_at = std::string_view::npos;
  for (const auto& option : options) {
    if (option.location.empty()) continue;
    const std::size_t dot = option.path.rfind('.');
    const std::string_view key = dot == std::string::npos
                                     ? std::string_view(option.path)
                                     : std::string_view(option.path).substr(dot + 1);
    const std::size_t at = FindWord(message, key);
    if (at < best_at) {
      best = &option;
      best_at = at;
    }
  }
  if (best == nullptr) return error;
  // "sink: ..." says less than the path that now precedes it.
  std::string_view rest = message;
  const std::string section = best->path.substr(0, best->path.find('.')) + ": ";
  if (rest.substr(0, section.size()) == section) rest.remove_prefix(section.size());
  return absl::Status(error.code(), fmt::format("{}: {}: {}", best->location, best->path, rest));
}

}  // namespace gcpstream::pipeline
