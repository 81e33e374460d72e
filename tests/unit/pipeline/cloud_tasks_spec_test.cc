// The cloud_tasks sink and transform.to_cloud_tasks of a pipeline file: what they accept, the
// errors naming file, line and key, and the task a record becomes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gcpstream/pipeline/cloud_tasks_task_mapper.h"
#include "gcpstream/pipeline/describe.h"
#include "gcpstream/pipeline/spec_parser.h"
#include "gcpstream/tasks/admin/resource_names.h"

namespace gcpstream::pipeline {
namespace {

using ::testing::HasSubstr;

// `mapping` goes under to_cloud_tasks, `writer` under sink.writer_options (both indented).
std::string File(const std::string& mapping, const std::string& sink_extra = "") {
  return R"(name: t
source:
  type: file
  path: /tmp/in.json
transform:
  to_cloud_tasks:
)" + mapping +
         R"(sink:
  type: cloud_tasks
  project: p
  location: us-central1
  queue: q
)" + sink_extra;
}

absl::StatusOr<PipelineSpec> Parse(const std::string& text) {
  return ParsePipelineSpec(text, "p.yaml",
                           [](const std::string&) -> std::optional<std::string> { return ""; });
}

PipelineRecord Flight() {
  PipelineRecord r;
  r.fields = nlohmann::json{{"origin", "SFO"}, {"seq", 7}, {"delay", 12}};
  return r;
}

TEST(CloudTasksSpec, AUrlWithoutPlaceholdersIsAFixedUrlAndTemplatesFillFromTheRecord) {
  auto spec =
      Parse(File("    url: https://h.example.com/delays\n"
                 "    headers:\n      X-Origin: \"{origin}\"\n      Content-Type: "
                 "application/json\n"
                 "    task_id: \"{origin}#{seq}\"\n"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto mapper = CloudTasksTaskMapper::make(*spec->transform.to_cloud_tasks);
  ASSERT_TRUE(mapper.ok()) << mapper.status();
  auto task = mapper->map(Flight());
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ(task->http_request().url(), "https://h.example.com/delays");
  EXPECT_EQ(task->http_request().headers().at("X-Origin"), "SFO");
  EXPECT_EQ(task->http_request().headers().at("Content-Type"), "application/json");
  EXPECT_EQ(nlohmann::json::parse(task->http_request().body())["seq"], 7);
  EXPECT_EQ(*mapper->task_key(Flight()), std::optional<std::string>("SFO#7"));

  auto per_record = Parse(File("    url: https://h.example.com/{origin}\n    task_id: seq\n"));
  ASSERT_TRUE(per_record.ok()) << per_record.status();
  auto m2 = CloudTasksTaskMapper::make(*per_record->transform.to_cloud_tasks);
  EXPECT_EQ(m2->map(Flight())->http_request().url(), "https://h.example.com/SFO");
  EXPECT_EQ(*m2->task_key(Flight()), std::optional<std::string>("7"))
      << "a bare task_id names a field, like row_key";
}

TEST(CloudTasksSpec, MistakesAreRefusedNamingTheLineAndKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"    method: POST\n", "give exactly one target"},
      {"    url: ftp://h/x\n", "p.yaml:7:10: transform.to_cloud_tasks.url:"},
      {"    url: \"https://\"\n", "needs a host"},
      {"    relative_uri: work\n", "transform.to_cloud_tasks.relative_uri:"},
      {"    url: https://h/x\n    task_id: \"\"\n", "transform.to_cloud_tasks.task_id: is empty"},
      {"    url: https://h/x\n    oidc_token:\n      service_account: a@b\n    oauth_token:\n"
       "      service_account: a@b\n",
       "transform.to_cloud_tasks.oauth_token: oidc_token and oauth_token cannot both be set"},
      {"    url: https://h/x\n    dispatch_deadline: 2h\n",
       "transform.to_cloud_tasks.dispatch_deadline: dispatch_deadline must be between 15 s and "
       "30 min"},
      {"    relative_uri: /w\n    headers:\n      X-AppEngine-Country: x\n",
       "transform.to_cloud_tasks.headers: header 'X-AppEngine-Country' is set by Cloud Tasks"},
      {"    url: https://h/x\n    headers:\n      \"a b\": x\n", "is not an HTTP token"},
      {"    relative_uri: /w\n    method: PATCH\n", "App Engine tasks take no PATCH"},
  };
  for (const auto& [mapping, expected] : cases) {
    auto spec = Parse(File(mapping));
    ASSERT_FALSE(spec.ok()) << mapping;
    EXPECT_THAT(std::string(spec.status().message()), HasSubstr(expected)) << mapping;
  }
  auto project = Parse(
      File("    url: https://h/x\n")
          .replace(File("    url: https://h/x\n").find("project: p"), 10, "project: My_Project!"));
  ASSERT_FALSE(project.ok());
  EXPECT_THAT(std::string(project.status().message()), HasSubstr("sink.project: Cloud Tasks"));
  auto writer =
      Parse(File("    url: https://h/x\n", "  writer_options:\n    channel_pool_size: 0\n"));
  EXPECT_FALSE(writer.ok());
}

TEST(CloudTasksSpec, EachSinkReadsOnlyItsOwnMapping) {
  auto missing = Parse(R"(name: t
source:
  type: file
  path: /tmp/in.json
sink:
  type: cloud_tasks
  project: p
  location: l
  queue: q
)");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("needs transform.to_cloud_tasks"));
  auto other = Parse(R"(name: t
source:
  type: file
  path: /tmp/in.json
transform:
  to_cloud_tasks:
    url: https://h/x
sink:
  type: pubsub
  project: p
  topic: topic1
)");
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(std::string(other.status().message()),
              HasSubstr("only a cloud_tasks sink reads it; this pipeline's sink is pubsub"));
}

TEST(CloudTasksSpec, DescribeSaysWhetherTasksAreNamedAndWhere) {
  auto spec = Parse(File("    url: https://h/x\n    task_id: \"{origin}\"\n",
                         "  emulator_endpoint: 127.0.0.1:8123\n"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto text = DescribePipeline(*spec);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("cloud_tasks projects/p/locations/us-central1/queues/q"));
  EXPECT_THAT(*text, HasSubstr("named by SHA-256 of {origin}"));
}

}  // namespace
}  // namespace gcpstream::pipeline
