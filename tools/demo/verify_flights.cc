// Verifies the demo's result: the Bigtable table holds exactly one row per flight in the input
// file, keyed origin#date#seq (seq = the flight's 0-based position in the file), with the
// flight's delay, distance and destination, each cell stamped with the flight time.
//
//   verify_flights --file flights-20k.json --endpoint 127.0.0.1:8086
//                  --table projects/p/instances/i/tables/t
//
// Exit status 0 when everything matches, 1 otherwise (the first mismatches are printed).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "absl/time/time.h"
#include "tests/support/bigtable_emulator.h"

namespace {

std::string Text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Check the demo's Bigtable table against the flights file"};
  std::string file, endpoint, table;
  app.add_option("--file", file, "the JSON array the demo read")->required();
  app.add_option("--endpoint", endpoint, "the Bigtable emulator's host:port")->required();
  app.add_option("--table", table, "projects/<p>/instances/<i>/tables/<t>")->required();
  CLI11_PARSE(app, argc, argv);

  std::ifstream in(file);
  if (!in) {
    std::fprintf(stderr, "verify: cannot read the input file\n");
    return 1;
  }
  nlohmann::json flights = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!flights.is_array()) {
    std::fprintf(stderr, "verify: the input file is not a JSON array\n");
    return 1;
  }
  gcpstream::testing::BigtableEmulatorClient client(endpoint);
  auto rows = client.read_rows(table);
  if (!rows.ok()) {
    std::fprintf(stderr, "verify: reading the table failed: %s\n",
                 std::string(rows.status().message()).c_str());
    return 1;
  }
  int missing = 0, wrong = 0, reported = 0;
  std::set<std::string> expected_keys;
  auto report = [&](const std::string& line) {
    if (++reported <= 10) std::fprintf(stderr, "verify: %s\n", line.c_str());
  };
  for (std::size_t seq = 0; seq < flights.size(); ++seq) {
    const auto& f = flights[seq];
    const std::string key = fmt::format("{}#{}#{}", Text(f["origin"]), Text(f["date"]), seq);
    expected_keys.insert(key);
    auto it = rows->find(key);
    if (it == rows->end()) {
      ++missing;
      report("missing row " + key);
      continue;
    }
    absl::Time when;
    std::string err;
    if (!absl::ParseTime("%Y/%m/%d %H:%M", Text(f["date"]), absl::UTCTimeZone(), &when, &err)) {
      report("unparseable date in the input: " + Text(f["date"]));
      ++wrong;
      continue;
    }
    const std::int64_t micros = absl::ToUnixMillis(when) * 1000;
    std::map<std::string, int> seen;
    bool ok = true;
    for (const auto& cell : it->second) {
      seen[cell.qualifier]++;
      const auto want = f.find(cell.qualifier);
      if (cell.family != "f" || want == f.end() || Text(*want) != cell.value ||
          cell.timestamp_micros != micros) {
        ok = false;
        report(fmt::format("row {}: unexpected cell {}:{}={} @{}", key, cell.family, cell.qualifier,
                           cell.value, cell.timestamp_micros));
      }
    }
    for (const char* q : {"delay", "distance", "destination"}) {
      if (seen[q] != 1) {
        ok = false;
        report(fmt::format("row {}: {} version(s) of f:{}", key, seen[q], q));
      }
    }
    if (!ok) ++wrong;
  }
  int extra = 0;
  for (const auto& [key, cells] : *rows) {
    if (!expected_keys.contains(key)) {
      ++extra;
      report("unexpected row " + key);
    }
  }
  std::printf(
      "verify: %zu input records, %zu rows in the table: %d missing, %d with wrong cells, %d "
      "unexpected\n",
      flights.size(), rows->size(), missing, wrong, extra);
  const bool pass = missing == 0 && wrong == 0 && extra == 0 && rows->size() == flights.size();
  std::printf("verify: %s\n", pass ? "PASS: exactly one correct row per input record" : "FAIL");
  return pass ? 0 : 1;
}
