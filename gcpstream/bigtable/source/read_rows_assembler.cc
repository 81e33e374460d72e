#include "gcpstream/bigtable/source/read_rows_assembler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "gcpstream/bigtable/client/row_key_range.h"

namespace gcpstream::bigtable {
namespace {

absl::Status Violation(absl::string_view rule) {
  return absl::InternalError(
      absl::StrCat("ReadRows: the response broke the cell-chunk protocol (", rule, ")"));
}

}  // namespace

void ReadRowsAssembler::restart() {
  in_row_ = false;
  in_value_ = false;
  row_ = BigtableRow();
  family_.clear();
  qualifier_.clear();
}

absl::Status ReadRowsAssembler::consume(const google::bigtable::v2::ReadRowsResponse& response,
                                        const RowSink& sink) {
  for (const auto& c : response.chunks()) {
    absl::Status status = chunk(c, sink);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status ReadRowsAssembler::chunk(const google::bigtable::v2::ReadRowsResponse::CellChunk& c,
                                      const RowSink& sink) {
  using Chunk = google::bigtable::v2::ReadRowsResponse::CellChunk;
  if (c.row_status_case() == Chunk::kResetRow && c.reset_row()) {
    if (!in_row_) return Violation("reset_row outside a row");
    if (!c.row_key().empty() || c.has_family_name() || c.has_qualifier() ||
        c.timestamp_micros() != 0 || c.labels_size() > 0 || !c.value().empty() ||
        c.value_size() != 0) {
      return Violation("a reset_row chunk carrying data");
    }
    restart();
    return absl::OkStatus();
  }
  if (in_value_) {
    // A continuation of a split value: nothing but more of the value.
    if (!c.row_key().empty() || c.has_family_name() || c.has_qualifier() ||
        c.timestamp_micros() != 0 || c.labels_size() > 0) {
      return Violation("a value continuation naming a cell");
    }
    row_.cells.back().value.append(c.value());
  } else {
    if (!c.row_key().empty()) {
      if (in_row_ && c.row_key() != row_.key) {
        return Violation("a new row key before the previous row was committed");
      }
      if (!in_row_) {
        if (committed_any_ && c.row_key() <= last_key_) {
          return Violation(
              absl::StrCat("row keys out of order: ", FormatRowRange(SingleKeyRange(c.row_key())),
                           " after the last row"));
        }
        if (!c.has_family_name() || !c.has_qualifier()) {
          return Violation("a row's first chunk without a family and a qualifier");
        }
        in_row_ = true;
        row_.key = c.row_key();
      }
    } else if (!in_row_) {
      return Violation("a chunk without a row key outside a row");
    }
    if (c.has_family_name()) {
      if (!c.has_qualifier()) return Violation("a family name without a qualifier");
      family_ = c.family_name().value();
    }
    if (c.has_qualifier()) qualifier_ = c.qualifier().value();
    // Every chunk that does not continue a value is a cell of its own, even a bare one
    // (timestamp 0, empty value, the previous column).
    BigtableCell cell;
    cell.family = family_;
    cell.qualifier = qualifier_;
    cell.timestamp_micros = c.timestamp_micros();
    cell.labels.assign(c.labels().begin(), c.labels().end());
    // value_size is the service's word for the whole value: trusted for a reservation only up
    // to a bound, so a corrupt size cannot allocate gigabytes.
    if (c.value_size() > 0) {
      cell.value.reserve(std::min<std::size_t>(static_cast<std::size_t>(c.value_size()), 64 << 20));
    }
    cell.value.append(c.value());
    row_.cells.push_back(std::move(cell));
  }
  in_value_ = c.value_size() > 0;
  if (c.row_status_case() == Chunk::kCommitRow && c.commit_row()) {
    if (in_value_) return Violation("commit_row in the middle of a value");
    BigtableRow done = std::move(row_);
    last_key_ = done.key;
    committed_any_ = true;
    restart();
    return sink(std::move(done));
  }
  return absl::OkStatus();
}

}  // namespace gcpstream::bigtable
