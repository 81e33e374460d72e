#ifndef GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_ASSEMBLER_H_
#define GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_ASSEMBLER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/bigtable/changestream/change_stream_mutation.h"
#include "google/bigtable/v2/bigtable.pb.h"

namespace gcpstream::bigtable {

// Rebuilds one logical DataChange from the messages it arrived in: the first carries the row
// key, type, commit time and tiebreaker; later ones are CONTINUATION messages with more chunks;
// the last has `done`, the token and the low watermark. A SetCell whose value is chunked
// (ChunkInfo) arrives as consecutive chunks whose values are concatenated (v2 reference,
// ReadChangeStreamResponse.MutationChunk). Not thread-safe: one per stream.
class ChangeStreamAssembler {
 public:
  // nullopt while the change is incomplete. INTERNAL for a stream that breaks the protocol (a
  // continuation with no change open, a chunk at the wrong offset, a value of the wrong size, a
  // new change while a chunked value is open, more than kMaxChangeBytes).
  absl::StatusOr<std::optional<BigtableChangeStreamMutation>> add(
      const google::bigtable::v2::ReadChangeStreamResponse::DataChange& message);
  // Whether a change is partly assembled (a stream that ends here lost its tail).
  bool in_progress() const { return open_; }
  void reset();

 private:
  absl::Status add_chunk(const google::bigtable::v2::ReadChangeStreamResponse::MutationChunk& c);

  bool open_ = false;
  std::string row_key_;
  ChangeStreamMutationType type_ = ChangeStreamMutationType::kUser;
  std::string cluster_;
  absl::Time commit_;
  std::int32_t tiebreaker_ = 0;
  std::vector<ChangeStreamEntry> entries_;
  // An open chunked SetCell: its total size (the value is accumulated in entries_.back()).
  std::optional<std::int64_t> chunked_size_;
  std::size_t bytes_ = 0;  // of the change's chunks so far
};

// The largest change the assembler accepts (a Bigtable row is at most 256 MB): more is a
// protocol violation rather than memory to spend.
inline constexpr std::size_t kMaxChangeBytes = std::size_t{256} << 20;

// One v2 Mutation as an entry; INVALID_ARGUMENT for a kind a change stream does not carry.
absl::StatusOr<ChangeStreamEntry> EntryFromProto(const google::bigtable::v2::Mutation& m);
ChangeStreamValue ValueFromProto(const google::bigtable::v2::Value& v);

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_CHANGESTREAM_CHANGE_STREAM_ASSEMBLER_H_
