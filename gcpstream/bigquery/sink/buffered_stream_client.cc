#include "gcpstream/bigquery/sink/buffered_stream_client.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <future>

#include "gcpstream/bigquery/sink/append_retry.h"
#include "gcpstream/connector/recovery_backoff.h"

namespace gcpstream::bigquery {
namespace {

using Clock = std::chrono::steady_clock;
using storage_v1::StorageError;

// How long a CreateWriteStream may take.
constexpr std::chrono::seconds kCreateTimeout(60);

StorageError::StorageErrorCode CodeOf(const AppendOutcome& o) { return StorageErrorOf(o.status); }

}  // namespace

BufferedStreamClient::BufferedStreamClient(
    std::shared_ptr<BigQueryWriteStub> stub, std::string table_name,
    google::protobuf::DescriptorProto writer_descriptor, BigQueryWriterOptions options,
    std::shared_ptr<BufferedStreamLedger> ledger,
    std::shared_ptr<connector::SinkOutcomeListener<BigQueryRow>> listener,
    std::function<void()> on_retry)
    : stub_(std::move(stub)),
      table_(std::move(table_name)),
      options_(std::move(options)),
      ledger_(std::move(ledger)),
      listener_(std::move(listener)),
      on_retry_(std::move(on_retry)) {
  appender_options_.writer_descriptor = std::move(writer_descriptor);
  appender_options_.max_in_flight_requests = options_.max_inflight_requests;
  appender_options_.max_in_flight_bytes = options_.max_inflight_bytes;
}

BufferedStreamClient::~BufferedStreamClient() {
  std::vector<std::shared_ptr<StreamAppender>> appenders;
  {
    std::lock_guard lock(mu_);
    closing_ = true;
    stopping_ = true;
    if (appender_) appenders.push_back(appender_);
    for (auto& r : retired_) appenders.push_back(r);
  }
  cv_.notify_all();
  for (auto& a : appenders) a->close(Clock::now());
  if (worker_.joinable()) worker_.join();
}

void BufferedStreamClient::start() {
  worker_ = std::thread([this] { run(); });
}

void BufferedStreamClient::submit(BigQueryRow&& row, std::uint64_t token) {
  AddToBatch(current_, std::move(row), token, options_.max_append_request_bytes,
             [this] { flush(); });
}

void BufferedStreamClient::submit_solo(BigQueryRow&& row, std::uint64_t token) {
  flush();
  auto solo = std::make_shared<Batch>();
  solo->add(std::move(row), token);
  enqueue(std::move(solo));
}

void BufferedStreamClient::flush() {
  if (!current_ || current_->rows.empty()) return;
  auto batch = std::move(current_);
  current_.reset();
  enqueue(std::move(batch));
}

void BufferedStreamClient::enqueue(BatchPtr batch) {
  {
    std::lock_guard lock(mu_);
    ++outstanding_;
    queue_.push_back(std::move(batch));
  }
  cv_.notify_all();
}

bool BufferedStreamClient::repair_due_locked() const {
  if (!repairing_) return false;
  for (const auto& b : in_flight_) {
    if (!b->done) return false;
  }
  return true;
}

void BufferedStreamClient::run() {
  // Wakes at least this often to look for an append unanswered past append_answer_timeout.
  const auto period = std::max<std::chrono::milliseconds>(std::chrono::milliseconds(10),
                                                          options_.append_answer_timeout / 10);
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, period, [&] {
      return stopping_ || repair_due_locked() || (!queue_.empty() && !repairing_);
    });
    if (stopping_) break;
    if (repair_due_locked()) {
      lock.unlock();
      repair();
      lock.lock();
      continue;
    }
    if (!queue_.empty() && !repairing_) {
      BatchPtr batch = std::move(queue_.front());
      queue_.pop_front();
      const absl::Status broken = broken_;
      const bool closing = closing_;
      lock.unlock();
      if (closing) {
        report_failure(batch, absl::CancelledError("the BigQuery writer is shutting down"));
      } else if (!broken.ok()) {
        report_failure(batch, broken);
      } else {
        send(std::move(batch));
      }
      lock.lock();
      continue;
    }
    if (!in_flight_.empty() && appender_) {
      // The current connection and any retired with appends still unanswered (a reopen).
      std::vector<std::shared_ptr<StreamAppender>> watched = retired_;
      watched.push_back(appender_);
      lock.unlock();
      for (const auto& a : watched) {
        if (a->cancel_if_unanswered_for(options_.append_answer_timeout)) {
          spdlog::warn("BigQuery sink: an append to {} went unanswered for {} ms; reconnecting",
                       a->write_stream(), options_.append_answer_timeout.count());
        }
      }
      lock.lock();
    }
  }
}

