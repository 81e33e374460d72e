// The run summary and progress line: what the CLI prints about a finished or running job.
#include "gcpstream/pipeline/run_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gcpstream/pipeline/pipeline_job.h"

namespace gcpstream::pipeline {
namespace {

using ::testing::HasSubstr;

runtime::MetricSample Sample(const std::string& op, const std::string& name, double value) {
  runtime::MetricSample m;
  m.labels["operator"] = op;
  m.name = name;
  m.value = value;
  return m;
}

TEST(RunReportTest, MessagesTheSourceCouldNotDecodeAreCountedInTheSummaryAndTheProgressLine) {
  // 14 messages, 5 of them not decodable and dropped by deserialization_failure_policy DROP:
  // the summary must account for all 14, not report "in 9" as if 5 never existed.
  runtime::JobResult result;
  result.job_name = "p";
  result.metrics = {Sample(kSourceNode, "numRecordsOut", 9),
                    Sample(kSourceNode, "numRecordsInErrors", 5),
                    Sample(kSinkNode, "numRecordsSend", 9)};
  const ProgressSample s = SampleProgress(result.metrics);
  EXPECT_EQ(s.records_in, 9);
  EXPECT_EQ(s.invalid, 5);
  EXPECT_THAT(FormatSummary(result, {}), HasSubstr("in 9, invalid 5,"));
  EXPECT_THAT(FormatProgress(s, {}, std::chrono::seconds(1), {}), HasSubstr("invalid 5"));
  ProgressSample clean;
  EXPECT_THAT(FormatProgress(clean, {}, std::chrono::seconds(1), {}),
              ::testing::Not(HasSubstr("invalid")));
}

// numRecordsSend counts what the sink sent, failures included: "out" must not report records
// the failure handler then dropped as if they were stored.
TEST(RunReportTest, OutCountsStoredRecordsNotFailedOnes) {
  runtime::JobResult result;
  result.job_name = "p";
  result.duration = std::chrono::seconds(10);
  result.metrics = {Sample(kSourceNode, "numRecordsOut", 100),
                    Sample(kSinkNode, "numRecordsSend", 100),
                    Sample(kSinkNode, "numRecordsSendErrors", 30)};
  const std::string summary = FormatSummary(result, {});
  EXPECT_THAT(summary, HasSubstr("out 70, skipped 0, failed 30"));
  EXPECT_THAT(summary, HasSubstr("throughput 10/s in, 7/s out"));
  // Records refused before any RPC were never sent: they are not subtracted from what was.
  result.metrics = {
      Sample(kSourceNode, "numRecordsOut", 100), Sample(kSinkNode, "numRecordsSend", 60),
      Sample(kSinkNode, "numRecordsSendErrors", 45), Sample(kSinkNode, "recordsRefused", 40)};
  EXPECT_THAT(FormatSummary(result, {}), HasSubstr("out 55, skipped 0, failed 45"));
}

// A run stopped by --stop-when-idle spent its last stretch waiting: throughput is over the
// time it was reading, not the whole duration.
TEST(RunReportTest, ThroughputOfARunStoppedWhenIdleLeavesTheIdleTimeOut) {
  runtime::JobResult result;
  result.job_name = "p";
  result.duration = std::chrono::seconds(30);
  result.metrics = {Sample(kSourceNode, "numRecordsOut", 1000),
                    Sample(kSinkNode, "numRecordsSend", 1000)};
  RunObservations run;
  run.idle_before_stop = std::chrono::seconds(20);
  const std::string summary = FormatSummary(result, run);
  EXPECT_THAT(summary, HasSubstr("30.0 s (10.0 s active"));
  EXPECT_THAT(summary, HasSubstr("100/s in, 100/s out"));
  EXPECT_THAT(FormatSummary(result, {}), HasSubstr("throughput 33/s in, 33/s out"));
}

}  // namespace
}  // namespace gcpstream::pipeline
