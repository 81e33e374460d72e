#ifndef GCPSTREAM_BIGTABLE_SINK_BIGTABLE_SINK_ADAPTER_H_
#define GCPSTREAM_BIGTABLE_SINK_BIGTABLE_SINK_ADAPTER_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/bigtable/admin/table_admin.h"
#include "gcpstream/bigtable/client/mutation_batcher.h"
#include "gcpstream/bigtable/sink/bigtable_writer_options.h"
#include "gcpstream/connector/async_sink_writer.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/failure_handler.h"

namespace gcpstream::bigtable {

enum class CreateDisposition { kCreateNever, kCreateIfNeeded };

// The clients of one (project, instance): batchers of its tables over one channel, and a table
// admin opened on demand.
class InstanceClient {
 public:
  virtual ~InstanceClient() = default;
  virtual absl::StatusOr<std::shared_ptr<MutationBatcher>> batcher(
      const connector::TableDestination& table, std::shared_ptr<MutationListener> listener) = 0;
  virtual absl::StatusOr<std::shared_ptr<TableAdmin>> admin() = 0;
  // Releases the channel. Blocking but short.
  virtual absl::Status close() = 0;
};

class InstanceClientFactory {
 public:
  virtual ~InstanceClientFactory() = default;
  virtual absl::StatusOr<std::shared_ptr<InstanceClient>> open(const std::string& project,
                                                               const std::string& instance) = 0;
};

struct BigtableWriterConfig {
  BigtableWriterOptions options;
  CreateDisposition create_disposition = CreateDisposition::kCreateNever;
  std::optional<TableCreateOptions> table_create_options;
  std::shared_ptr<connector::FailureHandler> failure_handler;
  std::shared_ptr<InstanceClientFactory> clients;
};

// The Bigtable sink's writer: the shared asynchronous core (connector/async_sink_writer.h) over
// one batcher per table, grouped by instance: one client (channel) per (project, instance), at
// most max_active_instances, released with its instance's last table. Its adapter adds what is
// Bigtable's own:
//  - an entry the service documents as invalid (empty or oversized row key, no mutation, over
//    100,000 mutations) is a failure of the record, routed before any RPC;
//  - declared aggregate family types are compared with the table before its first entry;
//  - NOT_FOUND under CREATE_IF_NEEDED creates the table and its declared families
//    (idempotently: an existing table gets the families it lacks); a family the entries name
//    that the options do not declare fails at once naming it; under CREATE_NEVER a NOT_FOUND
//    fails naming the disposition;
//  - metrics inFlightEntries, parkedEntries, activeClients, tablesCreated, columnFamiliesAdded,
//    bigtableShutdownsAbandoned.
using BigtableWriterCore =
    connector::AsyncSinkWriter<connector::TableDestination,
                               google::bigtable::v2::MutateRowsRequest::Entry>;

std::unique_ptr<BigtableWriterCore> MakeBigtableWriterCore(BigtableWriterConfig config,
                                                           WriterInitContext& context);

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_SINK_BIGTABLE_SINK_ADAPTER_H_
