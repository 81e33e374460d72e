#ifndef GCPSTREAM_GCS_STORAGE_CLIENT_H_
#define GCPSTREAM_GCS_STORAGE_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/connector/oauth2_credentials.h"

namespace gcpstream::gcs {

// Where production Cloud Storage's JSON API listens.
inline constexpr char kStorageEndpoint[] = "https://storage.googleapis.com";
// The payload key under which a failed call keeps the JSON API error's first `reason`.
inline constexpr char kStorageErrorReasonPayload[] = "gcpstream.gcs/reason";
// A resumable upload sends its object in chunks that are multiples of this many bytes, except
// the last (Cloud Storage docs, "Perform resumable uploads": 256 KiB).
inline constexpr std::int64_t kResumableChunkQuantum = 256 * 1024;

// A "gs://BUCKET/OBJECT" URI split. INVALID_ARGUMENT naming the URI unless it has the gs://
// scheme, a bucket of 3 to 222 characters (lowercase letters, digits, '-', '_', '.') and an
// object name (may be empty only when `allow_prefix_only`).
struct GcsUri {
  std::string bucket;
  std::string object;  // may hold '/'; the prefix for a staging path
};
absl::StatusOr<GcsUri> ParseGcsUri(std::string_view uri, bool allow_prefix_only = false);

// The Cloud Storage JSON API calls a sink stages files with: resumable uploads in chunks,
// object metadata and media reads, listing by prefix, and deletion. Each call is one HTTP
// exchange bounded by `timeout`; retries are the caller's. Failures carry the gRPC code of the
// HTTP status (connector::CodeForHttpStatus), the service's message and its reason
// (kStorageErrorReasonPayload); no answer at all is UNAVAILABLE. Never logs or returns the
// access token. Thread-safe.
class StorageClient {
 public:
  // `endpoint` is "https://storage.googleapis.com" or, for a fake, "http://host:port".
  StorageClient(std::string endpoint, std::shared_ptr<connector::AccessTokenSource> credentials,
                std::chrono::milliseconds timeout = std::chrono::seconds(30));

  // Starts a resumable upload of `object`; the session URI to send its chunks to. A session URI
  // on another scheme, host or port than the endpoint is refused (INVALID_ARGUMENT) by every
  // call that takes one, so the access token never leaves for another host.
  absl::StatusOr<std::string> start_resumable_upload(const std::string& bucket,
                                                     const std::string& object) const;

  // The state of a resumable upload after a chunk: either the object's metadata (the upload is
  // complete) or how many bytes the service has persisted so far.
  struct UploadProgress {
    std::optional<nlohmann::json> object;
    std::int64_t persisted = 0;
  };
  // Sends `bytes` at `offset` of the object. Unless `last`, bytes.size() must be a positive
  // multiple of kResumableChunkQuantum (INVALID_ARGUMENT otherwise, before any exchange); with
  // `last` the object ends after these bytes (they may be empty). A persisted count below
  // offset + bytes.size() on a non-last chunk means the service kept less: resend from there.
  absl::StatusOr<UploadProgress> upload_chunk(const std::string& session, std::int64_t offset,
                                              std::string_view bytes, bool last) const;
  // Asks how far an interrupted upload got (the bytes to resend start at `persisted`).
  absl::StatusOr<UploadProgress> upload_status(const std::string& session) const;

  // A whole object in one request (uploadType=media); its metadata.
  absl::StatusOr<nlohmann::json> insert_object(const std::string& bucket, const std::string& object,
                                               std::string_view bytes) const;
  // Object metadata (name, size, generation, ...); NOT_FOUND when there is none.
  absl::StatusOr<nlohmann::json> get_object(const std::string& bucket,
                                            const std::string& object) const;
  // The object's bytes (alt=media).
  absl::StatusOr<std::string> read_object(const std::string& bucket,
                                          const std::string& object) const;
  // Every object whose name starts with `prefix`, in name order, following page tokens.
  absl::StatusOr<std::vector<nlohmann::json>> list_objects(const std::string& bucket,
                                                           const std::string& prefix) const;
  // Deletes the object; NOT_FOUND when there is none (a caller cleaning up may ignore it).
  absl::Status delete_object(const std::string& bucket, const std::string& object) const;

 private:
  struct Answer {
    int status = 0;
    std::string body;
    std::string location;  // the Location header
    std::string range;     // the Range header
  };
  // One exchange with `url_or_path` (a path on endpoint_, or an absolute http(s) URL).
  absl::StatusOr<Answer> exchange(const std::string& method, const std::string& url_or_path,
                                  const std::string& body, const std::string& content_type,
                                  const std::vector<std::pair<std::string, std::string>>& extra,
                                  const std::string& what) const;
  // `sent`: the bytes the upload holds after this exchange when known (the service may persist
  // less, never more, and a finished object has exactly that size); -1 when unknown.
  absl::StatusOr<UploadProgress> progress_of(const Answer& a, const std::string& what,
                                             std::int64_t sent) const;

  std::string endpoint_;
  std::shared_ptr<connector::AccessTokenSource> credentials_;
  std::chrono::milliseconds timeout_;
};

}  // namespace gcpstream::gcs

#endif  // GCPSTREAM_GCS_STORAGE_CLIENT_H_
