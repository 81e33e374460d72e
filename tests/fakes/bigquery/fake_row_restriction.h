#ifndef GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_ROW_RESTRICTION_H_
#define GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_ROW_RESTRICTION_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/fakes/bigquery/fake_table_schema.h"

namespace gcpstream::testing::bigquery_fake {

// The simple shapes of a read session's row_restriction the fake evaluates: comparisons joined
// by AND (case-insensitive), each `column OP literal` with OP one of = != <> < <= > >=, or
// `column IS NULL` / `column IS NOT NULL`. A literal is a number, a 'quoted' or "quoted"
// string, TRUE or FALSE. Columns are top-level and matched case-insensitively. Numeric columns
// (INT64, FLOAT64, NUMERIC, BIGNUMERIC) compare as numbers, the rest as text; NULL matches no
// comparison, as in SQL. Anything else (OR, functions, parentheses) is INVALID_ARGUMENT saying
// the fake does not evaluate it; an unknown column is INVALID_ARGUMENT "Unrecognized name".
class RowRestriction {
 public:
  static absl::StatusOr<RowRestriction> Parse(const std::string& text, const Schema& schema);
  bool matches(const nlohmann::json& row) const;

 private:
  struct Term {
    std::string column;
    bool numeric = false;
    std::string op;  // = != < <= > >= IS NULL / IS NOT NULL as "null" / "notnull"
    nlohmann::json literal;
  };
  std::vector<Term> terms_;
};

}  // namespace gcpstream::testing::bigquery_fake

#endif  // GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_ROW_RESTRICTION_H_
