#include "gcpstream/bigtable/changestream/change_stream_mutation.h"

namespace gcpstream::bigtable {

const std::string& FamilyOf(const ChangeStreamEntry& e) {
  return std::visit([](const auto& entry) -> const std::string& { return entry.family; }, e);
}

const std::string* QualifierOf(const ChangeStreamEntry& e) {
  return std::visit(
      [](const auto& entry) -> const std::string* {
        if constexpr (std::is_same_v<std::decay_t<decltype(entry)>, DeleteFamilyEntry>) {
          return nullptr;
        } else {
          return &entry.qualifier;
        }
      },
      e);
}

}  // namespace gcpstream::bigtable
