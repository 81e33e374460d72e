#include "gcpstream/spanner/changestream/change_stream_metadata.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/spanner/source/spanner_split_enumerator.h"
#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::spanner {

namespace sp = google::spanner::v1;

namespace {

// The rows of `sql` as maps from lower-cased column name to value. Both dialects accept the
// statements below (unquoted identifiers; PostgreSQL folds them to lower case).
absl::StatusOr<std::vector<std::map<std::string, google::protobuf::Value>>> Rows(
    SpannerDataClient& client, std::string sql) {
  std::vector<std::map<std::string, google::protobuf::Value>> rows;
  sp::ExecuteSqlRequest request;
  request.set_sql(std::move(sql));
  absl::Status status = client.ExecuteStreamingSql(
      std::move(request),
      [&](const sp::ResultSetMetadata& metadata, std::vector<google::protobuf::Value> values) {
        std::map<std::string, google::protobuf::Value> row;
        for (std::size_t i = 0; i < values.size(); ++i) {
          const int f = static_cast<int>(i);
          if (f >= metadata.row_type().fields_size()) break;
          row[absl::AsciiStrToLower(metadata.row_type().fields(f).name())] = std::move(values[i]);
        }
        rows.push_back(std::move(row));
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return rows;
}

std::string Text(const std::map<std::string, google::protobuf::Value>& row, const char* column) {
  auto it = row.find(column);
  if (it == row.end() || !it->second.has_string_value()) return "";
  return it->second.string_value();
}

// GoogleSQL reports BOOL, PostgreSQL 'YES'/'NO'.
bool Flag(const std::map<std::string, google::protobuf::Value>& row, const char* column) {
  auto it = row.find(column);
  if (it == row.end()) return false;
  if (it->second.has_bool_value()) return it->second.bool_value();
  return absl::EqualsIgnoreCase(it->second.string_value(), "YES") ||
         absl::EqualsIgnoreCase(it->second.string_value(), "true");
}

}  // namespace

std::string ChangeStreamMetadata::describe() const {
  return fmt::format(
      "dialect {}, watches {}, retention {}{}, value_capture_type {}, partition_mode {}, other "
      "options [{}]",
      DialectName(dialect),
      watches_all ? std::string("all tables") : fmt::format("{}", fmt::join(tables, ", ")),
      absl::FormatDuration(retention), retention_explicit ? "" : " (assumed: no retention row)",
      value_capture_type, partition_mode, fmt::join(other_options, ", "));
}

absl::StatusOr<ChangeStreamMetadata> ReadChangeStreamMetadata(SpannerDataClient& client,
                                                              const std::string& stream,
                                                              absl::Duration absent_retention) {
  auto context = [&](const absl::Status& s, const char* what) {
    return absl::Status(s.code(), fmt::format("SpannerChangeStreamSource: reading {} of change "
                                              "stream {}: {}",
                                              what, stream, s.message()));
  };
  ChangeStreamMetadata m;
  auto same = [&m](const std::string& reported, const std::string& wanted) {
    return m.dialect == Dialect::kGoogleSql ? absl::EqualsIgnoreCase(reported, wanted)
                                            : reported == wanted;
  };
  auto dialect = Rows(client,
                      "SELECT OPTION_VALUE FROM INFORMATION_SCHEMA.DATABASE_OPTIONS "
                      "WHERE OPTION_NAME = 'database_dialect'");
  if (!dialect.ok()) return context(dialect.status(), "the database dialect");
  for (const auto& row : *dialect) {
    if (Text(row, "option_value") == "POSTGRESQL") m.dialect = Dialect::kPostgreSql;
  }
  auto streams = Rows(client, "SELECT * FROM INFORMATION_SCHEMA.CHANGE_STREAMS");
  if (!streams.ok()) return context(streams.status(), "INFORMATION_SCHEMA.CHANGE_STREAMS");
  bool found = false;
  for (const auto& row : *streams) {
    if (!same(Text(row, "change_stream_name"), stream)) continue;
    found = true;
    m.watches_all = Flag(row, "all");
  }
  if (!found) {
    return absl::NotFoundError(fmt::format(
        "SpannerChangeStreamSource: the database has no change stream named \"{}\" (names are "
        "case-sensitive); create it with CREATE CHANGE STREAM before starting the source",
        stream));
  }
  auto tables = Rows(client, "SELECT * FROM INFORMATION_SCHEMA.CHANGE_STREAM_TABLES");
  if (!tables.ok()) return context(tables.status(), "INFORMATION_SCHEMA.CHANGE_STREAM_TABLES");
  for (const auto& row : *tables) {
    if (!same(Text(row, "change_stream_name"), stream)) continue;
    m.tables.push_back(Text(row, "table_name"));
    if (!Flag(row, "all_columns")) m.explicit_column_tables.push_back(Text(row, "table_name"));
  }
  auto options = Rows(client, "SELECT * FROM INFORMATION_SCHEMA.CHANGE_STREAM_OPTIONS");
  if (!options.ok()) return context(options.status(), "INFORMATION_SCHEMA.CHANGE_STREAM_OPTIONS");
  m.retention = absent_retention;
  m.value_capture_type = "OLD_AND_NEW_VALUES";
  m.partition_mode = "IMMUTABLE_KEY_RANGE";
  for (const auto& row : *options) {
    if (!same(Text(row, "change_stream_name"), stream)) continue;
    const std::string name = absl::AsciiStrToLower(Text(row, "option_name"));
    const std::string value = Text(row, "option_value");
    if (name == "retention_period") {
      auto parsed = ParseRetentionPeriod(value);
      if (!parsed.ok()) {
        return absl::FailedPreconditionError(fmt::format(
            "SpannerChangeStreamSource: change stream {} reports retention_period \"{}\", "
            "which this source does not understand",
            stream, value));
      }
      m.retention = *parsed;
      m.retention_explicit = true;
    } else if (name == "value_capture_type") {
      m.value_capture_type = value;
    } else if (name == "partition_mode") {
      m.partition_mode = value;
    } else {
      m.other_options.push_back(name + "=" + value);
    }
  }
  if (m.partition_mode != "IMMUTABLE_KEY_RANGE") {
    return absl::FailedPreconditionError(fmt::format(
        "SpannerChangeStreamSource: change stream {} uses partition_mode {}; this source reads "
        "only IMMUTABLE_KEY_RANGE streams",
        stream, m.partition_mode));
  }
  return m;
}

absl::Status CheckWithinRetention(absl::Time oldest, absl::Time now,
                                  const ChangeStreamMetadata& metadata) {
  const absl::Time edge = now - metadata.retention + absl::Minutes(1);
  if (oldest >= edge) return absl::OkStatus();
  return absl::FailedPreconditionError(fmt::format(
      "SpannerChangeStreamSource: the restored partitions resume at {}, which is {} old, beyond "
      "the change stream's retention of {}{} (less a one-minute margin): Spanner no longer has "
      "those changes. Set resume_fallback to start over (losing the changes in between), or "
      "start without this state",
      FormatTimestamp(oldest), absl::FormatDuration(absl::Trunc(now - oldest, absl::Seconds(1))),
      absl::FormatDuration(metadata.retention),
      metadata.retention_explicit ? "" : " (assumed: the stream reports none)"));
}

sp::ExecuteSqlRequest ChangeStreamQuery(Dialect dialect, const std::string& stream,
                                        const ChangeStreamPartitionSplit& split,
                                        std::chrono::milliseconds heartbeat,
                                        sp::RequestOptions::Priority priority) {
  sp::ExecuteSqlRequest request;
  request.mutable_transaction()->mutable_single_use()->mutable_read_only()->set_strong(true);
  request.mutable_request_options()->set_priority(priority);
  std::string start = "start_timestamp", token = "partition_token", beat = "heartbeat_ms";
  if (dialect == Dialect::kPostgreSql) {
    const bool upper = std::any_of(stream.begin(), stream.end(), absl::ascii_isupper);
    const std::string fn = "read_json_" + stream;
    request.set_sql(fmt::format("SELECT * FROM spanner.{}($1, NULL, $2, $3, NULL)",
                                upper ? "\"" + fn + "\"" : fn));
    start = "p1";
    token = "p2";
    beat = "p3";
  } else {
    request.set_sql(fmt::format(
        "SELECT ChangeRecord FROM READ_{}(start_timestamp => @start_timestamp, end_timestamp => "
        "NULL, partition_token => @partition_token, heartbeat_milliseconds => @heartbeat_ms)",
        stream));
  }
  auto& params = *request.mutable_params()->mutable_fields();
  auto& types = *request.mutable_param_types();
  params[start].set_string_value(FormatTimestamp(split.position));
  types[start].set_code(sp::TIMESTAMP);
  if (split.token.empty()) {
    params[token].set_null_value(google::protobuf::NULL_VALUE);
  } else {
    params[token].set_string_value(split.token);
  }
  types[token].set_code(sp::STRING);
  params[beat].set_string_value(std::to_string(heartbeat.count()));
  types[beat].set_code(sp::INT64);
  return request;
}

}  // namespace gcpstream::spanner
