#ifndef GCPSTREAM_API_PULL_SOURCE_READER_H_
#define GCPSTREAM_API_PULL_SOURCE_READER_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gcpstream/api/source_reader_base.h"
#include "gcpstream/api/status_macros.h"

namespace gcpstream {

// A SourceReaderBase for a bounded, pull-based source whose split is its own state (the split
// records its progress, as a scan range or a stream offset does): it asks the enumerator for a
// split when it starts and whenever it holds fewer than `max_held`, one request outstanding at a
// time. With 2 the next split is queued behind the one being read, so a split's end does not
// wait for the coordinator (many short splits); with 1 a reader holds one split at a time and
// asks for the next when it finishes, so splits spread over the subtasks even when they were
// planned before the readers asked. Pairs with PullSplitAssigner on the enumerator's side.
template <typename E, typename T, typename SplitT, int max_held = 2>
class PullSourceReader final : public SourceReaderBase<E, T, SplitT, SplitT> {
  using Base = SourceReaderBase<E, T, SplitT, SplitT>;

 public:
  PullSourceReader(std::unique_ptr<SplitReader<E, SplitT>> split_reader,
                   std::unique_ptr<RecordEmitter<E, T, SplitT>> emitter,
                   SourceReaderContext& context)
      : Base(std::move(split_reader), std::move(emitter), context) {}

  absl::Status start() override {
    GCP_RETURN_IF_ERROR(Base::start());
    request_more();
    return absl::OkStatus();
  }
  absl::Status add_splits(std::vector<SplitT> splits) override {
    requested_ = false;
    GCP_RETURN_IF_ERROR(Base::add_splits(std::move(splits)));
    request_more();
    return absl::OkStatus();
  }

 protected:
  SplitT initialized_state(const SplitT& split) override { return split; }
  SplitT to_split_type(const std::string&, const SplitT& state) override { return state; }
  absl::Status on_split_finished(const std::map<std::string, SplitT>&) override {
    request_more();
    return absl::OkStatus();
  }

 private:
  void request_more() {
    if (requested_ || this->no_more_splits() || this->assigned_split_count() >= max_held) return;
    requested_ = true;
    this->context().send_split_request();
  }
  bool requested_ = false;
};

}  // namespace gcpstream

#endif  // GCPSTREAM_API_PULL_SOURCE_READER_H_
