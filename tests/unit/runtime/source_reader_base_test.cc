#include "gcpstream/api/source_reader_base.h"

#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "tests/support/fake_contexts.h"

namespace gcpstream {
namespace {

using namespace std::chrono_literals;
using testing::FakeReaderContext;
using testing::RecordingReaderOutput;
using testing::TestMailbox;

struct TestSplit {
  std::string id;
  int next = 0;
  int count = 0;
  std::string split_id() const { return id; }
};

// A split reader that produces "<split>:<i>" for i in [next, count), `batch` per fetch, one
// split per fetch, and reports the split finished with its last batch.
class ScriptedSplitReader final : public SplitReader<std::string, TestSplit> {
 public:
  explicit ScriptedSplitReader(int batch) : batch_(batch) {}
  absl::StatusOr<RecordsWithSplitIds<std::string>> fetch() override {
    fetches++;
    std::unique_lock lock(mu_);
    if (!error.ok()) return error;
    RecordsWithSplitIds<std::string> out;
    for (auto& [id, split] : splits_) {
      if (paused_.count(id) > 0 || split.next >= split.count) continue;
      for (int i = 0; i < batch_ && split.next < split.count; ++i) {
        out.add(id, id + ":" + std::to_string(split.next++));
      }
      if (split.next >= split.count) out.finish_split(id);
      break;
    }
    if (out.empty()) cv_.wait_for(lock, 20ms, [&] { return woken_; });
    woken_ = false;
    return out;
  }
  absl::Status handle_splits_addition(SplitsAddition<TestSplit> addition) override {
    std::lock_guard lock(mu_);
    for (auto& s : addition.splits) splits_[s.id] = s;
    return absl::OkStatus();
  }
  void wake_up() override {
    std::lock_guard lock(mu_);
    woken_ = true;
    cv_.notify_all();
  }
  absl::Status pause_or_resume_splits(const std::vector<std::string>& pause,
                                      const std::vector<std::string>& resume) override {
    std::lock_guard lock(mu_);
    for (const auto& id : pause) paused_.insert(id);
    for (const auto& id : resume) paused_.erase(id);
    pause_calls++;
    return absl::OkStatus();
  }
  absl::Status close() override {
    closed = true;
    return absl::OkStatus();
  }

  std::atomic<int> fetches{0};
  std::atomic<int> pause_calls{0};
  std::atomic<bool> closed{false};
  absl::Status error;

 private:
  int batch_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ = false;
  std::map<std::string, TestSplit> splits_;
  std::set<std::string> paused_;
};

class Emitter final : public RecordEmitter<std::string, std::string, int> {
 public:
  absl::Status emit_record(std::string element, SourceOutput<std::string>& output,
                           int& next) override {
    ++next;  // progress: elements emitted of this split
    return output.collect(std::move(element));
  }
};

class TestReader final : public SourceReaderBase<std::string, std::string, TestSplit, int> {
 public:
  TestReader(std::unique_ptr<ScriptedSplitReader> split_reader, SourceReaderContext& ctx)
      : SourceReaderBase(std::move(split_reader), std::make_unique<Emitter>(), ctx) {}
  std::vector<std::string> finished;
  std::map<std::string, int> counts;

 protected:
  int initialized_state(const TestSplit& split) override {
    counts[split.id] = split.count;
    return split.next;
  }
  TestSplit to_split_type(const std::string& id, const int& next) override {
    return TestSplit{id, next, counts[id]};
  }
  absl::Status on_split_finished(const std::map<std::string, int>& done) override {
    for (const auto& [id, state] : done) finished.push_back(id);
    return absl::OkStatus();
  }
};

// Polls until `done` or the deadline; fails naming what arrived.
absl::Status PollUntil(TestMailbox& mb, TestReader& reader, RecordingReaderOutput<std::string>& out,
                       const std::function<bool(InputStatus)>& done) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto status = reader.poll_next(out);
    if (!status.ok()) return status.status();
    if (done(*status)) return absl::OkStatus();
    if (*status == InputStatus::kNothingAvailable) {
      (void)mb.executor().yield_until([] { return false; },
                                      std::chrono::steady_clock::now() + 5ms);
    }
  }
  return absl::DeadlineExceededError("deadline passed; emitted " +
                                     std::to_string(out.emitted.size()) + " elements");
}

