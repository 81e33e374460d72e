// Destinations, client options, recovery backoff, bounded shutdown, lineage, serializer calls.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "gcpstream/connector/bounded_shutdown.h"
#include "gcpstream/connector/client_options.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/lineage.h"
#include "gcpstream/connector/recovery_backoff.h"
#include "gcpstream/connector/serialization.h"

namespace gcpstream::connector {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(DestinationsTest, ResourceNamesAndIdentity) {
  EXPECT_EQ(TopicDestination::of("p", "t").resource_name(), "projects/p/topics/t");
  EXPECT_EQ(SubscriptionDestination::of("p", "s").resource_name(), "projects/p/subscriptions/s");
  EXPECT_EQ(TableDestination::of("p", "i", "t").resource_name(), "projects/p/instances/i/tables/t");
  EXPECT_EQ(DatabaseDestination::of("p", "i", "d").resource_name(),
            "projects/p/instances/i/databases/d");
  EXPECT_EQ(BigQueryTableDestination::of("p", "d", "t").resource_name(),
            "projects/p/datasets/d/tables/t");
  EXPECT_EQ(QueueDestination::of("p", "l", "q").resource_name(), "projects/p/locations/l/queues/q");
  absl::flat_hash_set<TableDestination> set = {TableDestination::of("p", "i", "a"),
                                               TableDestination::of("p", "i", "a"),
                                               TableDestination::of("p", "j", "a")};
  EXPECT_EQ(set.size(), 2u);
}

TEST(ClientOptionsTest, EmulatorAndKeyFileAreMutuallyExclusive) {
  ClientOptions options;
  ASSERT_TRUE(options.set_emulator_endpoint("127.0.0.1:8085").ok());
  ASSERT_TRUE(options.set_service_account_key_file("/secrets/key.json").ok());
  absl::Status s = options.validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("emulator_endpoint"));
}

TEST(ClientOptionsTest, AMalformedEmulatorEndpointIsRejectedByTheSetter) {
  ClientOptions options;
  EXPECT_EQ(options.set_emulator_endpoint("localhost").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(options.emulator_endpoint().has_value());
}

TEST(ClientOptionsTest, KeyFileErrorsNameNeitherThePathNorTheKey) {
  const auto dir = std::filesystem::temp_directory_path() / "gcpstream-secret-dir-xyz";
  std::filesystem::create_directories(dir);
  const std::string missing = (dir / "missing-key.json").string();
  auto read = ReadServiceAccountKey(missing);
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(std::string(read.status().message()), Not(HasSubstr("secret-dir-xyz")));
  const std::string user_key = (dir / "user.json").string();
  std::ofstream(user_key) << R"({"type":"authorized_user","refresh_token":"TOPSECRET"})";
  read = ReadServiceAccountKey(user_key);
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(std::string(read.status().message()), HasSubstr("not a service-account key"));
  EXPECT_THAT(std::string(read.status().message()), Not(HasSubstr("TOPSECRET")));
  EXPECT_THAT(std::string(read.status().message()), Not(HasSubstr("secret-dir-xyz")));
  ClientOptions options;
  ASSERT_TRUE(options.set_service_account_key_file(user_key).ok());
  auto channel = CreateChannel(options, "pubsub.googleapis.com:443");
  ASSERT_FALSE(channel.ok());
  EXPECT_THAT(std::string(channel.status().message()), Not(HasSubstr("secret-dir-xyz")));
  std::filesystem::remove_all(dir);
}

TEST(ClientOptionsTest, AKeyWhosePrivateKeyDoesNotDecodeFailsAtOpenNamingNeitherPathNorKey) {
  // gRPC took such a key and failed every call later: the job hung with work in flight.
  const auto dir = std::filesystem::temp_directory_path() / "gcpstream-secret-dir-abc";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "broken.json").string();
  std::ofstream(path)
      << R"({"type":"service_account","client_email":"a@b.iam.gserviceaccount.com",)"
      << R"("private_key":"-----BEGIN PRIVATE KEY-----\nTOPSECRET!!notbase64\n)"
      << R"(-----END PRIVATE KEY-----\n"})";
  auto read = ReadServiceAccountKey(path);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(read.status().message()), HasSubstr("private_key"));
  EXPECT_THAT(std::string(read.status().message()), Not(HasSubstr("TOPSECRET")));
  EXPECT_THAT(std::string(read.status().message()), Not(HasSubstr("secret-dir-abc")));
  ClientOptions options;
  ASSERT_TRUE(options.set_service_account_key_file(path).ok());
  const auto start = std::chrono::steady_clock::now();
  auto channel = CreateChannel(options, "pubsub.googleapis.com:443");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << "fails fast";
  ASSERT_FALSE(channel.ok());
  EXPECT_EQ(channel.status().code(), absl::StatusCode::kFailedPrecondition);

  // A key that decodes passes (an RSA key made here, never a real one).
  EVP_PKEY* key = EVP_RSA_gen(2048);
  ASSERT_NE(key, nullptr);
  BIO* bio = BIO_new(BIO_s_mem());
  ASSERT_EQ(PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr), 1);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  nlohmann::json good = {{"type", "service_account"},
                         {"client_email", "a@b.iam.gserviceaccount.com"},
                         {"private_key", std::string(data, static_cast<std::size_t>(size))}};
  BIO_free(bio);
  EVP_PKEY_free(key);
  const std::string good_path = (dir / "good.json").string();
  std::ofstream(good_path) << good.dump();
  EXPECT_TRUE(ReadServiceAccountKey(good_path).ok());
  std::filesystem::remove_all(dir);
}

