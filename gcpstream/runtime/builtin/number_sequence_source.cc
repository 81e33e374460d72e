#include "gcpstream/runtime/builtin/number_sequence_source.h"

#include <fmt/format.h>

#include <algorithm>

#include "gcpstream/api/split_queue_reader.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/runtime/builtin/static_split_enumerator.h"
#include "gcpstream/util/bytes.h"

namespace gcpstream {
namespace {

class SplitSerializer final : public VersionedSerializer<NumberSequenceSplit> {
 public:
  int version() const override { return 1; }
  absl::StatusOr<std::string> serialize(const NumberSequenceSplit& split) const override {
    util::ByteWriter w;
    w.put_string(split.id);
    w.put_i64(split.next);
    w.put_i64(split.last);
    return w.take();
  }
  absl::StatusOr<NumberSequenceSplit> deserialize(int version,
                                                  std::string_view bytes) const override {
    if (version != 1) return util::UnknownVersion("a number sequence split", version, 1);
    util::ByteReader r(bytes);
    NumberSequenceSplit split;
    GCP_ASSIGN_OR_RETURN(split.id, r.string());
    GCP_ASSIGN_OR_RETURN(split.next, r.i64());
    GCP_ASSIGN_OR_RETURN(split.last, r.i64());
    return split;
  }
};

class StateSerializer final : public VersionedSerializer<std::vector<NumberSequenceSplit>> {
 public:
  int version() const override { return 1; }
  absl::StatusOr<std::string> serialize(
      const std::vector<NumberSequenceSplit>& splits) const override {
    util::ByteWriter w;
    w.put_u32(static_cast<std::uint32_t>(splits.size()));
    for (const auto& s : splits) {
      GCP_ASSIGN_OR_RETURN(std::string bytes, split_.serialize(s));
      w.put_string(bytes);
    }
    return w.take();
  }
  absl::StatusOr<std::vector<NumberSequenceSplit>> deserialize(
      int version, std::string_view bytes) const override {
    if (version != 1) return util::UnknownVersion("a number sequence enumerator", version, 1);
    util::ByteReader r(bytes);
    GCP_ASSIGN_OR_RETURN(std::uint32_t n, r.u32());
    std::vector<NumberSequenceSplit> out;
    for (std::uint32_t i = 0; i < n; ++i) {
      GCP_ASSIGN_OR_RETURN(std::string b, r.string());
      GCP_ASSIGN_OR_RETURN(NumberSequenceSplit s, split_.deserialize(1, b));
      out.push_back(std::move(s));
    }
    return out;
  }

 private:
  SplitSerializer split_;
};

// Emits from the subtask thread: no fetcher, no queue.
class Reader final : public SplitQueueReader<std::int64_t, NumberSequenceSplit> {
 public:
  using SplitQueueReader::SplitQueueReader;

  absl::StatusOr<InputStatus> poll_next(ReaderOutput<std::int64_t>& output) override {
    InputStatus when_none;
    NumberSequenceSplit* split =
        current_split([](const NumberSequenceSplit& s) { return s.next > s.last; }, when_none);
    if (split == nullptr) return when_none;
    const std::int64_t value = split->next++;
    GCP_RETURN_IF_ERROR(output.collect(value));
    if (split->next > split->last) finish_split();
    return InputStatus::kMoreAvailable;
  }
};

const SplitSerializer kSplitSerializer;
const StateSerializer kStateSerializer;

}  // namespace

NumberSequenceSource::NumberSequenceSource(std::int64_t from, std::int64_t to, int splits)
    : from_(from), to_(to), splits_(std::max(1, splits)) {}

std::vector<NumberSequenceSplit> NumberSequenceSource::initial_splits() const {
  std::vector<NumberSequenceSplit> out;
  if (to_ < from_) return out;
  const std::int64_t total = to_ - from_ + 1;
  const std::int64_t n = std::min<std::int64_t>(splits_, total);
  std::int64_t start = from_;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t size = total / n + (i < total % n ? 1 : 0);
    out.push_back({fmt::format("{}", i), start, start + size - 1});
    start += size;
  }
  return out;
}

absl::StatusOr<
    std::unique_ptr<SplitEnumerator<NumberSequenceSplit, NumberSequenceSource::EnumState>>>
NumberSequenceSource::create_enumerator(
    SplitEnumeratorContext<NumberSequenceSplit>& context) const {
  return std::make_unique<StaticSplitEnumerator<NumberSequenceSplit>>(context, initial_splits());
}

absl::StatusOr<
    std::unique_ptr<SplitEnumerator<NumberSequenceSplit, NumberSequenceSource::EnumState>>>
NumberSequenceSource::restore_enumerator(SplitEnumeratorContext<NumberSequenceSplit>& context,
                                         EnumState state) const {
  return std::make_unique<StaticSplitEnumerator<NumberSequenceSplit>>(context, std::move(state));
}

absl::StatusOr<std::unique_ptr<SourceReader<std::int64_t, NumberSequenceSplit>>>
NumberSequenceSource::create_reader(SourceReaderContext& context) const {
  return std::make_unique<Reader>(context);
}

const VersionedSerializer<NumberSequenceSplit>& NumberSequenceSource::split_serializer() const {
  return kSplitSerializer;
}

const VersionedSerializer<NumberSequenceSource::EnumState>&
NumberSequenceSource::enumerator_state_serializer() const {
  return kStateSerializer;
}

}  // namespace gcpstream
