#ifndef GCPSTREAM_TOOLS_GCPSTREAM_RUN_COMMAND_H_
#define GCPSTREAM_TOOLS_GCPSTREAM_RUN_COMMAND_H_

#include <chrono>
#include <optional>
#include <string>

namespace gcpstream::cli {

struct RunFlags {
  std::string pipeline_file;
  std::optional<int> parallelism;
  std::optional<std::string> checkpoint_dir;
  std::optional<std::string> checkpoint_interval;  // duration text
  bool restore = false;
  std::optional<int> metrics_port;
  std::optional<int> ui_port;
  std::optional<std::string> ui_bind;         // with ui_port only
  std::optional<std::string> ui_assets;       // with ui_port only
  std::optional<std::string> stop_when_idle;  // duration text
  std::optional<std::string> savepoint_dir;
  bool allow_non_restored_state = false;
  bool restore_fallback = false;
};

// `gcpstream run`: assembles the pipeline, runs it with live progress, handles SIGTERM (stop
// with a savepoint) and SIGINT (cancel), and prints the summary. Returns the exit code:
// 0 finished (or stopped with a savepoint), 1 failed, 2 bad input, 130 cancelled by SIGINT,
// 143 cancelled by a second SIGTERM.
int Run(const RunFlags& flags);

// `gcpstream describe`: 0, or 2 with the error on stderr.
int Describe(const std::string& pipeline_file);

}  // namespace gcpstream::cli

#endif  // GCPSTREAM_TOOLS_GCPSTREAM_RUN_COMMAND_H_
