#ifndef GCPSTREAM_BIGTABLE_CLIENT_BLOCKING_STUB_H_
#define GCPSTREAM_BIGTABLE_CLIENT_BLOCKING_STUB_H_

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "gcpstream/connector/client_options.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"

namespace gcpstream::bigtable {

// Makes the generated Bigtable data stub the sources' blocking streams (ReadRows,
// SampleRowKeys, ReadChangeStream) run on. Tests pass their own to reach a fake.
using BigtableStubFactory =
    std::function<absl::StatusOr<std::shared_ptr<google::bigtable::v2::Bigtable::StubInterface>>()>;

// A factory opening one channel per call to the service (or the emulator/fake `client` names),
// with a receive limit of 256 MiB: a ReadRows response or a chunked change carries at most one
// cell piece per message, and a cell is at most 100 MiB (Bigtable's documented limit).
BigtableStubFactory MakeBlockingBigtableStubFactory(connector::ClientOptions client);

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_CLIENT_BLOCKING_STUB_H_
