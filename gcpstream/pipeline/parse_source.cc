// The `source:` section of a pipeline file.
#include <fmt/format.h>

#include "absl/time/time.h"
#include "gcpstream/bigtable/admin/resource_names.h"
#include "gcpstream/bigtable/changestream/bigtable_change_stream_source.h"
#include "gcpstream/bigtable/changestream/change_stream_options.h"
#include "gcpstream/connector/name_patterns.h"
#include "gcpstream/pipeline/internal/spec_sections.h"
#include "gcpstream/spanner/client/value.h"

namespace gcpstream::pipeline::internal {
namespace {

FileSourceSpec ParseFileSource(YamlMap& m) {
  FileSourceSpec spec;
  spec.path = m.required_string("path");
  const std::string format = m.choice("format", "auto", {"auto", "json_lines", "json_array"});
  if (format == "json_lines") spec.format = FileSourceSpec::Format::kJsonLines;
  if (format == "json_array") spec.format = FileSourceSpec::Format::kJsonArray;
  spec.split_bytes = m.integer("split_bytes", spec.split_bytes, kBytes);
  if (spec.split_bytes < 1) {
    m.context().fail(m.mark(), m.key_path("split_bytes"), "must be at least 1");
  }
  return spec;
}

std::optional<int> OptionalInt(YamlMap& m, const std::string& key, const std::string& def,
                               IntRange range) {
  auto v = m.optional_integer(key, def, range);
  if (!v) return std::nullopt;
  return static_cast<int>(*v);
}

// A change-stream start: "latest", an RFC 3339 time, or a duration before the start ("-10m").
std::optional<connector::StartPosition> ParseStartPosition(YamlMap& m, const char* key,
                                                           const std::string& text) {
  if (text == "latest") return connector::StartPosition::latest();
  if (!text.empty() && text[0] == '-') {
    absl::Duration ago;
    if (absl::ParseDuration(text.substr(1), &ago) && ago >= absl::ZeroDuration() &&
        ago <= absl::Hours(24 * 3650)) {
      return connector::StartPosition::relative(ago);
    }
  } else if (auto t = spanner::ParseTimestamp(text); t.ok()) {
    return connector::StartPosition::absolute(*t);
  }
  m.check(key, absl::InvalidArgumentError(fmt::format(
                   "'{}' is neither latest, an RFC 3339 time, nor a duration before the start "
                   "such as -10m",
                   text)));
  return std::nullopt;
}

// Checks one include/exclude pair of output-filter patterns, naming the list at fault: the
// exclude list when both are given, else the list that holds the bad pattern.
void CheckPatternLists(YamlMap& m, std::string_view source, const char* include_key,
                       const std::vector<std::string>& include, const char* exclude_key,
                       const std::vector<std::string>& exclude) {
  auto patterns =
      connector::NamePatterns::Create(source, include, include_key, exclude, exclude_key);
  if (!patterns.ok()) m.check(exclude.empty() ? include_key : exclude_key, patterns.status());
}

}  // namespace

PubSubSourceSpec ParsePubSubSource(YamlMap& m) {
  PubSubSourceSpec spec;
  YamlContext& ctx = m.context();
  const YAML::Node subs = m.node("subscriptions");
  if (!subs.IsDefined() || subs.IsNull()) {
    ctx.fail(m.mark(), m.key_path("subscriptions"),
             "required key is missing (a list of "
             "{project, subscription, create})");
  } else if (!subs.IsSequence() || subs.size() == 0) {
    ctx.fail(subs.Mark(), m.key_path("subscriptions"),
             "expected a non-empty list of {project, subscription, create}");
  } else {
    for (std::size_t i = 0; i < subs.size(); ++i) {
      YamlMap s(ctx, subs[i], fmt::format("{}[{}]", m.key_path("subscriptions"), i));
      PubSubSourceSpec::Subscription sub;
      sub.project = s.required_string("project");
      sub.subscription = s.required_string("subscription");
      if (s.has("create")) {
        YamlMap c = s.map("create");
        PubSubSourceSpec::SubscriptionCreate create;
        create.topic = c.required_string("topic");
        create.topic_project = c.optional_string("topic_project");
        create.ack_deadline =
            c.optional_duration("ack_deadline", "Pub/Sub's (10s)",
                                DurationRange{std::chrono::seconds(10), std::chrono::seconds(600)});
        if (c.has("enable_message_ordering")) {
          create.enable_message_ordering = c.boolean("enable_message_ordering", false);
        } else {
          c.optional_string("enable_message_ordering");
        }
        if (c.has("retain_acked_messages")) {
          create.retain_acked_messages = c.boolean("retain_acked_messages", false);
        } else {
          c.optional_string("retain_acked_messages");
        }
        create.message_retention =
            c.optional_duration("message_retention", "Pub/Sub's (7d)", kPubSubRetention);
        c.finish();
        sub.create = std::move(create);
      } else {
        s.node("create");
      }
      s.finish();
      spec.subscriptions.push_back(std::move(sub));
    }
  }
  spec.emulator_endpoint = m.optional_string("emulator_endpoint");
  spec.service_account_key_file = m.optional_string("service_account_key_file");
  if (m.choice("ordering_mode", "NONE", {"NONE", "PER_KEY"}) == "PER_KEY") {
    spec.ordering_mode = PubSubSourceSpec::OrderingMode::kPerKey;
  }
  const std::string start = m.choice("start_position", "default",
                                     {"default", "earliest_retained", "latest", "from_timestamp"});
  if (start == "earliest_retained") {
    spec.start_position = PubSubSourceSpec::StartPosition::kEarliestRetained;
  } else if (start == "latest") {
    spec.start_position = PubSubSourceSpec::StartPosition::kLatest;
  } else if (start == "from_timestamp") {
    spec.start_position = PubSubSourceSpec::StartPosition::kFromTimestamp;
  }
  auto ts = m.optional_string("start_timestamp");
  if (ts) {
    absl::Time t;
    std::string err;
    char* end = nullptr;
    const long long ms = std::strtoll(ts->c_str(), &end, 10);
    if (!ts->empty() && end != nullptr && *end == '\0') {
      spec.start_timestamp_ms = ms;
    } else if (absl::ParseTime(absl::RFC3339_full, *ts, &t, &err)) {
      spec.start_timestamp_ms = absl::ToUnixMillis(t);
    } else {
      ctx.fail(m.mark(), m.key_path("start_timestamp"),
               fmt::format("'{}' is neither ms since the epoch nor an RFC 3339 time", *ts));
    }
  }
  if ((spec.start_position == PubSubSourceSpec::StartPosition::kFromTimestamp) !=
      spec.start_timestamp_ms.has_value()) {
    ctx.fail(m.mark(), m.key_path("start_timestamp"),
             "is required with start_position from_timestamp and allowed only there");
  }
  const std::string policy =
      m.choice("deserialization_failure_policy", "FAIL", {"FAIL", "DROP", "NACK"});
  if (policy == "DROP") {
    spec.deserialization_failure_policy = PubSubSourceSpec::DeserializationFailurePolicy::kDrop;
  } else if (policy == "NACK") {
    spec.deserialization_failure_policy = PubSubSourceSpec::DeserializationFailurePolicy::kNack;
  }
  YamlMap o = m.map("subscriber_options");
  auto& so = spec.subscriber_options;
  so.flow_control_max_outstanding_element_count =
      o.optional_integer("flow_control_max_outstanding_element_count", "1000", kCount);
  so.flow_control_max_outstanding_request_bytes =
      o.optional_integer("flow_control_max_outstanding_request_bytes", "100000000", kBytes);
  so.max_ack_extension_period = o.optional_duration(
      "max_ack_extension_period", "1h",
      DurationRange{std::chrono::milliseconds(1), std::chrono::hours(24 * 7), true});
  // One extension is one ModifyAckDeadline: Google caps an ack deadline at 600 s.
  const DurationRange kExtension{std::chrono::seconds(1), std::chrono::seconds(600), false};
  // ModifyAckDeadline takes whole seconds: 1500ms would be cut to 1 s silently.
  auto seconds = [&o, &kExtension](const char* key,
                                   const char* def) -> std::optional<std::chrono::seconds> {
    auto d = o.optional_duration(key, def, kExtension);
    if (!d) return std::nullopt;
    if (d->count() % 1000 != 0) {
      o.check(key, absl::InvalidArgumentError(
                       "must be whole seconds (an ack deadline is set in seconds)"));
    }
    return std::chrono::duration_cast<std::chrono::seconds>(*d);
  };
  so.min_duration_per_ack_extension = seconds("min_duration_per_ack_extension", "adaptive (10s)");
  so.max_duration_per_ack_extension = seconds("max_duration_per_ack_extension", "adaptive (600s)");
  so.parallel_pull_count = OptionalInt(o, "parallel_pull_count", "1", IntRange{1, 64});
  so.shutdown_timeout = o.optional_duration("shutdown_timeout", "5s", kTimeout);
  so.subscriber_buffer_max_messages =
      o.optional_integer("subscriber_buffer_max_messages", "2 x the element count", kCount);
  so.subscriber_buffer_max_bytes =
      o.optional_integer("subscriber_buffer_max_bytes", "2 x the request bytes", kBytes);
  so.max_records_per_fetch = OptionalInt(o, "max_records_per_fetch", "1000", IntRange{1, 1000000});
  so.first_checkpoint_timeout = o.optional_duration(
      "first_checkpoint_timeout", "10min",
      DurationRange{std::chrono::milliseconds(1), std::chrono::hours(24 * 7), true});
  o.finish();
  return spec;
}

SpannerSourceSpec ParseSpannerSource(YamlMap& m) {
  SpannerSourceSpec spec;
  YamlContext& ctx = m.context();
  const connector::DatabaseDestination db = ParseSpannerDatabase(m);
  spec.project = db.project;
  spec.instance = db.instance;
  spec.database = db.database;
  spec.query = m.optional_string("query");
  spec.table = m.optional_string("table");
  spec.index = m.optional_string("index");
  spec.columns = m.string_list("columns");
  if (spec.query && spec.table) {
    ctx.fail(m.mark(), m.key_path("table"),
             "a Spanner source reads either a query or a table (with columns), never both");
  } else if (!spec.query && !spec.table) {
    ctx.fail(m.mark(), m.key_path("query"),
             "required: a query, or a table with its columns (one of query and table)");
  } else if (spec.query && (spec.index || !spec.columns.empty())) {
    ctx.fail(m.mark(), m.key_path(spec.index ? "index" : "columns"),
             "index and columns belong to a table read; a query names its own columns");
  } else if (spec.table && spec.columns.empty()) {
    ctx.fail(m.mark(), m.key_path("columns"), "a table read needs the list of columns to read");
  }
  auto& o = spec.options;
  const std::string bound =
      m.choice("timestamp_bound", "strong", {"strong", "read_timestamp", "exact_staleness"});
  auto read_timestamp = m.optional_string("read_timestamp");
  auto staleness = m.optional_duration(
      "exact_staleness", "none",
      DurationRange{std::chrono::milliseconds(0), std::chrono::hours(24 * 7), true});
  if ((bound == "read_timestamp") != read_timestamp.has_value()) {
    ctx.fail(m.mark(), m.key_path("read_timestamp"),
             "is required with timestamp_bound read_timestamp and allowed only there");
  } else if ((bound == "exact_staleness") != staleness.has_value()) {
    ctx.fail(m.mark(), m.key_path("exact_staleness"),
             "is required with timestamp_bound exact_staleness and allowed only there");
  } else if (read_timestamp) {
    auto t = spanner::ParseTimestamp(*read_timestamp);
    if (!t.ok()) {
      m.check("read_timestamp", absl::InvalidArgumentError(
                                    fmt::format("'{}' is not an RFC 3339 time", *read_timestamp)));
    } else {
      o.timestamp_bound = spanner::TimestampBound::read_timestamp(*t);
      m.check("read_timestamp", o.timestamp_bound.validate_for_batch_read());
    }
  } else if (staleness) {
    o.timestamp_bound = spanner::TimestampBound::exact_staleness(*staleness);
  }
  o.max_partitions = m.optional_integer("max_partitions", "the service decides", kCount);
  o.partition_size_bytes =
      m.optional_integer("partition_size_bytes", "the service decides", kBytes);
  o.data_boost_enabled = m.boolean("data_boost_enabled", false);
  const std::string priority =
      m.choice("rpc_priority", "unset", {"unset", "LOW", "MEDIUM", "HIGH"});
  if (priority == "LOW") o.rpc_priority = google::spanner::v1::RequestOptions::PRIORITY_LOW;
  if (priority == "MEDIUM") o.rpc_priority = google::spanner::v1::RequestOptions::PRIORITY_MEDIUM;
  if (priority == "HIGH") o.rpc_priority = google::spanner::v1::RequestOptions::PRIORITY_HIGH;
  o.max_rows_per_fetch =
      static_cast<int>(m.integer("max_rows_per_fetch", o.max_rows_per_fetch, IntRange{1, 1000000}));
  o.max_bytes_per_fetch = static_cast<std::size_t>(
      m.integer("max_bytes_per_fetch", static_cast<std::int64_t>(o.max_bytes_per_fetch), kBytes));
  spec.emulator_endpoint = m.optional_string("emulator_endpoint");
  spec.service_account_key_file = m.optional_string("service_account_key_file");
  return spec;
}

SpannerChangeStreamSourceSpec ParseSpannerChangeStreamSource(YamlMap& m) {
  SpannerChangeStreamSourceSpec spec;
  YamlContext& ctx = m.context();
  const connector::DatabaseDestination db = ParseSpannerDatabase(m);
  spec.project = db.project;
  spec.instance = db.instance;
  spec.database = db.database;
  auto stream = m.optional_string("change_stream");
  if (!stream) {
    ctx.fail(m.mark(), m.key_path("change_stream"), "required: the change stream's name");
  } else {
    spec.change_stream = *stream;
    m.check("change_stream", spanner::ValidateChangeStreamName(*stream));
  }
  auto& o = spec.options;
  auto position = [&](const char* key, const std::string& text) {
    return ParseStartPosition(m, key, text);
  };
  if (auto start = m.optional_string("start_position")) {
    if (auto p = position("start_position", *start)) o.start_position = *p;
  }
  if (auto fallback = m.optional_string("resume_fallback")) {
    o.resume_fallback = position("resume_fallback", *fallback);
  }
  if (auto absent = m.optional_duration(
          "absent_retention_fallback", "7d",
          DurationRange{std::chrono::minutes(2), std::chrono::hours(24 * 30), true})) {
    o.absent_retention_fallback = absl::FromChrono(*absent);
  }
  if (auto beat = m.optional_duration(
          "heartbeat_interval", "2s",
          DurationRange{std::chrono::seconds(1), std::chrono::minutes(5), true})) {
    o.heartbeat_interval = *beat;
  }
  const std::string priority = m.choice("rpc_priority", "HIGH", {"LOW", "MEDIUM", "HIGH"});
  if (priority == "LOW") o.rpc_priority = google::spanner::v1::RequestOptions::PRIORITY_LOW;
  if (priority == "MEDIUM") o.rpc_priority = google::spanner::v1::RequestOptions::PRIORITY_MEDIUM;
  o.max_concurrent_queries_per_subtask = static_cast<int>(
      m.integer("max_concurrent_queries_per_subtask", o.max_concurrent_queries_per_subtask,
                IntRange{1, spanner::kMaxQueriesPerSubtask}));
  o.filters.table_include = m.string_list("table_include_list");
  o.filters.table_exclude = m.string_list("table_exclude_list");
  o.filters.column_include = m.string_list("column_include_list");
  o.filters.column_exclude = m.string_list("column_exclude_list");
  o.filters.skip_messages_without_change = m.boolean("skip_messages_without_change", false);
  CheckPatternLists(m, "SpannerChangeStreamSource", "table_include_list", o.filters.table_include,
                    "table_exclude_list", o.filters.table_exclude);
  CheckPatternLists(m, "SpannerChangeStreamSource", "column_include_list", o.filters.column_include,
                    "column_exclude_list", o.filters.column_exclude);
  spec.emulator_endpoint = m.optional_string("emulator_endpoint");
  spec.service_account_key_file = m.optional_string("service_account_key_file");
  return spec;
}

BigtableChangeStreamSourceSpec ParseBigtableChangeStreamSource(YamlMap& m) {
  BigtableChangeStreamSourceSpec spec;
  spec.project = m.required_string("project");
  spec.instance = m.required_string("instance");
  spec.table = m.required_string("table");
  if (!spec.table.empty()) m.check("table", bigtable::ValidateTableId(spec.table));
  spec.app_profile_id = m.required_string("app_profile_id");
  if (!spec.app_profile_id.empty()) {
    m.check("app_profile_id",
            bigtable::ValidateAppProfileId("BigtableChangeStreamSource", spec.app_profile_id));
  }
  auto& o = spec.options;
  if (auto start = m.optional_string("start_position")) {
    if (auto p = ParseStartPosition(m, "start_position", *start)) o.start_position = *p;
  }
  if (auto fallback = m.optional_string("resume_fallback")) {
    o.resume_fallback = ParseStartPosition(m, "resume_fallback", *fallback);
  }
  if (auto end = m.optional_string("end_time")) {
    if (auto t = spanner::ParseTimestamp(*end); t.ok()) {
      o.end_time = *t;
    } else {
      m.check("end_time",
              absl::InvalidArgumentError(fmt::format("'{}' is not an RFC 3339 time", *end)));
    }
  }
  o.max_concurrent_streams_per_subtask = static_cast<int>(
      m.integer("max_concurrent_streams_per_subtask", o.max_concurrent_streams_per_subtask,
                IntRange{1, bigtable::kMaxStreamsPerSubtask}));
  o.filters.family_include = m.string_list("family_include_list");
  o.filters.family_exclude = m.string_list("family_exclude_list");
  o.filters.qualifier_include = m.string_list("qualifier_include_list");
  o.filters.qualifier_exclude = m.string_list("qualifier_exclude_list");
  o.filters.skip_messages_without_change = m.boolean("skip_messages_without_change", false);
  CheckPatternLists(m, "BigtableChangeStreamSource", "family_include_list",
                    o.filters.family_include, "family_exclude_list", o.filters.family_exclude);
  CheckPatternLists(m, "BigtableChangeStreamSource", "qualifier_include_list",
                    o.filters.qualifier_include, "qualifier_exclude_list",
                    o.filters.qualifier_exclude);
  spec.emulator_endpoint = m.optional_string("emulator_endpoint");
  spec.service_account_key_file = m.optional_string("service_account_key_file");
  return spec;
}

BigtableSourceSpec ParseBigtableSource(YamlMap& m) {
  BigtableSourceSpec spec;
  YamlContext& ctx = m.context();
  spec.project = m.required_string("project");
  spec.instance = m.required_string("instance");
  spec.table = m.required_string("table");
  if (!spec.table.empty()) m.check("table", bigtable::ValidateTableId(spec.table));
  spec.app_profile_id = m.optional_string("app_profile_id");
  if (spec.app_profile_id) {
    m.check("app_profile_id",
            bigtable::ValidateAppProfileId("BigtableSource", *spec.app_profile_id));
  }
  const YAML::Node ranges = m.node("row_ranges");
  if (ranges.IsDefined() && !ranges.IsNull()) {
    if (!ranges.IsSequence()) {
      ctx.fail(ranges.Mark(), m.key_path("row_ranges"), "expected a list of {start, end}");
    } else {
      for (std::size_t i = 0; i < ranges.size(); ++i) {
        YamlMap r(ctx, ranges[i], fmt::format("{}[{}]", m.key_path("row_ranges"), i));
        std::string start = r.string("start", "");
        std::string end = r.string("end", "");
        if (!end.empty() && start >= end) {
          r.check("end", absl::InvalidArgumentError(fmt::format(
                             "the range holds no row: its end '{}' is not after its start '{}'",
                             end, start)));
        }
        r.finish();
        spec.row_ranges.emplace_back(std::move(start), std::move(end));
      }
    }
  }
  spec.prefixes = m.string_list("prefixes");
  spec.row_keys = m.string_list("row_keys");
  spec.family = m.optional_string("family");
  spec.max_rows_per_fetch = static_cast<int>(
      m.integer("max_rows_per_fetch", spec.max_rows_per_fetch, IntRange{1, 1000000}));
  spec.max_bytes_per_fetch = m.integer("max_bytes_per_fetch", spec.max_bytes_per_fetch, kBytes);
  spec.emulator_endpoint = m.optional_string("emulator_endpoint");
  spec.service_account_key_file = m.optional_string("service_account_key_file");
  return spec;
}

SourceSpec ParseSource(YamlMap m) {
  const std::string type = m.choice("type", "file",
                                    {"file", "pubsub", "spanner", "spanner_change_stream",
                                     "bigtable_change_stream", "bigtable", "bigquery"});
  if (!m.has("type") && m.present()) {
    m.context().fail(
        m.mark(), m.key_path("type"),
        "required key is missing; allowed values: file, pubsub, spanner, spanner_change_stream, "
        "bigtable_change_stream, bigtable, bigquery");
  }
  SourceSpec spec;
  if (type == "pubsub") {
    spec = ParsePubSubSource(m);
  } else if (type == "spanner") {
    spec = ParseSpannerSource(m);
  } else if (type == "spanner_change_stream") {
    spec = ParseSpannerChangeStreamSource(m);
  } else if (type == "bigtable_change_stream") {
    spec = ParseBigtableChangeStreamSource(m);
  } else if (type == "bigtable") {
    spec = ParseBigtableSource(m);
  } else if (type == "bigquery") {
    spec = ParseBigQuerySource(m);
  } else {
    spec = ParseFileSource(m);
  }
  m.finish();
  return spec;
}

}  // namespace gcpstream::pipeline::internal
