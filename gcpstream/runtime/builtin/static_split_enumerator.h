#ifndef GCPSTREAM_RUNTIME_BUILTIN_STATIC_SPLIT_ENUMERATOR_H_
#define GCPSTREAM_RUNTIME_BUILTIN_STATIC_SPLIT_ENUMERATOR_H_

#include <deque>
#include <utility>
#include <vector>

#include "gcpstream/api/split_enumerator.h"

namespace gcpstream {

// Hands out a fixed set of splits, one per request, and signals "no more splits" to a reader
// that asks when none is left. Its state is the splits not yet assigned; splits returned by a
// failed reader are queued again. For bounded sources whose splits are known up front.
template <typename SplitT>
class StaticSplitEnumerator final : public SplitEnumerator<SplitT, std::vector<SplitT>> {
 public:
  StaticSplitEnumerator(SplitEnumeratorContext<SplitT>& context, std::vector<SplitT> splits)
      : context_(context), remaining_(splits.begin(), splits.end()) {}

  absl::Status start() override { return absl::OkStatus(); }
  absl::Status handle_split_request(int subtask) override {
    if (remaining_.empty()) {
      context_.signal_no_more_splits(subtask);
      return absl::OkStatus();
    }
    SplitT split = std::move(remaining_.front());
    remaining_.pop_front();
    context_.assign_split(subtask, std::move(split));
    return absl::OkStatus();
  }
  absl::Status add_splits_back(std::vector<SplitT> splits, int) override {
    for (auto& s : splits) remaining_.push_back(std::move(s));
    return absl::OkStatus();
  }
  absl::Status add_reader(int) override { return absl::OkStatus(); }
  absl::StatusOr<std::vector<SplitT>> snapshot_state(std::int64_t) override {
    return std::vector<SplitT>(remaining_.begin(), remaining_.end());
  }

 private:
  SplitEnumeratorContext<SplitT>& context_;
  std::deque<SplitT> remaining_;
};

}  // namespace gcpstream

#endif  // GCPSTREAM_RUNTIME_BUILTIN_STATIC_SPLIT_ENUMERATOR_H_
