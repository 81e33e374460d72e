#ifndef GCPSTREAM_API_SOURCE_READER_BASE_H_
#define GCPSTREAM_API_SOURCE_READER_BASE_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gcpstream/api/internal/split_fetcher.h"
#include "gcpstream/api/source_reader.h"
#include "gcpstream/api/split_reader.h"

namespace gcpstream {

// The common shape of a source reader (Flink's SourceReaderBase with a single fetcher): a
// SplitReader runs on a fetcher thread and fills a bounded queue of batches (capacity
// SourceReaderOptions::element_queue_capacity); poll_next() emits one element per call through
// the RecordEmitter, which also advances the split's state. A connector implements the
// SplitReader, the RecordEmitter and the three state hooks below.
//
// Each split emits through its own output (per-split watermarks) unless the connector passes
// per_split_outputs = false: then every record goes through the reader's one output, for a
// source whose watermark is not per split (one the coordinator computes, for example).
//
// E: what the fetcher produces; T: what the source emits; SplitStateT: mutable progress of a
// split (snapshot_state() turns it back into a SplitT).
template <typename E, typename T, typename SplitT, typename SplitStateT>
class SourceReaderBase : public SourceReader<T, SplitT> {
 public:
  SourceReaderBase(std::unique_ptr<SplitReader<E, SplitT>> split_reader,
                   std::unique_ptr<RecordEmitter<E, T, SplitStateT>> emitter,
                   SourceReaderContext& context, bool per_split_outputs = true)
      : context_(context),
        per_split_outputs_(per_split_outputs),
        emitter_(std::move(emitter)),
        fetcher_(std::move(split_reader), context.options().element_queue_capacity,
                 [&context] { context.signal_available(); }) {}

  absl::Status start() override {
    fetcher_.start();
    return absl::OkStatus();
  }

  absl::StatusOr<InputStatus> poll_next(ReaderOutput<T>& output) override {
    while (true) {
      if (!current_) {
        current_ = fetcher_.poll();
        group_ = 0;
        cached_group_ = kNoGroup;
        element_ = 0;
        if (!current_) {
          absl::Status error = fetcher_.error();
          if (!error.ok()) return error;
          if (no_more_splits_ && states_.empty()) return InputStatus::kEndOfInput;
          return InputStatus::kNothingAvailable;
        }
      }
      auto& groups = current_->splits;
      while (group_ < groups.size() && element_ >= groups[group_].elements.size()) {
        ++group_;
        element_ = 0;
      }
      if (group_ < groups.size()) {
        auto& group = groups[group_];
        if (cached_group_ != group_) {
          auto state = states_.find(group.split_id);
          if (state == states_.end()) {
            // Elements of a split this reader no longer owns: skip them.
            element_ = group.elements.size();
            continue;
          }
          cached_group_ = group_;
          cached_state_ = &state->second;
          cached_output_ = per_split_outputs_ ? &output_for(output, group.split_id) : &output;
        }
        E element = std::move(group.elements[element_++]);
        absl::Status status =
            emitter_->emit_record(std::move(element), *cached_output_, *cached_state_);
        if (!status.ok()) return status;
        return InputStatus::kMoreAvailable;
      }
      // The batch is drained: retire the splits it finished.
      if (!current_->finished_splits.empty()) {
        std::map<std::string, SplitStateT> finished;
        for (const auto& id : current_->finished_splits) {
          auto it = states_.find(id);
          if (it == states_.end()) continue;
          finished.emplace(id, std::move(it->second));
          states_.erase(it);
          if (outputs_.erase(id) > 0) output.release_output_for_split(id);
        }
        current_.reset();
        if (!finished.empty()) {
          absl::Status status = on_split_finished(finished);
          if (!status.ok()) return status;
        }
        continue;
      }
      current_.reset();
    }
  }

  absl::StatusOr<std::vector<SplitT>> snapshot_state(std::int64_t checkpoint_id) override {
    (void)checkpoint_id;
    std::vector<SplitT> splits;
    splits.reserve(states_.size());
    for (const auto& [id, state] : states_) splits.push_back(to_split_type(id, state));
    return splits;
  }

  absl::Status add_splits(std::vector<SplitT> splits) override {
    for (const auto& split : splits) states_.emplace(split.split_id(), initialized_state(split));
    fetcher_.add_splits(std::move(splits));
    return absl::OkStatus();
  }

  absl::Status notify_no_more_splits() override {
    no_more_splits_ = true;
    context_.signal_available();
    return absl::OkStatus();
  }

  absl::Status pause_or_resume_splits(const std::vector<std::string>& to_pause,
                                      const std::vector<std::string>& to_resume) override {
    fetcher_.pause_or_resume(to_pause, to_resume);
    return absl::OkStatus();
  }

  absl::Status close() override { return fetcher_.shutdown(); }

 protected:
  // The mutable progress of a newly assigned split.
  virtual SplitStateT initialized_state(const SplitT& split) = 0;
  // A checkpointable split from its progress.
  virtual SplitT to_split_type(const std::string& split_id, const SplitStateT& state) = 0;
  // Splits whose every element has been emitted; typically asks for more splits.
  virtual absl::Status on_split_finished(const std::map<std::string, SplitStateT>& finished) = 0;

  SourceReaderContext& context() { return context_; }
  internal::SplitFetcher<E, SplitT>& fetcher() { return fetcher_; }
  std::size_t assigned_split_count() const { return states_.size(); }
  bool no_more_splits() const { return no_more_splits_; }

 private:
  SourceOutput<T>& output_for(ReaderOutput<T>& output, const std::string& split_id) {
    auto it = outputs_.find(split_id);
    if (it != outputs_.end()) return *it->second;
    SourceOutput<T>& created = output.create_output_for_split(split_id);
    outputs_.emplace(split_id, &created);
    return created;
  }

  SourceReaderContext& context_;
  const bool per_split_outputs_;
  std::unique_ptr<RecordEmitter<E, T, SplitStateT>> emitter_;
  internal::SplitFetcher<E, SplitT> fetcher_;
  std::map<std::string, SplitStateT> states_;
  std::map<std::string, SourceOutput<T>*> outputs_;
  std::optional<RecordsWithSplitIds<E>> current_;
  static constexpr std::size_t kNoGroup = static_cast<std::size_t>(-1);
  std::size_t group_ = 0;
  std::size_t element_ = 0;
  // The current group's split state and output, looked up once per group.
  std::size_t cached_group_ = kNoGroup;
  SplitStateT* cached_state_ = nullptr;
  SourceOutput<T>* cached_output_ = nullptr;
  bool no_more_splits_ = false;
};

}  // namespace gcpstream

#endif  // GCPSTREAM_API_SOURCE_READER_BASE_H_
