#include "gcpstream/pipeline/spec_parser.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#include "gcpstream/pipeline/internal/spec_sections.h"
#include "gcpstream/pubsub/admin/resource_names.h"

namespace gcpstream::pipeline {
namespace internal {

nlohmann::json ScalarJson(const YAML::Node& node, const std::string& text) {
  // yaml-cpp tags quoted scalars "!"; plain ones "?".
  if (node.Tag() == "!") return text;
  if (text == "true") return true;
  if (text == "false") return false;
  if (!text.empty()) {
    char* end = nullptr;
    const long long i = std::strtoll(text.c_str(), &end, 10);
    if (end != nullptr && *end == '\0') return static_cast<std::int64_t>(i);
    const double d = std::strtod(text.c_str(), &end);
    if (end != nullptr && *end == '\0') return d;
  }
  return text;
}

FailureHandlerSpec ParseFailureHandler(YamlContext& ctx, const YAML::Node& node) {
  FailureHandlerSpec spec;
  static const std::vector<std::string> kTypes = {"fail", "log_and_drop", "dead_letter"};
  std::string type = "fail";
  if (node.IsDefined() && node.IsScalar()) {
    // The short form: `failure_handler: log_and_drop`.
    auto text = ctx.substitute(node, "failure_handler");
    type = text.value_or("fail");
    ctx.record(OptionRecord{"failure_handler.type", type, "fail", true});
    if (std::find(kTypes.begin(), kTypes.end(), type) == kTypes.end()) {
      ctx.fail(node.Mark(), "failure_handler",
               fmt::format("'{}' is not allowed; allowed values: fail, log_and_drop, dead_letter",
                           type));
    }
    if (type == "dead_letter") {
      ctx.fail(node.Mark(), "failure_handler",
               "dead_letter needs a mapping with project and topic");
    }
  } else {
    YamlMap m(ctx, node, "failure_handler");
    type = m.choice("type", "fail", kTypes);
    if (type == "dead_letter") {
      spec.project = m.required_string("project");
      spec.topic = m.required_string("topic");
      if (!spec.topic.empty()) m.check("topic", pubsub::ValidateResourceId("topic", spec.topic));
      spec.emulator_endpoint = m.optional_string("emulator_endpoint");
      spec.service_account_key_file = m.optional_string("service_account_key_file");
      spec.max_in_flight_messages = static_cast<int>(
          m.integer("max_in_flight_messages", spec.max_in_flight_messages, IntRange{-1, 1000000}));
      spec.flush_timeout = m.duration("flush_timeout", spec.flush_timeout, kTimeout);
      spec.shutdown_timeout = m.duration("shutdown_timeout", spec.shutdown_timeout, kTimeout);
    }
    m.finish();
  }
  if (type == "log_and_drop") spec.kind = FailureHandlerSpec::Kind::kLogAndDrop;
  if (type == "dead_letter") spec.kind = FailureHandlerSpec::Kind::kDeadLetter;
  return spec;
}

}  // namespace internal

namespace {

using internal::kTimeout;

CheckpointingSpec ParseCheckpointing(YamlMap m) {
  CheckpointingSpec spec;
  spec.interval =
      m.duration("interval", spec.interval,
                 DurationRange{std::chrono::milliseconds(10), std::chrono::hours(24 * 7), true});
  spec.dir = m.string("dir", "");
  spec.timeout = m.duration("timeout", spec.timeout, kTimeout);
  spec.min_pause_between =
      m.duration("min_pause_between", spec.min_pause_between,
                 DurationRange{std::chrono::milliseconds(0), std::chrono::hours(24 * 7)});
  spec.tolerable_failed_checkpoints = static_cast<int>(m.integer(
      "tolerable_failed_checkpoints", spec.tolerable_failed_checkpoints, IntRange{0, 1000000}));
  const std::string mode = m.choice("mode", "EXACTLY_ONCE", {"EXACTLY_ONCE", "AT_LEAST_ONCE"});
  if (mode == "AT_LEAST_ONCE") spec.mode = runtime::CheckpointingMode::kAtLeastOnce;
  spec.retained = static_cast<int>(m.integer("retained", spec.retained, IntRange{1, 1000}));
  m.finish();
  if (spec.retained < 1) {
    m.context().fail(m.mark(), m.key_path("retained"), "must be at least 1");
  }
  return spec;
}

RestartSpec ParseRestart(YamlMap m) {
  RestartSpec spec;
  auto& s = spec.strategy;
  const std::string type = m.choice("type", "none", {"none", "fixed_delay", "exponential_delay"});
  if (type == "fixed_delay") {
    s.kind = runtime::RestartStrategyKind::kFixedDelay;
    s.max_attempts =
        static_cast<int>(m.integer("max_attempts", s.max_attempts, IntRange::int32_from(0)));
    s.delay = m.duration("delay", s.delay,
                         DurationRange{std::chrono::milliseconds(0), std::chrono::hours(24)});
  } else if (type == "exponential_delay") {
    s.kind = runtime::RestartStrategyKind::kExponentialDelay;
    s.initial_delay =
        m.duration("initial_delay", s.initial_delay,
                   DurationRange{std::chrono::milliseconds(0), std::chrono::hours(24)});
    s.max_delay = m.duration("max_delay", s.max_delay,
                             DurationRange{std::chrono::milliseconds(0), std::chrono::hours(24)});
    s.backoff_multiplier = m.number("backoff_multiplier", s.backoff_multiplier);
    s.reset_after =
        m.duration("reset_after", s.reset_after,
                   DurationRange{std::chrono::milliseconds(1), std::chrono::hours(24 * 365)});
  }
  m.finish();
  return spec;
}

}  // namespace

absl::StatusOr<PipelineSpec> ParsePipelineSpec(const std::string& text,
                                               const std::string& file_name, const EnvLookup& env) {
  YAML::Node root;
  try {
    std::vector<YAML::Node> documents = YAML::LoadAll(text);
    if (documents.size() > 1) {
      // yaml-cpp's Load() reads the first document and ignores the rest without a word.
      return absl::InvalidArgumentError(fmt::format(
          "{}:{}:1: a pipeline file holds one YAML document; this one holds {} (remove the "
          "'---' separators or split the file)",
          file_name, documents[1].Mark().is_null() ? 1 : documents[1].Mark().line + 1,
          documents.size()));
    }
    if (!documents.empty()) root = documents.front();
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(fmt::format("{}:{}:{}: YAML syntax error: {}", file_name,
                                                  e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  YamlContext ctx(file_name, env);
  // A repeated key would otherwise be read as its first occurrence, silently.
  ctx.check_duplicate_keys(root, "");
  if (!ctx.ok()) return ctx.status();
  if (!root.IsMap()) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: a pipeline file is a mapping with the keys name, parallelism, source, transform, "
        "sink, checkpointing, restart_strategy, failure_handler",
        file_name));
  }
  YamlMap top(ctx, root, "");
  PipelineSpec spec;
  spec.name = top.string("name", "pipeline");
  // The name is printed (summary, logs) and stored in checkpoints: a NUL cut the summary short.
  // C0 and DEL, C1 (U+0080..U+009F, UTF-8 C2 80..C2 9F: U+009B starts a terminal escape) and
  // the line and paragraph separators U+2028/U+2029 (E2 80 A8/A9).
  auto control_at = [&](std::size_t i) {
    const auto c = static_cast<unsigned char>(spec.name[i]);
    const auto next = [&](std::size_t k) {
      return i + k < spec.name.size() ? static_cast<unsigned char>(spec.name[i + k]) : 0;
    };
    return c < 0x20 || c == 0x7f || (c == 0xc2 && next(1) >= 0x80 && next(1) <= 0x9f) ||
           (c == 0xe2 && next(1) == 0x80 && (next(2) == 0xa8 || next(2) == 0xa9));
  };
  bool control = false;
  for (std::size_t i = 0; i < spec.name.size() && !control; ++i) control = control_at(i);
  if (control) {
    top.check("name", absl::InvalidArgumentError(
                          "must not contain control characters (a NUL, a newline, ...)"));
  } else if (spec.name.empty() || spec.name.size() > 256) {
    top.check("name", absl::InvalidArgumentError("must be 1..256 bytes"));
  }
  spec.parallelism = static_cast<int>(top.integer("parallelism", 1, IntRange{1, 1024}));
  if (!top.has("source")) ctx.fail(root.Mark(), "source", "required key is missing");
  spec.source = internal::ParseSource(top.map("source"));
  // The reusable query job id of a BigQuery query source is derived from the pipeline's name.
  if (auto* q = std::get_if<BigQuerySourceSpec>(&spec.source)) q->job_name = spec.name;
  spec.transform = internal::ParseTransform(top.map("transform"));
  if (!top.has("sink")) ctx.fail(root.Mark(), "sink", "required key is missing");
  spec.sink = internal::ParseSink(top.map("sink"));
  spec.checkpointing = ParseCheckpointing(top.map("checkpointing"));
  spec.restart = ParseRestart(top.map("restart_strategy"));
  spec.failure_handler = internal::ParseFailureHandler(ctx, top.node("failure_handler"));
  top.finish();
  if (spec.parallelism < 1 && ctx.ok()) {
    ctx.fail(std::as_const(root)["parallelism"].Mark(), "parallelism", "must be at least 1");
  }
  // The mapping must match the sink: each sink reads its own, and only its own.
  if (ctx.ok()) {
    const char* sink = std::holds_alternative<BigtableSinkSpec>(spec.sink)     ? "bigtable"
                       : std::holds_alternative<PubSubSinkSpec>(spec.sink)     ? "pubsub"
                       : std::holds_alternative<CloudTasksSinkSpec>(spec.sink) ? "cloud_tasks"
                       : std::holds_alternative<BigQuerySinkSpec>(spec.sink)   ? "bigquery"
                                                                               : "spanner";
    // A BigQuery sink reads no mapping: each record's fields are its row.
    const bool bigquery = std::holds_alternative<BigQuerySinkSpec>(spec.sink);
    const std::string own = bigquery ? std::string() : std::string("to_") + sink;
    const std::vector<std::pair<std::string, bool>> mappings = {
        {"to_bigtable", spec.transform.to_bigtable.has_value()},
        {"to_pubsub", spec.transform.to_pubsub.has_value()},
        {"to_cloud_tasks", spec.transform.to_cloud_tasks.has_value()},
        {"to_spanner", spec.transform.to_spanner.has_value()}};
    for (const auto& [name, present] : mappings) {
      if (present && name != own) {
        ctx.fail(std::as_const(root)["transform"].Mark(), "transform." + name,
                 bigquery ? fmt::format("only a {} sink reads it; a bigquery sink writes each "
                                        "record's fields as its row (no mapping)",
                                        name.substr(3))
                          : fmt::format("only a {} sink reads it; this pipeline's sink is {} "
                                        "(use {})",
                                        name.substr(3), sink, own));
      }
    }
    if (const auto* bq = std::get_if<BigQuerySinkSpec>(&spec.sink);
        bq != nullptr && bq->write_method == bigquery::WriteMethod::kStorageApiExactlyOnce &&
        (spec.checkpointing.interval.count() == 0 || spec.checkpointing.dir.empty())) {
      ctx.fail(std::as_const(root)["sink"].Mark(), "sink.write_method",
               "STORAGE_API_EXACTLY_ONCE makes rows visible when a checkpoint completes and "
               "resumes from it after a crash: set checkpointing.interval and checkpointing.dir");
    }
    if (const auto* bq = std::get_if<BigQuerySinkSpec>(&spec.sink);
        bq != nullptr && bq->file_loads) {
      const bool checkpointing = spec.checkpointing.interval.count() > 0;
      const bool streaming_source =
          std::holds_alternative<PubSubSourceSpec>(spec.source) ||
          std::holds_alternative<SpannerChangeStreamSourceSpec>(spec.source) ||
          std::holds_alternative<BigtableChangeStreamSourceSpec>(spec.source);
      const auto& loads = *bq->file_loads;
      if (checkpointing && spec.checkpointing.dir.empty()) {
        ctx.fail(std::as_const(root)["sink"].Mark(), "sink.write_method",
                 "FILE_LOADS keeps the staged files of a checkpoint in it until their load "
                 "succeeded: set checkpointing.dir");
      } else if (!checkpointing && streaming_source) {
        ctx.fail(std::as_const(root)["sink"].Mark(), "sink.write_method",
                 "FILE_LOADS loads each completed checkpoint's files: an unbounded source "
                 "without checkpointing would stage files forever; set checkpointing.interval "
                 "and checkpointing.dir");
      } else if (spec.parallelism > 1 &&
                 loads.write_disposition != bigquery::WriteDisposition::kWriteAppend) {
        ctx.fail(std::as_const(root)["sink"].Mark(), "sink.file_loads.write_disposition",
                 "each subtask loads its own files, so WRITE_TRUNCATE or WRITE_EMPTY at "
                 "parallelism above 1 would replace or refuse the other subtasks' rows: use "
                 "parallelism: 1");
      } else if (checkpointing &&
                 loads.write_disposition != bigquery::WriteDisposition::kWriteAppend) {
        ctx.fail(std::as_const(root)["sink"].Mark(), "sink.file_loads.write_disposition",
                 "with checkpointing every checkpoint is a load: only WRITE_APPEND makes sense "
                 "(WRITE_TRUNCATE and WRITE_EMPTY are for a bounded job without checkpointing)");
      } else if (checkpointing &&
                 spec.checkpointing.interval < loads.min_checkpoint_interval * spec.parallelism) {
        // Each subtask loads its own files: a checkpoint makes up to `parallelism` loads.
        ctx.fail(std::as_const(root)["checkpointing"].Mark(), "checkpointing.interval",
                 fmt::format("{} ms is below sink.file_loads.min_checkpoint_interval ({} ms) x "
                             "parallelism ({}): each checkpoint makes a load job per subtask and "
                             "BigQuery allows 1,500 per table per day; lower "
                             "min_checkpoint_interval only for a short-lived job",
                             spec.checkpointing.interval.count(),
                             loads.min_checkpoint_interval.count(), spec.parallelism));
      } else if (checkpointing &&
                 spec.checkpointing.interval < std::chrono::minutes(5) * spec.parallelism) {
        spdlog::warn(
            "bigquery sink: FILE_LOADS with a checkpoint every {} ms at parallelism {} makes up "
            "to {} load jobs per table per day (each subtask loads its own files; BigQuery "
            "allows 1,500)",
            spec.checkpointing.interval.count(), spec.parallelism,
            std::chrono::hours(24) / spec.checkpointing.interval * spec.parallelism);
      }
    }
    if (std::holds_alternative<BigtableSinkSpec>(spec.sink) && !spec.transform.to_bigtable) {
      ctx.fail(std::as_const(root)["sink"].Mark(), "transform.to_bigtable",
               "a bigtable sink needs transform.to_bigtable (row_key, family, columns)");
    }
    if (std::holds_alternative<CloudTasksSinkSpec>(spec.sink) && !spec.transform.to_cloud_tasks) {
      ctx.fail(std::as_const(root)["sink"].Mark(), "transform.to_cloud_tasks",
               "a cloud_tasks sink needs transform.to_cloud_tasks (url or relative_uri, ...)");
    }
    if (std::holds_alternative<SpannerSinkSpec>(spec.sink) && !spec.transform.to_spanner) {
      ctx.fail(std::as_const(root)["sink"].Mark(), "transform.to_spanner",
               "a spanner sink needs transform.to_spanner (table, operation, columns)");
    }
  }
  if (!ctx.ok()) return ctx.status();
  spec.options = ctx.options();
  return spec;
}

absl::StatusOr<PipelineSpec> LoadPipelineSpec(const std::string& path, const EnvLookup& env) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(fmt::format("cannot read pipeline file {}", path));
  // Read at most one byte past the limit: `run /dev/zero` must not read forever.
  std::string text(kMaxPipelineFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxPipelineFileBytes) {
    return absl::InvalidArgumentError(
        fmt::format("{}: a pipeline file is at most {} bytes; this one is larger", path,
                    kMaxPipelineFileBytes));
  }
  return ParsePipelineSpec(text, path, env);
}

}  // namespace gcpstream::pipeline
