#ifndef GCPSTREAM_API_SPLIT_QUEUE_READER_H_
#define GCPSTREAM_API_SPLIT_QUEUE_READER_H_

#include <cstdint>
#include <deque>
#include <vector>

#include "gcpstream/api/source_reader.h"

namespace gcpstream {

// A SourceReader that reads on the subtask thread itself (no fetcher thread) from the queue of
// splits assigned to it, asking the enumerator for another split whenever the queue runs dry:
// the shape of a bounded source whose enumerator hands splits out on request. A subclass keeps
// its read progress inside the split (so snapshot_state() captures it) and implements
// poll_next() with current_split() and finish_split(). Subtask thread only, like every reader.
template <typename T, typename Split>
class SplitQueueReader : public SourceReader<T, Split> {
 public:
  explicit SplitQueueReader(SourceReaderContext& context) : context_(context) {}

  absl::Status start() override {
    request();
    return absl::OkStatus();
  }
  // The unfinished splits, front first, each with its progress.
  absl::StatusOr<std::vector<Split>> snapshot_state(std::int64_t) override {
    return std::vector<Split>(splits_.begin(), splits_.end());
  }
  absl::Status add_splits(std::vector<Split> splits) override {
    for (auto& s : splits) splits_.push_back(std::move(s));
    requested_ = false;
    return absl::OkStatus();
  }
  absl::Status notify_no_more_splits() override {
    no_more_splits_ = true;
    return absl::OkStatus();
  }
  absl::Status close() override { return absl::OkStatus(); }

 protected:
  // The split to read from after dropping those `finished(split)` says are done; or null, with
  // `when_none` set to what poll_next() returns then: kEndOfInput once the enumerator has no
  // more splits, otherwise kNothingAvailable (another split has been requested).
  template <typename Finished>
  Split* current_split(Finished finished, InputStatus& when_none) {
    while (!splits_.empty() && finished(splits_.front())) finish_split();
    if (!splits_.empty()) return &splits_.front();
    if (no_more_splits_) {
      when_none = InputStatus::kEndOfInput;
    } else {
      request();
      when_none = InputStatus::kNothingAvailable;
    }
    return nullptr;
  }
  // Drops the current split (read to its end) and asks for another when none is left.
  void finish_split() {
    splits_.pop_front();
    on_split_finished();
    if (splits_.empty() && !no_more_splits_) request();
  }
  // Called after the current split was dropped: release what was kept for reading it.
  virtual void on_split_finished() {}

 private:
  void request() {
    if (requested_) return;
    requested_ = true;
    context_.send_split_request();
  }

  SourceReaderContext& context_;
  std::deque<Split> splits_;
  bool requested_ = false;
  bool no_more_splits_ = false;
};

}  // namespace gcpstream

#endif  // GCPSTREAM_API_SPLIT_QUEUE_READER_H_
