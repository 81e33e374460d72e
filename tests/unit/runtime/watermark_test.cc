// Watermark generation at sources and propagation through exchanges, in real jobs.
#include <gtest/gtest.h>

#include <mutex>

#include "gcpstream/runtime/alignment_coordinator.h"
#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/stream_execution_environment.h"

namespace gcpstream {
namespace {

using namespace std::chrono_literals;

// Records (value, timestamp, watermark seen with it) for every element.
struct Seen {
  std::int64_t value;
  std::int64_t timestamp;
  std::int64_t watermark;
};

class WatermarkRecordingSink final : public Sink<std::int64_t> {
 public:
  struct Shared {
    std::mutex mu;
    std::vector<Seen> seen;
  };
  std::shared_ptr<Shared> shared = std::make_shared<Shared>();

  absl::StatusOr<std::unique_ptr<SinkWriter<std::int64_t>>> create_writer(
      WriterInitContext&) const override {
    class Writer final : public SinkWriter<std::int64_t> {
     public:
      explicit Writer(std::shared_ptr<Shared> s) : s_(std::move(s)) {}
      absl::Status write(const std::int64_t& v, const SinkWriterContext& ctx) override {
        std::lock_guard lock(s_->mu);
        s_->seen.push_back({v, ctx.timestamp_ms, ctx.current_watermark_ms});
        return absl::OkStatus();
      }
      absl::Status flush(bool) override { return absl::OkStatus(); }
      absl::Status close() override { return absl::OkStatus(); }

     private:
      std::shared_ptr<Shared> s_;
    };
    return std::unique_ptr<SinkWriter<std::int64_t>>(new Writer(shared));
  }
};

TEST(WatermarkTest, WatermarksAdvanceThroughAnExchangeAndNeverOvertakeRecords) {
  StreamExecutionEnvironment env;
  env.set_parallelism(2);
  env.config().auto_watermark_interval = 1ms;
  auto sink = std::make_shared<WatermarkRecordingSink>();
  env.from_source(std::make_shared<NumberSequenceSource>(0, 199999, 4),
                  WatermarkStrategy<std::int64_t>::for_monotonous_timestamps()
                      .with_timestamp_assigner([](const std::int64_t& v, std::int64_t) {
                        return 1'000'000 + v;
                      }),
                  "numbers")
      .key_by([](const std::int64_t& v) { return v % 7; })
      .map([](std::int64_t v) { return v; })
      .sink_to(sink, "watermarks");
  auto result = env.execute("watermarks");
  ASSERT_TRUE(result.status.ok()) << result.status;
  std::lock_guard lock(sink->shared->mu);
  ASSERT_EQ(sink->shared->seen.size(), 200000u);
  std::int64_t max_watermark = kMinWatermark;
  for (const auto& s : sink->shared->seen) {
    EXPECT_EQ(s.timestamp, 1'000'000 + s.value) << "the assigner's timestamp travels along";
    ASSERT_LT(s.watermark, s.timestamp) << "a watermark overtook record " << s.value;
    max_watermark = std::max(max_watermark, s.watermark);
  }
  EXPECT_GT(max_watermark, 1'000'000) << "no watermark reached the sink";
}

TEST(AlignmentCoordinatorTest, AnnouncesTheGroupMinimumPlusTheDriftAndIgnoresIdleReaders) {
  runtime::CoordinatorExecutor executor;
  runtime::TimerThread timers;
  std::mutex mu;
  std::map<std::string, std::int64_t> announced;
  std::unique_ptr<runtime::AlignmentCoordinator> alignment;
  std::atomic<int> rounds{0};
  executor.execute([&] {
    alignment = std::make_unique<runtime::AlignmentCoordinator>(&executor, &timers);
    for (const char* id : {"a", "b", "c"}) {
      alignment->register_reader("g", 100ms, 5ms, id, [&, id = std::string(id)](std::int64_t m) {
        std::lock_guard lock(mu);
        announced[id] = m;
        if (id == "c") rounds++;
      });
    }
    alignment->report("g", "a", 1000);
    alignment->report("g", "b", 5000);
    alignment->report("g", "c", kMaxWatermark);  // idle
  });
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (rounds.load() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(announced.size(), 3u) << "no announcement within 5 s";
    EXPECT_EQ(announced["a"], 1100);
    EXPECT_EQ(announced["b"], 1100);
  }
  std::atomic<bool> destroyed{false};
  executor.execute([&] {
    alignment.reset();
    destroyed = true;
  });
  while (!destroyed.load()) std::this_thread::sleep_for(1ms);
}

}  // namespace
}  // namespace gcpstream
