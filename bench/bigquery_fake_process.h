#ifndef GCPSTREAM_BENCH_BIGQUERY_FAKE_PROCESS_H_
#define GCPSTREAM_BENCH_BIGQUERY_FAKE_PROCESS_H_

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace gcpstream::bench {

// The in-repo BigQuery fake (build/tests/bigquery_fake) as a child process, so a benchmark
// measures only the client's CPU. Started with dataset bench:bench and Cloud Storage bucket
// bench-staging; exits the benchmark when the fake does not come up.
struct BigQueryFakeProcess {
  pid_t pid = 0;
  std::string grpc;  // host:port
  std::string rest;  // http://host:port

  static BigQueryFakeProcess Start(const char* path) {
    int out[2];
    if (pipe(out) != 0) std::exit(1);
    const pid_t pid = fork();
    if (pid == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      execl(path, path, "--grpc-port", "0", "--rest-port", "0", "--dataset", "bench:bench",
            "--bucket", "bench-staging", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    FILE* in = fdopen(out[0], "r");
    char grpc[128] = {}, rest[128] = {};
    if (in == nullptr || std::fscanf(in, "bigquery_fake grpc %127s rest %127s", grpc, rest) != 2) {
      std::fprintf(stderr, "the BigQuery fake (%s) did not start\n", path);
      std::exit(1);
    }
    return {pid, grpc, rest};
  }

  void Stop() const {
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
  }
};

}  // namespace gcpstream::bench

#endif  // GCPSTREAM_BENCH_BIGQUERY_FAKE_PROCESS_H_
