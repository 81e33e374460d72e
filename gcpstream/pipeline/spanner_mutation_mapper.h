#ifndef GCPSTREAM_PIPELINE_SPANNER_MUTATION_MAPPER_H_
#define GCPSTREAM_PIPELINE_SPANNER_MUTATION_MAPPER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/pipeline/pipeline_record.h"
#include "gcpstream/pipeline/pipeline_spec.h"
#include "gcpstream/pipeline/record_template.h"
#include "gcpstream/spanner/client/mutation.h"
#include "gcpstream/spanner/client/value.h"

namespace gcpstream::pipeline {

// Turns a record into one Spanner mutation as `transform.to_spanner` says: the operation on the
// table, one column per entry, each rendered from its template and read as its type. A column
// that is a bare field whose JSON value is null is written as NULL of its type. Text is read
// as each type's wire text: INT64 a decimal integer, FLOAT64 a decimal number (or NaN,
// Infinity, -Infinity), BOOL true/false, NUMERIC a decimal (at most 29 integer and 9 fraction
// digits), JSON any JSON document (a field holding an object or array is written as its JSON),
// BYTES base64 (decoded), DATE YYYY-MM-DD, TIMESTAMP RFC 3339 with any UTC offset (sent in UTC).
//
// Immutable; thread-safe.
class SpannerMutationMapper {
 public:
  // INVALID_ARGUMENT for an unknown operation or type, or a template that does not parse.
  static absl::StatusOr<SpannerMutationMapper> make(const SpannerMappingSpec& spec);
  // INVALID_ARGUMENT naming the column for a missing field or a value its type cannot hold.
  absl::StatusOr<spanner::Mutation> map(const PipelineRecord& record) const;

 private:
  struct Column {
    std::string name;
    RecordTemplate value;
    std::string single_field;  // set when the template is exactly "{field}"
    google::spanner::v1::TypeCode type;
  };
  absl::StatusOr<spanner::Value> value_of(const Column& c, const PipelineRecord& record) const;

  SpannerMappingSpec spec_;
  spanner::Mutation::Op op_ = spanner::Mutation::Op::kInsertOrUpdate;
  std::vector<Column> columns_;
};

// The type names `to_spanner` accepts, in the order the docs list them.
const std::vector<std::string>& SpannerColumnTypes();

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_SPANNER_MUTATION_MAPPER_H_
