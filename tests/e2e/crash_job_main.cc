// The job the crash tests kill and restore: a deterministic, replayable sequence source with
// checkpointed offsets -> a key_by -> a file sink, at-least-once (`--sink=alo`) or two-phase
// commit (`--sink=2pc`). It writes <out>/DONE when it finishes.
//
//   crash_job --sink=2pc --out DIR --checkpoints DIR [--restore] [--records N]
//             [--parallelism P] [--interval-ms I] [--commit-delay-ms D]
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/checkpoint_storage.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "tests/e2e/file_sinks.h"

int main(int argc, char** argv) {
  CLI::App app{"gcpstream crash-test job"};
  std::string sink_kind = "2pc";
  std::string out;
  std::string checkpoints;
  bool restore = false;
  std::int64_t records = 200000;
  int parallelism = 2;
  int interval_ms = 50;
  int commit_delay_ms = 0;
  app.add_option("--sink", sink_kind)->check(CLI::IsMember({"alo", "2pc"}));
  app.add_option("--out", out)->required();
  app.add_option("--checkpoints", checkpoints)->required();
  app.add_flag("--restore", restore);
  app.add_option("--records", records);
  app.add_option("--parallelism", parallelism);
  app.add_option("--interval-ms", interval_ms);
  app.add_option("--commit-delay-ms", commit_delay_ms);
  CLI11_PARSE(app, argc, argv);

  gcpstream::StreamExecutionEnvironment env;
  env.set_parallelism(parallelism);
  env.enable_checkpointing(std::chrono::milliseconds(interval_ms));
  env.config().checkpointing.directory = checkpoints;
  if (restore) {
    // The first run of a cycle has nothing to restore yet.
    if (gcpstream::runtime::CheckpointStorage::find_latest(checkpoints).ok()) {
      env.config().restore_from = checkpoints;
    }
  }
  auto stream =
      env.from_source(
             std::make_shared<gcpstream::NumberSequenceSource>(0, records - 1, parallelism * 4),
             gcpstream::WatermarkStrategy<std::int64_t>::no_watermarks(), "sequence")
          .uid("sequence")
          .map(
              [](std::int64_t v) {
                // About 10 s of input at parallelism 2 and 400,000 records, so every kill lands
                // mid-stream.
                if (v % 40 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
                return v;
              },
              "pace")
          .uid("pace")
          .key_by([](const std::int64_t& v) { return v % 17; })
          .map([](std::int64_t v) { return v; }, "keyed")
          .uid("keyed");
  if (sink_kind == "alo") {
    stream.sink_to(std::make_shared<gcpstream::e2e::AppendFileSink>(out), "alo-file");
  } else {
    stream.sink_to(std::make_shared<gcpstream::e2e::RenameFileSink>(
                       out, std::chrono::milliseconds(commit_delay_ms)),
                   "2pc-file");
  }
  env.node(env.graph().nodes.size() - 1).uid = "sink";
  auto result = env.execute("crash-job");
  if (!result.status.ok()) {
    std::fprintf(stderr, "crash job failed: %s\n", result.status.ToString().c_str());
    return 1;
  }
  std::ofstream(out + "/DONE") << result.last_completed_checkpoint.value_or(0) << "\n";
  return 0;
}
