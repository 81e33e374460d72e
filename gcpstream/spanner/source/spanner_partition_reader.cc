#include "gcpstream/spanner/source/spanner_partition_reader.h"

#include <fmt/format.h>

#include "absl/strings/str_cat.h"
#include "gcpstream/spanner/source/spanner_split_enumerator.h"

namespace gcpstream::spanner {

namespace sp = google::spanner::v1;

SpannerPartitionReader::SpannerPartitionReader(std::shared_ptr<SpannerReadClient> client,
                                               SpannerReadOperation op,
                                               SpannerSourceOptions options)
    : client_(std::move(client)), op_(std::move(op)), options_(std::move(options)) {}

SpannerPartitionReader::~SpannerPartitionReader() { stop_stream(); }

absl::Status SpannerPartitionReader::handle_splits_addition(
    SplitsAddition<SpannerPartitionSplit> addition) {
  for (auto& split : addition.splits) pending_.push_back(std::move(split));
  return absl::OkStatus();
}

void SpannerPartitionReader::wake_up() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

absl::Status SpannerPartitionReader::on_row(const sp::ResultSetMetadata& metadata,
                                            std::vector<google::protobuf::Value> values) {
  if (&metadata != last_metadata_ || !columns_) {
    last_metadata_ = &metadata;
    columns_ = std::make_shared<const sp::StructType>(metadata.row_type());
  }
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const int field = static_cast<int>(i);
    bytes += field < columns_->fields_size()
                 ? EstimatedValueBytes(columns_->fields(field).type(), values[i])
                 : EstimatedValueBytes(sp::Type(), values[i]);
  }
  std::unique_lock lock(mu_);
  // One fetch's worth waits here; the next row waits until fetch() took some.
  cv_.wait(lock, [&] {
    return closing_ || rows_.empty() ||
           (rows_.size() < static_cast<std::size_t>(options_.max_rows_per_fetch) &&
            buffered_bytes_ < options_.max_bytes_per_fetch);
  });
  if (closing_) return absl::CancelledError("the source reader is closing");
  buffered_bytes_ += bytes;
  rows_.emplace_back(Row(columns_, std::move(values)), bytes);
  lock.unlock();
  cv_.notify_all();
  return absl::OkStatus();
}

void SpannerPartitionReader::start_stream(const SpannerPartitionSplit& split) {
  {
    std::lock_guard lock(mu_);
    stream_done_ = false;
    stream_status_ = absl::OkStatus();
    buffered_bytes_ = 0;
    rows_.clear();
  }
  cancel_ = std::make_unique<ReadCancellation>();
  last_metadata_ = nullptr;
  columns_.reset();
  stream_thread_ = std::thread([this, split, cancel = cancel_.get()] {
    auto on_row = [this](const sp::ResultSetMetadata& metadata,
                         std::vector<google::protobuf::Value> values) {
      return this->on_row(metadata, std::move(values));
    };
    // Both request kinds rejoin the transaction the same way.
    auto rejoin = [&](auto request) {
      request.set_session(split.transaction.session);
      request.mutable_transaction()->set_id(split.transaction.transaction_id);
      request.set_partition_token(split.partition_token);
      request.set_data_boost_enabled(options_.data_boost_enabled);
      request.mutable_request_options()->set_priority(options_.rpc_priority);
      return request;
    };
    absl::Status status =
        op_.kind() == SpannerReadOperation::Kind::kQuery
            ? client_->data().ExecuteStreamingSql(rejoin(op_.execute_request()), on_row, cancel)
            : client_->data().StreamingRead(rejoin(op_.read_request()), on_row, cancel);
    if (IsSessionNotFound(status)) status = LostBatchTransactionError(split.transaction, status);
    {
      std::lock_guard lock(mu_);
      stream_done_ = true;
      stream_status_ =
          status.ok()
              ? status
              : absl::Status(status.code(), absl::StrCat("SpannerSource: reading ",
                                                         split.split_id(), ": ", status.message()));
    }
    cv_.notify_all();
  });
}

void SpannerPartitionReader::stop_stream() {
  if (!stream_thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  cv_.notify_all();
  if (cancel_) cancel_->cancel();
  stream_thread_.join();
  std::lock_guard lock(mu_);
  closing_ = false;
}

absl::StatusOr<RecordsWithSplitIds<Row>> SpannerPartitionReader::fetch() {
  RecordsWithSplitIds<Row> batch;
  if (!current_) {
    if (pending_.empty()) return batch;
    current_ = std::move(pending_.front());
    pending_.pop_front();
    start_stream(*current_);
  }
  const std::string id = current_->split_id();
  bool finished = false;
  absl::Status failure;
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !rows_.empty() || stream_done_ || woken_ || closing_; });
    woken_ = false;
    std::size_t taken_bytes = 0;
    int taken = 0;
    while (!rows_.empty() && taken < options_.max_rows_per_fetch &&
           (taken == 0 || taken_bytes + rows_.front().second <= options_.max_bytes_per_fetch)) {
      taken_bytes += rows_.front().second;
      buffered_bytes_ -= rows_.front().second;
      batch.add(id, std::move(rows_.front().first));
      rows_.pop_front();
      ++taken;
    }
    if (rows_.empty() && stream_done_) {
      finished = true;
      failure = stream_status_;
    }
  }
  cv_.notify_all();
  if (finished) {
    stream_thread_.join();
    if (!failure.ok()) return failure;
    batch.finish_split(id);
    current_.reset();
  }
  return batch;
}

absl::Status SpannerPartitionReader::close() {
  stop_stream();
  client_.reset();
  return absl::OkStatus();
}

}  // namespace gcpstream::spanner
