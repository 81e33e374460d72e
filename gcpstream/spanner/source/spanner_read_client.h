#ifndef GCPSTREAM_SPANNER_SOURCE_SPANNER_READ_CLIENT_H_
#define GCPSTREAM_SPANNER_SOURCE_SPANNER_READ_CLIENT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gcpstream/connector/client_options.h"
#include "gcpstream/spanner/client/data_client.h"
#include "gcpstream/util/timer_thread.h"

namespace gcpstream::spanner {

// The data client a source's enumerator or reader reads through, with the session pool and
// timer thread it needs; the pool is shut down (its idle sessions deleted) when this goes. A
// session taken out with AcquireSession and never given back is not deleted: that is how the
// batch transaction's session outlives the enumerator that opened it. Thread-safe.
class SpannerReadClient {
 public:
  SpannerReadClient(const std::string& database, std::shared_ptr<SpannerStub> stub,
                    DataClientOptions options = {});
  ~SpannerReadClient();
  SpannerDataClient& data() { return *client_; }

 private:
  std::shared_ptr<util::TimerThread> timers_;
  std::shared_ptr<SessionPool> pool_;
  std::unique_ptr<SpannerDataClient> client_;
};

// Makes a client for one enumerator or reader (each opens its own channel).
using SpannerReadClientFactory =
    std::function<absl::StatusOr<std::shared_ptr<SpannerReadClient>>()>;

// The factory of a source: each call opens a channel to `database` (a resource name) as
// `client` says, or uses `stub` when a test gave one.
SpannerReadClientFactory MakeSpannerReadClientFactory(std::string database,
                                                      connector::ClientOptions client,
                                                      std::shared_ptr<SpannerStub> stub,
                                                      DataClientOptions options);

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_SOURCE_SPANNER_READ_CLIENT_H_
