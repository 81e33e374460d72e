#ifndef GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_JOBS_H_
#define GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_JOBS_H_

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/fakes/bigquery/fake_query.h"
#include "tests/fakes/bigquery/fake_store.h"
#include "tests/fakes/gcs/fake_gcs.h"

namespace httplib {
class Server;
}

namespace gcpstream::testing::bigquery_fake {

// BigQuery v2 jobs, after the public REST reference ("jobs.insert", "jobs.get", "Job",
// "JobConfigurationLoad", "JobConfigurationTableCopy") and "Running jobs programmatically":
//   POST /bigquery/v2/projects/P/jobs           jobs.insert
//   GET  /bigquery/v2/projects/P/jobs/ID        jobs.get (?location= accepted)
//   POST /fake/v1/jobs:options  {"pollsUntilDone": N, "loseInsertResponses": N}
// - A job id is the caller's (jobReference.jobId: letters, digits, '_' and '-', at most 1,024
//   characters) or generated. An id already used in the project answers 409 (reason
//   "duplicate", "Already Exists: Job P:LOCATION.ID") and leaves the existing job untouched; it
//   can still be fetched. A configuration the service refuses up front answers 400.
// - A job runs in jobReference.location, or, when none is given, in the location of the dataset
//   its query reads (a load's or copy's destination dataset), US by default; the job resource
//   names it. jobs.get finds a job only in its location (?location=), and without one only in
//   the US and EU multi-regions: a regional job fetched without its location is 404.
// - A job answers state RUNNING to its first `pollsUntilDone` jobs.get calls [1] and is DONE
//   from then on; its work happens, all at once, when it turns DONE (so rows land only then).
//   A failed job is DONE with status.errorResult {reason, message} and status.errors.
// - load: sourceFormat AVRO only (the fake reads nothing else; 400 otherwise), at most 10,000
//   sourceUris, each an exact gs://BUCKET/OBJECT of the fake's Cloud Storage (a wildcard is
//   refused: the connector never uses one), read with ReadAvroForLoad (useAvroLogicalTypes);
//   writeDisposition WRITE_APPEND (default), WRITE_TRUNCATE (the job's schema, when given,
//   replaces the table's) or WRITE_EMPTY; createDisposition CREATE_IF_NEEDED (default; the
//   fake needs configuration.load.schema to create) or CREATE_NEVER. Any file missing
//   (reason notFound) or unreadable (reason invalid) fails the whole job: no row lands.
//   statistics.load carries inputFiles and outputRows.
// - copy: sourceTables (or sourceTable) to destinationTable, the same dispositions; the
//   destination gets the first source's schema when created or truncated.
// - query: the GoogleSQL shapes RunQuery evaluates (fake_query.h), over the tables as they are
//   when the job is created (evaluated then, outside the jobs lock); useLegacySql must be false
//   (jobs.insert defaults to legacy SQL; the fake then fails the job saying so). With
//   destinationTable the result lands there under writeDisposition (default WRITE_EMPTY) and
//   createDisposition; without, in a table of its own in the project's anonymous dataset ("_" +
//   16 hex) that expires after 24 hours (the fake keeps no result cache, so each job gets a new
//   table: statistics.query.cacheHit is false). Either way the finished job names the
//   table in configuration.query.destinationTable. A query the fake cannot evaluate fails the
//   job (DONE) with reason invalidQuery; a missing table with reason notFound.
// `loseInsertResponses` N: the next N inserts create their job and then answer 503 as if the
// response were lost. Thread-safe.
class FakeJobs {
 public:
  FakeJobs(std::shared_ptr<FakeStore> store, std::shared_ptr<gcs_fake::FakeObjectStore> gcs);

  absl::StatusOr<nlohmann::json> insert(const std::string& project, const nlohmann::json& body);
  // `location` may be empty (then only a job in the US or EU multi-region is found).
  absl::StatusOr<nlohmann::json> get(const std::string& project, const std::string& job_id,
                                     const std::string& location = "");
  void set_options(int polls_until_done, int lose_insert_responses);
  // Jobs created so far (inserts answered 409 not counted).
  int jobs_created() const;
  // The query text of each query job created, in order (tests inspect what a source issued).
  std::vector<std::string> queries() const;

 private:
  struct Job {
    nlohmann::json resource;
    int polls = 0;
    bool done = false;
    // A query's result, evaluated when the job was created (a query reads the tables as they
    // were when it started), landed when the job turns DONE.
    std::optional<absl::StatusOr<QueryResult>> query_result;
  };
  void run(Job& job);
  absl::StatusOr<std::int64_t> run_load(const nlohmann::json& load, const std::string& project,
                                        std::int64_t* files);
  absl::StatusOr<std::int64_t> run_copy(const nlohmann::json& copy, const std::string& project);
  // Fills in query.destinationTable when the result went to the anonymous dataset.
  absl::StatusOr<std::int64_t> run_query(nlohmann::json& query, const std::string& project,
                                         const std::string& job_id,
                                         absl::StatusOr<QueryResult> result);
  std::string infer_location(const std::string& project, const nlohmann::json& configuration) const;

  std::shared_ptr<FakeStore> store_;
  std::shared_ptr<gcs_fake::FakeObjectStore> gcs_;
  mutable std::mutex mu_;
  std::map<std::string, Job> jobs_;  // "P/ID"
  int polls_until_done_ = 1;
  int lose_insert_responses_ = 0;
  int created_ = 0;
  std::vector<std::string> queries_;
  std::int64_t generated_ = 0;
};

void RegisterJobRoutes(httplib::Server& server, std::shared_ptr<FakeJobs> jobs);

}  // namespace gcpstream::testing::bigquery_fake

#endif  // GCPSTREAM_TESTS_FAKES_BIGQUERY_FAKE_JOBS_H_
