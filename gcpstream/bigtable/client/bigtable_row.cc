#include "gcpstream/bigtable/client/bigtable_row.h"

namespace gcpstream::bigtable {

std::vector<const BigtableCell*> BigtableRow::cells_of(std::string_view family,
                                                       std::string_view qualifier) const {
  std::vector<const BigtableCell*> out;
  for (const BigtableCell& cell : cells) {
    if (cell.family == family && cell.qualifier == qualifier) out.push_back(&cell);
  }
  return out;
}

const BigtableCell* BigtableRow::latest(std::string_view family, std::string_view qualifier) const {
  const BigtableCell* best = nullptr;
  for (const BigtableCell& cell : cells) {
    if (cell.family != family || cell.qualifier != qualifier) continue;
    if (best == nullptr || cell.timestamp_micros > best->timestamp_micros) best = &cell;
  }
  return best;
}

std::size_t BigtableRow::estimated_bytes() const {
  std::size_t n = key.size();
  for (const BigtableCell& cell : cells) {
    n += cell.family.size() + cell.qualifier.size() + cell.value.size() + 8;
    for (const std::string& label : cell.labels) n += label.size();
  }
  return n;
}

BigtableRow BigtableRow::from_proto(const google::bigtable::v2::Row& row) {
  BigtableRow out;
  out.key = row.key();
  for (const auto& family : row.families()) {
    for (const auto& column : family.columns()) {
      for (const auto& cell : column.cells()) {
        BigtableCell c;
        c.family = family.name();
        c.qualifier = column.qualifier();
        c.timestamp_micros = cell.timestamp_micros();
        c.value = cell.value();
        c.labels.assign(cell.labels().begin(), cell.labels().end());
        out.cells.push_back(std::move(c));
      }
    }
  }
  return out;
}

}  // namespace gcpstream::bigtable
