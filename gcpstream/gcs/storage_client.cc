#include "gcpstream/gcs/storage_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "gcpstream/connector/http_status.h"
#include "gcpstream/util/json.h"
#include "gcpstream/util/utf8.h"

namespace gcpstream::gcs {
namespace {

constexpr std::size_t kMaxJsonDepth = 64;

// RFC 3986 percent-encoding of everything but the unreserved characters: an object name in a
// path segment or a query value ("a/b c" -> "a%2Fb%20c").
std::string Escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (absl::ascii_isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(c);
    } else {
      out += fmt::format("%{:02X}", u);
    }
  }
  return out;
}

bool BucketChar(char c) {
  return absl::ascii_islower(static_cast<unsigned char>(c)) ||
         absl::ascii_isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

}  // namespace

absl::StatusOr<GcsUri> ParseGcsUri(std::string_view uri, bool allow_prefix_only) {
  constexpr std::string_view kScheme = "gs://";
  auto refuse = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        fmt::format("\"{}\" is not a Cloud Storage URI: {}", uri.substr(0, 300), why));
  };
  if (uri.substr(0, kScheme.size()) != kScheme) return refuse("it must start with gs://");
  const std::string_view rest = uri.substr(kScheme.size());
  const std::size_t slash = rest.find('/');
  GcsUri out;
  out.bucket = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) out.object = std::string(rest.substr(slash + 1));
  const auto& b = out.bucket;
  if (b.size() < 3 || b.size() > 222 || !std::all_of(b.begin(), b.end(), BucketChar) ||
      !absl::ascii_isalnum(static_cast<unsigned char>(b.front())) ||
      !absl::ascii_isalnum(static_cast<unsigned char>(b.back()))) {
    return refuse(
        "the bucket name has 3 to 222 lowercase letters, digits, '-', '_' or '.', and starts "
        "and ends with a letter or digit");
  }
  if (b.size() > 63 && b.find('.') == std::string::npos) {
    return refuse("a bucket name without dots has at most 63 characters");
  }
  if (out.object.empty() && !allow_prefix_only) return refuse("it names no object");
  if (out.object.find_first_of("\r\n") != std::string::npos || out.object == "." ||
      out.object == ".." || util::InvalidUtf8At(out.object).has_value()) {
    return refuse("an object name is valid UTF-8 without CR or LF, and not . or ..");
  }
  if (out.object.size() > 1024) return refuse("an object name is at most 1,024 bytes");
  return out;
}

StorageClient::StorageClient(std::string endpoint,
                             std::shared_ptr<connector::AccessTokenSource> credentials,
                             std::chrono::milliseconds timeout)
    : endpoint_(std::move(endpoint)), credentials_(std::move(credentials)), timeout_(timeout) {}

absl::StatusOr<StorageClient::Answer> StorageClient::exchange(
    const std::string& method, const std::string& url_or_path, const std::string& body,
    const std::string& content_type, const std::vector<std::pair<std::string, std::string>>& extra,
    const std::string& what) const {
  std::string base = endpoint_;
  std::string path = url_or_path;
  if (absl::StartsWith(url_or_path, "http://") || absl::StartsWith(url_or_path, "https://")) {
    const std::size_t host = url_or_path.find("://") + 3;
    const std::size_t slash = url_or_path.find('/', host);
    if (slash == std::string::npos || slash == host) {
      return absl::InvalidArgumentError(
          fmt::format("{}: \"{}\" is not an upload session URI", what, url_or_path.substr(0, 200)));
    }
    base = url_or_path.substr(0, slash);
    path = url_or_path.substr(slash);
    // The access token goes only to the configured service, whatever a Location said.
    if (base != endpoint_.substr(0, endpoint_.find_last_not_of('/') + 1)) {
      return absl::InvalidArgumentError(
          fmt::format("{}: the session URI's host is not the Cloud Storage endpoint's", what));
    }
  } else if (!absl::StartsWith(url_or_path, "/")) {
    return absl::InvalidArgumentError(
        fmt::format("{}: \"{}\" is not an http(s) URL", what, url_or_path.substr(0, 200)));
  }
  httplib::Headers headers;
  auto token = credentials_->token();
  if (!token.ok()) return token.status();
  if (!token->empty()) headers.emplace("Authorization", "Bearer " + *token);
  for (const auto& [k, v] : extra) headers.emplace(k, v);
  std::unique_ptr<httplib::Client> client;
  try {  // httplib throws on a URL it cannot use
    client = std::make_unique<httplib::Client>(base);
  } catch (const std::exception&) {
    return absl::InvalidArgumentError(
        fmt::format("Cloud Storage endpoint \"{}\" is not an http(s) URL", base));
  }
  client->set_connection_timeout(timeout_);
  client->set_read_timeout(timeout_);
  client->set_write_timeout(timeout_);
  httplib::Result r = method == "GET"    ? client->Get(path, headers)
                      : method == "POST" ? client->Post(path, headers, body, content_type)
                      : method == "PUT"  ? client->Put(path, headers, body, content_type)
                                         : client->Delete(path, headers);
  if (!r) {
    return absl::UnavailableError(
        fmt::format("{}: no answer ({})", what, httplib::to_string(r.error())));
  }
  Answer a;
  a.status = r->status;
  a.body = std::move(r->body);
  a.location = r->get_header_value("Location");
  a.range = r->get_header_value("Range");
  // 308 is "resume incomplete" only for an upload session's PUT; anywhere else it is a
  // redirect this client does not follow, so a failure.
  const bool resumable = method == "PUT";
  if (!(resumable && a.status == 308) && (a.status < 200 || a.status >= 300)) {
    return connector::RestErrorStatus(a.status, a.body, what, kStorageErrorReasonPayload);
  }
  return a;
}

