#include "gcpstream/spanner/source/spanner_partition_reader.h"

#include <fmt/format.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "gcpstream/spanner/source/spanner_split_enumerator.h"

namespace gcpstream::spanner {

namespace sp = google::spanner::v1;

SpannerPartitionReader::SpannerPartitionReader(std::shared_ptr<SpannerReadClient> client,
                                               SpannerReadOperation op,
                                               SpannerSourceOptions options)
    : client_(std::move(client)),
      op_(std::move(op)),
      options_(std::move(options)),
      handoff_(static_cast<std::size_t>(std::max(1, options_.max_rows_per_fetch)),
               static_cast<std::size_t>(options_.max_bytes_per_fetch)) {}

SpannerPartitionReader::~SpannerPartitionReader() { stop_stream(); }

absl::Status SpannerPartitionReader::handle_splits_addition(
    SplitsAddition<SpannerPartitionSplit> addition) {
  for (auto& split : addition.splits) pending_.push_back(std::move(split));
  return absl::OkStatus();
}

void SpannerPartitionReader::wake_up() { handoff_.wake_up(); }

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
  if (!handoff_.push(Row(columns_, std::move(values)), bytes)) {
    return absl::CancelledError("the source reader is closing");
  }
  return absl::OkStatus();
}

void SpannerPartitionReader::start_stream(const SpannerPartitionSplit& split) {
  handoff_.reset();
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
    handoff_.finish(
        status.ok()
            ? status
            : absl::Status(status.code(), absl::StrCat("SpannerSource: reading ", split.split_id(),
                                                       ": ", status.message())));
  });
}

void SpannerPartitionReader::stop_stream() {
  if (!stream_thread_.joinable()) return;
  handoff_.close();
  if (cancel_) cancel_->cancel();
  stream_thread_.join();
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
  FetchHandoff<Row>::Taken taken = handoff_.take();
  for (Row& row : taken.elements) batch.add(id, std::move(row));
  if (taken.finished) {
    stream_thread_.join();
    if (!taken.status.ok()) return taken.status;
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
