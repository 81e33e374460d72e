#include "tests/fakes/bigquery/fake_row_restriction.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "re2/re2.h"

namespace gcpstream::testing::bigquery_fake {

namespace {

// Splits on AND outside quotes.
std::vector<std::string> SplitAnd(const std::string& text) {
  std::vector<std::string> out(1);
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (i + 5 <= text.size() && absl::AsciiStrToUpper(text.substr(i, 5)) == " AND ") {
      out.emplace_back();
      i += 4;
      continue;
    }
    out.back().push_back(c);
  }
  return out;
}

bool AsNumber(const nlohmann::json& v, double* out) {
  if (v.is_number()) {
    *out = v.get<double>();
    return true;
  }
  return v.is_string() && absl::SimpleAtod(v.get<std::string>(), out);
}

std::string AsText(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

absl::StatusOr<RowRestriction> RowRestriction::Parse(const std::string& text,
                                                     const Schema& schema) {
  RowRestriction out;
  if (text.size() > (1 << 20)) {
    return absl::InvalidArgumentError("the row restriction is over 1 MiB");
  }
  static const RE2 kNull(R"(\s*([A-Za-z_][A-Za-z0-9_]*)\s+(?i:IS)\s+((?i:NOT)\s+)?(?i:NULL)\s*)");
  static const RE2 kCompare(
      R"(\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=|!=|<>|<=|>=|<|>)\s*('[^']*'|"[^"]*"|[-+]?[0-9.eE+-]+|(?i:TRUE|FALSE))\s*)");
  const std::vector<std::string> parts = SplitAnd(text);
  if (parts.size() > 1000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the fake BigQuery evaluates at most 1,000 comparisons in a row restriction, not ",
        parts.size()));
  }
  for (const std::string& part : parts) {
    Term term;
    std::string not_word, op, literal;
    if (RE2::FullMatch(part, kNull, &term.column, &not_word)) {
      term.op = not_word.empty() ? "null" : "notnull";
    } else if (RE2::FullMatch(part, kCompare, &term.column, &op, &literal)) {
      term.op = op == "<>" ? "!=" : op;
      if (literal[0] == '\'' || literal[0] == '"') {
        term.literal = literal.substr(1, literal.size() - 2);
      } else if (absl::AsciiStrToUpper(literal) == "TRUE" ||
                 absl::AsciiStrToUpper(literal) == "FALSE") {
        term.literal = absl::AsciiStrToUpper(literal) == "TRUE";
      } else {
        double d = 0;
        if (!absl::SimpleAtod(literal, &d)) {
          return absl::InvalidArgumentError(absl::StrCat("Syntax error: bad number ", literal));
        }
        term.literal = d;
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "the fake BigQuery evaluates only `column OP literal` and `column IS [NOT] NULL` "
          "joined by AND in a row restriction; it cannot evaluate: ",
          part.substr(0, 200)));
    }
    const Field* field = FindField(schema, term.column);
    if (field == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("Unrecognized name: ", term.column.substr(0, 300)));
    }
    term.column = field->name;
    term.numeric = field->type == "INT64" || field->type == "FLOAT64" || field->type == "NUMERIC" ||
                   field->type == "BIGNUMERIC";
    out.terms_.push_back(std::move(term));
  }
  return out;
}

bool RowRestriction::matches(const nlohmann::json& row) const {
  for (const Term& t : terms_) {
    auto it = row.find(t.column);
    const bool null = it == row.end() || it->is_null();
    if (t.op == "null" || t.op == "notnull") {
      if (null != (t.op == "null")) return false;
      continue;
    }
    if (null) return false;
    int cmp = 0;
    if (t.literal.is_boolean()) {
      if (!it->is_boolean()) return false;
      cmp = static_cast<int>(it->get<bool>()) - static_cast<int>(t.literal.get<bool>());
    } else if (t.numeric) {
      double a = 0, b = 0;
      if (!AsNumber(*it, &a) || !AsNumber(t.literal, &b)) return false;
      cmp = a < b ? -1 : a > b ? 1 : 0;
    } else {
      const std::string a = AsText(*it), b = AsText(t.literal);
      cmp = a < b ? -1 : a > b ? 1 : 0;
    }
    const bool ok = t.op == "="    ? cmp == 0
                    : t.op == "!=" ? cmp != 0
                    : t.op == "<"  ? cmp < 0
                    : t.op == "<=" ? cmp <= 0
                    : t.op == ">"  ? cmp > 0
                                   : cmp >= 0;
    if (!ok) return false;
  }
  return true;
}

}  // namespace gcpstream::testing::bigquery_fake
