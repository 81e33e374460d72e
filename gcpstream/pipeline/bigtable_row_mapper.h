#ifndef GCPSTREAM_PIPELINE_BIGTABLE_ROW_MAPPER_H_
#define GCPSTREAM_PIPELINE_BIGTABLE_ROW_MAPPER_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/bigtable/client/row_mutation_entry.h"
#include "gcpstream/pipeline/pipeline_record.h"
#include "gcpstream/pipeline/pipeline_spec.h"
#include "gcpstream/pipeline/record_template.h"

namespace gcpstream::pipeline {

// Turns a record into one Bigtable row as `transform.to_bigtable` says: the row key from its
// template, one cell per column (family:qualifier = the column template's text), every cell
// stamped with the timestamp field (so a replay overwrites the same versions) or, without one,
// with the writer's clock; then one AddToCell per add_to_cell column (the rendered text read as
// a signed 64-bit integer) at the timestamp field's time or, without one, at timestamp 0.
//
// Immutable; thread-safe.
class BigtableRowMapper {
 public:
  // INVALID_ARGUMENT for a malformed template.
  static absl::StatusOr<BigtableRowMapper> make(const BigtableMappingSpec& spec);

  // INVALID_ARGUMENT naming the field for a missing placeholder (unless skip_missing_fields
  // skips that cell; the row key is always required), an unreadable timestamp, or an
  // add_to_cell value that is not an integer.
  absl::StatusOr<bigtable::RowMutationEntry> map(const PipelineRecord& record) const;

 private:
  BigtableMappingSpec spec_;
  RecordTemplate row_key_;
  std::vector<std::pair<std::string, RecordTemplate>> columns_;
  std::vector<std::pair<std::string, RecordTemplate>> add_to_cell_;
};

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_BIGTABLE_ROW_MAPPER_H_