absl::StatusOr<std::string> StorageClient::start_resumable_upload(const std::string& bucket,
                                                                  const std::string& object) const {
  const std::string what =
      fmt::format("Cloud Storage resumable upload of gs://{}/{}", bucket, object);
  auto a = exchange("POST",
                    fmt::format("/upload/storage/v1/b/{}/o?uploadType=resumable&name={}",
                                Escape(bucket), Escape(object)),
                    "{}", "application/json", {}, what);
  if (!a.ok()) return a.status();
  if (a->location.empty()) {
    return absl::InternalError(what + ": the answer carries no session URI (Location)");
  }
  return a->location;
}

absl::StatusOr<StorageClient::UploadProgress> StorageClient::progress_of(const Answer& a,
                                                                         const std::string& what,
                                                                         std::int64_t sent) const {
  UploadProgress p;
  if (a.status == 308) {
    // "Range: bytes=0-N" once anything is persisted; absent before.
    if (!a.range.empty()) {
      const std::size_t dash = a.range.find('-');
      std::int64_t last = 0;
      if (!absl::StartsWith(a.range, "bytes=0-") || dash == std::string::npos ||
          !absl::SimpleAtoi(a.range.substr(dash + 1), &last) || last < 0 ||
          (sent >= 0 && last >= sent)) {
        return absl::InternalError(
            fmt::format("{}: a Range header \"{}\" that is unreadable or beyond the {} bytes sent",
                        what, a.range.substr(0, 100), sent));
      }
      p.persisted = last + 1;
    }
    return p;
  }
  auto json = util::ParseJsonBounded(a.body, kMaxJsonDepth);
  if (!json.ok() || !json->is_object()) {
    return absl::InternalError(what + ": the finished upload's answer is not object metadata");
  }
  std::int64_t size = -1;
  if (json->contains("size") && (*json)["size"].is_string() &&
      !absl::SimpleAtoi((*json)["size"].get<std::string>(), &size)) {
    size = -1;
  }
  if (size < 0 || (sent >= 0 && size != sent)) {
    return absl::InternalError(fmt::format(
        "{}: the finished object's size ({}) is not the {} bytes sent", what, size, sent));
  }
  p.persisted = size;
  p.object = std::move(*json);
  return p;
}

absl::StatusOr<StorageClient::UploadProgress> StorageClient::upload_chunk(
    const std::string& session, std::int64_t offset, std::string_view bytes, bool last) const {
  const auto n = static_cast<std::int64_t>(bytes.size());
  if (offset < 0 || offset > (std::int64_t{1} << 50) ||
      (!last && (n == 0 || n % kResumableChunkQuantum != 0))) {
    return absl::InvalidArgumentError(fmt::format(
        "a resumable upload chunk other than the last is a positive multiple of {} bytes; got {} "
        "bytes at offset {}",
        kResumableChunkQuantum, n, offset));
  }
  const std::string total = last ? std::to_string(offset + n) : "*";
  const std::string range = n == 0 ? fmt::format("bytes */{}", total)
                                   : fmt::format("bytes {}-{}/{}", offset, offset + n - 1, total);
  const std::string what = "Cloud Storage resumable upload chunk";
  auto a = exchange("PUT", session, std::string(bytes), "application/octet-stream",
                    {{"Content-Range", range}}, what);
  if (!a.ok()) return a.status();
  auto p = progress_of(*a, what, offset + n);
  if (p.ok() && last && !p->object) {
    return absl::InternalError(what + ": the last chunk did not finish the object");
  }
  return p;
}

