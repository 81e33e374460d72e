#ifndef GCPSTREAM_BIGTABLE_SOURCE_READ_ROWS_ASSEMBLER_H_
#define GCPSTREAM_BIGTABLE_SOURCE_READ_ROWS_ASSEMBLER_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "gcpstream/bigtable/client/bigtable_row.h"
#include "google/bigtable/v2/bigtable.pb.h"

namespace gcpstream::bigtable {

// Reassembles rows from ReadRows cell chunks (google.bigtable.v2.ReadRowsResponse.CellChunk):
// a chunk with a row key starts a row (and must name a family and a qualifier), a chunk
// without one continues it, a family name needs a qualifier beside it, a value may be split
// over chunks (value_size > 0 on every piece but the last), reset_row drops the row in progress
// and commit_row completes it. Committed row keys must increase. A violation is INTERNAL naming
// the rule: the stream cannot be trusted past it. One stream at a time; not thread-safe.
class ReadRowsAssembler {
 public:
  using RowSink = std::function<absl::Status(BigtableRow row)>;

  // Feeds one response; each row it completes goes to `sink` in order. A non-OK status from
  // the sink stops the feeding and is returned as it is.
  absl::Status consume(const google::bigtable::v2::ReadRowsResponse& response, const RowSink& sink);
  // Whether a row has been started and not committed (a stream that ends now ended mid-row).
  bool mid_row() const { return in_row_; }
  // Drops a partial row, for a stream that is opened again; committed-key order is kept.
  void restart();
  const std::string& last_committed_key() const { return last_key_; }
  bool committed_any() const { return committed_any_; }

 private:
  absl::Status chunk(const google::bigtable::v2::ReadRowsResponse::CellChunk& chunk,
                     const RowSink& sink);

  bool in_row_ = false;
  bool in_value_ = false;  // the current cell's value continues in the next chunk
  BigtableRow row_;
  std::string family_;
  std::string qualifier_;
  std::string last_key_;
  bool committed_any_ = false;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_SOURCE_READ_ROWS_ASSEMBLER_H_
