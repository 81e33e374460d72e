#ifndef GCPSTREAM_PIPELINE_RECORD_FILTER_H_
#define GCPSTREAM_PIPELINE_RECORD_FILTER_H_

#include <vector>

#include "gcpstream/pipeline/pipeline_record.h"
#include "gcpstream/pipeline/pipeline_spec.h"

namespace gcpstream::pipeline {

// Whether one comparison holds for a record. The field is looked up like a template
// placeholder (a field, then an attribute). A missing field satisfies only `not_exists` (and
// `ne`). Numbers compare numerically when both sides are numbers (or the attribute's text parses
// as one); otherwise both sides compare as text, so lt/gt order strings lexicographically.
// Pure; thread-safe.
bool Holds(const FieldComparison& comparison, const PipelineRecord& record);

// The transform's keep/drop rule: every `keep` comparison holds and no `drop` comparison does.
bool Passes(const TransformSpec& transform, const PipelineRecord& record);

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_RECORD_FILTER_H_
