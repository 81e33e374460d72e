#include "gcpstream/pubsub/admin/resource_names.h"

#include <fmt/format.h>

#include <cctype>

namespace gcpstream::pubsub {

absl::Status ValidateResourceId(std::string_view kind, std::string_view id) {
  auto invalid = [&](std::string_view why) {
    return absl::InvalidArgumentError(fmt::format(
        "'{}' is not a valid Pub/Sub {} id: {} (ids are 3 to 255 characters, start with a "
        "letter, use only letters, digits and - _ . ~ + %, and do not start with 'goog')",
        id, kind, why));
  };
  if (id.size() < 3) return invalid("too short");
  if (id.size() > 255) return invalid("too long");
  if (!std::isalpha(static_cast<unsigned char>(id[0])))
    return invalid("it must start with a letter");
  for (const char c : id) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ||
                    c == '.' || c == '~' || c == '+' || c == '%';
    if (!ok) {
      const auto u = static_cast<unsigned char>(c);
      return invalid(std::isprint(u) ? fmt::format("it contains '{}'", c)
                                     : fmt::format("it contains the byte {:#04x}", u));
    }
  }
  std::string prefix(id.substr(0, 4));
  for (auto& c : prefix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (prefix == "goog") return invalid("it starts with 'goog'");
  return absl::OkStatus();
}

}  // namespace gcpstream::pubsub
