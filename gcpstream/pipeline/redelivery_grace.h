#ifndef GCPSTREAM_PIPELINE_REDELIVERY_GRACE_H_
#define GCPSTREAM_PIPELINE_REDELIVERY_GRACE_H_

#include <chrono>

#include "gcpstream/pipeline/pipeline_spec.h"

namespace gcpstream::pipeline {

// How long after a run died without stopping cleanly (SIGKILL, a crash, a lost machine) the
// input it held can still come back to the next run: 0 for a file source (a restore re-reads
// from the checkpointed offset at once). For a Pub/Sub source, the messages the dead run had
// leased return only when their leases lapse, and the longest lease it could have set is one
// extension: max_duration_per_ack_extension (or min_duration_per_ack_extension when that is
// larger), else 600 s (Google's cap on an ack deadline, the adaptive rule's ceiling), and never
// more than max_ack_extension_period when that is set and not 0.
//
// `run --restore --stop-when-idle D` counts idleness only after this grace unless it restores a
// savepoint (a stop with savepoint nacks what it held; a periodic checkpoint, or none at all,
// may follow a run that died), so the recovery run does not stop before the held messages are
// back.
std::chrono::milliseconds RedeliveryGraceAfterCrash(const PipelineSpec& spec);

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_REDELIVERY_GRACE_H_
