#include "gcpstream/pipeline/option_location.h"

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>

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
  // A leading "sink: " or "source: " names the section: only its options are candidates.
  std::string section;
  for (const char* name : {"source", "transform", "sink", "checkpointing", "failure_handler"}) {
    const std::string prefix = std::string(name) + ": ";
    if (message.substr(0, prefix.size()) == prefix) section = name;
  }
  // Among the options the message names, prefer option-like keys (with an underscore, such as
  // "deserialization_failure_policy") over plain words that also name resources
  // ("subscription", "topic"), then the one named first.
  const OptionRecord* best = nullptr;
  std::pair<bool, std::size_t> best_rank{true, std::string_view::npos};
  for (const auto& option : options) {
    if (option.location.empty()) continue;
    if (!section.empty() && option.path.rfind(section + ".", 0) != 0) continue;
    const std::size_t dot = option.path.rfind('.');
    const std::string_view key = dot == std::string::npos
                                     ? std::string_view(option.path)
                                     : std::string_view(option.path).substr(dot + 1);
    const std::size_t at = FindWord(message, key);
    if (at == std::string_view::npos) continue;
    const std::pair<bool, std::size_t> rank{key.find('_') == std::string_view::npos, at};
    if (best == nullptr || rank < best_rank) {
      best = &option;
      best_rank = rank;
    }
  }
  if (best == nullptr) return error;
  // "sink: ..." says less than the path that now precedes it.
  std::string_view rest = message;
  const std::string prefix = best->path.substr(0, best->path.find('.')) + ": ";
  if (rest.substr(0, prefix.size()) == prefix) rest.remove_prefix(prefix.size());
  return absl::Status(error.code(), fmt::format("{}: {}: {}", best->location, best->path, rest));
}

}  // namespace gcpstream::pipeline