void BufferedStreamClient::open_appender_locked(const std::string& stream) {
  if (appender_) retired_.push_back(std::move(appender_));
  StreamAppenderOptions o = appender_options_;
  o.write_stream = stream;
  o.trace_id = "gcpstream-exactly-once";
  appender_ = std::make_shared<StreamAppender>(stub_, std::move(o));
}

void BufferedStreamClient::send(BatchPtr batch) {
  bool established;
  {
    std::lock_guard lock(mu_);
    established = !stream_.empty();
  }
  if (!established) {
    const Established e = establish(batch);
    if (e != Established::kReady) return;
  }
  std::shared_ptr<StreamAppender> a;
  {
    std::lock_guard lock(mu_);
    if (reopen_) {
      // After the writer widened the table: a new connection sends the writer schema again.
      open_appender_locked(stream_);
      reopen_ = false;
    }
    batch->offset = next_offset_;
    next_offset_ += static_cast<std::int64_t>(batch->rows.size());
    in_flight_.push_back(batch);
    a = appender_;
  }
  ++batch->attempt;
  std::weak_ptr<BufferedStreamClient> self = weak_from_this();
  absl::Status sent = a->append(
      batch->row_bytes(), batch->offset,
      [self, batch](AppendOutcome o) {
        if (auto client = self.lock()) client->on_outcome(batch, std::move(o));
      },
      Clock::now() + options_.append_answer_timeout);
  if (sent.ok()) return;
  // Never sent: the window stayed full past the answer timeout (whatever is in it is cut, so
  // it fails and is re-appended) or the appender closed.
  if (sent.code() == absl::StatusCode::kDeadlineExceeded) {
    a->cancel_if_unanswered_for(std::chrono::milliseconds(0));
  }
  AppendOutcome failed;
  failed.status = sent;
  failed.answered = sent.code() != absl::StatusCode::kDeadlineExceeded;
  on_outcome(batch, std::move(failed));
}

void BufferedStreamClient::on_outcome(const BatchPtr& batch, AppendOutcome o) {
  std::unique_lock lock(mu_);
  batch->outcome = std::move(o);
  batch->done = true;
  const AppendOutcome& out = batch->outcome;
  if (!repairing_ && out.status.ok() && !in_flight_.empty() && in_flight_.front() == batch) {
    const bool echo_ok = !out.response.append_result().has_offset() ||
                         out.response.append_result().offset().value() == batch->offset;
    if (echo_ok) {
      in_flight_.pop_front();
      acked_end_ = batch->offset + static_cast<std::int64_t>(batch->rows.size());
      ledger_->acknowledged(table_, stream_, acked_end_);
      lock.unlock();
      report_success(batch);
      return;
    }
  }
  repairing_ = true;
  const bool due = repair_due_locked();
  lock.unlock();
  if (due) cv_.notify_all();
}

