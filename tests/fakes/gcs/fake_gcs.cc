#include "tests/fakes/gcs/fake_gcs.h"

#include <fmt/format.h>
#include <httplib.h>
#include <re2/re2.h>

#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gcpstream/util/json.h"
#include "gcpstream/util/utf8.h"

namespace gcpstream::testing::gcs_fake {
namespace {

constexpr std::int64_t kQuantum = 256 * 1024;
// Cloud Storage's largest object (5 TiB): bounds every range so the arithmetic cannot overflow.
constexpr std::int64_t kMaxObjectBytes = std::int64_t{5} << 40;

int HttpOf(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kInvalidArgument:
      return 400;
    default:
      return 500;
  }
}

void ReplyError(httplib::Response& res, const absl::Status& s) {
  const int http = HttpOf(s);
  const std::string reason = http == 404 ? "notFound" : http == 400 ? "invalid" : "backendError";
  const std::string message(s.message());
  res.status = http;
  res.set_content(nlohmann::json{{"error",
                                  {{"code", http},
                                   {"message", message},
                                   {"errors", {{{"reason", reason}, {"message", message}}}}}}}
                      .dump(),
                  "application/json");
}

void ReplyJson(httplib::Response& res, const nlohmann::json& body) {
  res.status = 200;
  res.set_content(body.dump(), "application/json");
}

// The media part of a multipart/related body: (metadata JSON, media bytes).
absl::StatusOr<std::pair<nlohmann::json, std::string>> SplitMultipart(
    const std::string& content_type, const std::string& body) {
  std::string boundary;
  if (!RE2::PartialMatch(content_type, R"re(multipart/related;\s*boundary="?([^";]+)"?)re",
                         &boundary)) {
    return absl::InvalidArgumentError(
        "uploadType=multipart needs Content-Type multipart/related with a boundary");
  }
  const std::string delimiter = "--" + boundary;
  std::vector<std::string> parts;
  std::size_t at = body.find(delimiter);
  while (at != std::string::npos) {
    std::size_t start = at + delimiter.size();
    if (body.compare(start, 2, "--") == 0) break;  // the closing delimiter
    if (body.compare(start, 2, "\r\n") == 0) start += 2;
    const std::size_t next = body.find("\r\n" + delimiter, start);
    if (next == std::string::npos) break;
    parts.push_back(body.substr(start, next - start));
    at = next + 2;
  }
  if (parts.size() != 2) {
    return absl::InvalidArgumentError(
        fmt::format("a multipart upload has two parts (metadata, media), not {}", parts.size()));
  }
  auto content = [](const std::string& part) -> absl::StatusOr<std::string> {
    const std::size_t blank = part.find("\r\n\r\n");
    if (blank == std::string::npos) return absl::InvalidArgumentError("a part has no headers");
    return part.substr(blank + 4);
  };
  auto meta_text = content(parts[0]);
  auto media = content(parts[1]);
  if (!meta_text.ok()) return meta_text.status();
  if (!media.ok()) return media.status();
  auto meta = util::ParseJsonBounded(*meta_text, 32);
  if (!meta.ok() || !meta->is_object()) {
    return absl::InvalidArgumentError(
        "the metadata part of a multipart upload is not a JSON object");
  }
  return std::make_pair(std::move(*meta), std::move(*media));
}

// "bytes S-E/T", "bytes S-E/*", "bytes */T", "bytes */*": first/last (-1 when none), total
// (-1 when "*").
struct ContentRange {
  std::int64_t first = -1, last = -1, total = -1;
};
absl::StatusOr<ContentRange> ParseContentRange(const std::string& header) {
  ContentRange r;
  std::string span, total;
  if (!RE2::FullMatch(header, R"(bytes (\*|\d+-\d+)/(\*|\d+))", &span, &total)) {
    return absl::InvalidArgumentError(
        fmt::format("Content-Range \"{}\" is not \"bytes S-E/T\", \"bytes */T\" or with *",
                    header.substr(0, 100)));
  }
  if (span != "*") {
    std::vector<std::string> ends = absl::StrSplit(span, '-');
    if (!absl::SimpleAtoi(ends[0], &r.first) || !absl::SimpleAtoi(ends[1], &r.last) ||
        r.last < r.first || r.last >= kMaxObjectBytes) {
      return absl::InvalidArgumentError(
          "Content-Range has a reversed byte range or one beyond the largest object");
    }
  }
  if (total != "*" && (!absl::SimpleAtoi(total, &r.total) || r.total > kMaxObjectBytes)) {
    return absl::InvalidArgumentError("Content-Range has an unreadable or too large total");
  }
  return r;
}

void Upload(FakeObjectStore& store, const httplib::Request& req, httplib::Response& res) {
  const std::string bucket = req.matches[1];
  const std::string type = req.get_param_value("uploadType");
  if (!store.has_bucket(bucket)) {
    return ReplyError(res, absl::NotFoundError("The specified bucket does not exist: " + bucket));
  }
  std::string name = req.get_param_value("name");
  if (type == "media") {
    if (name.empty()) return ReplyError(res, absl::InvalidArgumentError("Required: name"));
    auto put = store.put(bucket, name, req.body);
    return put.ok() ? ReplyJson(res, *put) : ReplyError(res, put.status());
  }
  if (type == "multipart") {
    auto parts = SplitMultipart(req.get_header_value("Content-Type"), req.body);
    if (!parts.ok()) return ReplyError(res, parts.status());
    if (name.empty() && parts->first.contains("name") && parts->first["name"].is_string()) {
      name = parts->first["name"].get<std::string>();
    }
    if (name.empty()) return ReplyError(res, absl::InvalidArgumentError("Required: name"));
    auto put = store.put(bucket, name, std::move(parts->second));
    return put.ok() ? ReplyJson(res, *put) : ReplyError(res, put.status());
  }
  if (type == "resumable") {
    if (name.empty()) {
      auto meta = util::ParseJsonBounded(req.body, 32);
      if (meta.ok() && meta->is_object() && meta->contains("name") && (*meta)["name"].is_string()) {
        name = (*meta)["name"].get<std::string>();
      }
    }
    if (name.empty()) return ReplyError(res, absl::InvalidArgumentError("Required: name"));
    const std::string id = store.open_session(bucket, name);
    const std::string host = req.get_header_value("Host");
    res.status = 200;
    res.set_header(
        "Location",
        fmt::format("http://{}/upload/storage/v1/b/{}/o?uploadType=resumable&upload_id={}", host,
                    bucket, id));
    return;
  }
  ReplyError(res, absl::InvalidArgumentError("uploadType must be media, multipart or resumable"));
}

void Chunk(FakeObjectStore& store, const httplib::Request& req, httplib::Response& res) {
  auto range = ParseContentRange(req.get_header_value("Content-Range"));
  if (!range.ok()) return ReplyError(res, range.status());
  auto r = store.apply_chunk(req.get_param_value("upload_id"), range->first, range->last,
                             range->total, req.body);
  if (!r.ok()) return ReplyError(res, r.status());
  if (r->object) return ReplyJson(res, *r->object);
  res.status = 308;
  if (r->persisted > 0) res.set_header("Range", fmt::format("bytes=0-{}", r->persisted - 1));
}

}  // namespace

void FakeObjectStore::add_bucket(const std::string& bucket) {
  std::lock_guard lock(mu_);
  buckets_.insert(bucket);
}

void FakeObjectStore::set_upload_latency(std::chrono::milliseconds latency) {
  std::lock_guard lock(mu_);
  upload_latency_ = latency;
}

std::chrono::milliseconds FakeObjectStore::upload_latency() const {
  std::lock_guard lock(mu_);
  return upload_latency_;
}

void FakeObjectStore::remove_bucket(const std::string& bucket) {
  std::lock_guard lock(mu_);
  buckets_.erase(bucket);
}

bool FakeObjectStore::has_bucket(const std::string& bucket) const {
  std::lock_guard lock(mu_);
  return buckets_.count(bucket) != 0;
}

nlohmann::json FakeObjectStore::metadata_locked(const std::string& bucket, const std::string& name,
                                                const Object& o) const {
  return {
      {"kind", "storage#object"},
      {"bucket", bucket},
      {"name", name},
      {"id", fmt::format("{}/{}/{}", bucket, name, o.generation)},
      {"size", std::to_string(o.bytes.size())},
      {"generation", std::to_string(o.generation)},
      {"contentType", "application/octet-stream"},
      {"timeCreated", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", o.created, absl::UTCTimeZone())}};
}

absl::StatusOr<nlohmann::json> FakeObjectStore::put(const std::string& bucket,
                                                    const std::string& name, std::string bytes) {
  std::lock_guard lock(mu_);
  return put_locked(bucket, name, std::move(bytes));
}

absl::StatusOr<nlohmann::json> FakeObjectStore::put_locked(const std::string& bucket,
                                                           const std::string& name,
                                                           std::string bytes) {
  if (name.empty() || name.size() > 1024 || name.find_first_of("\r\n") != std::string::npos ||
      util::InvalidUtf8At(name).has_value()) {
    return absl::InvalidArgumentError(
        "An object name is 1 to 1,024 bytes of valid UTF-8 without CR or LF");
  }
  if (buckets_.count(bucket) == 0) {
    return absl::NotFoundError("The specified bucket does not exist: " + bucket);
  }
  Object& o = objects_[{bucket, name}];
  o.bytes = std::move(bytes);
  o.generation = next_generation_++;
  o.created = absl::Now();
  return metadata_locked(bucket, name, o);
}

absl::StatusOr<std::string> FakeObjectStore::read(const std::string& bucket,
                                                  const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = objects_.find({bucket, name});
  if (it == objects_.end()) return absl::NotFoundError("No such object: " + bucket + "/" + name);
  return it->second.bytes;
}

absl::StatusOr<nlohmann::json> FakeObjectStore::metadata(const std::string& bucket,
                                                         const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = objects_.find({bucket, name});
  if (it == objects_.end()) return absl::NotFoundError("No such object: " + bucket + "/" + name);
  return metadata_locked(bucket, name, it->second);
}

absl::Status FakeObjectStore::remove(const std::string& bucket, const std::string& name) {
  std::lock_guard lock(mu_);
  if (objects_.erase({bucket, name}) == 0) {
    return absl::NotFoundError("No such object: " + bucket + "/" + name);
  }
  return absl::OkStatus();
}

std::vector<nlohmann::json> FakeObjectStore::list(const std::string& bucket,
                                                  const std::string& prefix,
                                                  const std::string& after, int max,
                                                  bool* more) const {
  std::lock_guard lock(mu_);
  std::vector<nlohmann::json> out;
  *more = false;
  for (auto it = objects_.upper_bound({bucket, after}); it != objects_.end(); ++it) {
    if (it->first.first != bucket) break;
    if (!absl::StartsWith(it->first.second, prefix)) continue;
    if (static_cast<int>(out.size()) == max) {
      *more = true;
      break;
    }
    out.push_back(metadata_locked(bucket, it->first.second, it->second));
  }
  return out;
}

std::string FakeObjectStore::open_session(const std::string& bucket, const std::string& name) {
  std::lock_guard lock(mu_);
  const std::string id = fmt::format("fake-upload-{}", next_session_++);
  sessions_[id] = Session{bucket, name, "", std::nullopt};
  return id;
}

absl::StatusOr<FakeObjectStore::ChunkResult> FakeObjectStore::apply_chunk(const std::string& id,
                                                                          std::int64_t first,
                                                                          std::int64_t last,
                                                                          std::int64_t total,
                                                                          const std::string& body) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return absl::NotFoundError("No such upload session: " + id);
  Session& s = it->second;
  ChunkResult out;
  if (s.done) {
    out.object = s.done;
    out.persisted = static_cast<std::int64_t>(s.bytes.size());
    return out;
  }
  const auto persisted = static_cast<std::int64_t>(s.bytes.size());
  if (first >= 0) {
    const std::int64_t n = last - first + 1;
    if (n != static_cast<std::int64_t>(body.size())) {
      return absl::InvalidArgumentError(
          fmt::format("Content-Range names {} bytes but the request carries {}", n, body.size()));
    }
    if (first > persisted) {
      return absl::InvalidArgumentError(
          fmt::format("the chunk starts at byte {} but only {} are persisted", first, persisted));
    }
    if (total >= 0 && last + 1 > total) {
      return absl::InvalidArgumentError(
          fmt::format("the chunk ends at byte {}, past the stated total of {}", last, total));
    }
  } else if (!body.empty()) {
    return absl::InvalidArgumentError("a Content-Range without bytes carries no body");
  }
  const std::int64_t size = first >= 0 ? std::max(last + 1, persisted) : persisted;
  if (total >= 0 && first < 0 && size != total) {
    return absl::InvalidArgumentError(
        fmt::format("the upload's total is {} bytes but {} were sent", total, persisted));
  }
  // Appended in place (no copy of what is persisted); undone if the upload cannot finish.
  if (size > persisted) {
    s.bytes.append(body, static_cast<std::size_t>(persisted - first), std::string::npos);
  }
  if (total >= 0 && size == total) {
    auto put = put_locked(s.bucket, s.name, s.bytes);
    if (!put.ok()) {
      s.bytes.resize(static_cast<std::size_t>(persisted));
      return put.status();
    }
    s.done = *put;
    out.object = s.done;
    out.persisted = total;
    return out;
  }
  // Not complete: only whole 256 KiB quanta are kept.
  const std::int64_t kept = std::max(size / kQuantum * kQuantum, persisted);
  s.bytes.resize(static_cast<std::size_t>(kept));
  out.persisted = kept;
  return out;
}

std::int64_t FakeObjectStore::object_count() const {
  std::lock_guard lock(mu_);
  return static_cast<std::int64_t>(objects_.size());
}

void RegisterGcsRoutes(httplib::Server& server, std::shared_ptr<FakeObjectStore> store) {
  const std::string bucket = R"(/storage/v1/b/([^/]+)/o)";
  server.Post("/upload" + bucket, [store](const httplib::Request& req, httplib::Response& res) {
    std::this_thread::sleep_for(store->upload_latency());
    Upload(*store, req, res);
  });
  server.Put("/upload" + bucket, [store](const httplib::Request& req, httplib::Response& res) {
    std::this_thread::sleep_for(store->upload_latency());
    Chunk(*store, req, res);
  });
  server.Get(bucket + "/(.+)", [store](const httplib::Request& req, httplib::Response& res) {
    if (req.get_param_value("alt") == "media") {
      auto bytes = store->read(req.matches[1], req.matches[2]);
      if (!bytes.ok()) return ReplyError(res, bytes.status());
      res.status = 200;
      res.set_content(*bytes, "application/octet-stream");
      return;
    }
    auto meta = store->metadata(req.matches[1], req.matches[2]);
    meta.ok() ? ReplyJson(res, *meta) : ReplyError(res, meta.status());
  });
  server.Get(bucket, [store](const httplib::Request& req, httplib::Response& res) {
    if (!store->has_bucket(req.matches[1])) {
      return ReplyError(res, absl::NotFoundError("The specified bucket does not exist"));
    }
    int max = 1000;
    if (req.has_param("maxResults") &&
        (!absl::SimpleAtoi(req.get_param_value("maxResults"), &max) || max < 1)) {
      return ReplyError(res, absl::InvalidArgumentError("maxResults must be a positive number"));
    }
    max = std::min(max, 1000);
    bool more = false;
    auto items = store->list(req.matches[1], req.get_param_value("prefix"),
                             req.get_param_value("pageToken"), max, &more);
    nlohmann::json out = {{"kind", "storage#objects"}, {"items", items}};
    if (more && !items.empty()) out["nextPageToken"] = items.back()["name"];
    ReplyJson(res, out);
  });
  server.Delete(bucket + "/(.+)", [store](const httplib::Request& req, httplib::Response& res) {
    absl::Status removed = store->remove(req.matches[1], req.matches[2]);
    if (!removed.ok()) return ReplyError(res, removed);
    res.status = 204;
  });
}

}  // namespace gcpstream::testing::gcs_fake
