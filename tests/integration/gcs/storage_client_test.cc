// The Cloud Storage client against the fake Cloud Storage JSON API (served on the BigQuery
// fake's REST port). Each fake behaviour follows a public reference: "Perform resumable
// uploads" (session URI in Location, 308 with "Range: bytes=0-N", chunks in multiples of
// 256 KiB, a shorter chunk persisted only in part), "Perform multipart uploads", and the JSON
// API Objects reference (insert, get, alt=media, list with prefix and pageToken, delete).
#include "gcpstream/gcs/storage_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "gcpstream/connector/oauth2_credentials.h"
#include "tests/fakes/bigquery/bigquery_fake.h"

namespace gcpstream::gcs {
namespace {

using ::testing::HasSubstr;

class StorageClientIT : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fake = testing::BigQueryFake::Start();
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = std::move(*fake);
    fake_->add_bucket("staging");
    client_ =
        std::make_unique<StorageClient>(fake_->rest_endpoint(), connector::MakeNoCredentials());
  }
  std::string stored(const std::string& name) {
    auto bytes = fake_->gcs().read("staging", name);
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    return bytes.ok() ? *bytes : std::string();
  }

  std::unique_ptr<testing::BigQueryFake> fake_;
  std::unique_ptr<StorageClient> client_;
};

TEST_F(StorageClientIT, AResumableUploadInChunksMakesTheObject) {
  auto session = client_->start_resumable_upload("staging", "run-1/t/part 0.avro");
  ASSERT_TRUE(session.ok()) << session.status();
  const std::string first(kResumableChunkQuantum, 'a');
  const std::string second(kResumableChunkQuantum * 2, 'b');
  auto p1 = client_->upload_chunk(*session, 0, first, false);
  ASSERT_TRUE(p1.ok()) << p1.status();
  EXPECT_FALSE(p1->object.has_value());
  EXPECT_EQ(p1->persisted, kResumableChunkQuantum);
  auto p2 = client_->upload_chunk(*session, p1->persisted, second, false);
  ASSERT_TRUE(p2.ok()) << p2.status();
  EXPECT_EQ(p2->persisted, kResumableChunkQuantum * 3);
  EXPECT_FALSE(fake_->gcs().read("staging", "run-1/t/part 0.avro").ok())
      << "an unfinished upload is not an object";
  auto done = client_->upload_chunk(*session, p2->persisted, "tail", true);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_TRUE(done->object.has_value());
  EXPECT_EQ((*done->object)["name"], "run-1/t/part 0.avro");
  EXPECT_EQ(done->persisted, kResumableChunkQuantum * 3 + 4);
  EXPECT_EQ(stored("run-1/t/part 0.avro"), first + second + "tail");
  // A session that finished answers with the object again (a lost answer can be asked for).
  auto again = client_->upload_status(*session);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->object.has_value());
}

TEST_F(StorageClientIT, AnInterruptedUploadResumesFromWhatWasPersisted) {
  auto session = client_->start_resumable_upload("staging", "o");
  ASSERT_TRUE(session.ok());
  auto before = client_->upload_status(*session);
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(before->persisted, 0) << "no Range header before the first byte";
  ASSERT_TRUE(
      client_->upload_chunk(*session, 0, std::string(kResumableChunkQuantum, 'x'), false).ok());
  // The same chunk sent again (its answer was lost) changes nothing; the next one continues.
  auto resent = client_->upload_chunk(*session, 0, std::string(kResumableChunkQuantum, 'x'), false);
  ASSERT_TRUE(resent.ok()) << resent.status();
  EXPECT_EQ(resent->persisted, kResumableChunkQuantum);
  auto status = client_->upload_status(*session);
  ASSERT_TRUE(status.ok());
  ASSERT_TRUE(client_->upload_chunk(*session, status->persisted, "end", true).ok());
  EXPECT_EQ(stored("o"), std::string(kResumableChunkQuantum, 'x') + "end");
}

TEST_F(StorageClientIT, ChunkRulesAreEnforcedByTheClientAndTheService) {
  auto session = client_->start_resumable_upload("staging", "o");
  ASSERT_TRUE(session.ok());
  // The client refuses a non-last chunk that is not a multiple of 256 KiB without sending it.
  auto refused = client_->upload_chunk(*session, 0, "short", false);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  // The service refuses a chunk beyond what it persisted.
  auto gap = client_->upload_chunk(*session, kResumableChunkQuantum,
                                   std::string(kResumableChunkQuantum, 'y'), false);
  EXPECT_EQ(gap.status().code(), absl::StatusCode::kInvalidArgument) << gap.status();
  EXPECT_THAT(std::string(gap.status().message()), HasSubstr("persisted"));
  // Raw: a chunk of 300 KiB with an unknown total keeps only the first 256 KiB.
  httplib::Client raw(fake_->rest_endpoint());
  const std::string path = session->substr(session->find("/upload/"));
  auto partial = raw.Put(path, {{"Content-Range", "bytes 0-307199/*"}}, std::string(307200, 'z'),
                         "application/octet-stream");
  ASSERT_TRUE(partial);
  EXPECT_EQ(partial->status, 308);
  EXPECT_EQ(partial->get_header_value("Range"), "bytes=0-262143");
  auto lying = raw.Put(path, {{"Content-Range", "bytes 262144-262149/*"}}, std::string(3, 'z'),
                       "application/octet-stream");
  ASSERT_TRUE(lying);
  EXPECT_EQ(lying->status, 400) << "the range names 6 bytes, the body carries 3";
}

