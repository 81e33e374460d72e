#ifndef GCPSTREAM_BIGQUERY_CLIENT_STREAM_APPENDER_H_
#define GCPSTREAM_BIGQUERY_CLIENT_STREAM_APPENDER_H_

#include <google/protobuf/descriptor.pb.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gcpstream/bigquery/client/write_stub.h"

namespace gcpstream::bigquery {

struct StreamAppenderOptions {
  // The full stream name: ".../tables/T/streams/_default" or one CreateWriteStream returned.
  std::string write_stream;
  // The writer schema (WriterDescriptorFor, or a user message's descriptor), sent on the first
  // request of every connection and again on the request after one the service refused.
  google::protobuf::DescriptorProto writer_descriptor;
  // Requests and bytes sent and not yet answered. A request is admitted while both are below
  // their bound (one request is always admitted into an empty window). Defaults: the Java
  // client's StreamWriter (1,000 requests, 100 MB).
  int max_in_flight_requests = 1000;
  std::int64_t max_in_flight_bytes = 100LL * 1000 * 1000;
  // Sent as AppendRowsRequest.trace_id so the service's logs name the writer.
  std::string trace_id = "gcpstream";
};

// What became of one append.
struct AppendOutcome {
  // OK; the response's error (code and StorageError details kept: StorageErrorOf); or, when
  // `answered` is false, how the connection ended (UNAVAILABLE when it ended cleanly with the
  // request unanswered).
  absl::Status status;
  // False: the connection ended before this request was answered, so its rows may or may not
  // have landed. An explicit-offset resend tells (ALREADY_EXISTS: they did).
  bool answered = false;
  // The service's answer, when `answered`: AppendResult's offset, row_errors, updated_schema.
  storage_v1::AppendRowsResponse response;
};

// The Storage Write client's connection to one write stream: appends are sent in order on one
// AppendRows connection and answered in order, each to its own callback; the in-flight window
// bounds requests and bytes (append() blocks while it is full: that is the back-pressure). A
// broken connection fails its unanswered appends (answered = false) and the next append opens a
// new one, sending the writer schema again; nothing is resent by the appender, because only
// the caller knows whether a resend is safe (explicit offsets) or a duplicate (the default
// stream). The service's 10 MB request bound is checked before sending.
//
// Thread-safe. Callbacks run on the connection's reader thread (never under the appender's
// lock) and must not call append() or close(): an append waiting for the window waits on that
// very thread. Hand the outcome to another thread (the sink posts it to its mailbox).
class StreamAppender {
 public:
  using Done = std::function<void(AppendOutcome)>;
  using Clock = std::chrono::steady_clock;

  StreamAppender(std::shared_ptr<BigQueryWriteStub> stub, StreamAppenderOptions options);
  ~StreamAppender();  // close() with a 10 s deadline

  // Sends `rows` (serialized writer-schema messages) at `offset` (nullopt: none, as the default
  // stream requires). Errors, with nothing sent and `done` not called: INVALID_ARGUMENT when the
  // request would exceed 10 MB or `rows` is empty; DEADLINE_EXCEEDED when the window stayed full
  // until `deadline` (a deadline already past never waits, not even behind another append);
  // FAILED_PRECONDITION after close().
  absl::Status append(std::vector<std::string> rows, std::optional<std::int64_t> offset, Done done,
                      Clock::time_point deadline);
  // Sends the new writer schema with the next request (a schema change; the same stream).
  void set_writer_descriptor(google::protobuf::DescriptorProto descriptor);
  // Waits until every append's callback has run; false at the deadline.
  bool await_idle(Clock::time_point deadline);
  // Half-closes, waits until `deadline` for the answers, then cancels; unanswered appends fail
  // with answered = false. Idempotent.
  void close(Clock::time_point deadline);

  // The watchdog: when the oldest unanswered append was sent more than `limit` ago, cancels
  // the connection, so every unanswered append fails (answered = false) and the next append
  // reconnects. True if it cancelled. Call it periodically from any thread (not a callback).
  bool cancel_if_unanswered_for(std::chrono::milliseconds limit);

  int in_flight_requests() const;
  std::int64_t in_flight_bytes() const;
  std::int64_t connections_opened() const;
  const std::string& write_stream() const { return options_.write_stream; }

 private:
  struct Pending {
    std::int64_t bytes = 0;
    Done done;
    Clock::time_point sent;
  };
  struct Connection {
    std::unique_ptr<AppendRowsConnection> rpc;
    std::mutex write_mu;          // write() / writes_done() / finish() never overlap
    std::deque<Pending> pending;  // guarded by StreamAppender::mu_
    bool broken = false;          // guarded by StreamAppender::mu_
    bool schema_sent = false;     // guarded by StreamAppender::send_mu_
    std::thread reader;
  };

  void read_loop(std::shared_ptr<Connection> c);
  // One append's callback has run: its place in the window is free.
  void release(std::int64_t bytes);
  std::shared_ptr<Connection> open_locked();

  std::shared_ptr<BigQueryWriteStub> stub_;
  StreamAppenderOptions options_;
  std::mutex send_mu_;  // orders sends: queue position == wire position
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<Connection> current_;
  std::vector<std::shared_ptr<Connection>> connections_;  // every one opened, joined at close
  int in_flight_ = 0;
  std::int64_t in_flight_bytes_ = 0;
  std::int64_t opened_ = 0;
  bool closed_ = false;
  // Guarded by mu_: the next request carries the writer schema (set after a new descriptor or
  // a refused request).
  bool schema_changed_ = false;
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_CLIENT_STREAM_APPENDER_H_
