#include "tests/fakes/bigquery/fake_rest_service.h"

#include <fmt/format.h>

#include <cmath>

#include "absl/strings/numbers.h"
#include "gcpstream/util/json.h"

namespace gcpstream::testing::bigquery_fake {
namespace {

constexpr std::size_t kMaxJsonDepth = 64;
constexpr std::size_t kMaxBodyBytes = 10 * 1000 * 1000;
constexpr std::int64_t kDefaultPageRows = 100000;
// A page ends after the row that takes it past this many bytes of JSON, whatever maxResults
// says (tabledata.list answers at most about 10 MB; the rest comes with pageToken).
constexpr std::size_t kMaxPageBytes = 10 * 1000 * 1000;

nlohmann::json Cell(const nlohmann::json& value, const Field& field);

nlohmann::json Record(const nlohmann::json& row, const Schema& schema) {
  nlohmann::json f = nlohmann::json::array();
  for (const auto& column : schema) {
    f.push_back(Cell(row.contains(column.name) ? row[column.name] : nlohmann::json(), column));
  }
  return {{"f", f}};
}

nlohmann::json Scalar(const nlohmann::json& v, const Field& field) {
  if (v.is_null()) return nullptr;
  if (field.type == "RECORD") return Record(v, field.fields);
  if (v.is_string()) return v;
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return fmt::format("{}", v.get<double>());
  return v.dump();
}

nlohmann::json Cell(const nlohmann::json& value, const Field& field) {
  if (field.mode == "REPEATED") {
    nlohmann::json items = nlohmann::json::array();
    if (value.is_array()) {
      for (const auto& v : value) items.push_back({{"v", Scalar(v, field)}});
    }
    return {{"v", items}};
  }
  return {{"v", Scalar(value, field)}};
}

template <typename F>
auto Handle(std::shared_ptr<FakeStore> store, F f) {
  return [store = std::move(store), f](const httplib::Request& req, httplib::Response& res) {
    auto body = ParseRestBody(req);
    if (!body.ok()) return ReplyStatus(res, body.status());
    absl::StatusOr<nlohmann::json> out;
    try {  // a field of the wrong JSON type in a request is the caller's mistake: 400
      out = f(*store, req, *body);
    } catch (const nlohmann::json::exception& e) {
      out = absl::InvalidArgumentError(std::string("malformed request: ") + e.what());
    }
    if (!out.ok()) return ReplyStatus(res, out.status());
    ReplyJson(res, 200, *out);
  };
}

std::int64_t Param(const httplib::Request& req, const char* name, std::int64_t fallback) {
  std::int64_t v = fallback;
  if (req.has_param(name) && !absl::SimpleAtoi(req.get_param_value(name), &v)) return -1;
  return v;
}

}  // namespace

void ReplyJson(httplib::Response& res, int http, const nlohmann::json& body) {
  res.status = http;
  // Names from the request may hold bytes that are not UTF-8: replaced, never thrown on.
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  "application/json; charset=UTF-8");
}

void ReplyStatus(httplib::Response& res, const absl::Status& status) {
  int http = 500;
  std::string reason = "backendError";
  std::string name = "INTERNAL";
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      http = 400, reason = "invalid", name = "INVALID_ARGUMENT";
      break;
    case absl::StatusCode::kNotFound:
      http = 404, reason = "notFound", name = "NOT_FOUND";
      break;
    case absl::StatusCode::kAlreadyExists:
      http = 409, reason = "duplicate", name = "ALREADY_EXISTS";
      break;
    case absl::StatusCode::kFailedPrecondition:
      http = 412, reason = "conditionNotMet", name = "FAILED_PRECONDITION";
      break;
    default:
      break;
  }
  const std::string message(status.message());
  ReplyJson(res, http,
            {{"error",
              {{"code", http},
               {"message", message},
               {"status", name},
               {"errors", {{{"reason", reason}, {"message", message}, {"domain", "global"}}}}}}});
}

