#include "gcpstream/spanner/source/spanner_read_client.h"

namespace gcpstream::spanner {

SpannerReadClient::SpannerReadClient(const std::string& database, std::shared_ptr<SpannerStub> stub,
                                     DataClientOptions options)
    : timers_(std::make_shared<util::TimerThread>()),
      pool_(std::make_shared<SessionPool>(database, stub, timers_)),
      client_(std::make_unique<SpannerDataClient>(database, std::move(stub), pool_,
                                                  std::move(options))) {}

SpannerReadClient::~SpannerReadClient() { pool_->shutdown(); }

}  // namespace gcpstream::spanner