AppendOutcome BufferedStreamClient::append_and_wait(const BatchPtr& batch, std::int64_t offset) {
  std::shared_ptr<StreamAppender> a;
  {
    std::lock_guard lock(mu_);
    a = appender_;
  }
  ++batch->attempt;
  auto answer = std::make_shared<std::promise<AppendOutcome>>();
  std::future<AppendOutcome> future = answer->get_future();
  absl::Status sent = a->append(
      batch->row_bytes(), offset, [answer](AppendOutcome o) { answer->set_value(std::move(o)); },
      Clock::now() + options_.append_answer_timeout);
  if (!sent.ok()) {
    AppendOutcome failed;
    failed.status = sent;
    failed.answered = sent.code() != absl::StatusCode::kDeadlineExceeded;
    return failed;
  }
  if (future.wait_for(options_.append_answer_timeout) != std::future_status::ready) {
    spdlog::warn("BigQuery sink: an append to {} went unanswered for {} ms; reconnecting",
                 a->write_stream(), options_.append_answer_timeout.count());
    a->cancel_if_unanswered_for(std::chrono::milliseconds(0));
    // Cancelling fails the append at once; the bound only guards against a stub that hangs.
    if (future.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      AppendOutcome lost;
      lost.status = absl::UnavailableError("the append was never answered, even after cancel");
      return lost;
    }
  }
  return future.get();
}

bool BufferedStreamClient::sleep_for(std::chrono::milliseconds delay) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, delay, [&] { return closing_ || stopping_; });
  return !closing_ && !stopping_;
}

absl::StatusOr<std::string> BufferedStreamClient::create_stream() {
  storage_v1::CreateWriteStreamRequest request;
  request.set_parent(table_);
  request.mutable_write_stream()->set_type(storage_v1::WriteStream::BUFFERED);
  connector::RecoveryBackoff backoff(options_.recovery);
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (closing_) return absl::CancelledError("the BigQuery writer is shutting down");
    }
    absl::StatusOr<storage_v1::WriteStream> created =
        stub_->create_write_stream(request, kCreateTimeout);
    if (created.ok()) return created->name();
    const auto code = created.status().code();
    if (!TransientCode(code)) return created.status();
    auto delay = backoff.next();
    if (!delay) {
      return MarkedStatus(
          absl::Status(code, fmt::format("CreateWriteStream for {} kept failing ({} attempts): {}",
                                         table_, backoff.attempts(), created.status().message())),
          kStreamFailurePayload);
    }
    spdlog::info("BigQuery sink: CreateWriteStream for {} failed ({}); retrying in {} ms", table_,
                 Describe(created.status()), delay->count());
    if (!sleep_for(*delay)) return absl::CancelledError("the BigQuery writer is shutting down");
  }
}

BufferedStreamClient::Established BufferedStreamClient::establish(const BatchPtr& batch) {
  std::optional<BufferedStreamPosition> restored = std::move(unproven_);
  unproven_.reset();
  if (!restored) restored = ledger_->adopt(table_);
  if (restored) {
    {
      std::lock_guard lock(mu_);
      open_appender_locked(restored->stream);
    }
    // The probe is retried on the recovery schedule while it fails transiently.
    connector::RecoveryBackoff backoff(options_.recovery);
    AppendOutcome o = append_and_wait(batch, restored->offset);
    while (!o.status.ok() && RetriableAppend(o)) {
      auto delay = backoff.next();
      if (!delay || !sleep_for(*delay)) break;
      if (on_retry_) on_retry_();
      o = append_and_wait(batch, restored->offset);
    }
    if (o.answered && o.response.row_errors_size() > 0) {
      // Refused for some of its rows: nothing landed, and nothing is proven about the offset
      // (the service may judge rows before offsets). The rows are reported (the writer routes
      // the bad ones and resubmits the others) and the next batch probes again.
      unproven_ = std::move(restored);
      report_row_errors(batch, o.response);
      return Established::kConsumed;
    }
    if (o.status.ok()) {
      const auto end = restored->offset + static_cast<std::int64_t>(batch->rows.size());
      {
        std::lock_guard lock(mu_);
        stream_ = restored->stream;
        acked_end_ = next_offset_ = end;
        ledger_->acknowledged(table_, stream_, end);
      }
      spdlog::info("BigQuery sink: {} resumes its stream {} at offset {}", table_, restored->stream,
                   restored->offset);
      report_success(batch);
      return Established::kConsumed;
    }
    std::shared_ptr<StreamAppender> probe;
    {
      std::lock_guard lock(mu_);
      probe = appender_;
      if (closing_) {
        report_failure(batch, absl::CancelledError("the BigQuery writer is shutting down"));
        return Established::kFailed;
      }
    }
    spdlog::info(
        "BigQuery sink: {} abandons its restored stream {} at offset {} ({}) and starts a fresh "
        "one; rows past that offset were never committed and stay invisible",
        table_, restored->stream, restored->offset, Describe(o.status));
    probe->close(Clock::now());  // never finalized: a restored committable may still flush it
    batch->attempt = 0;
  }
  absl::StatusOr<std::string> created = create_stream();
  if (!created.ok()) {
    report_failure(batch, created.status());
    return Established::kFailed;
  }
  std::lock_guard lock(mu_);
  if (closing_) {
    report_failure(batch, absl::CancelledError("the BigQuery writer is shutting down"));
    return Established::kFailed;
  }
  stream_ = *created;
  acked_end_ = next_offset_ = 0;
  open_appender_locked(stream_);
  ledger_->acknowledged(table_, stream_, 0);
  return Established::kReady;
}

