#ifndef GCPSTREAM_PIPELINE_SPANNER_CHANGE_STREAM_SOURCE_FACTORY_H_
#define GCPSTREAM_PIPELINE_SPANNER_CHANGE_STREAM_SOURCE_FACTORY_H_

#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/pipeline/pipeline_record.h"
#include "gcpstream/pipeline/pipeline_source.h"
#include "gcpstream/pipeline/pipeline_spec.h"
#include "gcpstream/spanner/changestream/change_stream_record.h"

namespace gcpstream::pipeline {

// One pipeline record per row modification of `record`. Its fields: the key columns and the new
// values at the top level (the row as the change left it; a delete has only its keys), and the
// change's metadata under names starting with '_': _table, _mod_type, _commit_timestamp
// (RFC 3339), _server_transaction_id, _record_sequence, _value_capture_type,
// _transaction_tag, _mod_index, and _old_values (an object, present only when Spanner sent the
// old values). The record's event time is the commit timestamp (ms). INVALID_ARGUMENT when a
// value object is not a JSON object.
absl::StatusOr<std::vector<PipelineRecord>> DataChangeRecordToPipelineRecords(
    const spanner::DataChangeRecord& record);

// The `source: {type: spanner_change_stream}` of a pipeline.
absl::StatusOr<PipelineSource> MakeSpannerChangeStreamPipelineSource(
    const SpannerChangeStreamSourceSpec& spec);

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_SPANNER_CHANGE_STREAM_SOURCE_FACTORY_H_
