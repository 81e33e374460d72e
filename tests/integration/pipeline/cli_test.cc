// The gcpstream CLI as a process: exit codes for usage errors, and which stream carries what
// (logs on stderr, the summary alone on stdout).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/integration/pipeline/flights_data.h"
#include "tests/support/emulators.h"
#include "tests/support/pubsub_emulator.h"

namespace gcpstream::pipeline {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadFile;

struct Ran {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs the CLI with `args` (shell words) from the source folder, stdout and stderr apart.
Ran RunCli(const std::string& args, const std::string& env = "") {
  const fs::path dir = fs::temp_directory_path() / testing::UniqueId("cli");
  fs::create_directories(dir);
  const std::string command =
      fmt::format("cd '{}' && {} timeout 120 '{}' {} > '{}' 2> '{}'", GCPSTREAM_SOURCE_DIR, env,
                  GCPSTREAM_CLI_PATH, args, (dir / "out").string(), (dir / "err").string());
  const int status = std::system(command.c_str());
  Ran ran;
  ran.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  ran.out = ReadFile(dir / "out");
  ran.err = ReadFile(dir / "err");
  fs::remove_all(dir);
  return ran;
}

TEST(CliTest, EveryUsageErrorExitsTwoNamingTheFlag) {
  // CLI11's own codes (104, 106, 109, ...) used to leak out as exit codes.
  const std::string pipeline = "examples/pipelines/flights-to-pubsub.yaml";
  for (const auto& [args, flag] : std::vector<std::pair<std::string, std::string>>{
           {"run " + pipeline + " --parallelism 0", "--parallelism"},
           {"run " + pipeline + " --parallelism 4294967297", "--parallelism"},
           {"run " + pipeline + " --metrics-port 70000", "--metrics-port"},
           {"run " + pipeline + " --checkpoint-interval 1ms", "--checkpoint-interval"},
           {"run " + pipeline + " --checkpoint-interval 100000d", "--checkpoint-interval"},
           {"run " + pipeline + " --no-such-flag", "--no-such-flag"},
           // An empty folder used to mean in-memory checkpoints, silently.
           {"run " + pipeline + " --checkpoint-dir ''", "--checkpoint-dir"},
           {"run " + pipeline + " --savepoint-dir ''", "--savepoint-dir"},
           {"run " + pipeline + " --restore-fallback", "--restore-fallback"},
           {"run", "pipeline"},
           {"", "subcommand"}}) {
    Ran ran = RunCli(args);
    EXPECT_EQ(ran.exit_code, 2) << args << "\n" << ran.err;
    EXPECT_THAT(ran.err, HasSubstr(flag)) << args;
    EXPECT_TRUE(ran.out.empty()) << args << ": " << ran.out;
  }
  EXPECT_EQ(RunCli("--help").exit_code, 0);

  // A checkpoint given as the checkpoint folder: jobs would write inside it, where --restore
  // never looks.
  const fs::path chk = fs::temp_directory_path() / testing::UniqueId("cli-chk") / "chk-7";
  fs::create_directories(chk);
  std::ofstream(chk / "_metadata") << "x";
  Ran ran = RunCli("run " + pipeline + " --checkpoint-dir '" + chk.string() + "'");
  EXPECT_EQ(ran.exit_code, 2) << ran.err;
  EXPECT_THAT(ran.err, HasSubstr("is itself a checkpoint"));
  fs::remove_all(chk.parent_path());
}

// `describe` reads the file without contacting any service: the plan, every option with its
// default (those the file set marked), and the lineage.
TEST(CliTest, DescribeListsThePlanTheOptionsAndTheLineageOfEachExample) {
  for (const std::string pipeline : {"examples/pipelines/flights-to-pubsub.yaml",
                                     "examples/pipelines/flights-pubsub-to-bigtable.yaml"}) {
    Ran ran = RunCli("describe " + pipeline);
    ASSERT_EQ(ran.exit_code, 0) << pipeline << "\n" << ran.err;
    EXPECT_THAT(ran.out, HasSubstr("options (value, default; * = set in the file):")) << pipeline;
    EXPECT_THAT(ran.out, HasSubstr("* checkpointing.interval")) << pipeline;
    EXPECT_THAT(ran.out, HasSubstr("lineage:")) << pipeline;
  }
  Ran ran = RunCli("describe examples/pipelines/flights-pubsub-to-bigtable.yaml");
  EXPECT_THAT(ran.out, HasSubstr("* source.subscriber_options.max_duration_per_ack_extension"));
  EXPECT_THAT(ran.out, HasSubstr("  source.subscriber_options.min_duration_per_ack_extension"));
  EXPECT_EQ(RunCli("describe no-such-file.yaml").exit_code, 2);
}

TEST(CliTest, TheSummaryIsAloneOnStdoutAndTheLogsAreOnStderr) {
  const std::string endpoint = testing::EmulatorEndpoint(testing::Emulator::kPubSub);
  ASSERT_FALSE(endpoint.empty());
  testing::PubSubEmulatorClient client(endpoint);
  const std::string topic = testing::UniqueId("cli-streams");
  ASSERT_TRUE(testing::CreateTopicAndSubscription(client, "cli-it", topic, topic + "-sub",
                                                  /*ordering=*/true)
                  .ok());
  const fs::path dir = testing::WriteFlightsFolder("cli-it", testing::Flights(50));
  // --restore with no checkpoint yet logs that it starts from the beginning: one log line
  // for certain.
  Ran ran = RunCli("run examples/pipelines/flights-to-pubsub.yaml --restore",
                   fmt::format("FLIGHTS_FILE='{}' FLIGHTS_TOPIC='{}' GCP_PROJECT=cli-it "
                               "PUBSUB_EMULATOR_HOST='{}' CHECKPOINT_DIR='{}'",
                               (dir / "flights.json").string(), topic, endpoint,
                               (dir / "checkpoints").string()));
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out.rfind("job ", 0), 0u) << "stdout starts with the summary:\n" << ran.out;
  EXPECT_THAT(ran.out, HasSubstr("records    in 50, invalid 0,"));
  EXPECT_THAT(ran.out, Not(HasSubstr("[info]"))) << "a log line on stdout";
  EXPECT_THAT(ran.err, HasSubstr("starting from the beginning")) << "logs go to stderr";
}

TEST(CliTest, PipingTheOutputIntoHeadNeitherKillsNorFailsTheRun) {
  // With logs on stdout, `run p.yaml | head -1` closed the pipe at the first log line and the
  // job died of SIGPIPE mid-run.
  const std::string endpoint = testing::EmulatorEndpoint(testing::Emulator::kPubSub);
  ASSERT_FALSE(endpoint.empty());
  testing::PubSubEmulatorClient client(endpoint);
  const std::string topic = testing::UniqueId("cli-head");
  ASSERT_TRUE(testing::CreateTopicAndSubscription(client, "cli-it", topic, topic + "-sub",
                                                  /*ordering=*/true)
                  .ok());
  const fs::path dir = testing::WriteFlightsFolder("cli-head", testing::Flights(50));
  const std::string command = fmt::format(
      "cd '{}' && FLIGHTS_FILE='{}' FLIGHTS_TOPIC='{}' GCP_PROJECT=cli-it "
      "PUBSUB_EMULATOR_HOST='{}' "
      "CHECKPOINT_DIR='{}' bash -c 'set -o pipefail; timeout 120 \"{}\" run "
      "examples/pipelines/flights-to-pubsub.yaml --restore 2> \"{}\" | head -1 > \"{}\"'",
      GCPSTREAM_SOURCE_DIR, (dir / "flights.json").string(), topic, endpoint,
      (dir / "checkpoints").string(), GCPSTREAM_CLI_PATH, (dir / "err").string(),
      (dir / "out").string());
  const int status = std::system(command.c_str());
  const std::string err = ReadFile(dir / "err");
  ASSERT_TRUE(WIFEXITED(status)) << err;
  EXPECT_EQ(WEXITSTATUS(status), 0) << err;
  EXPECT_EQ(ReadFile(dir / "out").rfind("job ", 0), 0u) << ReadFile(dir / "out");
  auto messages = client.pull(testing::SubscriptionName("cli-it", topic + "-sub"), 50,
                              std::chrono::seconds(30));
  EXPECT_EQ(messages.size(), 50u) << "the run completed";
}

}  // namespace
}  // namespace gcpstream::pipeline
