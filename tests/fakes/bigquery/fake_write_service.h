#ifndef GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_WRITE_SERVICE_H_
#define GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_WRITE_SERVICE_H_

#include <memory>

#include "google/cloud/bigquery/storage/v1/storage.grpc.pb.h"
#include "tests/fakes/bigquery/fake_store.h"

namespace gcpstream::testing::bigquery_fake {

// google.cloud.bigquery.storage.v1.BigQueryWrite over a FakeStore. One AppendRows connection
// writes to one stream (named by its first request, which also carries the writer schema);
// each request is answered in order, with errors in the response (the connection stays open)
// as the AppendRowsResponse reference describes, except the injected faults, which end the
// connection with UNAVAILABLE.
std::unique_ptr<google::cloud::bigquery::storage::v1::BigQueryWrite::Service> MakeWriteService(
    std::shared_ptr<FakeStore> store);

// The documented 10 MB bound on one AppendRows request (Storage Write API quotas).
inline constexpr std::size_t kMaxAppendRequestBytes = 10 * 1000 * 1000;

}  // namespace gcpstream::testing::bigquery_fake

#endif  // GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_WRITE_SERVICE_H_
