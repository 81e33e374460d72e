#include "gcpstream/bigtable/client/bulk_mutation_batcher.h"

#include <fmt/format.h>

#include <algorithm>

#include "gcpstream/bigtable/client/row_mutation_entry.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::bigtable {

absl::Status BatchingThresholds::validate() const {
  if (element_count < 1 || element_count > kMaxElementCount) {
    return absl::InvalidArgumentError(fmt::format(
        "batch_element_count must be in 1..{} (the Bigtable client refuses thresholds at or "
        "above its own flow-control budget of 20,000 entries)",
        kMaxElementCount));
  }
  if (byte_size < 1 || byte_size > kMaxByteSize) {
    return absl::InvalidArgumentError(fmt::format(
        "batch_byte_size must be in 1..{} (one byte under the Bigtable client's 100 MiB "
        "flow-control budget)",
        kMaxByteSize));
  }
  if (delay.count() <= 0) return absl::InvalidArgumentError("batch delay must be positive");
  return absl::OkStatus();
}

namespace {

namespace v2 = google::bigtable::v2;

class MutateRowsService final : public connector::BatchService<Entry, v2::MutateRowsRequest> {
 public:
  MutateRowsService(std::string table_name, std::string app_profile_id,
                    std::shared_ptr<BigtableDataStub> stub)
      : table_name_(std::move(table_name)),
        app_profile_id_(std::move(app_profile_id)),
        stub_(std::move(stub)) {}

  std::shared_ptr<v2::MutateRowsRequest> new_request() override {
    auto request = std::make_shared<v2::MutateRowsRequest>();
    request->set_table_name(table_name_);
    if (!app_profile_id_.empty()) request->set_app_profile_id(app_profile_id_);
    return request;
  }
  void append(v2::MutateRowsRequest& request, Entry&& entry) override {
    *request.add_entries() = std::move(entry);
  }
  Entry& element(v2::MutateRowsRequest& request, std::size_t index) override {
    return *request.mutable_entries()->Mutable(static_cast<int>(index));
  }
  std::function<void()> send(std::shared_ptr<v2::MutateRowsRequest> request,
                             std::chrono::milliseconds timeout,
                             std::function<void(connector::BatchCallResult)> done) override {
    return stub_->async_mutate_rows(std::move(request), timeout, std::move(done));
  }

 private:
  const std::string table_name_;
  const std::string app_profile_id_;
  std::shared_ptr<BigtableDataStub> stub_;
};

// The Bigtable client's schedule: exponential backoff, each attempt bounded by the attempt
// timeout and by what is left of the total timeout, no retry that would start past it.
class TotalTimeoutPolicy final : public connector::BatchRetryPolicy {
 public:
  explicit TotalTimeoutPolicy(const MutateRowsRetrySettings& retry)
      : retry_(retry), start_(std::chrono::steady_clock::now()), delay_(retry.initial_delay) {}
  std::chrono::milliseconds attempt_timeout() override {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        start_ + retry_.total_timeout - std::chrono::steady_clock::now());
    return std::min(retry_.attempt_timeout, left);
  }
  std::optional<std::chrono::milliseconds> next_delay() override {
    const auto elapsed = std::chrono::steady_clock::now() - start_;
    if (elapsed + delay_ >= retry_.total_timeout) return std::nullopt;
    const auto delay = delay_;
    delay_ =
        std::min(retry_.max_delay, std::chrono::milliseconds(static_cast<std::int64_t>(
                                       static_cast<double>(delay_.count()) * retry_.multiplier)));
    return delay;
  }

 private:
  const MutateRowsRetrySettings retry_;
  const std::chrono::steady_clock::time_point start_;
  std::chrono::milliseconds delay_;
};

}  // namespace

BulkMutationBatcher::BulkMutationBatcher(std::string table_name, std::string app_profile_id,
                                         std::shared_ptr<BigtableDataStub> stub,
                                         BatchingThresholds thresholds,
                                         MutateRowsRetrySettings retry,
                                         std::shared_ptr<util::TimerThread> timers,
                                         std::shared_ptr<MutationListener> listener) {
  connector::RequestBatcherSettings settings;
  settings.max_count = thresholds.element_count;
  settings.max_bytes = thresholds.byte_size;
  settings.max_units = kMaxMutationsPerRequest;
  settings.delay = thresholds.delay;
  settings.retryable_codes = retry.retryable_codes;
  settings.retry_policy = [retry] { return std::make_unique<TotalTimeoutPolicy>(retry); };
  batcher_ = std::make_shared<connector::RequestBatcher<Entry, v2::MutateRowsRequest>>(
      std::make_shared<MutateRowsService>(std::move(table_name), std::move(app_profile_id),
                                          std::move(stub)),
      std::move(settings),
      [](const Entry& entry) {
        return std::pair<std::int64_t, std::int64_t>(
            static_cast<std::int64_t>(entry.ByteSizeLong()), entry.mutations_size());
      },
      std::move(timers), std::move(listener));
}

BulkMutationBatcher::~BulkMutationBatcher() = default;

void BulkMutationBatcher::add(Entry&& entry, std::uint64_t token) {
  batcher_->add(std::move(entry), token);
}

void BulkMutationBatcher::add_solo(Entry&& entry, std::uint64_t token) {
  batcher_->add_solo(std::move(entry), token);
}

void BulkMutationBatcher::flush() { batcher_->flush(); }

absl::Status BulkMutationBatcher::shutdown() { return batcher_->shutdown(); }

}  // namespace gcpstream::bigtable