TEST_F(StorageClientIT, MediaAndMultipartUploadsReadsListsAndDeletes) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(
        client_->insert_object("staging", "run/f" + std::to_string(i), "row" + std::to_string(i))
            .ok());
  }
  ASSERT_TRUE(client_->insert_object("staging", "other", "x").ok());
  httplib::Client raw(fake_->rest_endpoint());
  const std::string body =
      "--b1\r\nContent-Type: application/json\r\n\r\n{\"name\": \"run/multi\"}\r\n"
      "--b1\r\nContent-Type: application/octet-stream\r\n\r\nmulti-bytes\r\n--b1--\r\n";
  auto multi = raw.Post("/upload/storage/v1/b/staging/o?uploadType=multipart", body,
                        "multipart/related; boundary=b1");
  ASSERT_TRUE(multi);
  EXPECT_EQ(multi->status, 200) << multi->body;
  EXPECT_EQ(stored("run/multi"), "multi-bytes");

  auto meta = client_->get_object("staging", "run/f3");
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ((*meta)["size"], "4");
  EXPECT_EQ(*client_->read_object("staging", "run/f3"), "row3");
  // Pages of two: list follows the page tokens; only the prefix's objects, in name order.
  auto page = raw.Get("/storage/v1/b/staging/o?prefix=run/&maxResults=2");
  ASSERT_TRUE(page);
  auto first_page = nlohmann::json::parse(page->body);
  EXPECT_EQ(first_page["items"].size(), 2u);
  EXPECT_TRUE(first_page.contains("nextPageToken"));
  auto all = client_->list_objects("staging", "run/");
  ASSERT_TRUE(all.ok()) << all.status();
  std::vector<std::string> names;
  for (const auto& o : *all) names.push_back(o["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"run/f0", "run/f1", "run/f2", "run/f3", "run/f4",
                                             "run/multi"}));
  ASSERT_TRUE(client_->delete_object("staging", "run/f0").ok());
  const absl::Status gone = client_->delete_object("staging", "run/f0");
  EXPECT_EQ(gone.code(), absl::StatusCode::kNotFound) << gone;
  EXPECT_EQ(client_->get_object("staging", "run/f0").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(StorageClientIT, AMissingBucketIsNotFoundWithTheServicesReason) {
  auto missing = client_->start_resumable_upload("nope", "o");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  auto reason = missing.status().GetPayload(kStorageErrorReasonPayload);
  ASSERT_TRUE(reason.has_value());
  EXPECT_EQ(std::string(*reason), "notFound");
  EXPECT_EQ(client_->list_objects("nope", "").status().code(), absl::StatusCode::kNotFound);
  StorageClient nobody("http://127.0.0.1:1", connector::MakeNoCredentials(),
                       std::chrono::seconds(2));
  EXPECT_EQ(nobody.get_object("staging", "o").status().code(), absl::StatusCode::kUnavailable);
}

// A server answering what the JSON API never does: the client refuses it instead of trusting it.
TEST(StorageClientHostileTest, AnswersOutsideTheProtocolAreErrorsNeverData) {
  httplib::Server server;
  server.Get(R"(/storage/v1/b/b/o/redirected)", [](const httplib::Request&, httplib::Response& r) {
    r.status = 308;
    r.set_content("<html>moved</html>", "text/html");
  });
  server.Get(R"(/storage/v1/b/b/o)", [](const httplib::Request&, httplib::Response& r) {
    r.set_content(R"({"items": [], "nextPageToken": 5})", "application/json");
  });
  server.Put(R"(/upload/short)", [](const httplib::Request&, httplib::Response& r) {
    r.set_content(R"({"name": "o", "size": "1"})", "application/json");
  });
  server.Put(R"(/upload/beyond)", [](const httplib::Request&, httplib::Response& r) {
    r.status = 308;
    r.set_header("Range", "bytes=0-9223372036854775806");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { server.listen_after_bind(); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!server.is_running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!server.is_running()) {
    server.stop();
    serving.join();
    FAIL() << "the test server did not start within 10 s";
  }
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  StorageClient client(base, connector::MakeNoCredentials(), std::chrono::milliseconds(500));
  EXPECT_FALSE(client.read_object("b", "redirected").ok()) << "a redirect page is not the object";
  EXPECT_EQ(client.list_objects("b", "").status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(client.upload_chunk(base + "/upload/short", 0, "abc", true).status().code(),
            absl::StatusCode::kInternal);
  EXPECT_EQ(
      client
          .upload_chunk(base + "/upload/beyond", 0, std::string(kResumableChunkQuantum, 'a'), false)
          .status()
          .code(),
      absl::StatusCode::kInternal);
  EXPECT_EQ(client.upload_status("relative/path").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client.upload_status("http://other.example:1/upload/x").status().code(),
            absl::StatusCode::kInvalidArgument)
      << "the token never goes to a host a Location names";
  server.stop();
  serving.join();
}

TEST(GcsUriTest, BucketAndObjectAreSplitAndBadUrisRefused) {
  auto uri = ParseGcsUri("gs://my-bucket/staging/run 1/f.avro");
  ASSERT_TRUE(uri.ok()) << uri.status();
  EXPECT_EQ(uri->bucket, "my-bucket");
  EXPECT_EQ(uri->object, "staging/run 1/f.avro");
  auto prefix = ParseGcsUri("gs://my-bucket", /*allow_prefix_only=*/true);
  ASSERT_TRUE(prefix.ok());
  EXPECT_EQ(prefix->object, "");
  for (const char* bad :
       {"s3://b/o", "gs://", "gs://ab/o", "gs://Upper/o", "gs://-bucket/o", "gs://bucket",
        "gs://bucket/", "gs://bucket/a\nb", "gs://bucket/..", "gs://bucket/bad\xff"}) {
    EXPECT_EQ(ParseGcsUri(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace gcpstream::gcs