TEST(ClientOptionsTest, AnEmulatorChannelIsCreatedWithoutCredentials) {
  ClientOptions options;
  ASSERT_TRUE(options.set_emulator_endpoint("127.0.0.1:1").ok());
  auto channel = CreateChannel(options, "unused:443");
  ASSERT_TRUE(channel.ok()) << channel.status();
  EXPECT_NE(*channel, nullptr);
}

TEST(RecoveryBackoffTest, DoublesToTheCapAndStopsAfterMaxAttempts) {
  RecoveryBackoff backoff(RecoveryOptions{}, [] { return 0.5; });  // 0.5: no jitter
  std::vector<std::int64_t> delays;
  while (auto d = backoff.next()) delays.push_back(d->count());
  EXPECT_EQ(delays, (std::vector<std::int64_t>{500, 1000, 2000, 4000, 8000, 10000, 10000, 10000,
                                               10000, 10000}));
}

TEST(RecoveryBackoffTest, JitterStaysWithinPlusMinusTwentyFivePercent) {
  RecoveryBackoff low(RecoveryOptions{}, [] { return 0.0; });
  RecoveryBackoff high(RecoveryOptions{}, [] { return 0.999999; });
  EXPECT_EQ(low.next()->count(), 375);
  EXPECT_EQ(high.next()->count(), 625);
}

TEST(RecoveryBackoffTest, OptionsAreValidatedNamingTheOption) {
  RecoveryOptions options;
  options.max_backoff = 100ms;
  EXPECT_THAT(std::string(options.validate().message()), HasSubstr("recovery_max_backoff"));
}

TEST(BoundedShutdownTest, OverlappingClosesShareOneBudget) {
  std::vector<ShutdownTask> tasks;
  for (int i = 0; i < 3; ++i) {
    tasks.push_back({"client " + std::to_string(i), [] {
                       std::this_thread::sleep_for(150ms);
                       return absl::OkStatus();
                     }});
  }
  const auto start = std::chrono::steady_clock::now();
  auto result = BoundedShutdown(std::move(tasks), 2s, "testShutdownsAbandoned");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 400ms) << "the three waits must overlap";
  EXPECT_TRUE(result.abandoned.empty());
}

TEST(BoundedShutdownTest, AbandonsAndCountsACloseThatNeverReturnsInTime) {
  const auto before = ProcessCounter("testAbandoned").get();
  std::vector<ShutdownTask> tasks;
  tasks.push_back({"stuck publisher", [] {
                     std::this_thread::sleep_for(1s);
                     return absl::OkStatus();
                   }});
  tasks.push_back({"failing publisher", [] { return absl::InternalError("close failed"); }});
  const auto start = std::chrono::steady_clock::now();
  auto result = BoundedShutdown(std::move(tasks), 100ms, "testAbandoned");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 500ms);
  EXPECT_EQ(result.abandoned, (std::vector<std::string>{"stuck publisher"}));
  EXPECT_EQ(result.error.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(ProcessCounter("testAbandoned").get(), before + 1);
}

TEST(LineageTest, NamespacesFollowTheConventions) {
  auto bt = BigtableDataset(TableDestination::of("p", "i", "flights"));
  EXPECT_EQ(bt.name_space, "bigtable://p/i");
  EXPECT_EQ(bt.name, "flights");
  EXPECT_EQ(bt.facets.at("gcp.kind"), "bigtable-table");
  auto sp = SpannerDataset(DatabaseDestination::of("p", "i", "db"), "Orders");
  EXPECT_EQ(sp.name_space, "spanner://p:i");
  EXPECT_EQ(sp.name, "db.Orders");
  EXPECT_EQ(PubSubTopicDataset(TopicDestination::of("p", "t")).name, "topic:t");
}

TEST(SerializationTest, SkipsValuesAndThrowsAreDistinguished) {
  auto value = CallSerializer<int>([] { return std::optional<int>(3); });
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(**value, 3);
  auto skipped = CallSerializer<int>([] { return std::optional<int>(); });
  ASSERT_TRUE(skipped.ok());
  EXPECT_FALSE(skipped->has_value());
  auto thrown = CallSerializer<int>(
      []() -> std::optional<int> { throw std::runtime_error("field 'date' missing"); });
  ASSERT_FALSE(thrown.ok());
  EXPECT_THAT(std::string(thrown.status().message()), HasSubstr("field 'date' missing"));
}

}  // namespace
}  // namespace gcpstream::connector
