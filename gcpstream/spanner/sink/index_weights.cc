#include "gcpstream/spanner/sink/index_weights.h"

#include <algorithm>
#include <cctype>

#include "gcpstream/spanner/client/mutation.h"

namespace gcpstream::spanner {
namespace {

namespace sp = google::spanner::v1;

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

IndexWeights::IndexWeights(Dialect dialect, const std::vector<IndexColumn>& rows)
    : dialect_(dialect) {
  for (const auto& row : rows) {
    Table& t = tables_[table_key(row.table_schema, row.table_name)];
    t.index_names[column_key(row.index_name)] = 1;
    ++t.column_indexes[column_key(row.column_name)];
  }
}

std::string_view IndexWeights::Query() {
  return "SELECT TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, COLUMN_NAME "
         "FROM INFORMATION_SCHEMA.INDEX_COLUMNS "
         "WHERE INDEX_TYPE = 'INDEX' AND TABLE_SCHEMA NOT IN ('INFORMATION_SCHEMA', "
         "'SPANNER_SYS', 'information_schema', 'spanner_sys', 'pg_catalog')";
}

absl::StatusOr<std::vector<IndexWeights::IndexColumn>> IndexWeights::Rows(
    const sp::ResultSet& result) {
  std::vector<IndexColumn> out;
  for (const auto& row : result.rows()) {
    if (row.values_size() != 4) {
      return absl::InvalidArgumentError("INFORMATION_SCHEMA.INDEX_COLUMNS: expected 4 columns");
    }
    auto text = [&](int i) {
      return row.values(i).kind_case() == google::protobuf::Value::kStringValue
                 ? row.values(i).string_value()
                 : std::string();
    };
    out.push_back({text(0), text(1), text(2), text(3)});
  }
  return out;
}

std::string IndexWeights::table_key(std::string_view schema, std::string_view table) const {
  std::string s(schema);
  if (dialect_ == Dialect::kPostgreSql && s.empty()) s = "public";
  std::string key = s + "\x1f" + std::string(table);
  return dialect_ == Dialect::kGoogleSql ? Lower(key) : key;
}

std::string IndexWeights::table_key_of(std::string_view qualified) const {
  const std::size_t dot = qualified.find('.');
  if (dot == std::string_view::npos) {
    return table_key(dialect_ == Dialect::kPostgreSql ? "public" : "", qualified);
  }
  return table_key(qualified.substr(0, dot), qualified.substr(dot + 1));
}

std::string IndexWeights::column_key(std::string_view column) const {
  return dialect_ == Dialect::kGoogleSql ? Lower(column) : std::string(column);
}

const IndexWeights::Table* IndexWeights::find(std::string_view table) const {
  auto it = tables_.find(table_key_of(table));
  return it == tables_.end() ? nullptr : &it->second;
}

int IndexWeights::indexes(std::string_view table) const {
  const Table* t = find(table);
  return t ? static_cast<int>(t->index_names.size()) : 0;
}

std::int64_t IndexWeights::cells(const sp::Mutation& m) const {
  if (const auto* w = WriteOf(m)) {
    const Table* t = find(w->table());
    std::int64_t per_row = 0;
    for (const auto& column : w->columns()) {
      per_row += 1;
      if (t) {
        auto it = t->column_indexes.find(column_key(column));
        if (it != t->column_indexes.end()) per_row += it->second;
      }
    }
    return per_row * std::max(1, w->values_size());
  }
  if (m.has_delete_()) {
    const auto& ks = m.delete_().key_set();
    const std::int64_t entries = ks.all() ? 1 : std::max(1, ks.keys_size() + ks.ranges_size());
    return entries * (1 + indexes(m.delete_().table()));
  }
  return 1;
}

}  // namespace gcpstream::spanner
