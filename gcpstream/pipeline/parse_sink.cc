// The `sink:` section of a pipeline file.
#include <fmt/format.h>

#include "gcpstream/bigtable/admin/resource_names.h"
#include "gcpstream/pipeline/internal/spec_sections.h"
#include "gcpstream/pubsub/admin/resource_names.h"
#include "gcpstream/spanner/admin/database_admin.h"
#include "gcpstream/tasks/admin/resource_names.h"

namespace gcpstream::pipeline::internal {

void ParseRecovery(YamlMap& m, connector::RecoveryOptions& r) {
  r.initial_backoff = m.duration("recovery_initial_backoff", r.initial_backoff, kShortDelay);
  r.max_backoff = m.duration("recovery_max_backoff", r.max_backoff, kShortDelay);
  r.max_attempts =
      static_cast<int>(m.integer("recovery_max_attempts", r.max_attempts, IntRange{0, 1000}));
}

namespace {

std::optional<bigtable::TableCreateOptions> ParseTableCreateOptions(YamlMap& parent) {
  if (!parent.has("table_create_options")) {
    parent.node("table_create_options");
    return std::nullopt;
  }
  YamlMap m = parent.map("table_create_options");
  YamlContext& ctx = m.context();
  bigtable::TableCreateOptions options;
  const YAML::Node families = m.node("column_families");
  if (!families.IsDefined() || !families.IsMap() || families.size() == 0) {
    ctx.fail(m.mark(), m.key_path("column_families"),
             "required: a mapping of family name: {max_versions, max_age, type}");
  } else {
    for (auto it = families.begin(); it != families.end(); ++it) {
      const std::string name = it->first.Scalar();
      YamlMap f(ctx, it->second, m.key_path("column_families") + "." + name);
      auto versions =
          f.optional_integer("max_versions", "unset (keep every version)", IntRange::int32_from(1));
      auto age = f.optional_duration("max_age", "unset", kLongSpan);
      const std::string type =
          f.choice("type", "raw", {"raw", "int64_sum", "int64_min", "int64_max", "int64_hll"});
      f.finish();
      std::optional<bigtable::GcRule> rule;
      if (versions && age) {
        // Either condition collects a cell: the usual "latest N, none older than" shape.
        rule =
            bigtable::GcRule::union_of({bigtable::GcRule::max_versions(static_cast<int>(*versions)),
                                        bigtable::GcRule::max_age(*age)});
      } else if (versions) {
        rule = bigtable::GcRule::max_versions(static_cast<int>(*versions));
      } else if (age) {
        rule = bigtable::GcRule::max_age(*age);
      }
      bigtable::ColumnFamilyType t = bigtable::ColumnFamilyType::kRaw;
      if (type == "int64_sum") t = bigtable::ColumnFamilyType::kInt64Sum;
      if (type == "int64_min") t = bigtable::ColumnFamilyType::kInt64Min;
      if (type == "int64_max") t = bigtable::ColumnFamilyType::kInt64Max;
      if (type == "int64_hll") t = bigtable::ColumnFamilyType::kInt64Hll;
      options.column_family(name, rule, t);
    }
  }
  m.finish();
  return options;
}

BigtableSinkSpec ParseBigtableSink(YamlMap& m) {
  BigtableSinkSpec spec;
  spec.project = m.required_string("project");
  spec.instance = m.required_string("instance");
  spec.table = m.required_string("table");
  if (!spec.table.empty()) m.check("table", bigtable::ValidateTableId(spec.table));
  spec.emulator_endpoint = m.optional_string("emulator_endpoint");
  spec.service_account_key_file = m.optional_string("service_account_key_file");
  spec.app_profile_id = m.string("app_profile_id", "");
  spec.create_if_needed = m.choice("create_disposition", "CREATE_NEVER",
                                   {"CREATE_NEVER", "CREATE_IF_NEEDED"}) == "CREATE_IF_NEEDED";
  spec.table_create_options = ParseTableCreateOptions(m);
  const std::string mode =
      m.choice("mode", "MUTATE_ROWS", {"MUTATE_ROWS", "CONDITIONAL", "READ_MODIFY_WRITE"});
  if (mode != "MUTATE_ROWS") {
    spec.mode = mode == "CONDITIONAL" ? BigtableSinkSpec::Mode::kConditional
                                      : BigtableSinkSpec::Mode::kReadModifyWrite;
    YamlContext& ctx = m.context();
    if (spec.create_if_needed || spec.table_create_options) {
      ctx.fail(m.mark(), m.key_path("create_disposition"),
               "the single-row modes never create tables (a missing table fails the job)");
    }
    if (m.has("writer_options")) {
      ctx.fail(m.mark(), m.key_path("writer_options"),
               "the single-row modes take request_options, not writer_options");
    }
    YamlMap r = m.map("request_options");
    auto& ro = spec.request_options;
    ro.max_in_flight_requests = static_cast<int>(
        r.integer("max_in_flight_requests", ro.max_in_flight_requests, IntRange{1, 10000}));
    ro.request_timeout = r.duration("request_timeout", ro.request_timeout, kLongSpan);
    r.finish();
    spec.fail_on_empty_branch =
        m.choice("empty_branch_policy", "IGNORE", {"IGNORE", "FAIL"}) == "FAIL";
    if (spec.mode != BigtableSinkSpec::Mode::kConditional && m.has("empty_branch_policy")) {
      ctx.fail(m.mark(), m.key_path("empty_branch_policy"), "belongs to mode CONDITIONAL");
    }
  } else if (m.has("request_options") || m.has("empty_branch_policy")) {
    m.context().fail(
        m.mark(), m.key_path(m.has("request_options") ? "request_options" : "empty_branch_policy"),
        "belongs to the single-row modes (mode: CONDITIONAL or READ_MODIFY_WRITE)");
  }
  spec.exactly_once = m.choice("delivery_guarantee", "AT_LEAST_ONCE",
                               {"AT_LEAST_ONCE", "EXACTLY_ONCE"}) == "EXACTLY_ONCE";
  if (spec.exactly_once && spec.mode != BigtableSinkSpec::Mode::kMutateRows) {
    m.context().fail(m.mark(), m.key_path("delivery_guarantee"),
                     "EXACTLY_ONCE is a MUTATE_ROWS mode; the single-row modes are at least once");
  }
  if (spec.exactly_once) {
    YamlContext& ctx = m.context();
    if (spec.app_profile_id.empty()) {
      ctx.fail(m.mark(), m.key_path("app_profile_id"),
               "EXACTLY_ONCE needs an app profile with single-cluster routing and transactional "
               "writes");
    }
    if (spec.create_if_needed || spec.table_create_options) {
      ctx.fail(m.mark(), m.key_path("create_disposition"),
               "EXACTLY_ONCE writes to a table provisioned beforehand, with its marker family "
               "(the staged mode never creates tables or families)");
    }
    if (m.has("writer_options")) {
      ctx.fail(m.mark(), m.key_path("writer_options"),
               "EXACTLY_ONCE takes staged_options, not writer_options (it sends no MutateRows)");
    }
    YamlMap st = m.map("staged_options");
    auto& so = spec.staged_options;
    so.marker_family = st.required_string("marker_family");
    so.request_options.max_in_flight_requests = static_cast<int>(st.integer(
        "max_in_flight_requests", so.request_options.max_in_flight_requests, IntRange{1, 10000}));
    so.request_options.request_timeout =
        st.duration("request_timeout", so.request_options.request_timeout, kLongSpan);
    so.max_entries_per_interval =
        st.integer("max_entries_per_interval", so.max_entries_per_interval, kCount);
    so.max_bytes_per_interval =
        st.integer("max_bytes_per_interval", so.max_bytes_per_interval, kBytes);
    st.finish();
  } else if (m.has("staged_options")) {
    m.context().fail(m.mark(), m.key_path("staged_options"),
                     "staged_options belong to delivery_guarantee: EXACTLY_ONCE");
  }
  YamlMap w = m.map("writer_options");
  auto& o = spec.writer_options;
  o.batch_element_count =
      w.optional_integer("batch_element_count", "100 (the client's)", IntRange{1, 19999});
  o.batch_byte_size = w.optional_integer("batch_byte_size", "20 MiB (the client's)",
                                         IntRange{1, 100LL * 1024 * 1024 - 1});
  o.max_in_flight_entries = w.integer("max_in_flight_entries", o.max_in_flight_entries, kCount);
  o.max_in_flight_bytes = w.integer("max_in_flight_bytes", o.max_in_flight_bytes, kBytes);
  o.max_consecutive_rejections = static_cast<int>(w.integer(
      "max_consecutive_rejections", o.max_consecutive_rejections, IntRange::int32_from(-1)));
  ParseRecovery(w, o.recovery);
  o.destination_idle_timeout =
      w.duration("destination_idle_timeout", o.destination_idle_timeout, kLongSpan);
  o.max_active_instances = static_cast<int>(
      w.integer("max_active_instances", o.max_active_instances, IntRange{1, 10000}));
  o.per_destination_metrics = w.boolean("per_destination_metrics", o.per_destination_metrics);
  w.finish();
  return spec;
}

std::optional<pubsub::TopicCreateOptions> ParseTopicCreateOptions(YamlMap& parent) {
  if (!parent.has("topic_create_options")) {
    parent.node("topic_create_options");
    return std::nullopt;
  }
  YamlMap m = parent.map("topic_create_options");
  pubsub::TopicCreateOptions options;
  if (auto retention = m.optional_duration("message_retention", "unset (no topic retention)",
                                           kPubSubRetention)) {
    options.message_retention = std::chrono::duration_cast<std::chrono::seconds>(*retention);
  }
  options.kms_key_name = m.optional_string("kms_key_name");
  options.allowed_persistence_regions = m.string_list("allowed_persistence_regions");
  options.enforce_in_transit = m.boolean("enforce_in_transit", false);
  m.finish();
  return options;
}

PubSubSinkSpec ParsePubSubSink(YamlMap& m) {
  PubSubSinkSpec spec;
  spec.project = m.required_string("project");
  spec.topic = m.required_string("topic");
  if (!spec.topic.empty()) m.check("topic", pubsub::ValidateResourceId("topic", spec.topic));
  spec.emulator_endpoint = m.optional_string("emulator_endpoint");
  spec.service_account_key_file = m.optional_string("service_account_key_file");
  spec.create_if_needed = m.choice("create_disposition", "CREATE_IF_NEEDED",
                                   {"CREATE_IF_NEEDED", "CREATE_NEVER"}) == "CREATE_IF_NEEDED";
  spec.topic_create_options = ParseTopicCreateOptions(m);
  YamlMap p = m.map("publisher_options");
  auto& o = spec.publisher_options;
  o.batch_element_count_threshold = p.integer("batch_element_count_threshold",
                                              o.batch_element_count_threshold, IntRange{1, 1000});
  o.batch_request_byte_threshold = p.integer("batch_request_byte_threshold",
                                             o.batch_request_byte_threshold, IntRange{1, 10000000});
  o.batch_delay_threshold =
      p.duration("batch_delay_threshold", o.batch_delay_threshold, kShortDelay);
  o.retry_total_timeout = p.optional_duration("retry_total_timeout", "600s", kTimeout);
  if (auto attempts =
          p.optional_integer("retry_max_attempts", "0 (unbounded)", IntRange::int32_from(0))) {
    o.retry_max_attempts = static_cast<int>(*attempts);
  }
  o.retry_initial_delay = p.duration("retry_initial_delay", o.retry_initial_delay, kShortDelay);
  o.retry_delay_multiplier = p.number("retry_delay_multiplier", o.retry_delay_multiplier);
  o.retry_max_delay = p.duration("retry_max_delay", o.retry_max_delay, kShortDelay);
  o.retry_initial_rpc_timeout =
      p.duration("retry_initial_rpc_timeout", o.retry_initial_rpc_timeout, kTimeout);
  o.retry_rpc_timeout_multiplier =
      p.number("retry_rpc_timeout_multiplier", o.retry_rpc_timeout_multiplier);
  o.retry_max_rpc_timeout = p.duration("retry_max_rpc_timeout", o.retry_max_rpc_timeout, kTimeout);
  o.enable_message_ordering = p.boolean("enable_message_ordering", o.enable_message_ordering);
  o.max_in_flight_messages = p.integer("max_in_flight_messages", o.max_in_flight_messages, kCount);
  o.max_in_flight_bytes = p.integer("max_in_flight_bytes", o.max_in_flight_bytes, kBytes);
  o.max_active_publishers = static_cast<int>(
      p.integer("max_active_publishers", o.max_active_publishers, IntRange{1, 10000}));
  o.destination_idle_timeout =
      p.duration("destination_idle_timeout", o.destination_idle_timeout, kLongSpan);
  o.shutdown_timeout = p.duration("shutdown_timeout", o.shutdown_timeout, kTimeout);
  o.publish_progress_timeout =
      p.duration("publish_progress_timeout", o.publish_progress_timeout, kTimeout);
  ParseRecovery(p, o.recovery);
  o.max_consecutive_rejections = static_cast<int>(p.integer(
      "max_consecutive_rejections", o.max_consecutive_rejections, IntRange::int32_from(-1)));
  o.per_destination_metrics = p.boolean("per_destination_metrics", o.per_destination_metrics);
  p.finish();
  return spec;
}

CloudTasksSinkSpec ParseCloudTasksSink(YamlMap& m) {
  CloudTasksSinkSpec spec;
  spec.project = m.required_string("project");
  spec.location = m.required_string("location");
  spec.queue = m.required_string("queue");
  // Each id checked on its own key (the others replaced by valid stand-ins).
  if (!spec.project.empty()) {
    m.check("project", tasks::ValidateQueueDestination(
                           connector::QueueDestination::of(spec.project, "l", "q")));
  }
  if (!spec.location.empty()) {
    m.check("location", tasks::ValidateQueueDestination(
                            connector::QueueDestination::of("p", spec.location, "q")));
  }
  if (!spec.queue.empty()) {
    m.check("queue",
            tasks::ValidateQueueDestination(connector::QueueDestination::of("p", "l", spec.queue)));
  }
  spec.emulator_endpoint = m.optional_string("emulator_endpoint");
  spec.service_account_key_file = m.optional_string("service_account_key_file");
  YamlMap w = m.map("writer_options");
  auto& o = spec.writer_options;
  o.max_in_flight_tasks = w.integer("max_in_flight_tasks", o.max_in_flight_tasks, kCount);
  o.max_in_flight_bytes = w.integer("max_in_flight_bytes", o.max_in_flight_bytes, kBytes);
  if (auto pool =
          w.optional_integer("channel_pool_size", "unset (one channel)", IntRange{1, 256})) {
    o.channel_pool_size = static_cast<int>(*pool);
  }
  o.retry_initial_backoff =
      w.duration("retry_initial_backoff", o.retry_initial_backoff, kShortDelay);
  o.retry_max_backoff = w.duration("retry_max_backoff", o.retry_max_backoff, kShortDelay);
  o.retry_max_attempts =
      static_cast<int>(w.integer("retry_max_attempts", o.retry_max_attempts, IntRange{1, 1000}));
  o.not_found_initial_backoff =
      w.duration("not_found_initial_backoff", o.not_found_initial_backoff, kShortDelay);
  o.not_found_max_backoff =
      w.duration("not_found_max_backoff", o.not_found_max_backoff, kShortDelay);
  o.not_found_max_attempts = static_cast<int>(
      w.integer("not_found_max_attempts", o.not_found_max_attempts, IntRange{1, 1000}));
  o.per_destination_metrics = w.boolean("per_destination_metrics", o.per_destination_metrics);
  o.max_consecutive_rejections = static_cast<int>(w.integer(
      "max_consecutive_rejections", o.max_consecutive_rejections, IntRange::int32_from(-1)));
  o.stall_warning_interval =
      w.duration("stall_warning_interval", o.stall_warning_interval, kTimeout);
  o.shutdown_timeout = w.duration("shutdown_timeout", o.shutdown_timeout, kTimeout);
  w.finish();
  return spec;
}

SpannerSinkSpec ParseSpannerSink(YamlMap& m) {
  SpannerSinkSpec spec;
  const connector::DatabaseDestination db = ParseSpannerDatabase(m);
  spec.project = db.project;
  spec.instance = db.instance;
  spec.database = db.database;
  spec.emulator_endpoint = m.optional_string("emulator_endpoint");
  spec.service_account_key_file = m.optional_string("service_account_key_file");
  spec.route_constraint_violations =
      m.choice("constraint_violation_policy", "FAIL_JOB",
               {"FAIL_JOB", "ROUTE_TO_FAILURE_HANDLER"}) == "ROUTE_TO_FAILURE_HANDLER";
  YamlMap w = m.map("writer_options");
  auto& o = spec.writer_options;
  o.max_batch_cells = w.integer("max_batch_cells", o.max_batch_cells,
                                IntRange{1, spanner::SpannerWriterOptions::kMaxBatchCells});
  o.max_batch_mutations = w.integer("max_batch_mutations", o.max_batch_mutations,
                                    IntRange{1, spanner::SpannerWriterOptions::kMaxBatchCells});
  o.max_batch_bytes = w.integer("max_batch_bytes", o.max_batch_bytes,
                                IntRange{1, spanner::SpannerWriterOptions::kMaxBatchBytes});
  if (auto d = w.optional_duration(
          "max_commit_delay", "unset (the service's own handling)",
          DurationRange{std::chrono::milliseconds(1), std::chrono::milliseconds(500), true})) {
    o.max_commit_delay = *d;
  }
  if (auto priority = w.optional_choice("rpc_priority", {"LOW", "MEDIUM", "HIGH"})) {
    o.rpc_priority = *priority == "LOW"      ? spanner::RpcPriority::kLow
                     : *priority == "MEDIUM" ? spanner::RpcPriority::kMedium
                                             : spanner::RpcPriority::kHigh;
  }
  o.retry_initial_backoff =
      w.duration("retry_initial_backoff", o.retry_initial_backoff, kShortDelay);
  o.retry_max_backoff = w.duration("retry_max_backoff", o.retry_max_backoff, kShortDelay);
  o.retry_max_attempts =
      static_cast<int>(w.integer("retry_max_attempts", o.retry_max_attempts, IntRange{1, 1000}));
  o.batch_write_timeout = w.duration("batch_write_timeout", o.batch_write_timeout, kTimeout);
  o.max_in_flight_mutations =
      w.integer("max_in_flight_mutations", o.max_in_flight_mutations, kCount);
  o.max_in_flight_bytes = w.integer("max_in_flight_bytes", o.max_in_flight_bytes, kBytes);
  o.max_sessions = static_cast<int>(w.integer("max_sessions", o.max_sessions, IntRange{1, 1000}));
  o.max_consecutive_rejections = static_cast<int>(w.integer(
      "max_consecutive_rejections", o.max_consecutive_rejections, IntRange::int32_from(-1)));
  o.stall_warning_interval =
      w.duration("stall_warning_interval", o.stall_warning_interval, kTimeout);
  o.shutdown_timeout = w.duration("shutdown_timeout", o.shutdown_timeout, kTimeout);
  w.finish();
  return spec;
}

}  // namespace

connector::DatabaseDestination ParseSpannerDatabase(YamlMap& m) {
  // One statement each: the keys are read, and their errors reported, in this order.
  connector::DatabaseDestination db;
  db.project = m.required_string("project");
  db.instance = m.required_string("instance");
  db.database = m.required_string("database");
  // Each id checked on its own key (the others replaced by valid stand-ins).
  if (!db.project.empty()) {
    m.check("project", spanner::ValidateDatabaseDestination(
                           connector::DatabaseDestination::of(db.project, "inst", "db")));
  }
  if (!db.instance.empty()) {
    m.check("instance", spanner::ValidateDatabaseDestination(
                            connector::DatabaseDestination::of("p", db.instance, "db")));
  }
  if (!db.database.empty()) {
    m.check("database", spanner::ValidateDatabaseDestination(
                            connector::DatabaseDestination::of("p", "inst", db.database)));
  }
  return db;
}

SinkSpec ParseSink(YamlMap m) {
  if (!m.has("type") && m.present()) {
    m.context().fail(m.mark(), m.key_path("type"),
                     "required key is missing; allowed values: bigtable, pubsub, cloud_tasks, "
                     "spanner, bigquery");
  }
  const std::string type =
      m.choice("type", "bigtable", {"bigtable", "pubsub", "cloud_tasks", "spanner", "bigquery"});
  SinkSpec spec;
  if (type == "pubsub") {
    spec = ParsePubSubSink(m);
  } else if (type == "cloud_tasks") {
    spec = ParseCloudTasksSink(m);
  } else if (type == "spanner") {
    spec = ParseSpannerSink(m);
  } else if (type == "bigquery") {
    spec = ParseBigQuerySink(m);
  } else {
    spec = ParseBigtableSink(m);
  }
  m.finish();
  return spec;
}

}  // namespace gcpstream::pipeline::internal
