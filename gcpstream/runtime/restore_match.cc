#include "gcpstream/runtime/restore_match.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace gcpstream::runtime {

std::string OperatorIdentity(const LineageVertex& vertex) {
  if (vertex.datasets.empty()) return "";
  std::vector<std::string> names;
  for (const auto& d : vertex.datasets) {
    if (d.name_space.empty() || d.name_space.back() == '/') {
      names.push_back(d.name_space + d.name);
    } else {
      names.push_back(d.name_space + "/" + d.name);
    }
  }
  std::sort(names.begin(), names.end());
  std::string out = vertex.connector;
  for (const auto& n : names) out += " " + n;
  return out;
}

std::map<std::string, std::string> OperatorIdentities(const JobGraph& graph) {
  std::map<std::string, std::string> out;
  for (const auto& node : graph.nodes) {
    if (!node.lineage) continue;
    std::string identity = OperatorIdentity(*node.lineage);
    if (!identity.empty()) out[node.uid] = std::move(identity);
  }
  return out;
}

RestoreMismatch MatchRestore(const CompletedCheckpoint& checkpoint, const std::string& job_name,
                             const JobGraph& graph) {
  RestoreMismatch m;
  if (!checkpoint.is_savepoint && !checkpoint.job_name.empty() && checkpoint.job_name != job_name) {
    m.differences.push_back(
        fmt::format("it was written by job '{}', this job is '{}'", checkpoint.job_name, job_name));
  }
  const auto identities = OperatorIdentities(graph);
  std::set<std::string> uids;
  for (const auto& node : graph.nodes) uids.insert(node.uid);
  std::set<std::string> unmatched;
  for (const auto& [uid, recorded] : checkpoint.operator_identities) {
    auto now = identities.find(uid);
    if (now == identities.end() || now->second == recorded) continue;
    m.differences.push_back(
        fmt::format("operator '{}' used '{}' and now uses '{}'", uid, recorded, now->second));
    unmatched.insert(uid);
  }
  for (const auto& [uid, state] : checkpoint.operators) {
    if (uids.count(uid) > 0) continue;
    m.differences.push_back(
        fmt::format("it holds state of operator '{}', which this job does not have", uid));
    unmatched.insert(uid);
  }
  m.unmatched_uids.assign(unmatched.begin(), unmatched.end());
  return m;
}

}  // namespace gcpstream::runtime
