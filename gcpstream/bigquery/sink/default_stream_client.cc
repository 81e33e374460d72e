#include "gcpstream/bigquery/sink/default_stream_client.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gcpstream/bigquery/sink/append_retry.h"

namespace gcpstream::bigquery {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

DefaultStreamClient::DefaultStreamClient(
    std::shared_ptr<BigQueryWriteStub> stub, std::string table_name,
    google::protobuf::DescriptorProto writer_descriptor, BigQueryWriterOptions options,
    std::shared_ptr<connector::SinkOutcomeListener<BigQueryRow>> listener,
    std::shared_ptr<util::TimerThread> timers, std::function<void()> on_retry)
    : stub_(std::move(stub)),
      options_(std::move(options)),
      listener_(std::move(listener)),
      timers_(std::move(timers)),
      on_retry_(std::move(on_retry)) {
  appender_options_.write_stream = table_name + "/streams/_default";
  appender_options_.writer_descriptor = std::move(writer_descriptor);
  appender_options_.max_in_flight_requests = options_.max_inflight_requests;
  appender_options_.max_in_flight_bytes = options_.max_inflight_bytes;
}

DefaultStreamClient::~DefaultStreamClient() {
  // The writer ran shutdown() already; if not, outcomes can no longer reach this object (its
  // callbacks hold it weakly), so only the connections are closed, without waiting for them.
  std::vector<std::shared_ptr<StreamAppender>> appenders;
  {
    std::lock_guard lock(mu_);
    closing_ = true;
    if (appender_) appenders.push_back(appender_);
    for (auto& r : retired_) appenders.push_back(r);
  }
  for (auto& a : appenders) a->close(Clock::now());
}

std::shared_ptr<StreamAppender> DefaultStreamClient::appender() {
  std::lock_guard lock(mu_);
  if (!appender_) appender_ = std::make_shared<StreamAppender>(stub_, appender_options_);
  return appender_;
}

void DefaultStreamClient::submit(BigQueryRow&& row, std::uint64_t token) {
  AddToBatch(current_, std::move(row), token, options_.max_append_request_bytes,
             [this] { flush(); });
}

void DefaultStreamClient::submit_solo(BigQueryRow&& row, std::uint64_t token) {
  flush();
  auto solo = std::make_shared<Batch>();
  solo->add(std::move(row), token);
  {
    std::lock_guard lock(mu_);
    ++outstanding_;
  }
  solo->first_sent = Clock::now();
  send(std::move(solo));
}

void DefaultStreamClient::flush() {
  if (!current_ || current_->rows.empty()) return;
  auto batch = std::move(current_);
  current_.reset();
  {
    std::lock_guard lock(mu_);
    ++outstanding_;
  }
  batch->first_sent = Clock::now();
  send(std::move(batch));
}

void DefaultStreamClient::send(std::shared_ptr<Batch> batch, bool may_wait) {
  bool closing;
  {
    std::lock_guard lock(mu_);
    closing = closing_;
  }
  if (closing) {
    fail(batch, absl::CancelledError("the BigQuery writer is shutting down"));
    return;
  }
  std::vector<std::string> rows = batch->row_bytes();
  std::weak_ptr<DefaultStreamClient> self = weak_from_this();
  auto a = appender();
  // The writer's thread never waits for the appender's window (it could not be cancelled while
  // blocked): a full window hands the send to the timer thread, which may wait.
  const auto deadline = may_wait ? Clock::now() + options_.max_retry_duration : Clock::now();
  absl::Status sent = a->append(
      std::move(rows), std::nullopt,
      [self, batch](AppendOutcome o) {
        if (auto client = self.lock()) client->on_outcome(batch, std::move(o));
      },
      deadline);
  if (sent.ok()) {
    ++batch->attempt;
    arm_watchdog();
    return;
  }
  if (sent.code() == absl::StatusCode::kDeadlineExceeded && !may_wait) {
    timers_->schedule(Clock::now(), [self, batch] {
      if (auto client = self.lock()) client->send(batch, /*may_wait=*/true);
    });
    return;
  }
  fail(batch, sent);
}

void DefaultStreamClient::arm_watchdog() {
  {
    std::lock_guard lock(mu_);
    if (watchdog_armed_ || closing_) return;
    watchdog_armed_ = true;
  }
  // Checks every tenth of the timeout while appends are outstanding.
  const auto period = std::max<std::chrono::milliseconds>(std::chrono::milliseconds(10),
                                                          options_.append_answer_timeout / 10);
  std::weak_ptr<DefaultStreamClient> self = weak_from_this();
  timers_->schedule(Clock::now() + period, [self] {
    auto client = self.lock();
    if (!client) return;
    std::shared_ptr<StreamAppender> a;
    bool again;
    {
      std::lock_guard lock(client->mu_);
      client->watchdog_armed_ = false;
      a = client->appender_;
      again = client->outstanding_ > 0 && !client->closing_;
    }
    if (a && a->cancel_if_unanswered_for(client->options_.append_answer_timeout)) {
      spdlog::warn("BigQuery sink: an append to {} went unanswered for {} ms; reconnecting",
                   client->appender_options_.write_stream,
                   client->options_.append_answer_timeout.count());
    }
    if (again) client->arm_watchdog();
  });
}

void DefaultStreamClient::on_outcome(std::shared_ptr<Batch> batch, AppendOutcome o) {
  if (o.status.ok()) {
    ReportWritten(*listener_, *batch);
    finished();
    return;
  }
  if (o.answered && o.response.row_errors_size() > 0) {
    ReportRowErrors(*listener_, *batch, o.response);
    finished();
    return;
  }
  bool closing;
  {
    std::lock_guard lock(mu_);
    closing = closing_;
  }
  const auto elapsed = Clock::now() - batch->first_sent;
  if (!closing && RetriableAppend(o) && batch->attempt < options_.retry_max_attempts &&
      elapsed < options_.max_retry_duration) {
    const auto delay = AppendRetryDelay(options_, batch->attempt);
    {
      std::lock_guard lock(mu_);
      waiting_retry_.insert(batch);
    }
    if (on_retry_) on_retry_();
    std::weak_ptr<DefaultStreamClient> self = weak_from_this();
    timers_->schedule(Clock::now() + delay, [self, batch] {
      auto client = self.lock();
      if (!client) return;
      {
        std::lock_guard lock(client->mu_);
        if (client->waiting_retry_.erase(batch) == 0) return;  // shutdown took it
      }
      client->send(batch, /*may_wait=*/true);
    });
    return;
  }
  fail(batch, o.status);
}

void DefaultStreamClient::fail(std::shared_ptr<Batch> batch, const absl::Status& status) {
  ReportFailed(*listener_, *batch, status);
  finished();
}

void DefaultStreamClient::finished() {
  {
    std::lock_guard lock(mu_);
    --outstanding_;
  }
  cv_.notify_all();
}

void DefaultStreamClient::resume_parked() {
  std::shared_ptr<StreamAppender> old;
  {
    std::lock_guard lock(mu_);
    old = std::move(appender_);
    appender_.reset();
    if (old) retired_.push_back(old);
  }
}

absl::Status DefaultStreamClient::shutdown() {
  std::set<std::shared_ptr<Batch>> waiting;
  std::vector<std::shared_ptr<StreamAppender>> appenders;
  {
    std::lock_guard lock(mu_);
    if (closing_ && outstanding_ == 0 && !current_) return absl::OkStatus();
    closing_ = true;
    waiting.swap(waiting_retry_);
    if (appender_) appenders.push_back(appender_);
    for (auto& r : retired_) appenders.push_back(r);
  }
  const absl::Status cancelled = absl::CancelledError("the BigQuery writer is shutting down");
  if (current_ && !current_->rows.empty()) {
    {
      std::lock_guard lock(mu_);
      ++outstanding_;
    }
    fail(std::move(current_), cancelled);
  }
  current_.reset();
  for (const auto& b : waiting) fail(b, cancelled);
  for (auto& a : appenders) a->close(Clock::now() + options_.shutdown_timeout);
  std::unique_lock lock(mu_);
  if (!cv_.wait_until(lock, Clock::now() + options_.shutdown_timeout,
                      [&] { return outstanding_ == 0; })) {
    return absl::DeadlineExceededError(
        fmt::format("{} append(s) to {} still unanswered after shutdown_timeout", outstanding_,
                    appender_options_.write_stream));
  }
  return absl::OkStatus();
}

}  // namespace gcpstream::bigquery