void BufferedStreamClient::repair() {
  std::deque<BatchPtr> list;
  std::int64_t expected;
  {
    std::lock_guard lock(mu_);
    list.swap(in_flight_);
    expected = acked_end_;
  }
  auto guard = [&](const std::string& what) {
    return MarkedStatus(absl::InternalError(fmt::format(
                            "BigQuery sink: {} on stream {} of {}; failing rather than risking a "
                            "lost or doubled row (the restore starts a fresh stream)",
                            what, stream_, table_)),
                        kStreamFailurePayload);
  };
  bool rewound = false;  // a refused request: everything behind it moves to new offsets
  absl::Status fatal;
  for (const BatchPtr& b : list) {
    if (!fatal.ok()) {
      report_failure(b, fatal);
      continue;
    }
    if (rewound) {
      if (b->outcome.status.ok()) {
        fatal = guard("an append was acknowledged behind a refused one");
        report_failure(b, fatal);
      } else {
        report_refused_with_request(b);
      }
      continue;
    }
    if (b->offset != expected) {
      fatal =
          guard(fmt::format("an append at offset {} where {} was expected", b->offset, expected));
      report_failure(b, fatal);
      continue;
    }
    AppendOutcome o = std::move(b->outcome);
    bool resent = false;
    // Re-appends follow the recovery schedule, counted from this failure (not from the send:
    // a send may have waited for the window).
    connector::RecoveryBackoff backoff(options_.recovery);
    for (;;) {
      const auto code = CodeOf(o);
      const bool landed = o.status.ok() || (resent && code == StorageError::OFFSET_ALREADY_EXISTS);
      if (landed) {
        if (o.status.ok() && o.response.append_result().has_offset() &&
            o.response.append_result().offset().value() != b->offset) {
          fatal = guard(fmt::format("the service echoed offset {} for an append at {}",
                                    o.response.append_result().offset().value(), b->offset));
          report_failure(b, fatal);
          break;
        }
        expected += static_cast<std::int64_t>(b->rows.size());
        {
          std::lock_guard lock(mu_);
          acked_end_ = expected;
          ledger_->acknowledged(table_, stream_, expected);
        }
        report_success(b);
        break;
      }
      if (o.answered && o.response.row_errors_size() > 0) {
        report_row_errors(b, o.response);
        rewound = true;
        break;
      }
      if (code == StorageError::SCHEMA_MISMATCH_EXTRA_FIELDS) {
        // Refused whole, so nothing landed: the writer may widen the table (schema updates)
        // and resend these rows, and those behind them, at new offsets.
        report_failure(b, o.status);
        rewound = true;
        break;
      }
      // Stranded behind an earlier failure: its turn comes now, at the same offset.
      const bool stranded = !resent && code == StorageError::OFFSET_OUT_OF_RANGE;
      if (!stranded && !RetriableAppend(o)) {
        fatal = MarkedStatus(o.status, kStreamFailurePayload);
        report_failure(b, fatal);
        break;
      }
      std::optional<std::chrono::milliseconds> delay = std::chrono::milliseconds(0);
      if (!stranded) delay = backoff.next();
      if (!delay) {
        fatal = MarkedStatus(
            absl::Status(o.status.code(), fmt::format("an append to {} failed {} times: {}", table_,
                                                      b->attempt, o.status.message())),
            kStreamFailurePayload);
        report_failure(b, fatal);
        break;
      }
      if (!sleep_for(*delay)) {
        fatal = absl::CancelledError("the BigQuery writer is shutting down");
        report_failure(b, fatal);
        break;
      }
      if (on_retry_ && !stranded) on_retry_();
      o = append_and_wait(b, b->offset);
      resent = true;
    }
  }
  {
    std::lock_guard lock(mu_);
    if (!fatal.ok() && broken_.ok() && fatal.code() != absl::StatusCode::kCancelled) {
      broken_ = fatal;
    }
    next_offset_ = acked_end_;
    repairing_ = false;
  }
  cv_.notify_all();
}

