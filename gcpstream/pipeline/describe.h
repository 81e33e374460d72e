#ifndef GCPSTREAM_PIPELINE_DESCRIBE_H_
#define GCPSTREAM_PIPELINE_DESCRIBE_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/api/lineage.h"
#include "gcpstream/pipeline/pipeline_spec.h"

namespace gcpstream::pipeline {

// What the pipeline reads and writes, derived from its configuration alone (no file is read,
// no client created): per role ("source", "sink", "dead letters") a lineage vertex.
std::vector<std::pair<std::string, LineageVertex>> PipelineLineage(const PipelineSpec& spec);

// The text `gcpstream describe` prints: the plan (source -> transform -> sink with their key
// settings), checkpointing and failure handling, every option with its effective value and
// default, and the lineage. The sink's builder is validated on the way (its errors name the
// option), so a file that describes cleanly also assembles.
absl::StatusOr<std::string> DescribePipeline(const PipelineSpec& spec);

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_DESCRIBE_H_
