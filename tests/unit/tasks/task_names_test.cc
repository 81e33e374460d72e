// Cloud Tasks resource names and the sink's hashed task ids.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gcpstream/tasks/admin/resource_names.h"

namespace gcpstream::tasks {
namespace {

using connector::QueueDestination;

TEST(TaskNamesTest, TheTaskIdIsTheLowercaseHexSha256OfTheKey) {
  // FIPS 180-2, appendix B.1: SHA-256("abc").
  EXPECT_EQ(HashedTaskId("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // Any key, sequential or binary, becomes a valid TASK_ID of 64 characters.
  for (std::string key : {std::string("2026-12-01T00:00:00Z#1"), std::string("\xff\x00/x", 4),
                          std::string(10000, 'k')}) {
    const std::string id = HashedTaskId(key);
    EXPECT_EQ(id.size(), 64u);
    EXPECT_TRUE(ValidateTaskId(id).ok()) << id;
  }
}

TEST(TaskNamesTest, TheSameKeyNamesTheSameTaskPerQueueAndDifferentTasksAcrossQueues) {
  const auto a = QueueDestination::of("p", "us-central1", "a");
  const auto b = QueueDestination::of("p", "us-central1", "b");
  EXPECT_EQ(TaskName(a, "order-1"), TaskName(a, "order-1"));
  EXPECT_NE(TaskName(a, "order-1"), TaskName(a, "order-2"));
  EXPECT_NE(TaskName(a, "order-1"), TaskName(b, "order-1"));
  EXPECT_EQ(TaskName(a, "abc"),
            "projects/p/locations/us-central1/queues/a/tasks/"
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// The v2 reference, "projects.locations.queues": QUEUE_ID is letters, digits and hyphens, at
// most 100 characters; PROJECT_ID also allows ':' and '.'.
TEST(TaskNamesTest, QueueDestinationsFollowTheDocumentedIdRules) {
  EXPECT_TRUE(
      ValidateQueueDestination(QueueDestination::of("example.com:p-1", "europe-west1", "Orders-2"))
          .ok());
  EXPECT_TRUE(ValidateQueueDestination(QueueDestination::of("p", "l", std::string(100, 'q'))).ok());
  for (const auto& bad :
       {QueueDestination::of("", "l", "q"), QueueDestination::of("p", "", "q"),
        QueueDestination::of("p", "l", ""), QueueDestination::of("p", "l", "q_1"),
        QueueDestination::of("p", "l", std::string(101, 'q')),
        QueueDestination::of("p/x", "l", "q"), QueueDestination::of("p", "l", "q\xc3\xa9")}) {
    absl::Status s = ValidateQueueDestination(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad.resource_name();
  }
  EXPECT_THAT(
      std::string(ValidateQueueDestination(QueueDestination::of("p", "l", "q_1")).message()),
      ::testing::HasSubstr("queue id 'q_1'"));
}

TEST(TaskNamesTest, TaskIdsAreLettersDigitsHyphensAndUnderscoresUpTo500) {
  EXPECT_TRUE(ValidateTaskId("a-B_9").ok());
  EXPECT_TRUE(ValidateTaskId(std::string(500, 'x')).ok());
  EXPECT_FALSE(ValidateTaskId("").ok());
  EXPECT_FALSE(ValidateTaskId(std::string(501, 'x')).ok());
  EXPECT_FALSE(ValidateTaskId("a.b").ok());
  EXPECT_FALSE(ValidateTaskId("a/b").ok());
}

TEST(TaskNamesTest, NamesParseIntoTheirParts) {
  auto q = ParseQueueName("projects/p/locations/l/queues/q");
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(*q, QueueDestination::of("p", "l", "q"));
  EXPECT_FALSE(ParseQueueName("projects/p/locations/l/queues").ok());
  EXPECT_FALSE(ParseQueueName("projects/p/locations/l/topics/q").ok());
  EXPECT_FALSE(ParseQueueName("projects/p/locations/l/queues/q/tasks/t").ok());
  auto t = SplitTaskName("projects/p/locations/l/queues/q/tasks/t-1");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->queue, "projects/p/locations/l/queues/q");
  EXPECT_EQ(t->id, "t-1");
  EXPECT_FALSE(SplitTaskName("projects/p/locations/l/queues/q/tasks/").ok());
  EXPECT_FALSE(SplitTaskName("projects/p/locations/l/queues/q").ok());
}

}  // namespace
}  // namespace gcpstream::tasks
