// The gcpstream command line: runs and describes declarative pipelines (docs/cli.md).
//
//   gcpstream run PIPELINE.yaml [--parallelism N] [--checkpoint-dir DIR]
//                 [--checkpoint-interval D] [--restore] [--metrics-port P] [--stop-when-idle D]
//   gcpstream describe PIPELINE.yaml
#include <CLI/CLI.hpp>

#include "tools/gcpstream/run_command.h"

int main(int argc, char** argv) {
  CLI::App app{"gcpstream: run declarative streaming pipelines between Google Cloud services"};
  app.require_subcommand(1);

  gcpstream::cli::RunFlags run;
  auto* run_cmd =
      app.add_subcommand("run", "run a pipeline (SIGTERM: stop with a savepoint; SIGINT: cancel)");
  run_cmd->add_option("pipeline", run.pipeline_file, "the pipeline YAML file")->required();
  run_cmd->add_option("--parallelism", run.parallelism,
                      "subtasks per operator (overrides the file)");
  run_cmd->add_option("--checkpoint-dir", run.checkpoint_dir,
                      "where checkpoints are written (overrides checkpointing.dir)");
  run_cmd->add_option("--checkpoint-interval", run.checkpoint_interval,
                      "e.g. 1s, 500ms (overrides checkpointing.interval)");
  run_cmd->add_flag("--restore", run.restore,
                    "continue from the latest checkpoint or savepoint in the checkpoint dir");
  run_cmd->add_option("--metrics-port", run.metrics_port, "serve Prometheus metrics on this port");
  run_cmd->add_option("--stop-when-idle", run.stop_when_idle,
                      "stop with a savepoint once the source emitted nothing for this long");
  run_cmd->add_option("--savepoint-dir", run.savepoint_dir,
                      "where SIGTERM/idle savepoints go (default: <checkpoint-dir>/savepoints)");

  std::string describe_file;
  auto* describe_cmd = app.add_subcommand(
      "describe", "print the plan, every option with its default, and the lineage");
  describe_cmd->add_option("pipeline", describe_file, "the pipeline YAML file")->required();

  CLI11_PARSE(app, argc, argv);
  if (*run_cmd) return gcpstream::cli::Run(run);
  return gcpstream::cli::Describe(describe_file);
}
