// The gcpstream command line: runs and describes declarative pipelines (docs/cli.md).
//
//   gcpstream run PIPELINE.yaml [--parallelism N] [--checkpoint-dir DIR]
//                 [--checkpoint-interval D] [--restore] [--metrics-port P] [--stop-when-idle D]
//                 [--ui-port P [--ui-bind ADDRESS]]
//   gcpstream describe PIPELINE.yaml
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <csignal>

#include "tools/gcpstream/run_command.h"

int main(int argc, char** argv) {
  CLI::App app{"gcpstream: run declarative streaming pipelines between Google Cloud services"};
  app.require_subcommand(1);

  gcpstream::cli::RunFlags run;
  auto* run_cmd =
      app.add_subcommand("run", "run a pipeline (SIGTERM: stop with a savepoint; SIGINT: cancel)");
  run_cmd->add_option("pipeline", run.pipeline_file, "the pipeline YAML file")->required();
  run_cmd
      ->add_option("--parallelism", run.parallelism, "subtasks per operator (overrides the file)")
      ->check(CLI::Range(1, 1024));
  run_cmd->add_option("--checkpoint-dir", run.checkpoint_dir,
                      "where checkpoints are written (overrides checkpointing.dir)");
  run_cmd->add_option("--checkpoint-interval", run.checkpoint_interval,
                      "e.g. 1s, 500ms (overrides checkpointing.interval)");
  run_cmd->add_flag("--restore", run.restore,
                    "continue from the latest checkpoint or savepoint in the checkpoint dir");
  run_cmd
      ->add_option("--metrics-port", run.metrics_port,
                   "serve Prometheus metrics on 127.0.0.1 at this port (0: any free port)")
      ->check(CLI::Range(0, 65535));
  run_cmd
      ->add_option("--ui-port", run.ui_port,
                   "serve the live dashboard and its REST API at http://127.0.0.1:P/ "
                   "(0: any free port; the URL is logged)")
      ->check(CLI::Range(0, 65535));
  run_cmd->add_option("--ui-bind", run.ui_bind,
                      "address the dashboard binds (default 127.0.0.1; 0.0.0.0 exposes it to "
                      "the network: it has no authentication)");
  run_cmd->add_option("--ui-assets", run.ui_assets,
                      "folder with the dashboard's page (default: the build's web/ folder)");
  run_cmd->add_option("--stop-when-idle", run.stop_when_idle,
                      "stop with a savepoint once the source emitted nothing for this long");
  run_cmd->add_option("--savepoint-dir", run.savepoint_dir,
                      "where SIGTERM/idle savepoints go (default: <checkpoint-dir>/savepoints)");
  run_cmd->add_flag("--allow-non-restored-state", run.allow_non_restored_state,
                    "with --restore: restore a checkpoint of a changed pipeline; operators whose "
                    "source or sink changed start without state");
  run_cmd->add_flag("--restore-fallback", run.restore_fallback,
                    "with --restore: when the newest checkpoint or savepoint is damaged, continue "
                    "from the newest one that reads correctly (records after it may be written "
                    "again)");

  std::string describe_file;
  auto* describe_cmd = app.add_subcommand(
      "describe", "print the plan, every option with its default, and the lineage");
  describe_cmd->add_option("pipeline", describe_file, "the pipeline YAML file")->required();

  // Logs go to stderr, so that stdout carries only the run's summary (`| head` and pipes see
  // the summary, never a log line, and closing the pipe early cannot kill the job).
  spdlog::set_default_logger(spdlog::stderr_color_mt("gcpstream"));
  std::signal(SIGPIPE, SIG_IGN);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2, whatever CLI11's own code.
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (*run_cmd) return gcpstream::cli::Run(run);
  return gcpstream::cli::Describe(describe_file);
}