// The request body as JSON (an empty body is an empty object).
absl::StatusOr<nlohmann::json> ParseRestBody(const httplib::Request& req) {
  if (req.body.size() > kMaxBodyBytes) {
    return absl::InvalidArgumentError("Request body exceeds 10 MB");
  }
  if (req.body.empty()) return nlohmann::json::object();
  auto body = util::ParseJsonBounded(req.body, kMaxJsonDepth);
  if (!body.ok() || !body->is_object()) {
    return absl::InvalidArgumentError("The request body is not a JSON object");
  }
  return body;
}

nlohmann::json ToTableDataRow(const nlohmann::json& row, const Schema& schema) {
  return Record(row, schema);
}

void RegisterRestRoutes(httplib::Server& server, std::shared_ptr<FakeStore> store) {
  server.set_payload_max_length(kMaxBodyBytes + 1);
  const std::string p = R"(/bigquery/v2/projects/([^/]+))";
  const std::string d = p + R"(/datasets/([^/]+))";
  const std::string t = d + R"(/tables/([^/]+))";
  server.Post(p + "/datasets", Handle(store, [](FakeStore& s, const httplib::Request& req,
                                                const nlohmann::json& body) {
                return s.insert_dataset(req.matches[1], body);
              }));
  server.Get(d, Handle(store, [](FakeStore& s, const httplib::Request& req, const nlohmann::json&) {
               return s.get_dataset(req.matches[1], req.matches[2]);
             }));
  server.Post(d + "/tables", Handle(store, [](FakeStore& s, const httplib::Request& req,
                                              const nlohmann::json& body) {
                return s.insert_table(req.matches[1], req.matches[2], body);
              }));
  server.Get(t, Handle(store, [](FakeStore& s, const httplib::Request& req, const nlohmann::json&) {
               return s.get_table(req.matches[1], req.matches[2], req.matches[3]);
             }));
  auto update = [](bool replace) {
    return [replace](FakeStore& s, const httplib::Request& req, const nlohmann::json& body) {
      return s.update_table(req.matches[1], req.matches[2], req.matches[3], body, replace,
                            req.get_header_value("If-Match"));
    };
  };
  server.Delete(t, Handle(store,
                          [](FakeStore& s, const httplib::Request& req,
                             const nlohmann::json&) -> absl::StatusOr<nlohmann::json> {
                            absl::Status deleted =
                                s.delete_table(req.matches[1], req.matches[2], req.matches[3]);
                            if (!deleted.ok()) return deleted;
                            return nlohmann::json::object();
                          }));
  server.Patch(t, Handle(store, update(false)));
  server.Put(t, Handle(store, update(true)));
  server.Get(
      t + "/data",
      Handle(store,
             [](FakeStore& s, const httplib::Request& req,
                const nlohmann::json&) -> absl::StatusOr<nlohmann::json> {
               auto table = s.get_table(req.matches[1], req.matches[2], req.matches[3]);
               if (!table.ok()) return table.status();
               auto schema = ParseSchema((*table)["schema"]["fields"]);
               if (!schema.ok()) return schema.status();
               auto rows =
                   s.rows(fmt::format("projects/{}/datasets/{}/tables/{}", req.matches[1].str(),
                                      req.matches[2].str(), req.matches[3].str()));
               if (!rows.ok()) return rows.status();
               const std::int64_t max = Param(req, "maxResults", kDefaultPageRows);
               std::int64_t start = Param(req, "startIndex", 0);
               if (req.has_param("pageToken")) start = Param(req, "pageToken", 0);
               if (max <= 0 || start < 0) {
                 return absl::InvalidArgumentError(
                     "maxResults, startIndex and pageToken must "
                     "be non-negative integers");
               }
               nlohmann::json out = {{"kind", "bigquery#tableDataList"},
                                     {"totalRows", std::to_string(rows->size())},
                                     {"rows", nlohmann::json::array()}};
               const auto total = static_cast<std::int64_t>(rows->size());
               const std::int64_t end =
                   start >= total ? total : start + std::min(max, total - start);  // no overflow
               std::int64_t next = std::min(start, total);
               std::size_t bytes = 0;
               while (next < end && bytes < kMaxPageBytes) {
                 nlohmann::json row =
                     ToTableDataRow((*rows)[static_cast<std::size_t>(next)], *schema);
                 bytes += row.dump().size();
                 out["rows"].push_back(std::move(row));
                 ++next;
               }
               if (next < total) out["pageToken"] = std::to_string(next);
               return out;
             }));
  // tabledata.insertAll: {"rows": [{"json": {...}}, ...]}, every row landing at once. The fake
  // keeps the values as given (RowDecoder's shapes) and answers no insertErrors.
  server.Post(t + "/insertAll",
              Handle(store,
                     [](FakeStore& s, const httplib::Request& req,
                        const nlohmann::json& body) -> absl::StatusOr<nlohmann::json> {
                       if (!body.contains("rows") || !body["rows"].is_array()) {
                         return absl::InvalidArgumentError("insertAll needs a rows array");
                       }
                       std::vector<nlohmann::json> rows;
                       for (const nlohmann::json& r : body["rows"]) {
                         if (!r.is_object() || !r.contains("json") || !r["json"].is_object()) {
                           return absl::InvalidArgumentError("each row needs a json object");
                         }
                         rows.push_back(r["json"]);
                       }
                       absl::Status st = s.insert_rows(
                           fmt::format("projects/{}/datasets/{}/tables/{}", req.matches[1].str(),
                                       req.matches[2].str(), req.matches[3].str()),
                           std::move(rows));
                       if (!st.ok()) return st;
                       return nlohmann::json{{"kind", "bigquery#tableDataInsertAllResponse"}};
                     }));
  server.Post("/fake/v1/options",
              Handle(store,
                     [](FakeStore& s, const httplib::Request&,
                        const nlohmann::json& body) -> absl::StatusOr<nlohmann::json> {
                       FakeOptions o = s.options();
                       try {
                         o.unavailable_on_append = body.value("unavailableOnAppend", 0);
                         o.lose_response_on_append = body.value("loseResponseOnAppend", 0);
                         o.stall_on_append = body.value("stallOnAppend", 0);
                         o.stall = std::chrono::milliseconds(body.value("stallMs", 0));
                         o.unavailable_on_flush = body.value("unavailableOnFlush", 0);
                         o.resource_exhausted_from = body.value("resourceExhaustedFrom", 0);
                         o.resource_exhausted_count = body.value("resourceExhaustedCount", 0);
                         o.append_latency =
                             std::chrono::milliseconds(body.value("appendLatencyMs", 0));
                         o.read_rows_per_stream = body.value("readRowsPerStream", 10000);
                         o.read_rows_per_response = body.value("readRowsPerResponse", 1000);
                         o.read_fail_after_rows = body.value("readFailAfterRows", 0);
                         o.read_fail_count = body.value("readFailCount", 0);
                         o.read_fail_code = body.value("readFailCode", 14);
                         // Like every key here, an absent one means its default.
                         o.read_session_lifetime =
                             absl::Seconds(body.value("readSessionLifetimeSeconds", 6 * 3600));
                         if (body.contains("streamIdleExpirySeconds")) {
                           o.stream_idle_expiry =
                               absl::Seconds(body["streamIdleExpirySeconds"].get<std::int64_t>());
                         }
                         if (body.contains("tablePropagationMs")) {
                           o.table_propagation =
                               absl::Milliseconds(body["tablePropagationMs"].get<std::int64_t>());
                         }
                       } catch (const nlohmann::json::exception& e) {
                         return absl::InvalidArgumentError(std::string("bad option: ") + e.what());
                       }
                       s.set_options(std::move(o));
                       return nlohmann::json::object();
                     }));
  server.Post(
      "/fake/v1/clock:advance",
      Handle(store,
             [](FakeStore& s, const httplib::Request&,
                const nlohmann::json& body) -> absl::StatusOr<nlohmann::json> {
               if (!body.contains("seconds") || !body["seconds"].is_number() ||
                   !(std::abs(body["seconds"].get<double>()) <= 1e9)) {
                 return absl::InvalidArgumentError("{\"seconds\": S} is required, |S| at most 1e9");
               }
               s.advance_clock(absl::Seconds(body["seconds"].get<double>()));
               return nlohmann::json{{"now", absl::FormatTime(s.now())}};
             }));
}

}  // namespace gcpstream::testing::bigquery_fake
