#include "gcpstream/spanner/source/spanner_read_client.h"

#include "gcpstream/api/status_macros.h"
#include "gcpstream/spanner/client/make_stub.h"

namespace gcpstream::spanner {

SpannerReadClient::SpannerReadClient(const std::string& database, std::shared_ptr<SpannerStub> stub,
                                     DataClientOptions options)
    : timers_(std::make_shared<util::TimerThread>()),
      pool_(std::make_shared<SessionPool>(database, stub, timers_)),
      client_(std::make_unique<SpannerDataClient>(database, std::move(stub), pool_,
                                                  std::move(options))) {}

SpannerReadClient::~SpannerReadClient() { pool_->shutdown(); }

SpannerReadClientFactory MakeSpannerReadClientFactory(std::string database,
                                                      connector::ClientOptions client,
                                                      std::shared_ptr<SpannerStub> stub,
                                                      DataClientOptions options) {
  return [database = std::move(database), client = std::move(client), stub = std::move(stub),
          options = std::move(options)]() -> absl::StatusOr<std::shared_ptr<SpannerReadClient>> {
    std::shared_ptr<SpannerStub> use = stub;
    if (!use) {
      GCP_ASSIGN_OR_RETURN(use, MakeSpannerStub(client));
    }
    return std::make_shared<SpannerReadClient>(database, std::move(use), options);
  };
}

}  // namespace gcpstream::spanner