TEST(SourceReaderBaseTest, EmitsEveryElementPerSplitAndRetiresFinishedSplits) {
  TestMailbox mb;
  FakeReaderContext ctx(mb);
  auto split_reader = std::make_unique<ScriptedSplitReader>(3);
  TestReader reader(std::move(split_reader), ctx);
  ASSERT_TRUE(reader.start().ok());
  ASSERT_TRUE(reader.add_splits({{"a", 0, 5}, {"b", 0, 4}}).ok());
  ASSERT_TRUE(reader.notify_no_more_splits().ok());
  RecordingReaderOutput<std::string> out;
  ASSERT_TRUE(PollUntil(mb, reader, out, [](InputStatus s) {
                return s == InputStatus::kEndOfInput;
              }).ok());
  std::map<std::string, std::vector<std::string>> by_split;
  for (const auto& e : out.emitted) by_split[e.split].push_back(e.value);
  EXPECT_EQ(by_split["a"], (std::vector<std::string>{"a:0", "a:1", "a:2", "a:3", "a:4"}));
  EXPECT_EQ(by_split["b"], (std::vector<std::string>{"b:0", "b:1", "b:2", "b:3"}));
  EXPECT_EQ(reader.finished, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(out.released.size(), 2u);
  ASSERT_TRUE(reader.close().ok());
}

TEST(SourceReaderBaseTest, SnapshotReflectsOnlyWhatWasEmitted) {
  TestMailbox mb;
  FakeReaderContext ctx(mb);
  TestReader reader(std::make_unique<ScriptedSplitReader>(10), ctx);
  ASSERT_TRUE(reader.start().ok());
  ASSERT_TRUE(reader.add_splits({{"a", 0, 10}}).ok());
  RecordingReaderOutput<std::string> out;
  // Emit exactly 4 of the 10 fetched elements.
  ASSERT_TRUE(PollUntil(mb, reader, out, [&](InputStatus) { return out.emitted.size() == 4; })
                  .ok());
  auto snapshot = reader.snapshot_state(1);
  ASSERT_TRUE(snapshot.ok());
  ASSERT_EQ(snapshot->size(), 1u);
  EXPECT_EQ((*snapshot)[0].next, 4) << "the fetched but unemitted tail is not progress";
  ASSERT_TRUE(reader.close().ok());
}

TEST(SourceReaderBaseTest, AFullElementQueueStopsTheFetcher) {
  TestMailbox mb;
  FakeReaderContext ctx(mb);
  ctx.options_.element_queue_capacity = 2;
  auto split_reader = std::make_unique<ScriptedSplitReader>(1);
  ScriptedSplitReader* raw = split_reader.get();
  TestReader reader(std::move(split_reader), ctx);
  ASSERT_TRUE(reader.start().ok());
  ASSERT_TRUE(reader.add_splits({{"a", 0, 1000}}).ok());
  std::this_thread::sleep_for(100ms);
  // Two queued batches plus the one the fetcher holds: the fetcher stops after three fetches.
  EXPECT_EQ(raw->fetches.load(), 3) << "fetch() keeps running while nobody consumes";
  ASSERT_TRUE(reader.close().ok());
  EXPECT_TRUE(raw->closed.load());
}

TEST(SourceReaderBaseTest, AFetchErrorSurfacesAtTheNextPoll) {
  TestMailbox mb;
  FakeReaderContext ctx(mb);
  auto split_reader = std::make_unique<ScriptedSplitReader>(1);
  split_reader->error = absl::PermissionDeniedError("subscription access revoked");
  TestReader reader(std::move(split_reader), ctx);
  ASSERT_TRUE(reader.start().ok());
  ASSERT_TRUE(reader.add_splits({{"a", 0, 1}}).ok());
  RecordingReaderOutput<std::string> out;
  absl::Status s = PollUntil(mb, reader, out, [](InputStatus) { return false; });
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  ASSERT_TRUE(reader.close().ok());
}

TEST(SourceReaderBaseTest, PauseAndResumeReachTheSplitReader) {
  TestMailbox mb;
  FakeReaderContext ctx(mb);
  auto split_reader = std::make_unique<ScriptedSplitReader>(1);
  ScriptedSplitReader* raw = split_reader.get();
  TestReader reader(std::move(split_reader), ctx);
  ASSERT_TRUE(reader.start().ok());
  ASSERT_TRUE(reader.pause_or_resume_splits({"a"}, {}).ok());
  ASSERT_TRUE(reader.add_splits({{"a", 0, 3}}).ok());
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (raw->pause_calls.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(raw->pause_calls.load(), 1);
  RecordingReaderOutput<std::string> out;
  std::this_thread::sleep_for(50ms);
  auto polled = reader.poll_next(out);
  ASSERT_TRUE(polled.ok());
  EXPECT_TRUE(out.emitted.empty()) << "a paused split produced " << out.emitted.size();
  ASSERT_TRUE(reader.pause_or_resume_splits({}, {"a"}).ok());
  ASSERT_TRUE(PollUntil(mb, reader, out, [&](InputStatus) { return out.emitted.size() == 3; })
                  .ok());
  ASSERT_TRUE(reader.close().ok());
}

}  // namespace
}  // namespace gcpstream
