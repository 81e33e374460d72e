// End-to-end behaviour of the engine on small in-process jobs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>

#include "gcpstream/runtime/builtin/collect_sink.h"
#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/stream_execution_environment.h"

namespace gcpstream {
namespace {

using ::testing::HasSubstr;

TEST(JobTest, ChainedSourceMapSinkDeliversEveryNumberOnce) {
  StreamExecutionEnvironment env;
  env.set_parallelism(2);
  auto sink = std::make_shared<CollectSink<std::int64_t>>();
  env.from_source(std::make_shared<NumberSequenceSource>(1, 10000, 8),
                  WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
      .map([](std::int64_t v) { return v * 2; })
      .sink_to(sink, "collect");
  auto result = env.execute("chained");
  ASSERT_TRUE(result.status.ok()) << result.status;
  auto values = sink->collected()->snapshot();
  std::sort(values.begin(), values.end());
  ASSERT_EQ(values.size(), 10000u);
  for (std::int64_t i = 0; i < 10000; ++i) ASSERT_EQ(values[i], 2 * (i + 1));
  EXPECT_EQ(result.metric("numbers", "numRecordsOut"), 10000);
  EXPECT_EQ(result.metric("collect", "numRecordsIn"), 10000);
}

TEST(JobTest, KeyByRoutesEqualKeysToOneSubtaskAndReduceCounts) {
  StreamExecutionEnvironment env;
  env.set_parallelism(2);
  auto sink = std::make_shared<CollectSink<std::pair<std::int64_t, std::int64_t>>>();
  env.from_source(std::make_shared<NumberSequenceSource>(0, 9999, 4),
                  WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
      .map([](std::int64_t v) { return std::pair<std::int64_t, std::int64_t>{v % 10, 1}; })
      .key_by([](const std::pair<std::int64_t, std::int64_t>& p) { return p.first; })
      .reduce([](const auto& a, const auto& b) {
        return std::pair<std::int64_t, std::int64_t>{a.first, a.second + b.second};
      })
      .set_parallelism(3)
      .sink_to(sink, "counts");
  auto result = env.execute("keyed");
  ASSERT_TRUE(result.status.ok()) << result.status;
  std::map<std::int64_t, std::int64_t> final_counts;
  for (const auto& [k, c] : sink->collected()->snapshot()) {
    final_counts[k] = std::max(final_counts[k], c);
  }
  ASSERT_EQ(final_counts.size(), 10u);
  for (const auto& [k, c] : final_counts) EXPECT_EQ(c, 1000) << "key " << k;
}

TEST(JobTest, AThrowingSinkFailsTheJobWithItsMessagePromptly) {
  StreamExecutionEnvironment env;
  env.set_parallelism(2);
  auto sink = std::make_shared<ForEachSink<std::int64_t>>([](const std::int64_t& v) {
    if (v == 500) throw std::runtime_error("bad record 500");
  });
  env.from_source(std::make_shared<NumberSequenceSource>(1, 100000000, 8),
                  WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
      .rebalance()
      .sink_to(sink, "boom");
  const auto start = std::chrono::steady_clock::now();
  auto result = env.execute("failing");
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(result.status.ok());
  EXPECT_THAT(std::string(result.status.message()), HasSubstr("bad record 500"));
  EXPECT_LT(took, std::chrono::seconds(1)) << "the job must stop promptly after a failure";
}

}  // namespace
}  // namespace gcpstream
