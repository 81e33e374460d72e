#ifndef GCPSTREAM_SPANNER_CLIENT_PARTIAL_RESULT_SET_H_
#define GCPSTREAM_SPANNER_CLIENT_PARTIAL_RESULT_SET_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "google/protobuf/struct.pb.h"
#include "google/spanner/v1/result_set.pb.h"

namespace gcpstream::spanner {

// Reassembles the rows of a streaming read (ExecuteStreamingSql, StreamingRead) from its
// PartialResultSets, and keeps what a resumed stream will send again, following the
// PartialResultSet reference:
//  - `values` is a flat stream of the row values in order; the row width is the number of
//    fields in the first message's metadata.row_type;
//  - when `chunked_value` is set, the last value is incomplete and continues as the first value
//    of the next message: strings are concatenated; lists are concatenated, except that their
//    boundary elements are merged (recursively) when both are strings or both are lists; bool,
//    number and null values are never chunked (a chunked one is INTERNAL: a corrupt stream);
//  - a message with a `resume_token` marks everything up to it as confirmed: a stream resumed
//    with that token restarts right after it. Rows after the last token are held back
//    (`take_rows` does not return them) until a later token confirms them, or dropped by
//    `rewind()` when the stream failed and will be resumed.
// While more than `max_unconfirmed_bytes` wait for a token, rows are released anyway and the
// stream is no longer resumable until the next token (Google's clients do the same, to bound
// memory): a failure then cannot be resumed and must be reported. Not thread-safe.
class PartialResultSetMerger {
 public:
  explicit PartialResultSetMerger(std::size_t max_unconfirmed_bytes = 32u << 20);

  // Feeds the next message. INTERNAL for a corrupt stream (no metadata first, a row type with
  // no field, a chunk that cannot be merged); FAILED_PRECONDITION after finish().
  absl::Status add(const google::spanner::v1::PartialResultSet& part);

  // The complete, confirmed rows since the last call.
  std::vector<std::vector<google::protobuf::Value>> take_rows();

  // The stream ended OK: everything pending is confirmed. INTERNAL when a chunk or a partial
  // row is left over.
  absl::Status finish();

  // The stream failed and will be resumed from resume_token(): drops what came after it.
  // FAILED_PRECONDITION when rows were released beyond the last token (not resumable).
  absl::Status rewind();

  const google::spanner::v1::ResultSetMetadata& metadata() const { return metadata_; }
  bool has_metadata() const { return has_metadata_; }
  // The last token seen; empty before the first.
  const std::string& resume_token() const { return resume_token_; }
  bool resumable() const { return resumable_; }
  // Statistics of the last message that carried them (query mode PROFILE / with_stats).
  const google::spanner::v1::ResultSetStats& stats() const { return stats_; }

 private:
  void release_rows(std::size_t upto_values);

  const std::size_t max_unconfirmed_bytes_;
  google::spanner::v1::ResultSetMetadata metadata_;
  google::spanner::v1::ResultSetStats stats_;
  bool has_metadata_ = false;
  int width_ = 0;
  // Complete values not yet released (confirmed or not), and the chunk being assembled.
  std::vector<google::protobuf::Value> values_;
  std::size_t confirmed_ = 0;  // values_[0, confirmed_) are confirmed
  std::size_t unconfirmed_bytes_ = 0;
  bool has_chunk_ = false;
  google::protobuf::Value chunk_;
  // The chunk as it stood at the last token.
  bool confirmed_has_chunk_ = false;
  google::protobuf::Value confirmed_chunk_;
  std::vector<std::vector<google::protobuf::Value>> ready_;
  std::string resume_token_;
  bool resumable_ = true;
  bool finished_ = false;
};

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_CLIENT_PARTIAL_RESULT_SET_H_
