#include "gcpstream/bigquery/sink/staging_file_client.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gcpstream/bigquery/sink/append_batch.h"
#include "gcpstream/bigquery/sink/append_retry.h"
#include "gcpstream/bigquery/sink/buffered_stream_client.h"

namespace gcpstream::bigquery {
namespace {

constexpr std::int64_t kQuantum = static_cast<std::int64_t>(gcs::kResumableChunkQuantum);

absl::Status Marked(absl::Status status, const char* payload) {
  status.SetPayload(payload, absl::Cord("1"));
  return status;
}

}  // namespace

StagingFileClient::StagingFileClient(
    std::string table, std::unique_ptr<staging::AvroRowEncoder> encoder,
    std::shared_ptr<gcs::StorageClient> storage, std::shared_ptr<StagedFilesLedger> ledger,
    StagingFileOptions options,
    std::shared_ptr<connector::SinkOutcomeListener<BigQueryRow>> listener,
    std::function<void()> file_staged)
    : table_(std::move(table)),
      encoder_(std::move(encoder)),
      storage_(std::move(storage)),
      ledger_(std::move(ledger)),
      options_(std::move(options)),
      listener_(std::move(listener)),
      file_staged_(std::move(file_staged)) {
  uploader_ = std::thread([this] { upload_loop(); });
}

StagingFileClient::~StagingFileClient() {
  if (uploader_.joinable()) shutdown().IgnoreError();
}

void StagingFileClient::begin_file() {
  object_ = fmt::format("{}{}/{}/{}-{}-{}.avro", options_.prefix, options_.run, options_.table_id,
                        options_.subtask, options_.attempt, sequence_++);
  file_ = std::make_unique<staging::AvroContainerWriter>(encoder_->schema_json(), options_.codec,
                                                         options_.block_bytes);
  pending_.clear();
  handed_ = 0;
  file_rows_ = 0;
  ends_.clear();
  in_block_.clear();
  file_->start(&pending_);
}

void StagingFileClient::submit(BigQueryRow&& row, std::uint64_t token) {
  if (has_failed_.load(std::memory_order_acquire)) {
    absl::Status failed;
    {
      std::lock_guard lock(mu_);
      failed = failed_;
    }
    return report({token}, failed);
  }
  datum_.clear();  // reused: no allocation per row once it has grown
  absl::Status encoded = encoder_->encode(row.bytes, &datum_);
  if (encoded.ok()) {
    if (!file_) begin_file();
    encoded = file_->add(datum_, &pending_);
  }
  if (!encoded.ok()) {
    // This row alone cannot be loaded: a record-level failure, handed back for the handler.
    std::vector<connector::SinkOutcome<BigQueryRow>> outcome(1);
    outcome[0].token = token;
    outcome[0].status =
        Marked(absl::InvalidArgumentError(fmt::format(
                   "a row for {} cannot be staged for a load job: {}", table_, encoded.message())),
               kRowErrorPayload);
    outcome[0].element = std::move(row);
    listener_->on_outcomes(std::move(outcome), nullptr);
    return;
  }
  ++file_rows_;
  in_block_.push_back(token);
  if (file_->pending_bytes() == 0) {  // the block closed into pending_
    const std::int64_t end = handed_ + static_cast<std::int64_t>(pending_.size());
    for (std::uint64_t t : in_block_) ends_.emplace_back(end, t);
    in_block_.clear();
  }
  const auto size = handed_ + static_cast<std::int64_t>(pending_.size() + file_->pending_bytes());
  if (size >= options_.max_file_bytes) return flush();
  if (static_cast<std::int64_t>(pending_.size()) >= options_.chunk_bytes) hand_over(false);
}

void StagingFileClient::submit_solo(BigQueryRow&& row, std::uint64_t token) {
  // A staged row's fate does not depend on its neighbours: alone it fares the same.
  submit(std::move(row), token);
}

void StagingFileClient::flush() {
  if (!file_) return;
  if (file_rows_ == 0) {  // every row offered to this file was refused: nothing to stage
    file_.reset();
    return;
  }
  if (absl::Status st = file_->flush(&pending_); !st.ok()) {
    std::vector<std::uint64_t> tokens = std::move(in_block_);
    for (const auto& [end, t] : ends_) tokens.push_back(t);
    {
      std::lock_guard lock(mu_);
      if (failed_.ok()) failed_ = Marked(st, kStreamFailurePayload);
      has_failed_.store(true, std::memory_order_release);
    }
    file_.reset();
    ends_.clear();
    in_block_.clear();
    return report(std::move(tokens), Marked(st, kStreamFailurePayload));
  }
  const std::int64_t end = handed_ + static_cast<std::int64_t>(pending_.size());
  for (std::uint64_t t : in_block_) ends_.emplace_back(end, t);
  in_block_.clear();
  hand_over(true);
  file_.reset();
}

void StagingFileClient::hand_over(bool last) {
  // Whole chunks of at most chunk_bytes first (one large row must not make one huge request),
  // then, when finishing, the rest.
  const std::int64_t chunk = std::max(kQuantum, options_.chunk_bytes / kQuantum * kQuantum);
  while (static_cast<std::int64_t>(pending_.size()) > chunk ||
         (!last && static_cast<std::int64_t>(pending_.size()) == chunk)) {
    hand_over_part(chunk, false);
  }
  if (last) {
    hand_over_part(static_cast<std::int64_t>(pending_.size()), true);
  } else if (static_cast<std::int64_t>(pending_.size()) >= kQuantum) {
    hand_over_part(static_cast<std::int64_t>(pending_.size()) / kQuantum * kQuantum, false);
  }
}

void StagingFileClient::hand_over_part(std::int64_t size, bool last) {
  Task task;
  task.object = object_;
  task.offset = handed_;
  task.bytes = pending_.substr(0, static_cast<std::size_t>(size));
  task.last = last;
  task.rows = file_rows_;
  pending_.erase(0, static_cast<std::size_t>(size));
  handed_ += size;
  std::size_t covered = 0;
  while (covered < ends_.size() && ends_[covered].first <= handed_) ++covered;
  // The file's newest row is always reported with its last task: a checkpoint's drain waits
  // for that row, so it cannot finish before the file is finished and in the ledger.
  if (!last && covered == ends_.size() && in_block_.empty() && covered > 0) --covered;
  for (std::size_t i = 0; i < covered; ++i) task.tokens.push_back(ends_[i].second);
  ends_.erase(ends_.begin(), ends_.begin() + static_cast<std::ptrdiff_t>(covered));
  {
    std::lock_guard lock(mu_);
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void StagingFileClient::upload_loop() {
  for (;;) {
    Task task;
    absl::Status failed;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, nothing left
      task = std::move(tasks_.front());
      tasks_.pop_front();
      failed = failed_;
    }
    if (!failed.ok()) {
      report(std::move(task.tokens), failed);
      continue;
    }
    absl::Status st = upload(task);
    if (!st.ok()) {
      session_.clear();
      const absl::Status marked = Marked(
          absl::Status(st.code(), fmt::format("staging gs://{}/{} for {} failed: {}",
                                              options_.bucket, task.object, table_, st.message())),
          kStreamFailurePayload);
      {
        std::lock_guard lock(mu_);
        if (failed_.ok()) failed_ = marked;
        has_failed_.store(true, std::memory_order_release);
      }
      report(std::move(task.tokens), marked);
      continue;
    }
    if (task.last) {
      session_.clear();
      ledger_->finished(table_, fmt::format("gs://{}/{}", options_.bucket, task.object), task.rows,
                        task.offset + static_cast<std::int64_t>(task.bytes.size()));
      if (file_staged_) file_staged_();
    }
    report(std::move(task.tokens), absl::OkStatus());
  }
}

absl::Status StagingFileClient::upload(Task& task) {
  connector::RecoveryBackoff backoff(options_.retry);
  auto retry = [&](const absl::Status& st, const char* what) -> bool {
    if (!TransientCode(st.code())) return false;
    const auto delay = backoff.next();
    if (!delay) return false;
    spdlog::info("BigQuery FILE_LOADS: {} of gs://{}/{} failed ({}), attempt {}; retrying in {} ms",
                 what, options_.bucket, task.object, Describe(st), backoff.attempts(),
                 delay->count());
    std::this_thread::sleep_for(*delay);
    return true;
  };
  // A whole file in one task: one media upload (idempotent: the name is this attempt's own).
  if (task.last && task.offset == 0 && session_.empty()) {
    for (;;) {
      auto done = storage_->insert_object(options_.bucket, task.object, task.bytes);
      if (done.ok()) return absl::OkStatus();
      if (!retry(done.status(), "the upload")) return done.status();
    }
  }
  while (session_.empty()) {
    if (task.offset != 0) {
      return absl::InternalError("an upload session ended in the middle of a staging file");
    }
    auto session = storage_->start_resumable_upload(options_.bucket, task.object);
    if (session.ok()) {
      session_ = *session;
    } else if (!retry(session.status(), "starting the resumable upload")) {
      return session.status();
    }
  }
  const std::int64_t end = task.offset + static_cast<std::int64_t>(task.bytes.size());
  std::int64_t at = task.offset;
  for (;;) {
    const std::string_view rest =
        std::string_view(task.bytes).substr(static_cast<std::size_t>(at - task.offset));
    auto progress = storage_->upload_chunk(session_, at, rest, task.last);
    if (progress.ok() && task.last && progress->object.has_value()) return absl::OkStatus();
    if (progress.ok() && !task.last && progress->persisted >= end) return absl::OkStatus();
    if (progress.ok()) {
      if (progress->persisted < at) {
        return absl::DataLossError(fmt::format(
            "the upload session reports {} bytes persisted, fewer than the {} it confirmed",
            progress->persisted, at));
      }
      at = progress->persisted;  // the service kept less: send the rest
      continue;
    }
    if (!retry(progress.status(), "a chunk upload")) return progress.status();
    // Where did the interrupted chunk get to?
    for (;;) {
      auto state = storage_->upload_status(session_);
      if (state.ok()) {
        if (state->object.has_value()) {
          return task.last ? absl::OkStatus()
                           : absl::DataLossError("the upload finished before its last chunk");
        }
        if (state->persisted < task.offset || state->persisted > end) {
          return absl::DataLossError(
              fmt::format("the upload session reports {} bytes persisted, outside the chunk "
                          "[{}, {}) being sent",
                          state->persisted, task.offset, end));
        }
        at = state->persisted;
        break;
      }
      if (!retry(state.status(), "asking the upload's state")) return state.status();
    }
    if (!task.last && at >= end) return absl::OkStatus();
  }
}

void StagingFileClient::report(std::vector<std::uint64_t> tokens, const absl::Status& status) {
  if (tokens.empty()) return;
  std::vector<connector::SinkOutcome<BigQueryRow>> outcomes(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    outcomes[i].token = tokens[i];
    outcomes[i].status = status;
  }
  listener_->on_outcomes(std::move(outcomes), nullptr);
}

absl::Status StagingFileClient::shutdown() {
  {
    std::lock_guard lock(mu_);
    if (failed_.ok()) failed_ = absl::CancelledError("the staging client is shut down");
    has_failed_.store(true, std::memory_order_release);
    stopping_ = true;
  }
  wake_.notify_all();
  if (uploader_.joinable()) uploader_.join();
  // What the writer thread still held (the open file) never reached the upload thread.
  std::vector<std::uint64_t> tokens = std::move(in_block_);
  for (const auto& [end, t] : ends_) tokens.push_back(t);
  ends_.clear();
  in_block_.clear();
  file_.reset();
  report(std::move(tokens), absl::CancelledError("the staging client is shut down"));
  return absl::OkStatus();
}

}  // namespace gcpstream::bigquery
