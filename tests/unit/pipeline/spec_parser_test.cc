// The pipeline file parser: what it accepts, and that every error names the key, the line and
// the allowed values.
#include "gcpstream/pipeline/spec_parser.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "gcpstream/pipeline/describe.h"
#include "gcpstream/pipeline/pipeline_job.h"

namespace gcpstream::pipeline {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const char kMinimal[] = R"(name: t
source:
  type: file
  path: /tmp/in.json
transform:
  to_pubsub:
    ordering_key: origin
sink:
  type: pubsub
  project: p
  topic: t1x
  publisher_options:
    enable_message_ordering: true
)";

absl::StatusOr<PipelineSpec> Parse(const std::string& text,
                                   std::map<std::string, std::string> env = {}) {
  return ParsePipelineSpec(text, "p.yaml",
                           [env](const std::string& name) -> std::optional<std::string> {
                             auto it = env.find(name);
                             if (it == env.end()) return std::nullopt;
                             return it->second;
                           });
}

TEST(SpecParser, ReadsAMinimalFileWithDefaults) {
  auto spec = Parse(kMinimal);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name, "t");
  EXPECT_EQ(spec->parallelism, 1);
  const auto& file = std::get<FileSourceSpec>(spec->source);
  EXPECT_EQ(file.path, "/tmp/in.json");
  EXPECT_EQ(file.split_bytes, 4 * 1024 * 1024);
  const auto& sink = std::get<PubSubSinkSpec>(spec->sink);
  EXPECT_TRUE(sink.publisher_options.enable_message_ordering);
  EXPECT_EQ(sink.publisher_options.max_in_flight_messages, 1000);
  EXPECT_TRUE(sink.create_if_needed);
  EXPECT_EQ(spec->transform.to_pubsub->ordering_key, "{origin}");
  EXPECT_EQ(spec->checkpointing.interval.count(), 0);
  EXPECT_EQ(spec->failure_handler.kind, FailureHandlerSpec::Kind::kFail);
}

TEST(SpecParser, UnknownKeyNamesItTheLineAndTheAllowedKeys) {
  std::string text = kMinimal;
  text.replace(text.find("    enable_message_ordering"), 4,
               "    enable_mesage_ordering: true\n    ");
  auto spec = Parse(text);
  ASSERT_FALSE(spec.ok());
  const std::string msg(spec.status().message());
  EXPECT_THAT(msg, HasSubstr("p.yaml:13:"));
  EXPECT_THAT(msg, HasSubstr("unknown key 'enable_mesage_ordering'"));
  EXPECT_THAT(msg, HasSubstr("allowed keys: batch_element_count_threshold"));
  EXPECT_THAT(msg, HasSubstr("enable_message_ordering"));
}

TEST(SpecParser, UnknownTopLevelKeyIsReported) {
  auto spec = Parse(std::string(kMinimal) + "checkpointng:\n  interval: 1s\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(
      std::string(spec.status().message()),
      HasSubstr("p.yaml:14:1: checkpointng: unknown key 'checkpointng'; allowed keys: name, "
                "parallelism, source, transform, sink, checkpointing"));
}

TEST(SpecParser, WrongTypeNamesKeyLineAndExpectedType) {
  auto spec = Parse(std::string(kMinimal) + "parallelism: two\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr("p.yaml:14:14: parallelism: expected an integer, got 'two'"));
  spec = Parse(std::string(kMinimal) + "checkpointing:\n  interval: [1]\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr("p.yaml:15:13: checkpointing.interval: expected a duration, got a list"));
  spec = Parse(std::string(kMinimal) + "checkpointing:\n  interval: 5 parsecs\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr("checkpointing.interval: '5 parsecs' is not a duration"));
}

TEST(SpecParser, DurationsThatOverflowOrRoundToOffAreRefusedWithTheAllowedRange) {
  // Each of these used to run: the first two with checkpointing silently off, the last with
  // a checkpoint storm of about 290 per second from a wrapped interval.
  for (const char* bad : {"999999999999999d", "0.4ms", "200000d", "5ms"}) {
    auto spec = Parse(std::string(kMinimal) + "checkpointing:\n  interval: " + bad + "\n");
    ASSERT_FALSE(spec.ok()) << bad;
    const std::string msg(spec.status().message());
    EXPECT_THAT(msg, HasSubstr("p.yaml:15:13: checkpointing.interval:")) << bad;
  }
  auto spec = Parse(std::string(kMinimal) + "checkpointing:\n  interval: 200000d\n");
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr("'200000d' is out of range: allowed 0 (off) or 10ms..7d"));
  spec = Parse(std::string(kMinimal) + "checkpointing:\n  interval: 0.4ms\n");
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("below the 1ms resolution"));
  spec = Parse(std::string(kMinimal) + "checkpointing:\n  interval: 10.5ms\n");
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("not a whole number of milliseconds"))
      << "no fraction of a millisecond is rounded away unseen";
  EXPECT_TRUE(Parse(std::string(kMinimal) + "checkpointing:\n  interval: 0.1s\n").ok());
  spec = Parse(std::string(kMinimal) + "checkpointing:\n  interval: 999999999999999d\n");
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("too large"));
  EXPECT_TRUE(Parse(std::string(kMinimal) + "checkpointing:\n  interval: 0\n").ok())
      << "0 still means off";
  EXPECT_TRUE(Parse(std::string(kMinimal) + "checkpointing:\n  interval: 10ms\n").ok());
}

