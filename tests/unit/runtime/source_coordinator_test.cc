#include "gcpstream/runtime/source_coordinator.h"

#include <gtest/gtest.h>

#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/metric_registry.h"

namespace gcpstream::runtime {
namespace {

class RecordingGateway final : public ReaderGateway<NumberSequenceSplit> {
 public:
  void deliver_splits(std::vector<NumberSequenceSplit> splits) override {
    for (auto& s : splits) received.push_back(s.id);
  }
  void deliver_no_more_splits() override { no_more = true; }
  void deliver_event(std::shared_ptr<const SourceEvent>) override {}
  std::vector<std::string> received;
  bool no_more = false;
};

class SourceCoordinatorTest : public ::testing::Test {
 protected:
  SourceCoordinatorTest() {
    services_.job_name = "t";
    services_.coordinator = &executor_;
    services_.fail_job = [this](absl::Status s) { failures_.push_back(std::move(s)); };
    coordinator_ = std::make_unique<
        SourceCoordinator<std::int64_t, NumberSequenceSplit, NumberSequenceSource::EnumState>>(
        "numbers", "uid", std::make_shared<NumberSequenceSource>(0, 99, 3), 2, services_,
        registry_.group({{"t", "c"}}));
    EXPECT_TRUE(coordinator_->start(nullptr).ok());
    coordinator_->register_reader(0, reader0_);
    coordinator_->register_reader(1, reader1_);
  }

  CoordinatorExecutor executor_;
  JobServices services_;
  MetricRegistry registry_;
  std::vector<absl::Status> failures_;
  std::shared_ptr<RecordingGateway> reader0_ = std::make_shared<RecordingGateway>();
  std::shared_ptr<RecordingGateway> reader1_ = std::make_shared<RecordingGateway>();
  std::unique_ptr<
      SourceCoordinator<std::int64_t, NumberSequenceSplit, NumberSequenceSource::EnumState>>
      coordinator_;
};

TEST_F(SourceCoordinatorTest, SplitRequestsAreAnsweredUntilNoneIsLeft) {
  coordinator_->handle_split_request(0);
  coordinator_->handle_split_request(1);
  coordinator_->handle_split_request(0);
  coordinator_->handle_split_request(1);
  EXPECT_EQ(reader0_->received, (std::vector<std::string>{"0", "2"}));
  EXPECT_EQ(reader1_->received, (std::vector<std::string>{"1"}));
  EXPECT_TRUE(reader1_->no_more);
  EXPECT_FALSE(reader0_->no_more);
  EXPECT_TRUE(failures_.empty());
}

TEST_F(SourceCoordinatorTest, AFailedReaderReturnsSplitsNotCoveredByACompletedCheckpoint) {
  coordinator_->handle_split_request(0);  // split 0, then covered by checkpoint 1
  OperatorStateWriter state;
  ASSERT_TRUE(coordinator_->snapshot(1, state).ok());
  coordinator_->notify_checkpoint_complete(1);
  coordinator_->handle_split_request(0);  // split 1: after the completed checkpoint
  coordinator_->subtask_failed(0);
  // Only split 1 goes back to the enumerator; reader 1 receives it on request.
  coordinator_->handle_split_request(1);
  coordinator_->handle_split_request(1);
  EXPECT_EQ(reader1_->received, (std::vector<std::string>{"2", "1"}));
  EXPECT_TRUE(failures_.empty());
}

TEST_F(SourceCoordinatorTest, AssigningToAnUnregisteredReaderFailsTheJob) {
  coordinator_->unregister_reader(1);
  coordinator_->assign_split(1, NumberSequenceSplit{"x", 0, 1});
  ASSERT_EQ(failures_.size(), 1u);
  EXPECT_EQ(failures_[0].code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(SourceCoordinatorTest, EnumeratorStateRoundTripsThroughACheckpoint) {
  coordinator_->handle_split_request(0);
  OperatorStateWriter state;
  ASSERT_TRUE(coordinator_->snapshot(7, state).ok());
  coordinator_->close();
  auto restored = std::make_unique<
      SourceCoordinator<std::int64_t, NumberSequenceSplit, NumberSequenceSource::EnumState>>(
      "numbers", "uid", std::make_shared<NumberSequenceSource>(0, 99, 3), 2, services_,
      registry_.group({{"t", "c2"}}));
  OperatorStateReader reader(state.lists());
  ASSERT_TRUE(restored->start(&reader).ok());
  auto gateway = std::make_shared<RecordingGateway>();
  restored->register_reader(0, gateway);
  restored->handle_split_request(0);
  restored->handle_split_request(0);
  restored->handle_split_request(0);
  EXPECT_EQ(gateway->received, (std::vector<std::string>{"1", "2"}));
  EXPECT_TRUE(gateway->no_more);
}

}  // namespace
}  // namespace gcpstream::runtime
