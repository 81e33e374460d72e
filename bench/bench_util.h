#ifndef GCPSTREAM_BENCH_BENCH_UTIL_H_
#define GCPSTREAM_BENCH_BENCH_UTIL_H_

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace gcpstream::bench {

// Wall and CPU (user+sys of this process) time of one run.
struct Measurement {
  double wall_s = 0;
  double cpu_s = 0;
};

inline double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto sec = [](const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; };
  return sec(usage.ru_utime) + sec(usage.ru_stime);
}

inline Measurement Measure(const std::function<void()>& fn) {
  const double cpu0 = CpuSeconds();
  const auto wall0 = std::chrono::steady_clock::now();
  fn();
  Measurement m;
  m.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  m.cpu_s = CpuSeconds() - cpu0;
  return m;
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// (max - min) / median: the spread reported next to every median.
inline double Spread(const std::vector<double>& v) {
  if (v.empty()) return 0;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  const double med = Median(v);
  return med == 0 ? 0 : (*hi - *lo) / med;
}

// Interleaved repetitions of a baseline and a candidate reading the same `n` records: each one's
// rate (records/s) and CPU-s per 100k records, per repetition.
struct Comparison {
  std::vector<double> base_rate, base_cpu, rate, cpu;
};
inline Comparison Interleave(int repetitions, double n, const std::function<Measurement()>& base,
                             const std::function<Measurement()>& candidate) {
  Comparison c;
  for (int r = 0; r < repetitions; ++r) {
    const Measurement b = base();
    c.base_rate.push_back(n / b.wall_s);
    c.base_cpu.push_back(b.cpu_s * 100000.0 / n);
    const Measurement m = candidate();
    c.rate.push_back(n / m.wall_s);
    c.cpu.push_back(m.cpu_s * 100000.0 / n);
  }
  return c;
}

// One table row: the label, the medians of rate and CPU, and their spreads.
inline void PrintRow(const char* label, const std::vector<double>& rate,
                     const std::vector<double>& cpu, int label_width = 38) {
  std::printf("%-*s %12.0f %24.3f   (spread %.0f%% / %.0f%%)\n", label_width, label, Median(rate),
              Median(cpu), 100 * Spread(rate), 100 * Spread(cpu));
}

// The one machine-readable line scripts/bench.sh reads from a `--only` run: the measured
// window's records, wall and CPU seconds, and the process's peak RSS so far.
inline void PrintResult(const char* bench, const char* client, std::int64_t records,
                        const Measurement& m) {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("RESULT bench=%s client=%s records=%lld seconds=%.4f cpu_s=%.4f peak_rss_kb=%ld\n",
              bench, client, static_cast<long long>(records), m.wall_s, m.cpu_s,
              static_cast<long>(usage.ru_maxrss));
  std::fflush(stdout);
}

}  // namespace gcpstream::bench

#endif  // GCPSTREAM_BENCH_BENCH_UTIL_H_