TEST(SpecParser, IntegersOutsideTheirRangeAreRefusedNotTruncated) {
  // 4294967297 = 2^32 + 1 used to run with parallelism 1.
  for (const char* bad : {"4294967297", "0", "-3", "99999999999999999999"}) {
    auto spec = Parse(std::string(kMinimal) + "parallelism: " + bad + "\n");
    ASSERT_FALSE(spec.ok()) << bad;
    EXPECT_THAT(std::string(spec.status().message()), HasSubstr("p.yaml:14:14: parallelism:"))
        << bad;
  }
  auto spec = Parse(std::string(kMinimal) + "parallelism: 4294967297\n");
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr("4294967297 is out of range: allowed 1..1024"));
  spec = Parse(std::string(kMinimal) + "checkpointing:\n  retained: 2147483648\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("allowed 1..1000"));
  // A first ordinal near INT64_MAX wrapped around to negative numbers once records were added.
  std::string ordinal(kMinimal);
  ordinal.replace(ordinal.find("  to_pubsub:"), 0,
                  "  ordinal: {attribute: seq, start: 9223372036854775807}\n");
  spec = Parse(ordinal);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("transform.ordinal.start"));
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr("allowed -9007199254740992..9007199254740992"));
}

// A connector builder refuses a combination the parser let through: the error used to read
// "sink: retry_total_timeout and ... cannot be set ..." with no place in the file.
TEST(SpecParser, AnErrorFromAConnectorBuilderNamesTheFileLineAndOption) {
  const std::string text = std::string(kMinimal) + "    retry_total_timeout: 1s\n";
  auto spec = Parse(text);
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto env = AssembleJob(*spec, {});
  ASSERT_FALSE(env.ok());
  const int line = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  EXPECT_THAT(std::string(env.status().message()),
              ::testing::StartsWith(fmt::format(
                  "p.yaml:{}:26: sink.publisher_options.retry_total_timeout: retry_total_timeout "
                  "and retry_max_attempts cannot be set",
                  line)));
  EXPECT_EQ(env.status().code(), absl::StatusCode::kInvalidArgument);
  // `describe` checks the same builders and says the same.
  auto described = DescribePipeline(*spec);
  ASSERT_FALSE(described.ok());
  EXPECT_EQ(described.status().message(), env.status().message());
}

TEST(SpecParser, AJobNameWithAControlCharacterIsRefused) {
  // A NUL in the name cut the run's summary short.
  // C0, C1 (U+009B starts a terminal escape) and the line separator U+2028 alike.
  for (const std::string& name :
       {std::string("\"a\\0b\""), std::string("\"two\\nlines\""), std::string("\"\""),
        std::string("\"a\\u009b31m\""), std::string("\"a\\u2028b\"")}) {
    std::string text(kMinimal);
    text.replace(0, std::string("name: t").size(), "name: " + name);
    auto spec = Parse(text);
    ASSERT_FALSE(spec.ok()) << name;
    EXPECT_THAT(std::string(spec.status().message()), HasSubstr(": name: must")) << name;
  }
  std::string fine(kMinimal);
  fine.replace(0, std::string("name: t").size(), "name: flights-to-bigtable.v2");
  EXPECT_TRUE(Parse(fine).ok());
}

