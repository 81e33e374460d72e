#include "gcpstream/bigquery/client/stream_appender.h"

#include <fmt/format.h>

#include "gcpstream/connector/grpc_status.h"

namespace gcpstream::bigquery {
namespace {

// The Storage Write API's bound on one AppendRows request (quotas: 10 MB).
constexpr std::size_t kMaxRequestBytes = 10 * 1000 * 1000;

}  // namespace

StreamAppender::StreamAppender(std::shared_ptr<BigQueryWriteStub> stub,
                               StreamAppenderOptions options)
    : stub_(std::move(stub)), options_(std::move(options)) {}

StreamAppender::~StreamAppender() { close(Clock::now() + std::chrono::seconds(10)); }

std::shared_ptr<StreamAppender::Connection> StreamAppender::open_locked() {
  auto c = std::make_shared<Connection>();
  c->rpc = stub_->append_rows();
  ++opened_;
  connections_.push_back(c);
  c->reader = std::thread([this, c] { read_loop(c); });
  current_ = c;
  return c;
}

absl::Status StreamAppender::append(std::vector<std::string> rows,
                                    std::optional<std::int64_t> offset, Done done,
                                    Clock::time_point deadline) {
  if (rows.empty()) return absl::InvalidArgumentError("an append carries at least one row");
  storage_v1::AppendRowsRequest request;
  if (offset) request.mutable_offset()->set_value(*offset);
  auto* data = request.mutable_proto_rows();
  for (auto& r : rows) data->mutable_rows()->add_serialized_rows(std::move(r));
  // A caller that may not wait (deadline now) does not queue behind another append waiting for
  // the window either.
  std::unique_lock send(send_mu_, std::defer_lock);
  if (deadline <= Clock::now()) {
    if (!send.try_lock()) {
      return absl::DeadlineExceededError(
          fmt::format("another append to {} is waiting for the window", options_.write_stream));
    }
  } else {
    send.lock();
  }
  std::shared_ptr<Connection> c;
  std::int64_t bytes = 0;
  {
    std::unique_lock lock(mu_);
    if (closed_) return absl::FailedPreconditionError("the appender is closed");
    if (!current_ || current_->broken) open_locked();
    c = current_;
    if (!c->schema_sent || schema_changed_) {
      request.set_write_stream(options_.write_stream);
      request.set_trace_id(options_.trace_id);
      *data->mutable_writer_schema()->mutable_proto_descriptor() = options_.writer_descriptor;
      schema_changed_ = false;
    }
    bytes = static_cast<std::int64_t>(request.ByteSizeLong());
    if (static_cast<std::size_t>(bytes) > kMaxRequestBytes) {
      return absl::InvalidArgumentError(
          fmt::format("an AppendRows request of {} bytes exceeds the Storage Write API's {} bytes",
                      bytes, kMaxRequestBytes));
    }
    const bool admitted = cv_.wait_until(lock, deadline, [&] {
      return closed_ || in_flight_ == 0 ||
             (in_flight_ < options_.max_in_flight_requests &&
              in_flight_bytes_ + bytes <= options_.max_in_flight_bytes);
    });
    if (closed_) return absl::FailedPreconditionError("the appender is closed");
    if (!admitted) {
      return absl::DeadlineExceededError(
          fmt::format("the in-flight window of {} stayed full ({} requests, {} bytes)",
                      options_.write_stream, in_flight_, in_flight_bytes_));
    }
    if (c != current_ || c->broken) {  // it broke while we waited
      c = current_ && !current_->broken ? current_ : open_locked();
      request.set_write_stream(options_.write_stream);
      request.set_trace_id(options_.trace_id);
      *data->mutable_writer_schema()->mutable_proto_descriptor() = options_.writer_descriptor;
      bytes = static_cast<std::int64_t>(request.ByteSizeLong());
    }
    c->pending.push_back(Pending{bytes, std::move(done), Clock::now()});
    ++in_flight_;
    in_flight_bytes_ += bytes;
  }
  std::lock_guard write(c->write_mu);
  c->schema_sent = true;
  // A failed write means the call is over (the service ended it, or the connection broke): the
  // reader then fails this append with the rest, under the status the call ended with. No
  // cancel here: it would replace that status (RESOURCE_EXHAUSTED, say) with CANCELLED.
  c->rpc->write(request);
  return absl::OkStatus();
}

void StreamAppender::read_loop(std::shared_ptr<Connection> c) {
  storage_v1::AppendRowsResponse response;
  bool stray = false;  // an answer nobody asked for: the connection is treated as broken
  while (c->rpc->read(&response)) {
    Pending p;
    {
      std::lock_guard lock(mu_);
      stray = c->pending.empty();
      if (stray) break;
      p = std::move(c->pending.front());
      c->pending.pop_front();
      // A refused request may have been the one that carried the writer schema, and nothing
      // says the service kept it for the connection: the next request carries it again (the
      // service ignores a repeated one).
      if (response.has_error()) schema_changed_ = true;
    }
    AppendOutcome outcome;
    outcome.answered = true;
    outcome.status =
        response.has_error() ? connector::FromRpcStatus(response.error()) : absl::OkStatus();
    outcome.response = std::move(response);
    if (p.done) p.done(std::move(outcome));
    release(p.bytes);  // after the callback: await_idle() means every callback has run
    response.Clear();
  }
  std::deque<Pending> unanswered;
  {
    std::lock_guard lock(mu_);
    c->broken = true;
    unanswered.swap(c->pending);
  }
  absl::Status ended;
  {
    std::lock_guard write(c->write_mu);
    // A read that returned false means the call is over and finish() has its status at once;
    // only a connection abandoned while still open needs cancelling first.
    if (stray) c->rpc->cancel();
    ended = c->rpc->finish();
  }
  if (ended.ok() || ended.code() == absl::StatusCode::kCancelled) {
    ended = absl::UnavailableError(
        fmt::format("the AppendRows connection to {} ended ({}) before answering",
                    options_.write_stream, ended.ok() ? "closed" : "cancelled"));
  }
  for (auto& p : unanswered) {
    if (p.done) p.done(AppendOutcome{ended, false, {}});
    release(p.bytes);
  }
}

void StreamAppender::release(std::int64_t bytes) {
  {
    std::lock_guard lock(mu_);
    --in_flight_;
    in_flight_bytes_ -= bytes;
  }
  cv_.notify_all();
}

void StreamAppender::set_writer_descriptor(google::protobuf::DescriptorProto descriptor) {
  std::lock_guard send(send_mu_);
  std::lock_guard lock(mu_);
  options_.writer_descriptor = std::move(descriptor);
  schema_changed_ = true;
}

bool StreamAppender::await_idle(Clock::time_point deadline) {
  std::unique_lock lock(mu_);
  return cv_.wait_until(lock, deadline, [&] { return in_flight_ == 0; });
}

void StreamAppender::close(Clock::time_point deadline) {
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;  // an append waiting for the window gives up now
  }
  cv_.notify_all();
  // Answers still due may arrive until the deadline; then every connection is cut. Cutting
  // first also frees an append blocked in a write the service no longer reads, which holds
  // send_mu_.
  const bool idle = await_idle(deadline);
  std::vector<std::shared_ptr<Connection>> all;
  {
    std::lock_guard lock(mu_);
    all = connections_;
  }
  if (!idle) {
    for (auto& c : all) c->rpc->cancel();
  }
  {
    std::lock_guard send(send_mu_);  // after any append still writing
    for (auto& c : all) {
      std::lock_guard write(c->write_mu);
      bool broken;
      {
        std::lock_guard lock(mu_);
        broken = c->broken;
      }
      if (!broken) c->rpc->writes_done();  // the service answers, then ends the connection
    }
  }
  for (auto& c : all) {
    if (c->reader.joinable()) c->reader.join();
  }
}

bool StreamAppender::cancel_if_unanswered_for(std::chrono::milliseconds limit) {
  std::shared_ptr<Connection> stalled;
  {
    std::lock_guard lock(mu_);
    for (const auto& c : connections_) {
      if (!c->broken && !c->pending.empty() && Clock::now() - c->pending.front().sent > limit) {
        stalled = c;
        break;
      }
    }
  }
  if (!stalled) return false;
  stalled->rpc->cancel();  // the reader fails its unanswered appends
  return true;
}

int StreamAppender::in_flight_requests() const {
  std::lock_guard lock(mu_);
  return in_flight_;
}

std::int64_t StreamAppender::in_flight_bytes() const {
  std::lock_guard lock(mu_);
  return in_flight_bytes_;
}

std::int64_t StreamAppender::connections_opened() const {
  std::lock_guard lock(mu_);
  return opened_;
}

}  // namespace gcpstream::bigquery