void BufferedStreamClient::report_success(const BatchPtr& batch) {
  ReportWritten(*listener_, *batch);
  finished();
}

void BufferedStreamClient::report_failure(const BatchPtr& batch, const absl::Status& status) {
  ReportFailed(*listener_, *batch, status);
  finished();
}

void BufferedStreamClient::report_row_errors(const BatchPtr& batch,
                                             const storage_v1::AppendRowsResponse& response) {
  ReportRowErrors(*listener_, *batch, response);
  finished();
}

void BufferedStreamClient::report_refused_with_request(const BatchPtr& batch) {
  report_failure(batch, MarkedStatus(absl::AbortedError("sent behind a refused AppendRows request; "
                                                        "appended again at a new offset"),
                                     kRefusedWithItsRequestPayload));
}

void BufferedStreamClient::resume_parked() {
  std::lock_guard lock(mu_);
  if (!stream_.empty()) reopen_ = true;
}

void BufferedStreamClient::finished() {
  {
    std::lock_guard lock(mu_);
    --outstanding_;
  }
  idle_cv_.notify_all();
}

absl::Status BufferedStreamClient::shutdown() {
  std::vector<std::shared_ptr<StreamAppender>> appenders;
  {
    std::lock_guard lock(mu_);
    closing_ = true;
    if (appender_) appenders.push_back(appender_);
    for (auto& r : retired_) appenders.push_back(r);
  }
  cv_.notify_all();
  const absl::Status cancelled = absl::CancelledError("the BigQuery writer is shutting down");
  if (current_ && !current_->rows.empty()) {
    {
      std::lock_guard lock(mu_);
      ++outstanding_;
    }
    report_failure(std::move(current_), cancelled);
  }
  current_.reset();
  const auto deadline = Clock::now() + options_.shutdown_timeout;
  // Unanswered appends fail when their connection is cut; the worker then reports them.
  for (auto& a : appenders) a->close(deadline);
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  // The worker may have opened an appender after the first round: close every one, so no
  // reader thread (and no callback) outlives shutdown.
  {
    std::lock_guard lock(mu_);
    appenders.clear();
    if (appender_) appenders.push_back(appender_);
    for (auto& r : retired_) appenders.push_back(r);
  }
  for (auto& a : appenders) a->close(Clock::now());
  std::deque<BatchPtr> left;
  {
    std::lock_guard lock(mu_);
    for (auto& b : queue_) left.push_back(std::move(b));
    for (auto& b : in_flight_) left.push_back(std::move(b));
    queue_.clear();
    in_flight_.clear();
  }
  for (const auto& b : left) report_failure(b, cancelled);
  ledger_->release(table_);
  std::unique_lock lock(mu_);
  if (!idle_cv_.wait_until(lock, deadline, [&] { return outstanding_ == 0; })) {
    return absl::DeadlineExceededError(fmt::format(
        "{} append(s) to {} still unreported after shutdown_timeout", outstanding_, table_));
  }
  return absl::OkStatus();
}

}  // namespace gcpstream::bigquery
