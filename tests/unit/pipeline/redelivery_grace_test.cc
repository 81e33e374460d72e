// How long a recovery run waits before counting idleness after a crash (--stop-when-idle).
#include "gcpstream/pipeline/redelivery_grace.h"

#include <gtest/gtest.h>

namespace gcpstream::pipeline {
namespace {

using std::chrono::seconds;

PipelineSpec WithPubSub(const PubSubSourceSpec::SubscriberOptions& options) {
  PipelineSpec spec;
  PubSubSourceSpec source;
  source.subscriber_options = options;
  spec.source = source;
  return spec;
}

TEST(RedeliveryGraceTest, AFileSourceHasNothingToWaitFor) {
  PipelineSpec spec;
  spec.source = FileSourceSpec{};
  EXPECT_EQ(RedeliveryGraceAfterCrash(spec).count(), 0);
}

// Google caps an ack deadline (so one extension, and the adaptive rule) at 600 s.
TEST(RedeliveryGraceTest, PubSubDefaultsToTheLongestLeaseGoogleAllows) {
  EXPECT_EQ(RedeliveryGraceAfterCrash(WithPubSub({})), seconds(600));
}

TEST(RedeliveryGraceTest, PubSubFollowsTheExtensionBoundsTheRunCouldHaveUsed) {
  PubSubSourceSpec::SubscriberOptions o;
  o.max_duration_per_ack_extension = seconds(30);
  EXPECT_EQ(RedeliveryGraceAfterCrash(WithPubSub(o)), seconds(30));
  // The subscriber clamps to the larger of the two when min exceeds max.
  o.min_duration_per_ack_extension = seconds(90);
  EXPECT_EQ(RedeliveryGraceAfterCrash(WithPubSub(o)), seconds(90));
  // max_ack_extension_period ends extending, but the last extension still runs in full.
  o.max_ack_extension_period = seconds(20);
  EXPECT_EQ(RedeliveryGraceAfterCrash(WithPubSub(o)), seconds(90));
  // Below the 10 s floor only with min lowered too: a lone max of 5 s still leases for 10 s.
  PubSubSourceSpec::SubscriberOptions floor;
  floor.max_duration_per_ack_extension = seconds(5);
  EXPECT_EQ(RedeliveryGraceAfterCrash(WithPubSub(floor)), seconds(10));
  floor.min_duration_per_ack_extension = seconds(1);
  EXPECT_EQ(RedeliveryGraceAfterCrash(WithPubSub(floor)), seconds(5));
  // A longer subscription deadline the file sets counts too (the emulator applies it).
  PipelineSpec spec = WithPubSub(floor);
  PubSubSourceSpec::Subscription sub;
  sub.create.emplace();
  sub.create->ack_deadline = seconds(60);
  std::get<PubSubSourceSpec>(spec.source).subscriptions.push_back(sub);
  EXPECT_EQ(RedeliveryGraceAfterCrash(spec), seconds(60));
}

}  // namespace
}  // namespace gcpstream::pipeline
