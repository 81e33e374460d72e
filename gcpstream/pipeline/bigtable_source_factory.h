#ifndef GCPSTREAM_PIPELINE_BIGTABLE_SOURCE_FACTORY_H_
#define GCPSTREAM_PIPELINE_BIGTABLE_SOURCE_FACTORY_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "gcpstream/bigtable/client/bigtable_row.h"
#include "gcpstream/pipeline/pipeline_record.h"
#include "gcpstream/pipeline/pipeline_source.h"
#include "gcpstream/pipeline/pipeline_spec.h"

namespace gcpstream::pipeline {

// One pipeline record per row: `_row_key`, then one field per column holding the newest value
// of that column — named by the qualifier when `family` is set (only that family is read), and
// "family:qualifier" otherwise. Bytes that are not valid UTF-8 go in Base64 under the name plus
// "_base64" (see PutBytesField). Records carry no event time.
PipelineRecord BigtableRowToPipelineRecord(const bigtable::BigtableRow& row,
                                           const std::optional<std::string>& family);

// The `source: {type: bigtable}` of a pipeline. The read asks the service for the newest
// version of each column only (and, with `family`, that family only): the filter is pushed down.
absl::StatusOr<PipelineSource> MakeBigtablePipelineSource(const BigtableSourceSpec& spec);

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_BIGTABLE_SOURCE_FACTORY_H_
