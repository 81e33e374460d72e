#include "gcpstream/runtime/state_redistribution.h"

#include <set>
#include <string>
#include <vector>

namespace gcpstream::runtime {

std::map<int, OperatorStateReader> Redistribute(const CompletedCheckpoint::OperatorState& state,
                                                int new_parallelism) {
  std::map<int, OperatorStateReader> out;
  if (auto it = state.subtasks.find(kCoordinatorSubtask); it != state.subtasks.end()) {
    out.emplace(kCoordinatorSubtask, OperatorStateReader(it->second));
  }
  std::set<std::string> names;
  for (const auto& [subtask, lists] : state.subtasks) {
    if (subtask == kCoordinatorSubtask) continue;
    for (const auto& [name, elements] : lists) names.insert(name);
  }
  if (names.empty()) return out;
  std::vector<std::map<std::string, std::vector<StateElement>>> next(
      static_cast<std::size_t>(new_parallelism));
  for (const auto& name : names) {
    for (auto& lists : next) lists[name];  // declared everywhere
    const bool broadcast = std::string_view(name).substr(0, kBroadcastListPrefix.size()) ==
                           kBroadcastListPrefix;
    if (state.parallelism == new_parallelism && !broadcast) {
      for (const auto& [subtask, lists] : state.subtasks) {
        if (subtask == kCoordinatorSubtask || subtask >= new_parallelism) continue;
        auto it = lists.find(name);
        if (it != lists.end()) next[static_cast<std::size_t>(subtask)][name] = it->second;
      }
      continue;
    }
    std::vector<StateElement> all;
    for (const auto& [subtask, lists] : state.subtasks) {
      if (subtask == kCoordinatorSubtask) continue;
      auto it = lists.find(name);
      if (it != lists.end()) all.insert(all.end(), it->second.begin(), it->second.end());
    }
    if (broadcast) {
      for (auto& lists : next) lists[name] = all;
      continue;
    }
    const std::size_t n = all.size();
    const std::size_t p = static_cast<std::size_t>(new_parallelism);
    std::size_t start = 0;
    for (std::size_t i = 0; i < p; ++i) {
      const std::size_t size = n / p + (i < n % p ? 1 : 0);
      auto& target = next[i][name];
      target.assign(all.begin() + static_cast<std::ptrdiff_t>(start),
                    all.begin() + static_cast<std::ptrdiff_t>(start + size));
      start += size;
    }
  }
  for (int i = 0; i < new_parallelism; ++i) {
    out.emplace(i, OperatorStateReader(std::move(next[static_cast<std::size_t>(i)])));
  }
  return out;
}

}  // namespace gcpstream::runtime
