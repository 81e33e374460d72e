#ifndef GCPSTREAM_API_SPLIT_READER_H_
#define GCPSTREAM_API_SPLIT_READER_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/api/source_reader.h"

namespace gcpstream {

// One fetch's worth of elements, grouped by split, plus the splits the fetch finished.
template <typename E>
struct RecordsWithSplitIds {
  struct SplitRecords {
    std::string split_id;
    std::vector<E> elements;
  };
  std::vector<SplitRecords> splits;
  std::vector<std::string> finished_splits;

  // Appends to the last group when it is the same split, else opens a new group.
  void add(const std::string& split_id, E element) {
    if (splits.empty() || splits.back().split_id != split_id) {
      splits.push_back(SplitRecords{split_id, {}});
    }
    splits.back().elements.push_back(std::move(element));
  }
  void finish_split(std::string split_id) { finished_splits.push_back(std::move(split_id)); }
  bool empty() const { return splits.empty() && finished_splits.empty(); }
  std::size_t element_count() const {
    std::size_t n = 0;
    for (const auto& s : splits) n += s.elements.size();
    return n;
  }
};

template <typename SplitT>
struct SplitsAddition {
  std::vector<SplitT> splits;
};

// Reads from the external system for the splits it has been given. Runs on a fetcher thread
// owned by SourceReaderBase: every method except wake_up() is called on that thread only.
template <typename E, typename SplitT>
class SplitReader {
 public:
  virtual ~SplitReader() = default;
  // Blocks until something is available or wake_up() is called; may return an empty batch.
  // A non-OK status fails the source (the reader reports it at its next poll_next()).
  virtual absl::StatusOr<RecordsWithSplitIds<E>> fetch() = 0;
  virtual absl::Status handle_splits_addition(SplitsAddition<SplitT> addition) = 0;
  // Thread-safe: makes a blocked fetch() return soon.
  virtual void wake_up() = 0;
  virtual absl::Status pause_or_resume_splits(const std::vector<std::string>& to_pause,
                                              const std::vector<std::string>& to_resume) {
    (void)to_pause;
    (void)to_resume;
    return absl::UnimplementedError("this split reader cannot pause splits");
  }
  virtual absl::Status close() = 0;
};

// Turns one fetched element into zero or more records and updates the split's progress.
// Runs on the subtask thread.
template <typename E, typename T, typename SplitStateT>
class RecordEmitter {
 public:
  virtual ~RecordEmitter() = default;
  [[nodiscard]] virtual absl::Status emit_record(E element, SourceOutput<T>& output,
                                                 SplitStateT& split_state) = 0;
};

}  // namespace gcpstream

#endif  // GCPSTREAM_API_SPLIT_READER_H_
