#ifndef GCPSTREAM_RUNTIME_BUILTIN_NUMBER_SEQUENCE_SOURCE_H_
#define GCPSTREAM_RUNTIME_BUILTIN_NUMBER_SEQUENCE_SOURCE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "gcpstream/api/source.h"

namespace gcpstream {

// A range of the sequence still to be emitted: [next, last].
struct NumberSequenceSplit {
  std::string id;
  std::int64_t next = 0;
  std::int64_t last = -1;
  std::string split_id() const { return id; }
  friend bool operator==(const NumberSequenceSplit&, const NumberSequenceSplit&) = default;
};

// A bounded source emitting every integer in [from, to] exactly once, in ascending order within
// each split. The range is cut into `splits` contiguous splits handed out on request; progress is checkpointed per split, so a restore resumes after the
// last emitted number. Deterministic; emits from the subtask thread without a fetcher, so it
// measures the runtime rather than a reader.
class NumberSequenceSource final
    : public Source<std::int64_t, NumberSequenceSplit, std::vector<NumberSequenceSplit>> {
 public:
  using EnumState = std::vector<NumberSequenceSplit>;

  NumberSequenceSource(std::int64_t from, std::int64_t to, int splits);

  Boundedness boundedness() const override { return Boundedness::kBounded; }
  absl::StatusOr<std::unique_ptr<SplitEnumerator<NumberSequenceSplit, EnumState>>>
  create_enumerator(SplitEnumeratorContext<NumberSequenceSplit>& context) const override;
  absl::StatusOr<std::unique_ptr<SplitEnumerator<NumberSequenceSplit, EnumState>>>
  restore_enumerator(SplitEnumeratorContext<NumberSequenceSplit>& context,
                     EnumState state) const override;
  absl::StatusOr<std::unique_ptr<SourceReader<std::int64_t, NumberSequenceSplit>>> create_reader(
      SourceReaderContext& context) const override;
  const VersionedSerializer<NumberSequenceSplit>& split_serializer() const override;
  const VersionedSerializer<EnumState>& enumerator_state_serializer() const override;

  // The initial splits (exposed for tests).
  std::vector<NumberSequenceSplit> initial_splits() const;

 private:
  std::int64_t from_;
  std::int64_t to_;
  int splits_;
};

}  // namespace gcpstream

#endif  // GCPSTREAM_RUNTIME_BUILTIN_NUMBER_SEQUENCE_SOURCE_H_
