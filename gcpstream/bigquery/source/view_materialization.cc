#include "gcpstream/bigquery/source/view_materialization.h"

#include <fmt/format.h>
#include <re2/re2.h>
#include <spdlog/spdlog.h>

#include "absl/strings/str_join.h"
#include "gcpstream/bigquery/client/status_text.h"
#include "gcpstream/bigquery/source/query_job.h"
#include "gcpstream/connector/recovery_backoff.h"

namespace gcpstream::bigquery {
namespace {

constexpr char kWho[] = "BigQuerySource";

}  // namespace

absl::StatusOr<std::string> MaterializingQuery(const TableRef& view,
                                               const std::vector<std::string>& selected_fields) {
  for (const std::string* part : {&view.project, &view.dataset, &view.table}) {
    if (part->find_first_of("`\\\r\n") != std::string::npos) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: the view name {} has a character a quoted identifier cannot hold (a backquote, a "
          "backslash or a line break)",
          kWho, view.resource_name().substr(0, 300)));
    }
  }
  static const RE2 kColumn("[A-Za-z_][A-Za-z0-9_]{0,299}");
  bool fold = !selected_fields.empty();
  for (const std::string& f : selected_fields) fold = fold && RE2::FullMatch(f, kColumn);
  std::string columns = "*";
  if (fold) {
    columns = absl::StrJoin(selected_fields, ", ", [](std::string* out, const std::string& f) {
      out->append("`").append(f).append("`");
    });
  }
  return fmt::format("SELECT {} FROM `{}.{}.{}`", columns, view.project, view.dataset, view.table);
}

absl::StatusOr<std::optional<std::string>> ViewQueryFor(
    const TableAdmin& admin, const TableRef& table, const std::vector<std::string>& selected_fields,
    const std::atomic<bool>* cancelled) {
  connector::RecoveryBackoff backoff(connector::RecoveryOptions{});
  for (;;) {
    auto got = admin.get_table(table);
    if (got.ok()) {
      const auto type = got->is_object() ? got->find("type") : got->end();
      const std::string kind =
          type != got->end() && type->is_string() ? type->get<std::string>() : "TABLE";
      if (kind != "VIEW" && kind != "MATERIALIZED_VIEW") return std::nullopt;
      auto query = MaterializingQuery(table, selected_fields);
      if (!query.ok()) return query.status();
      spdlog::info("{}: {} is a {}; reading it through the query job {}", kWho,
                   table.resource_name(), kind == "VIEW" ? "view" : "materialized view", *query);
      return std::optional<std::string>(*std::move(query));
    }
    const absl::Status& st = got.status();
    auto delay = TransientRestFailure(st) ? backoff.next() : std::nullopt;
    if (!delay) {
      return absl::Status(st.code(), fmt::format("{}: asking BigQuery what {} is "
                                                 "(materialize_views) failed: {}",
                                                 kWho, table.resource_name(), Describe(st)));
    }
    spdlog::warn("{}: asking BigQuery what {} is failed ({}); trying again", kWho,
                 table.resource_name(), Describe(st));
    if (!SleepUnlessCancelled(*delay, cancelled)) {
      return absl::CancelledError(fmt::format("{}: stopped asking what {} is: the job is stopping",
                                              kWho, table.resource_name()));
    }
  }
}

}  // namespace gcpstream::bigquery
