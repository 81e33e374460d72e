#include "gcpstream/bigquery/sink/staged_files_ledger.h"

#include <limits>

namespace gcpstream::bigquery {

void StagedFilesLedger::finished(const std::string& table, const std::string& uri,
                                 std::int64_t rows, std::int64_t bytes) {
  std::lock_guard lock(mu_);
  StagedFiles& files = pending_[table];
  files.table = table;
  files.uris.push_back(uri);
  files.rows += rows;
  files.bytes += bytes;
}

std::vector<StagedFiles> StagedFilesLedger::prepare_commit_at(std::int64_t checkpoint_id) {
  std::map<std::string, StagedFiles> taken;
  {
    std::lock_guard lock(mu_);
    taken.swap(pending_);
  }
  std::vector<StagedFiles> out;
  out.reserve(taken.size());
  for (auto& [table, files] : taken) {
    files.checkpoint_id =
        checkpoint_id == std::numeric_limits<std::int64_t>::max() ? -1 : checkpoint_id;
    out.push_back(std::move(files));
  }
  return out;
}

std::vector<StagedFiles> StagedFilesLedger::prepare_commit() {
  return prepare_commit_at(std::numeric_limits<std::int64_t>::max());
}

bool StagedFilesLedger::clean(const std::string& table) const {
  std::lock_guard lock(mu_);
  return pending_.count(table) == 0;
}

}  // namespace gcpstream::bigquery
