#ifndef GCPSTREAM_TESTS_FAKES_GCS_FAKE_GCS_H_
#define GCPSTREAM_TESTS_FAKES_GCS_FAKE_GCS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace httplib {
class Server;
}

// A fake of the Cloud Storage JSON API subset a sink stages files with, after the public
// references ("JSON API: Objects" insert / get / list / delete, "Perform resumable uploads",
// "Perform multipart uploads"):
//  - POST /upload/storage/v1/b/B/o?uploadType=media&name=N: the body is the object;
//  - uploadType=multipart: a multipart/related body, JSON metadata (with "name") then media;
//  - uploadType=resumable: answers 200 with the session URI in Location; each PUT to it carries
//    Content-Range "bytes S-E/T" (T "*" while the size is unknown), "bytes */T" (finish with
//    nothing more) or "bytes */*" (ask). An unfinished upload answers 308 with
//    "Range: bytes=0-N" (no Range before the first byte): the service persists a chunk only up
//    to a multiple of 256 KiB unless it completes the object (its end reaches the stated
//    total), so a shorter chunk is kept in part and the client resends the rest; bytes before
//    the persisted size are ignored; a chunk starting beyond it, whose length differs from its
//    range, or that goes past the stated total, is refused (400). The completing chunk answers
//    200 with the object; so does any later PUT to that session;
//  - GET /storage/v1/b/B/o/N (metadata; alt=media: the bytes); GET /storage/v1/b/B/o with
//    prefix, maxResults (at most 1,000) and pageToken, in name order; DELETE answers 204.
// Names are URL-encoded in paths; a name is 1 to 1,024 bytes of valid UTF-8 without CR or LF
// (400 otherwise). A missing bucket or object answers 404 (reason notFound). An
// upload replaces an existing object and bumps its generation. Errors have the JSON API's
// {"error": {"code", "message", "errors": [{"reason"}]}} shape. Thread-safe.
namespace gcpstream::testing::gcs_fake {

class FakeObjectStore {
 public:
  void add_bucket(const std::string& bucket);
  // A bucket gone (tests: uploads to it then answer 404); its objects stay readable here.
  void remove_bucket(const std::string& bucket);
  // Every upload request (media, multipart, resumable start or chunk) waits this long before
  // it is applied (tests: a slow service) [0].
  void set_upload_latency(std::chrono::milliseconds latency);
  std::chrono::milliseconds upload_latency() const;
  bool has_bucket(const std::string& bucket) const;
  // NOT_FOUND for a missing bucket; the new object's metadata.
  absl::StatusOr<nlohmann::json> put(const std::string& bucket, const std::string& name,
                                     std::string bytes);
  absl::StatusOr<std::string> read(const std::string& bucket, const std::string& name) const;
  absl::StatusOr<nlohmann::json> metadata(const std::string& bucket, const std::string& name) const;
  absl::Status remove(const std::string& bucket, const std::string& name);
  // Up to `max` objects after `after` (exclusive) whose names start with `prefix`.
  std::vector<nlohmann::json> list(const std::string& bucket, const std::string& prefix,
                                   const std::string& after, int max, bool* more) const;
  // Resumable sessions: a new id, and one PUT applied to it (the rules above). `first`/`last`
  // are the chunk's byte range (-1 when it carries none), `total` the object size (-1: "*").
  // NOT_FOUND for an unknown session, INVALID_ARGUMENT for a chunk the rules refuse.
  std::string open_session(const std::string& bucket, const std::string& name);
  struct ChunkResult {
    std::optional<nlohmann::json> object;  // set once the upload finished
    std::int64_t persisted = 0;
  };
  absl::StatusOr<ChunkResult> apply_chunk(const std::string& id, std::int64_t first,
                                          std::int64_t last, std::int64_t total,
                                          const std::string& body);

  std::int64_t object_count() const;

 private:
  struct Object {
    std::string bytes;
    std::int64_t generation = 0;
    absl::Time created;
  };
  struct Session {
    std::string bucket;
    std::string name;
    std::string bytes;  // persisted
    std::optional<nlohmann::json> done;
  };
  nlohmann::json metadata_locked(const std::string& bucket, const std::string& name,
                                 const Object& o) const;
  absl::StatusOr<nlohmann::json> put_locked(const std::string& bucket, const std::string& name,
                                            std::string bytes);

  mutable std::mutex mu_;
  std::chrono::milliseconds upload_latency_{0};
  std::set<std::string> buckets_;
  std::map<std::pair<std::string, std::string>, Object> objects_;
  std::map<std::string, Session> sessions_;
  std::int64_t next_generation_ = 1'700'000'000'000'000;
  std::int64_t next_session_ = 1;
};

// Serves the routes above on `server` (next to whatever else it serves).
void RegisterGcsRoutes(httplib::Server& server, std::shared_ptr<FakeObjectStore> store);

}  // namespace gcpstream::testing::gcs_fake

#endif  // GCPSTREAM_TESTS_FAKES_GCS_FAKE_GCS_H_
