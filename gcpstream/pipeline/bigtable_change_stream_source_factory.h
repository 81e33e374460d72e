#ifndef GCPSTREAM_PIPELINE_BIGTABLE_CHANGE_STREAM_SOURCE_FACTORY_H_
#define GCPSTREAM_PIPELINE_BIGTABLE_CHANGE_STREAM_SOURCE_FACTORY_H_

#include "absl/status/statusor.h"
#include "gcpstream/bigtable/changestream/change_stream_mutation.h"
#include "gcpstream/pipeline/pipeline_record.h"
#include "gcpstream/pipeline/pipeline_source.h"
#include "gcpstream/pipeline/pipeline_spec.h"

namespace gcpstream::pipeline {

// One pipeline record per change-stream mutation. Byte strings (row key, qualifiers, values)
// appear as text under their name when they are valid UTF-8, and otherwise in padded standard
// Base64 under the name with "_base64" appended, so no byte is lost or guessed. Fields:
// _row_key, _mod_type (USER or GARBAGE_COLLECTION), _commit_timestamp (RFC 3339),
// _tiebreaker, _source_cluster, _low_watermark (RFC 3339), and _entries: a list of objects with
// kind (SET_CELL, DELETE_CELLS, DELETE_FAMILY, ADD_TO_CELL, MERGE_TO_CELL), family, and as the
// kind has them qualifier, timestamp_micros, value, start_micros/end_micros (0: unbounded),
// and input (an int64 as a number; bytes as text or input_base64) with input_type. The event
// time is the commit timestamp (ms).
PipelineRecord ChangeStreamMutationToPipelineRecord(
    const bigtable::BigtableChangeStreamMutation& m);

// The `source: {type: bigtable_change_stream}` of a pipeline.
absl::StatusOr<PipelineSource> MakeBigtableChangeStreamPipelineSource(
    const BigtableChangeStreamSourceSpec& spec);

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_BIGTABLE_CHANGE_STREAM_SOURCE_FACTORY_H_
