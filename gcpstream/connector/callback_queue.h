#ifndef GCPSTREAM_CONNECTOR_CALLBACK_QUEUE_H_
#define GCPSTREAM_CONNECTOR_CALLBACK_QUEUE_H_

namespace gcpstream::connector {

// Keeps gRPC's process-global callback completion queue alive until the process exits.
//
// Why: with the Debian gRPC (1.51, iomgr on POSIX) the callback API is served by one global,
// reference-counted queue. Every channel that made a callback call holds a reference; when the
// last such channel is destroyed gRPC shuts the queue down and joins its threads, and the next
// callback call builds a new one. That teardown races (an intermittent abort "assertion failed:
// prior > 0" in grpc_cq_internal_unref, measured here at about one run in two of a benchmark
// that closes a sink and opens another; grpc/grpc PR 32584 describes the same teardown from a
// callback thread). A streaming job closes and reopens clients routinely (idle sweeps, instance
// eviction, restarts), so every channel the connectors create first calls this, which holds one
// reference for the life of the process and so never lets the count reach zero.
//
// Idempotent and thread-safe; the first call makes one local, already-expired callback call.
void RetainCallbackQueue();

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_CALLBACK_QUEUE_H_
