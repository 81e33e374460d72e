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

// numRecordsSend counts what the sink sent, failures and unanswered records included: "out"
// must report only what the service confirmed, not records the failure handler then dropped
// nor those still in flight when a cancelled run ended.
TEST(RunReportTest, OutCountsWhatTheServiceConfirmed) {
  runtime::JobResult result;
  result.job_name = "p";
  result.duration = std::chrono::seconds(10);
  result.metrics = {
      Sample(kSourceNode, "numRecordsOut", 100), Sample(kSinkNode, "numRecordsSend", 95),
      Sample(kSinkNode, "numRecordsSendErrors", 30), Sample(kSinkNode, "recordsRefused", 5),
      Sample(kSinkNode, "recordsDelivered", 60)};  // 10 unanswered
  const std::string summary = FormatSummary(result, {});
  EXPECT_THAT(summary, HasSubstr("out 60, skipped 0, failed 30"));
  EXPECT_THAT(summary, HasSubstr("throughput 10/s in, 6/s out"));
}

// A run stopped by --stop-when-idle spent its last stretch waiting: throughput is over the
// time it was reading, not the whole duration.
TEST(RunReportTest, ThroughputOfARunStoppedWhenIdleLeavesTheIdleTimeOut) {
  runtime::JobResult result;
  result.job_name = "p";
  result.duration = std::chrono::seconds(30);
  result.metrics = {Sample(kSourceNode, "numRecordsOut", 1000),
                    Sample(kSinkNode, "numRecordsSend", 1000),
                    Sample(kSinkNode, "recordsDelivered", 1000)};
  RunObservations run;
  run.idle_before_stop = std::chrono::seconds(20);
  const std::string summary = FormatSummary(result, run);
  EXPECT_THAT(summary, HasSubstr("30.0 s (10.0 s active"));
  EXPECT_THAT(summary, HasSubstr("100/s in, 100/s out"));
  EXPECT_THAT(FormatSummary(result, {}), HasSubstr("throughput 33/s in, 33/s out"));
}

// "errors none" under a failed job read as "nothing went wrong": a failure the sink never counted
// (from the source, or before the sink's first request) must not be summarised that way.
TEST(RunReportTest, AFailedJobWithoutCountedServiceErrorsDoesNotReportNone) {
  runtime::JobResult result;
  result.job_name = "p";
  result.metrics = {Sample(kSourceNode, "numRecordsOut", 3)};
  EXPECT_THAT(FormatSummary(result, {}), HasSubstr("  errors     none\n"));
  result.status = absl::UnavailableError("ReadRows failed");
  const std::string failed = FormatSummary(result, {});
  EXPECT_THAT(failed, HasSubstr("errors     none counted by the sink (the failure is on the "
                                "first line)"));
  EXPECT_THAT(failed, HasSubstr("ReadRows failed"));
  result.metrics.push_back(Sample(kSinkNode, "errorClass.UNAVAILABLE.errors", 2));
  EXPECT_THAT(FormatSummary(result, {}), HasSubstr("errors     UNAVAILABLE 2 (service errors"));
}

}  // namespace
}  // namespace gcpstream::pipeline
