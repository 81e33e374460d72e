#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "gcpstream/runtime/metric_registry.h"
#include "gcpstream/runtime/prometheus_reporter.h"

namespace gcpstream::runtime {
namespace {

using ::testing::HasSubstr;

TEST(MetricRegistryTest, ExposesCountersGaugesAndNestedGroupsInPrometheusFormat) {
  MetricRegistry registry;
  auto& group = registry.group({{"job", "j"}, {"operator", "Sink: t"}, {"subtask", "0"}});
  group.counter("numRecordsSend").inc(41);
  group.counter("numRecordsSend").inc();  // same counter
  group.gauge("inFlightEntries", [] { return 7.0; });
  group.add_group("errorClass").add_group("NOT_FOUND").counter("errors").inc(2);
  const std::string text = ToPrometheusText(registry.snapshot());
  EXPECT_THAT(text, HasSubstr("# TYPE gcpstream_numRecordsSend counter"));
  EXPECT_THAT(
      text, HasSubstr("gcpstream_numRecordsSend{job=\"j\",operator=\"Sink: t\",subtask=\"0\"} 42"));
  EXPECT_THAT(text, HasSubstr("gcpstream_inFlightEntries{job=\"j\",operator=\"Sink: t\","
                              "subtask=\"0\"} 7"));
  EXPECT_THAT(text, HasSubstr("gcpstream_errorClass_NOT_FOUND_errors{"));
}

TEST(MetricRegistryTest, FreezingAGroupKeepsTheLastGaugeValue) {
  MetricRegistry registry;
  auto& group = registry.group({{"job", "j"}});
  auto value = std::make_shared<double>(3);
  group.gauge("g", [value] { return *value; });
  registry.freeze(group);
  *value = 99;
  const auto samples = registry.snapshot();
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].value, 3);
}

// A restart reuses the job's registry: the new attempt's gauge must replace the value frozen
// when the previous attempt closed, while a second live registration still loses to the first.
TEST(MetricRegistryTest, ANewAttemptsGaugeReplacesAFrozenOneButNotALiveOne) {
  MetricRegistry registry;
  auto& group = registry.group({{"job", "j"}});
  group.gauge("g", [] { return 1.0; });
  group.gauge("g", [] { return 2.0; });  // a duplicate while the first is live: ignored
  ASSERT_EQ(registry.snapshot().size(), 1u);
  EXPECT_EQ(registry.snapshot()[0].value, 1);
  registry.freeze(group);
  group.gauge("g", [] { return 3.0; });  // the next attempt
  ASSERT_EQ(registry.snapshot().size(), 1u);
  EXPECT_EQ(registry.snapshot()[0].value, 3);
  group.gauge("g", [] { return 4.0; });  // live again: the first registration stays
  EXPECT_EQ(registry.snapshot()[0].value, 3);
}

TEST(PrometheusReporterTest, ServesTheRegistryOverHttp) {
  MetricRegistry registry;
  registry.group({{"job", "j"}}).counter("numRecordsIn").inc(5);
  auto reporter = PrometheusReporter::start(registry, 0, "127.0.0.1");
  ASSERT_TRUE(reporter.ok()) << reporter.status();
  httplib::Client client("127.0.0.1", (*reporter)->port());
  auto response = client.Get("/metrics");
  ASSERT_TRUE(response) << "no HTTP response";
  EXPECT_EQ(response->status, 200);
  EXPECT_THAT(response->body, HasSubstr("gcpstream_numRecordsIn{job=\"j\"} 5"));
}

TEST(MetricRegistryTest, JsonSnapshotListsEveryMetric) {
  MetricRegistry registry;
  registry.group({{"job", "j"}}).counter("numRecordsOut").inc(3);
  EXPECT_THAT(ToJson(registry.snapshot()), HasSubstr("\"numRecordsOut\""));
}

}  // namespace
}  // namespace gcpstream::runtime
