#include "tests/fakes/bigquery/fake_query.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/fakes/bigquery/fake_row_restriction.h"
#include "tests/fakes/bigquery/fake_table_schema.h"

namespace gcpstream::testing::bigquery_fake {
namespace {

using nlohmann::json;

constexpr int kMaxViewDepth = 8;

absl::Status Unsupported(const std::string& sql) {
  return absl::InvalidArgumentError(
      fmt::format("the fake evaluates only SELECT * | columns FROM table [WHERE simple "
                  "comparisons]; it does not evaluate: {}",
                  sql.substr(0, 300)));
}

struct Parsed {
  std::string columns, from, where;
  std::vector<std::string> table;  // project, dataset, table (empty when malformed)
};

std::optional<Parsed> Parse(const std::string& sql, const std::string& project) {
  static const RE2 kSelect(
      R"((?is)\s*SELECT\s+(\*|`?[A-Za-z_][A-Za-z0-9_]*`?(?:\s*,\s*`?[A-Za-z_][A-Za-z0-9_]*`?)*)\s+)"
      R"(FROM\s+(`[^`]+`|[A-Za-z0-9_.\-]+)(?:\s+WHERE\s+(.+?))?\s*;?\s*)");
  Parsed p;
  if (!RE2::FullMatch(sql, kSelect, &p.columns, &p.from, &p.where)) return std::nullopt;
  p.from = std::string(absl::StripSuffix(absl::StripPrefix(p.from, "`"), "`"));
  std::vector<std::string> parts = absl::StrSplit(p.from, '.');
  if (parts.size() == 2) parts.insert(parts.begin(), project);
  if (parts.size() == 3 && !parts[0].empty() && !parts[1].empty() && !parts[2].empty()) {
    p.table = std::move(parts);
  }
  return p;
}

absl::StatusOr<QueryResult> Run(const FakeStore& store, const std::string& sql,
                                const std::string& project, int depth) {
  std::optional<Parsed> parsed_sql = Parse(sql, project);
  if (!parsed_sql) return Unsupported(sql);
  const std::string& columns = parsed_sql->columns;
  const std::string& from = parsed_sql->from;
  const std::string& where = parsed_sql->where;
  const std::vector<std::string>& parts = parsed_sql->table;
  if (parts.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("Table name \"{}\" missing dataset", from.substr(0, 300)));
  }
  auto table = store.get_table(parts[0], parts[1], parts[2]);
  if (!table.ok()) {
    return absl::NotFoundError(
        fmt::format("Not found: Table {}:{}.{}", parts[0], parts[1], parts[2]));
  }
  QueryResult source;
  // A materialized view answers a query with its query's current result, as BigQuery's
  // materialized views do (they are always fresh); the fake keeps no stored copy.
  const char* view_key = table->contains("view")               ? "view"
                         : table->contains("materializedView") ? "materializedView"
                                                               : nullptr;
  if (view_key != nullptr) {
    if (depth >= kMaxViewDepth) {
      return absl::InvalidArgumentError("views nested more than 8 deep");
    }
    const json& view = (*table)[view_key];
    if (!view.is_object() || !view.contains("query") || !view["query"].is_string()) {
      return absl::InvalidArgumentError("the view has no query");
    }
    auto inner = Run(store, view["query"].get<std::string>(), parts[0], depth + 1);
    if (!inner.ok()) return inner.status();
    source = *std::move(inner);
  } else {
    Schema schema;
    std::vector<json> rows;
    const std::string path =
        fmt::format("projects/{}/datasets/{}/tables/{}", parts[0], parts[1], parts[2]);
    if (absl::Status st = store.snapshot(path, std::nullopt, &schema, &rows); !st.ok()) return st;
    source.fields = ToJson(schema);
    source.rows = std::move(rows);
  }
  auto schema = ParseSchema(source.fields);
  if (!schema.ok()) return schema.status();
  // The columns kept, in the order the query names them, with the table's spelling.
  std::vector<const Field*> kept;
  if (absl::StripAsciiWhitespace(columns) == "*") {
    for (const Field& f : *schema) kept.push_back(&f);
  } else {
    for (absl::string_view c : absl::StrSplit(columns, ',')) {
      // A quoted identifier (`name`) names the same column.
      const std::string name(
          absl::StripSuffix(absl::StripPrefix(absl::StripAsciiWhitespace(c), "`"), "`"));
      const Field* match = nullptr;
      for (const Field& f : *schema) {
        if (absl::EqualsIgnoreCase(f.name, name)) match = &f;
      }
      if (match == nullptr) {
        return absl::InvalidArgumentError(
            fmt::format("Unrecognized name: {}", name.substr(0, 300)));
      }
      kept.push_back(match);
    }
  }
  // A result table cannot hold two columns of one name (checked before any row is touched).
  std::set<std::string> names;
  for (const Field* f : kept) {
    if (!names.insert(absl::AsciiStrToLower(f->name)).second) {
      return absl::InvalidArgumentError(fmt::format(
          "Duplicate column names in the result are not supported. Found duplicate(s): {}",
          f->name));
    }
  }
  std::optional<RowRestriction> filter;
  if (!where.empty()) {
    auto parsed = RowRestriction::Parse(where, *schema);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(parsed.status().message());
    }
    filter = *std::move(parsed);
  }
  QueryResult out;
  out.fields = json::array();
  for (std::size_t i = 0; i < kept.size(); ++i) {
    for (const json& f : source.fields) {
      if (f.value("name", "") == kept[i]->name) out.fields.push_back(f);
    }
  }
  for (json& row : source.rows) {
    if (filter && !filter->matches(row)) continue;
    json projected = json::object();
    for (const Field* f : kept) {
      if (row.contains(f->name)) projected[f->name] = std::move(row[f->name]);
    }
    out.rows.push_back(std::move(projected));
  }
  return out;
}

}  // namespace

absl::StatusOr<QueryResult> RunQuery(const FakeStore& store, const std::string& sql,
                                     const std::string& project) {
  return Run(store, sql, project, 0);
}

std::optional<std::pair<std::string, std::string>> QueryDataset(const std::string& sql,
                                                                const std::string& project) {
  std::optional<Parsed> p = Parse(sql, project);
  if (!p || p->table.empty()) return std::nullopt;
  return std::make_pair(p->table[0], p->table[1]);
}

}  // namespace gcpstream::testing::bigquery_fake
