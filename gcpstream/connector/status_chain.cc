#include "gcpstream/connector/status_chain.h"

#include <string>

#include "absl/strings/cord.h"
#include "gcpstream/util/bytes.h"

namespace gcpstream::connector {
namespace {

constexpr char kCauseUrl[] = "type.gcpstream.dev/cause";

// code, message, then the cause's own encoding (or nothing).
std::string Encode(const absl::Status& status) {
  util::ByteWriter w;
  w.put_u32(static_cast<std::uint32_t>(status.code()));
  w.put_string(std::string(status.message()));
  auto nested = status.GetPayload(kCauseUrl);
  w.put_bool(nested.has_value());
  if (nested) w.put_string(std::string(*nested));
  return w.take();
}

bool Decode(const std::string& bytes, std::vector<absl::Status>& out) {
  std::string current = bytes;
  while (true) {
    util::ByteReader r(current);
    auto code = r.u32();
    auto message = r.string();
    auto has_cause = r.boolean();
    if (!code.ok() || !message.ok() || !has_cause.ok()) return false;
    out.emplace_back(static_cast<absl::StatusCode>(*code), *message);
    if (!*has_cause) return true;
    auto next = r.string();
    if (!next.ok()) return false;
    current = *next;
  }
}

}  // namespace

absl::Status WithCause(absl::Status status, const absl::Status& cause) {
  if (status.ok()) return status;
  status.SetPayload(kCauseUrl, absl::Cord(Encode(cause)));
  return status;
}

std::vector<absl::Status> CauseChain(const absl::Status& status) {
  std::vector<absl::Status> chain;
  chain.push_back(status);
  if (auto payload = status.GetPayload(kCauseUrl)) Decode(std::string(*payload), chain);
  return chain;
}

}  // namespace gcpstream::connector
