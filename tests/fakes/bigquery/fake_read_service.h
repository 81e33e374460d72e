#ifndef GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_READ_SERVICE_H_
#define GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_READ_SERVICE_H_

#include <memory>

#include "google/cloud/bigquery/storage/v1/storage.grpc.pb.h"
#include "tests/fakes/bigquery/fake_store.h"

namespace gcpstream::testing::bigquery_fake {

// google.cloud.bigquery.storage.v1.BigQueryRead over a FakeStore, following the Storage Read
// API reference:
//  - CreateReadSession: AVRO only (ARROW answers INVALID_ARGUMENT: the fake serves no Arrow);
//    the table's visible rows are copied when the session is created (its snapshot), or as of
//    table_modifiers.snapshot_time inside the 7-day time-travel window; read_options.
//    selected_fields (top-level columns, case-insensitive; an unknown one is INVALID_ARGUMENT)
//    and row_restriction (see RowRestriction); streams of at most read_rows_per_stream rows,
//    raised towards preferred_min_stream_count (never more streams than rows) and capped by
//    max_stream_count; no streams for no rows; expire_time is creation + read_session_lifetime.
//    A missing table is NOT_FOUND; a view INVALID_ARGUMENT (non-table entities ...).
//  - ReadRows: rows from `offset` in blocks of read_rows_per_response, row_count set; an offset
//    equal to the stream's row count ends at once with no rows and no error; a larger one is
//    FAILED_PRECONDITION naming the offset; a session past its expire_time is
//    FAILED_PRECONDITION naming the expiry; an unknown stream NOT_FOUND.
//  - SplitReadStream: a stream of n rows split at fraction f (0 < f < 1) into a primary of the
//    first floor(n*f) rows and a remainder of the rest; the original stream then reads as the
//    primary does. A split that would leave either side empty returns neither stream.
// Thread-safe.
std::unique_ptr<google::cloud::bigquery::storage::v1::BigQueryRead::Service> MakeReadService(
    std::shared_ptr<FakeStore> store);

}  // namespace gcpstream::testing::bigquery_fake

#endif  // GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_READ_SERVICE_H_
