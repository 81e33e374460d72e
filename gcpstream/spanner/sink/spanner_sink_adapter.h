#ifndef GCPSTREAM_SPANNER_SINK_SPANNER_SINK_ADAPTER_H_
#define GCPSTREAM_SPANNER_SINK_SPANNER_SINK_ADAPTER_H_

#include <functional>
#include <memory>

#include "gcpstream/api/sink.h"
#include "gcpstream/connector/async_sink_writer.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/failure_handler.h"
#include "gcpstream/spanner/client/spanner_stub.h"
#include "gcpstream/spanner/sink/spanner_writer_options.h"
#include "gcpstream/util/scheduler.h"
#include "google/spanner/v1/mutation.pb.h"

namespace gcpstream::spanner {

struct SpannerWriterConfig {
  SpannerWriterOptions options;
  ConstraintViolationPolicy constraint_violation_policy = ConstraintViolationPolicy::kFailJob;
  std::shared_ptr<connector::FailureHandler> failure_handler;
  std::shared_ptr<SpannerStub> stub;
  // Tests pin the jitter; empty = random.
  std::function<double()> uniform01;
  // Tests drive the clock the retry backoffs, attempt deadlines and session keep-alive run on;
  // empty = a real-time util::TimerThread of the writer's own.
  std::shared_ptr<util::Scheduler> scheduler;
};

// The Spanner sink's writer: the shared asynchronous core over one BatchWrite batcher for the
// database (connector::RequestBatcher). What is Spanner's own:
//  - one mutation per mutation group, so every verdict concerns one record: a refusal is routed
//    as it comes (no isolation resend);
//  - ALREADY_EXISTS and INVALID_ARGUMENT are the record's; FAILED_PRECONDITION and OUT_OF_RANGE
//    (constraint violations) are too under ROUTE_TO_FAILURE_HANDLER, and fail the job under
//    FAIL_JOB; ABORTED, UNAVAILABLE, DEADLINE_EXCEEDED and RESOURCE_EXHAUSTED are retried on the
//    sink's own budget and fail the job once it is spent; everything else, and every failure of
//    the whole call, fails the job. NOT_FOUND fails it naming what the sink never creates;
//  - cells are counted with the secondary-index weights read from INFORMATION_SCHEMA once,
//    when the database is opened (the dialect is read there too);
//  - metrics inFlightMutations, parkedMutations, mutationsRetried, bufferedCells,
//    bufferedBytes, errorClass.<CODE>.errors for every retried verdict, and the core's.
using SpannerWriterCore =
    connector::AsyncSinkWriter<connector::DatabaseDestination, google::spanner::v1::Mutation>;

std::unique_ptr<SpannerWriterCore> MakeSpannerWriterCore(SpannerWriterConfig config,
                                                         WriterInitContext& context);

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_SINK_SPANNER_SINK_ADAPTER_H_