TEST(SpecParser, AValueFromTheEnvironmentIsNeverEchoedInAnError) {
  auto spec = Parse(std::string(kMinimal) + "checkpointing:\n  mode: ${MODE}\n",
                    {{"MODE", "hunter2-secret"}});
  ASSERT_FALSE(spec.ok());
  const std::string msg(spec.status().message());
  EXPECT_THAT(msg, HasSubstr("p.yaml:15:9: checkpointing.mode:"));
  EXPECT_THAT(msg, HasSubstr("${MODE}")) << "the variable is named";
  EXPECT_THAT(msg, Not(HasSubstr("hunter2"))) << "its value is not";
  // Only whole occurrences are replaced: the "0" of the range is not the variable's value.
  spec = Parse(std::string(kMinimal) + "parallelism: ${P}\n", {{"P", "0"}});
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr("parallelism: ${P} is out of range: allowed 1..1024"));
}

TEST(SpecParser, DuplicateKeysAndExtraDocumentsAreRefused) {
  auto spec = Parse(std::string(kMinimal) + "parallelism: 2\nparallelism: 3\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr("p.yaml:15:1: parallelism: duplicate key 'parallelism' (first given at "
                        "line 14)"));
  spec = Parse(std::string(kMinimal) + "---\nname: other\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("holds 2"));
  spec = Parse(std::string(kMinimal) + "checkpointing:\n  interval: 1s\n  interval: 2s\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("checkpointing.interval: duplicate"));
}

TEST(SpecParser, AValueThatIsNotUtf8IsRefusedAtItsPosition) {
  std::string text = kMinimal;
  const auto at = text.find("topic: t1x");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 10, "topic: t1\xff\xfex");
  auto spec = Parse(text);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("p.yaml:11:10: sink.topic:"));
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("not valid UTF-8"));
  std::string named = kMinimal;
  named.replace(0, 7, "name: ${NAME}");
  spec = Parse(named, {{"NAME", "caf\xc3"}});
  ASSERT_FALSE(spec.ok()) << "a truncated sequence from the environment";
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("not valid UTF-8"));
  named = kMinimal;
  named.replace(0, 7, "name: caf\xc3\xa9 \xe2\x82\xac");
  EXPECT_TRUE(Parse(named).ok()) << "well-formed UTF-8 is fine";
}

TEST(SpecParser, AFileOfNestedAliasesIsRefusedInsteadOfExpandedForEver) {
  // Nine levels of ten aliases each: a billion values once expanded ("billion laughs").
  std::string text = std::string(kMinimal) + "x0: &x0 [a, a, a, a, a, a, a, a, a, a]\n";
  for (int i = 1; i <= 9; ++i) {
    text += fmt::format("x{}: &x{} [", i, i);
    for (int k = 0; k < 10; ++k) text += fmt::format("{}*x{}", k ? ", " : "", i - 1);
    text += "]\n";
  }
  const auto start = std::chrono::steady_clock::now();
  auto spec = Parse(text);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("more than 100000 values"));
}

TEST(SpecParser, APipelineFileOverTheSizeLimitIsRefusedWithoutReadingItAll) {
  auto spec = LoadPipelineSpec("/dev/zero");  // endless: must stop after the limit
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("at most 1048576 bytes"));
}

TEST(SpecParser, AnInvalidTopicIdIsRefusedAtItsPosition) {
  std::string text = kMinimal;
  text.replace(text.find("topic: t1x"), 10, "topic: t1");
  auto spec = Parse(text);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr("p.yaml:11:10: sink.topic: 't1' is not a valid Pub/Sub topic id"));
}

TEST(SpecParser, ValueOutsideItsChoicesListsTheAllowedValues) {
  auto spec = Parse(std::string(kMinimal) + "checkpointing:\n  mode: SOMETIMES\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr("p.yaml:15:9: checkpointing.mode: 'SOMETIMES' is not allowed; allowed "
                        "values: EXACTLY_ONCE, AT_LEAST_ONCE"));
  spec = Parse(std::string(kMinimal) + "failure_handler: shrug\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr("allowed values: fail, log_and_drop, dead_letter"));
}

TEST(SpecParser, MissingRequiredKeyIsNamed) {
  std::string text = kMinimal;
  text.erase(text.find("  topic: t1x\n"), 13);
  auto spec = Parse(text);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr("sink.topic: required key is missing"));
}

TEST(SpecParser, SyntaxErrorCarriesThePosition) {
  auto spec = Parse("source:\n  type: [file\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("p.yaml:"));
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("YAML syntax error"));
}

