#ifndef GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_CDC_H_
#define GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_CDC_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/fakes/bigquery/fake_table_schema.h"

// Change data capture as the fake applies it, after the BigQuery docs "Stream table updates
// with change data capture": a row appended to a table's default stream with the `_CHANGE_TYPE`
// pseudocolumn is an UPSERT (insert, or replace the row with the same primary key) or a DELETE
// (remove it); the optional `_CHANGE_SEQUENCE_NUMBER` orders the changes of one key (one to four
// '/'-separated sections of up to 16 hex digits, compared section by section as unsigned
// numbers), a change older than the key's last applied one being ignored; without it changes
// apply in ingestion order. The table must declare a primary key (tableConstraints, at most 16
// columns). Where the docs are silent the fake chooses, and says so here: a missing section
// compares as 0; an equal sequence applies (ingestion order breaks the tie); a DELETE's
// sequence is remembered, so an older UPSERT arriving after it stays ignored.
namespace gcpstream::testing::bigquery_fake {

inline constexpr char kChangeTypeField[] = "_CHANGE_TYPE";
inline constexpr char kChangeSequenceField[] = "_CHANGE_SEQUENCE_NUMBER";

// Whether a writer-schema field name is one of the two pseudocolumns (case-insensitive).
bool IsCdcPseudocolumn(std::string_view name);

// A sequence value's sections; INVALID_ARGUMENT for anything but 1..4 sections of 1..16 hex
// digits.
absl::StatusOr<std::vector<std::uint64_t>> ParseChangeSequence(std::string_view text);

// <0, 0, >0 as `a` orders before, with, after `b`.
int CompareChangeSequence(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b);

// The primary key of a table resource (tableConstraints.primaryKey.columns); empty when none.
std::vector<std::string> PrimaryKeyColumns(const nlohmann::json& resource);

// tables.insert's check of a declared key: 1..16 distinct top-level scalar columns of `schema`.
absl::Status CheckPrimaryKey(const nlohmann::json& resource, const Schema& schema);

// The last applied sequence per key (a key's JSON text) of one table.
struct CdcLedger {
  std::map<std::string, std::vector<std::uint64_t>> applied;
};

// Applies decoded CDC rows (RowDecoder's JSON with the pseudocolumns as string members) in
// order to a table's visible rows and their visibility times. The pseudocolumns never reach a
// visible row. Linear in the table's rows per change: the fake is for tests, not for volume.
void ApplyChanges(const std::vector<std::string>& key_columns, std::vector<nlohmann::json> changes,
                  absl::Time now, std::vector<nlohmann::json>* rows, std::vector<absl::Time>* times,
                  CdcLedger* ledger);

}  // namespace gcpstream::testing::bigquery_fake

#endif  // GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_CDC_H_
