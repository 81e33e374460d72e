#ifndef GCPSTREAM_PIPELINE_BIGTABLE_ROW_MAPPER_H_
#define GCPSTREAM_PIPELINE_BIGTABLE_ROW_MAPPER_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/bigtable/client/row_mutation_entry.h"
#include "gcpstream/bigtable/requests/conditional_request.h"
#include "gcpstream/bigtable/requests/read_modify_write_request.h"
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

  // Sink mode CONDITIONAL: the row key, the `when` predicate, map()'s mutations on match and the
  // `otherwise` cells when it does not match (the same timestamp rule). INVALID_ARGUMENT as
  // map(), or without `when`.
  absl::StatusOr<bigtable::ConditionalRequest> map_conditional(const PipelineRecord& record) const;
  // Sink mode READ_MODIFY_WRITE: the row key, then the `append` and `increment` rules in file
  // order (an increment's text read as a signed 64-bit integer). INVALID_ARGUMENT as map().
  absl::StatusOr<bigtable::ReadModifyWriteRequest> map_read_modify_write(
      const PipelineRecord& record) const;

 private:
  // The template's text as an int64 for `section`.`qualifier`; nothing for a missing field under
  // skip_missing_fields.
  absl::StatusOr<std::optional<std::int64_t>> Integer(const PipelineRecord& record,
                                                      const char* section,
                                                      const std::string& qualifier,
                                                      const RecordTemplate& tmpl) const;

  BigtableMappingSpec spec_;
  RecordTemplate row_key_;
  std::vector<std::pair<std::string, RecordTemplate>> columns_;
  std::vector<std::pair<std::string, RecordTemplate>> add_to_cell_;
  std::vector<std::pair<std::string, RecordTemplate>> increment_;
  std::vector<std::pair<std::string, RecordTemplate>> append_;
  std::vector<std::pair<std::string, RecordTemplate>> otherwise_;
  std::optional<RecordTemplate> when_value_;
};

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_BIGTABLE_ROW_MAPPER_H_