TEST(SpecParser, SubstitutesEnvironmentVariablesWithDefaults) {
  std::string text = kMinimal;
  text.replace(text.find("/tmp/in.json"), 12, "${DATA}/in.json");
  text.replace(text.find("topic: t1x"), 10,
               "topic: ${TOPIC:-fallback}\n  emulator_endpoint: ${HOST}");
  auto spec = Parse(text, {{"DATA", "/data"}, {"HOST", "127.0.0.1:1"}});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(std::get<FileSourceSpec>(spec->source).path, "/data/in.json");
  EXPECT_EQ(std::get<PubSubSinkSpec>(spec->sink).topic, "fallback");
  EXPECT_EQ(std::get<PubSubSinkSpec>(spec->sink).emulator_endpoint, "127.0.0.1:1");
  auto missing = Parse(text, {{"DATA", "/data"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("sink.emulator_endpoint: environment variable HOST is not set"));
}

TEST(SpecParser, MappingMustMatchTheSink) {
  std::string text = kMinimal;
  text.replace(text.find("  to_pubsub:\n    ordering_key: origin\n"), 38,
               "  to_bigtable:\n    row_key: \"{a}\"\n    family: f\n    columns: {q: a}\n");
  auto spec = Parse(text);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("transform.to_bigtable"));
}

TEST(SpecParser, ReadsThePubSubSourceOptions) {
  auto spec = Parse(R"(source:
  type: pubsub
  subscriptions:
    - project: p
      subscription: s1x
      create: {topic: t1x, ack_deadline: 60s, enable_message_ordering: true}
    - {project: p, subscription: s2x}
  emulator_endpoint: 127.0.0.1:8085
  ordering_mode: PER_KEY
  start_position: from_timestamp
  start_timestamp: "2001-01-01T00:00:00Z"
  deserialization_failure_policy: NACK
  subscriber_options:
    parallel_pull_count: 2
    max_ack_extension_period: 30min
    max_duration_per_ack_extension: 45s
    first_checkpoint_timeout: 0
transform:
  to_bigtable:
    row_key: "{origin}#{date}#{seq}"
    family: f
    columns: {delay: delay}
    timestamp: {field: date, format: "%Y/%m/%d %H:%M"}
sink: {type: bigtable, project: p, instance: i, table: t}
)");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const auto& src = std::get<PubSubSourceSpec>(spec->source);
  ASSERT_EQ(src.subscriptions.size(), 2u);
  EXPECT_EQ(src.subscriptions[0].create->topic, "t1x");
  EXPECT_EQ(src.subscriptions[0].create->ack_deadline, std::chrono::seconds(60));
  EXPECT_EQ(src.subscriptions[0].create->enable_message_ordering, true);
  EXPECT_FALSE(src.subscriptions[1].create.has_value());
  EXPECT_EQ(src.ordering_mode, PubSubSourceSpec::OrderingMode::kPerKey);
  EXPECT_EQ(src.start_position, PubSubSourceSpec::StartPosition::kFromTimestamp);
  EXPECT_EQ(src.start_timestamp_ms, 978307200000);
  EXPECT_EQ(src.deserialization_failure_policy,
            PubSubSourceSpec::DeserializationFailurePolicy::kNack);
  EXPECT_EQ(src.subscriber_options.parallel_pull_count, 2);
  EXPECT_EQ(src.subscriber_options.max_ack_extension_period, std::chrono::minutes(30));
  EXPECT_EQ(src.subscriber_options.first_checkpoint_timeout, std::chrono::milliseconds(0));
  EXPECT_FALSE(src.subscriber_options.shutdown_timeout.has_value());
  EXPECT_EQ(src.subscriber_options.max_duration_per_ack_extension, std::chrono::seconds(45));
  EXPECT_FALSE(src.subscriber_options.min_duration_per_ack_extension.has_value());
}

TEST(SpecParser, PubSubSourceTypoInSubscriptionIsNamed) {
  auto spec = Parse(R"(source:
  type: pubsub
  subscriptions:
    - {project: p, subscripton: s1x}
sink: {type: pubsub, project: p, topic: t1x}
)");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr("source.subscriptions[0].subscripton: unknown key"));
}

TEST(SpecParser, TheExamplePipelinesParse) {
  for (const char* name : {"flights-to-pubsub.yaml", "flights-pubsub-to-bigtable.yaml"}) {
    auto spec = LoadPipelineSpec(std::string(GCPSTREAM_SOURCE_DIR) + "/examples/pipelines/" + name,
                                 [](const std::string&) { return std::nullopt; });
    EXPECT_TRUE(spec.ok()) << name << ": " << spec.status();
  }
}

}  // namespace
}  // namespace gcpstream::pipeline
