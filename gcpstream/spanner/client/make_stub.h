#ifndef GCPSTREAM_SPANNER_CLIENT_MAKE_STUB_H_
#define GCPSTREAM_SPANNER_CLIENT_MAKE_STUB_H_

#include <memory>

#include "absl/status/statusor.h"
#include "gcpstream/connector/client_options.h"
#include "gcpstream/spanner/client/spanner_stub.h"

namespace gcpstream::spanner {

// The client a Spanner connector talks through: one channel to `client`'s endpoint (the
// service, or an emulator, or the BatchWrite stand-in in front of one).
absl::StatusOr<std::shared_ptr<SpannerStub>> MakeSpannerStub(
    const connector::ClientOptions& client);

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_CLIENT_MAKE_STUB_H_
