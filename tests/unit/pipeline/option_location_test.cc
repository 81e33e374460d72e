// Which line of the pipeline file an error raised after parsing points at.
#include "gcpstream/pipeline/option_location.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gcpstream::pipeline {
namespace {

OptionRecord Set(std::string path, std::string location) {
  OptionRecord r;
  r.path = std::move(path);
  r.set = true;
  r.location = std::move(location);
  return r;
}

const std::vector<OptionRecord> kOptions = {
    Set("source.subscriptions[0].subscription", "p.yaml:5:21"),
    Set("source.deserialization_failure_policy", "p.yaml:9:35"),
    Set("source.subscriber_options.shutdown_timeout", "p.yaml:11:23"),
    Set("sink.publisher_options.shutdown_timeout", "p.yaml:20:23"),
    OptionRecord{"sink.publisher_options.max_in_flight_messages", "1000", "1000", false, ""},
};

TEST(LocateOptionErrorTest, AnOptionNameWinsOverAResourceWordNamedEarlier) {
  const absl::Status s = LocateOptionError(
      kOptions, absl::FailedPreconditionError(
                    "subscription projects/p/subscriptions/s: deserialization_failure_policy "
                    "NACK needs a dead-letter policy"));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()),
              ::testing::StartsWith("p.yaml:9:35: source.deserialization_failure_policy: "
                                    "subscription projects/p/subscriptions/s:"));
}

TEST(LocateOptionErrorTest, TheSectionPrefixPicksAmongKeysSharedBySections) {
  const absl::Status s = LocateOptionError(
      kOptions, absl::InvalidArgumentError("sink: shutdown_timeout must be positive"));
  EXPECT_EQ(std::string(s.message()),
            "p.yaml:20:23: sink.publisher_options.shutdown_timeout: shutdown_timeout must be "
            "positive");
}

TEST(LocateOptionErrorTest, OptionsTheFileDidNotSetAndPartialWordsAreNotLocations) {
  const absl::Status unset = absl::InvalidArgumentError("sink: max_in_flight_messages too low");
  EXPECT_EQ(LocateOptionError(kOptions, unset), unset);
  const absl::Status partial = absl::InvalidArgumentError("sink: my_shutdown_timeouts");
  EXPECT_EQ(LocateOptionError(kOptions, partial), partial);
}

}  // namespace
}  // namespace gcpstream::pipeline
