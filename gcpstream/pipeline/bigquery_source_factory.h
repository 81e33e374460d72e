#ifndef GCPSTREAM_PIPELINE_BIGQUERY_SOURCE_FACTORY_H_
#define GCPSTREAM_PIPELINE_BIGQUERY_SOURCE_FACTORY_H_

#include "absl/status/statusor.h"
#include "gcpstream/bigquery/source/bigquery_read_row.h"
#include "gcpstream/pipeline/pipeline_record.h"
#include "gcpstream/pipeline/pipeline_source.h"
#include "gcpstream/pipeline/pipeline_spec.h"

namespace gcpstream::pipeline {

// One pipeline record per row: its columns as fields, in BigQueryReadRow::to_json's shapes (INT64
// and FLOAT64 numbers, TIMESTAMP as RFC 3339 text, BYTES as base64, RECORD an object, REPEATED
// an array, NULL null). Records carry no event time.
PipelineRecord BigQueryReadRowToPipelineRecord(const bigquery::BigQueryReadRow& row);

// The `source: {type: bigquery}` of a pipeline: BigQuerySource over the configured table.
absl::StatusOr<PipelineSource> MakeBigQueryPipelineSource(const BigQuerySourceSpec& spec);

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_BIGQUERY_SOURCE_FACTORY_H_
