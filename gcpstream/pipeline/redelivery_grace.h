#ifndef GCPSTREAM_PIPELINE_REDELIVERY_GRACE_H_
#define GCPSTREAM_PIPELINE_REDELIVERY_GRACE_H_

#include <chrono>

#include "gcpstream/pipeline/pipeline_spec.h"

namespace gcpstream::pipeline {

// How long after a run died without stopping cleanly (SIGKILL, a crash, a lost machine) the
// input it held can still come back to the next run: 0 for a file source (a restore re-reads
// from the checkpointed offset at once). For a Pub/Sub source, the messages the dead run had
// leased return only when their leases lapse, and the longest lease it could have set is one
// extension: the larger of min_duration_per_ack_extension (default 10 s) and
// max_duration_per_ack_extension (default 600 s, Google's cap on an ack deadline), or a
// subscription's ack_deadline under `create:` when that is longer (the emulator holds a dead
// stream's messages for the subscription's deadline). It is read
// from `spec`, the pipeline as it is now: if the dead run had longer extensions, its leases
// may outlast this.
//
// `run --stop-when-idle D` counts idleness only after this grace when the previous run may
// have died holding input (see PreviousRunEndedCleanly), so a recovery run does not stop
// before the held messages are back.
std::chrono::milliseconds RedeliveryGraceAfterCrash(const PipelineSpec& spec);

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_REDELIVERY_GRACE_H_
