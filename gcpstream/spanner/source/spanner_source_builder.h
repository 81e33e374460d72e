#ifndef GCPSTREAM_SPANNER_SOURCE_SPANNER_SOURCE_BUILDER_H_
#define GCPSTREAM_SPANNER_SOURCE_SPANNER_SOURCE_BUILDER_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "gcpstream/connector/client_options.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/spanner/client/data_client.h"
#include "gcpstream/spanner/client/spanner_stub.h"
#include "gcpstream/spanner/source/spanner_read_client.h"

namespace gcpstream::spanner {

// What the builders of both Spanner sources (SpannerSource, SpannerChangeStreamSource) share:
// the database, how to reach it, and the seams tests use. `Derived` is the builder itself, so
// the setters chain with its own. Not thread-safe (a builder is used by one thread).
template <typename Derived>
class SpannerSourceBuilderBase {
 public:
  Derived& database(connector::DatabaseDestination database) {
    database_ = std::move(database);
    return self();
  }
  // A service-account JSON key file, read by each enumerator and reader as it starts (the job
  // keeps the path, never the key). Not with emulator_endpoint.
  Derived& service_account_key_file(std::string path) {
    note(client_.set_service_account_key_file(std::move(path)));
    return self();
  }
  // host:port of a Spanner emulator: plaintext, no credentials.
  Derived& emulator_endpoint(std::string_view host_port) {
    note(client_.set_emulator_endpoint(host_port));
    return self();
  }
  // Tests: the stub every enumerator and reader uses instead of a gRPC client.
  Derived& stub(std::shared_ptr<SpannerStub> stub) {
    stub_ = std::move(stub);
    return self();
  }
  // Tests: the data client's options (retry budget, sleeps).
  Derived& data_client_options(DataClientOptions options) {
    data_options_ = std::move(options);
    return self();
  }

 protected:
  Derived& self() { return static_cast<Derived&>(*this); }
  void note(absl::Status s) {
    if (error_.ok() && !s.ok()) error_ = std::move(s);
  }
  // INVALID_ARGUMENT: an earlier setter's error, a missing database, or client options that do
  // not go together. `who` names the source in the message.
  absl::Status validate_client(std::string_view who) const {
    if (!error_.ok()) return error_;
    if (!database_) {
      return absl::InvalidArgumentError(std::string(who) + " needs database(...)");
    }
    return client_.validate();
  }
  // `idle_timeout`: DataClientOptions::stream_idle_timeout when the options leave it 0.
  SpannerReadClientFactory client_factory(
      std::chrono::milliseconds idle_timeout = std::chrono::milliseconds(0)) const {
    DataClientOptions options = data_options_;
    if (options.stream_idle_timeout.count() == 0) options.stream_idle_timeout = idle_timeout;
    return MakeSpannerReadClientFactory(database_->resource_name(), client_, stub_, options);
  }

  std::optional<connector::DatabaseDestination> database_;
  connector::ClientOptions client_;
  std::shared_ptr<SpannerStub> stub_;
  DataClientOptions data_options_;
  absl::Status error_;
};

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_SOURCE_SPANNER_SOURCE_BUILDER_H_
