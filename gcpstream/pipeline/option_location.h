#ifndef GCPSTREAM_PIPELINE_OPTION_LOCATION_H_
#define GCPSTREAM_PIPELINE_OPTION_LOCATION_H_

#include <vector>

#include "absl/status/status.h"
#include "gcpstream/pipeline/yaml_fields.h"

namespace gcpstream::pipeline {

// Gives an error raised after parsing (by a connector's builder: "batch_element_count must be
// in 1..19999", a combination of options it refuses) the place in the file it comes from:
// an option the message names, among those the file set, becomes the prefix
// "pipeline.yaml:14:5: sink.writer_options.batch_element_count: <message>". An option is named
// when its key appears in the message as a whole word; a message starting "sink: " (or
// "source: ", ...) considers that section's options only; keys with an underscore win over
// plain words ("subscription"), then the one named first. The code is kept; a message naming
// no option the file set is returned unchanged.
absl::Status LocateOptionError(const std::vector<OptionRecord>& options, const absl::Status& error);

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_OPTION_LOCATION_H_