absl::StatusOr<StorageClient::UploadProgress> StorageClient::upload_status(
    const std::string& session) const {
  const std::string what = "Cloud Storage resumable upload status";
  auto a = exchange("PUT", session, "", "application/octet-stream",
                    {{"Content-Range", "bytes */*"}}, what);
  if (!a.ok()) return a.status();
  return progress_of(*a, what, -1);
}

absl::StatusOr<nlohmann::json> StorageClient::insert_object(const std::string& bucket,
                                                            const std::string& object,
                                                            std::string_view bytes) const {
  const std::string what = fmt::format("Cloud Storage upload of gs://{}/{}", bucket, object);
  auto a = exchange("POST",
                    fmt::format("/upload/storage/v1/b/{}/o?uploadType=media&name={}",
                                Escape(bucket), Escape(object)),
                    std::string(bytes), "application/octet-stream", {}, what);
  if (!a.ok()) return a.status();
  auto json = util::ParseJsonBounded(a->body, kMaxJsonDepth);
  if (!json.ok()) return absl::InternalError(what + ": the answer is not JSON");
  return *json;
}

absl::StatusOr<nlohmann::json> StorageClient::get_object(const std::string& bucket,
                                                         const std::string& object) const {
  const std::string what = fmt::format("Cloud Storage get gs://{}/{}", bucket, object);
  auto a = exchange("GET", fmt::format("/storage/v1/b/{}/o/{}", Escape(bucket), Escape(object)), "",
                    "", {}, what);
  if (!a.ok()) return a.status();
  auto json = util::ParseJsonBounded(a->body, kMaxJsonDepth);
  if (!json.ok() || !json->is_object()) {
    return absl::InternalError(what + ": the answer is not a JSON object");
  }
  return *json;
}

absl::StatusOr<std::string> StorageClient::read_object(const std::string& bucket,
                                                       const std::string& object) const {
  auto a = exchange("GET",
                    fmt::format("/storage/v1/b/{}/o/{}?alt=media", Escape(bucket), Escape(object)),
                    "", "", {}, fmt::format("Cloud Storage read gs://{}/{}", bucket, object));
  if (!a.ok()) return a.status();
  return std::move(a->body);
}

absl::StatusOr<std::vector<nlohmann::json>> StorageClient::list_objects(
    const std::string& bucket, const std::string& prefix) const {
  const std::string what = fmt::format("Cloud Storage list gs://{}/{}", bucket, prefix);
  std::vector<nlohmann::json> out;
  std::string token;
  std::set<std::string> seen;
  do {
    std::string path = fmt::format("/storage/v1/b/{}/o?prefix={}", Escape(bucket), Escape(prefix));
    if (!token.empty()) path += "&pageToken=" + Escape(token);
    auto a = exchange("GET", path, "", "", {}, what);
    if (!a.ok()) return a.status();
    auto json = util::ParseJsonBounded(a->body, kMaxJsonDepth);
    if (!json.ok() || !json->is_object()) {
      return absl::InternalError(what + ": the answer is not a JSON object");
    }
    if (json->contains("items") && (*json)["items"].is_array()) {
      for (auto& item : (*json)["items"]) {
        if (!item.is_object()) return absl::InternalError(what + ": an item is not an object");
        out.push_back(std::move(item));
      }
    }
    std::string next;
    if (json->contains("nextPageToken")) {
      if (!(*json)["nextPageToken"].is_string()) {
        return absl::InternalError(what + ": nextPageToken is not a string");
      }
      next = (*json)["nextPageToken"].get<std::string>();
    }
    if (!next.empty() && !seen.insert(next).second) {
      return absl::InternalError(what + ": the service repeated a page token");
    }
    token = next;
  } while (!token.empty());
  return out;
}

absl::Status StorageClient::delete_object(const std::string& bucket,
                                          const std::string& object) const {
  return exchange("DELETE", fmt::format("/storage/v1/b/{}/o/{}", Escape(bucket), Escape(object)),
                  "", "", {}, fmt::format("Cloud Storage delete gs://{}/{}", bucket, object))
      .status();
}

}  // namespace gcpstream::gcs
