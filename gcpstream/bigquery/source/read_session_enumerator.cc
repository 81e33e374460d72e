#include "gcpstream/bigquery/source/read_session_enumerator.h"

#include <spdlog/spdlog.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/bigquery/client/status_text.h"
#include "gcpstream/bigquery/source/query_job.h"
#include "gcpstream/bigquery/source/view_materialization.h"
#include "google/protobuf/util/time_util.h"

namespace gcpstream::bigquery {

storage_v1::CreateReadSessionRequest MakeReadSessionRequest(const BigQueryReadOptions& options) {
  storage_v1::CreateReadSessionRequest request;
  std::vector<std::string> parts = absl::StrSplit(options.table, '/');
  const std::string project =
      options.parent_project.empty() && parts.size() > 1 ? parts[1] : options.parent_project;
  request.set_parent("projects/" + project);
  storage_v1::ReadSession& session = *request.mutable_read_session();
  session.set_table(options.table);
  session.set_data_format(storage_v1::DataFormat::AVRO);
  for (const std::string& field : options.selected_fields) {
    session.mutable_read_options()->add_selected_fields(field);
  }
  if (!options.row_restriction.empty()) {
    session.mutable_read_options()->set_row_restriction(options.row_restriction);
  }
  if (options.snapshot_time) {
    *session.mutable_table_modifiers()->mutable_snapshot_time() =
        google::protobuf::util::TimeUtil::MicrosecondsToTimestamp(
            absl::ToUnixMicros(*options.snapshot_time));
  }
  request.set_max_stream_count(options.max_stream_count);
  request.set_preferred_min_stream_count(options.preferred_min_stream_count);
  return request;
}

std::string DescribeReadSession(const BigQueryReadOptions& options) {
  std::string out;
  if (!options.query.empty()) absl::StrAppend(&out, "query=\"", options.query, "\" ");
  // A materialized view's session reads the query's result, not the table named: name it here.
  if (options.materialize_views)
    absl::StrAppend(&out, "materialize_views table=", options.table, " ");
  absl::StrAppend(&out, "selected_fields=[", absl::StrJoin(options.selected_fields, ", "),
                  "] row_restriction=\"", options.row_restriction, "\"");
  if (options.snapshot_time) {
    absl::StrAppend(
        &out, " snapshot_time=",
        absl::FormatTime(absl::RFC3339_full, *options.snapshot_time, absl::UTCTimeZone()));
  }
  return out;
}

absl::StatusOr<std::vector<ReadStreamSplit>> CreateReadSession(BigQueryReadStub& stub,
                                                               const BigQueryReadOptions& options,
                                                               std::string* session_name,
                                                               const std::atomic<bool>* cancelled) {
  const storage_v1::CreateReadSessionRequest request = MakeReadSessionRequest(options);
  absl::StatusOr<storage_v1::ReadSession> session;
  for (int attempt = 1;; ++attempt) {
    session = stub.create_read_session(request, std::chrono::seconds(60));
    const bool transient = session.status().code() == absl::StatusCode::kUnavailable ||
                           session.status().code() == absl::StatusCode::kDeadlineExceeded;
    if (session.ok() || !transient || attempt >= 5) break;
    spdlog::warn("BigQuerySource: CreateReadSession for {} failed ({}); trying again",
                 options.table, Describe(session.status()));
    if (!SleepUnlessCancelled(std::chrono::milliseconds(200) * attempt, cancelled)) {
      return absl::CancelledError(absl::StrCat("BigQuerySource: creating the read session for ",
                                               options.table, " stopped: the job is stopping"));
    }
  }
  if (!session.ok()) {
    std::string hint;
    if (session.status().code() == absl::StatusCode::kInvalidArgument &&
        absl::StrContains(session.status().message(), "non-table entities")) {
      hint =
          " (the Storage Read API reads table storage, and a view has none: read it through "
          "a query job instead, with materialize_views (YAML `materialize_views: true`), or "
          "with query(\"SELECT ... FROM `project.dataset.view`\") (YAML `query:`) in place of "
          "the table)";
    }
    return absl::Status(session.status().code(),
                        absl::StrCat("BigQuerySource: creating the read session for ",
                                     options.table, ": ", session.status().message(), hint));
  }
  if (!session->has_avro_schema() && session->streams_size() > 0) {
    return absl::FailedPreconditionError(absl::StrCat("BigQuerySource: the read session for ",
                                                      options.table, " carries no Avro schema"));
  }
  *session_name = session->name();
  const std::int64_t expire =
      session->has_expire_time()
          ? google::protobuf::util::TimeUtil::TimestampToMicroseconds(session->expire_time())
          : 0;
  std::vector<ReadStreamSplit> splits;
  for (const auto& stream : session->streams()) {
    splits.push_back(ReadStreamSplit{stream.name(), 0, session->avro_schema().schema(), expire});
  }
  return splits;
}

ReadSessionEnumerator::ReadSessionEnumerator(SplitEnumeratorContext<ReadStreamSplit>& context,
                                             BigQueryReadStubFactory stubs,
                                             BigQueryReadOptions options,
                                             std::shared_ptr<const TableAdmin> admin,
                                             BigQueryReadEnumState restored)
    : context_(context),
      stubs_(std::move(stubs)),
      options_(std::move(options)),
      admin_(std::move(admin)),
      state_(std::move(restored)),
      assigner_(context),
      sessions_created_(context.metric_group().counter("readSessionsCreated")),
      // Registered by a table source too, so that 0 says it ran no query.
      queries_submitted_(context.metric_group().counter("queryJobsSubmitted")),
      queries_reattached_(context.metric_group().counter("queryJobsReattached")) {}

absl::Status ReadSessionEnumerator::start() {
  if (!state_.session.empty()) {
    // A query source's table is its result's, known only from the state.
    if (options_.query.empty() && state_.query_job.empty() && !state_.read_table.empty() &&
        state_.read_table != options_.table) {
      return absl::FailedPreconditionError(absl::StrCat(
          "BigQuerySource: the restored read session ", state_.session, " reads ",
          state_.read_table, ", but the source now names ", options_.table,
          "; its restored streams would read the old table. Restore with the same table, or "
          "start the read afresh without this state"));
    }
    const std::string asked = DescribeReadSession(options_);
    if (state_.read_options != asked) {
      return absl::FailedPreconditionError(absl::StrCat(
          "BigQuerySource: the restored read session ", state_.session, " was asked for ",
          state_.read_options, ", but the source now asks for ", asked,
          "; its restored streams keep reading what the first session was asked for. Restore "
          "with the same options, or start the read afresh without this state"));
    }
    spdlog::info("BigQuerySource: restored read session {}; {} of {} stream(s) not yet assigned",
                 state_.session, state_.unassigned.size(), state_.stream_count);
    std::vector<ReadStreamSplit> unassigned = std::move(state_.unassigned);
    state_.unassigned.clear();
    assigner_.set_planned(std::move(unassigned));
    return absl::OkStatus();
  }
  const std::string asked = DescribeReadSession(options_);
  if (!state_.query_job.empty() && state_.read_options != asked) {
    // Restored while the query ran: its job is for what the first plan asked.
    return absl::FailedPreconditionError(absl::StrCat(
        "BigQuerySource: the restored query job ", state_.query_job, " was submitted for ",
        state_.read_options, ", but the source now asks for ", asked,
        ". Restore with the same options, or start the read afresh without this state"));
  }
  state_.read_options = asked;
  auto stub = stubs_();
  if (!stub.ok()) return stub.status();
  if ((!options_.query.empty() || options_.materialize_views) && admin_ == nullptr) {
    return absl::FailedPreconditionError(
        "BigQuerySource: a query source (or one with materialize_views) has no REST client");
  }
  // Each query job created is told as it is made: counted even when the plan then fails (it was
  // billed), and checkpointed, so a restore before the session exists waits for that job
  // instead of running the query again.
  auto submitted = std::make_shared<Submitted>();
  submitted->job = state_.query_job;
  submitted_ = submitted;
  context_.call_async<absl::StatusOr<Created>>(
      [stub = *std::move(stub), options = options_, admin = admin_, closed = closed_,
       submitted]() mutable -> absl::StatusOr<Created> {
        Created created;
        std::string resume_job;
        {
          std::lock_guard lock(submitted->mu);
          resume_job = submitted->job;
        }
        std::string query = options.query;
        std::string project = options.parent_project;
        if (options.materialize_views) {
          const TableRef named = *TableRef::parse(options.table);  // validated by the builder
          if (project.empty()) project = named.project;
          // The row restriction stays on the session, so the result must keep every column it
          // may name: the fields are folded into the SELECT only when there is none.
          const std::vector<std::string> folded = options.row_restriction.empty()
                                                      ? options.selected_fields
                                                      : std::vector<std::string>();
          if (!resume_job.empty()) {
            // A view's query job was checkpointed while it ran: it is the same SELECT again.
            GCP_ASSIGN_OR_RETURN(query, MaterializingQuery(named, folded));
          } else {
            GCP_ASSIGN_OR_RETURN(std::optional<std::string> view_query,
                                 ViewQueryFor(*admin, named, folded, closed.get()));
            if (view_query) query = *std::move(view_query);
          }
        }
        if (!query.empty()) {
          // The query runs before the session, once: the session's existence in the state is
          // what keeps a restore from running it again.
          QueryJobSpec spec;
          spec.query = query;
          spec.project = project;
          spec.location = options.query_location;
          spec.result_dataset = options.query_result_dataset;
          spec.reuse_within = options.reuse_query_result_within;
          spec.job_name = options.job_name;
          spec.poll_initial = options.query_poll_initial;
          spec.poll_max = options.query_poll_max;
          spec.resume_job = resume_job;
          GCP_ASSIGN_OR_RETURN(
              created.query,
              RunQueryJob(*admin, spec, closed.get(),
                          [submitted](const std::string& id, const std::string& location) {
                            std::lock_guard lock(submitted->mu);
                            submitted->job = QueryJobRef(id, location);
                            ++submitted->count;
                          }));
          options.table = created.query.result_table;
        }
        created.table = options.table;
        auto splits = CreateReadSession(*stub, options, &created.session, closed.get());
        if (!splits.ok()) return splits.status();
        created.splits = *std::move(splits);
        return created;
      },
      // The enumerator may be closed and gone before the answer: the flag outlives it.
      [this, closed = closed_, submitted](absl::StatusOr<Created> created) {
        if (closed->load()) return;
        {
          std::lock_guard lock(submitted->mu);
          queries_submitted_.inc(submitted->count);
        }
        on_created(std::move(created));
      });
  return absl::OkStatus();
}

void ReadSessionEnumerator::on_created(absl::StatusOr<Created> created) {
  if (!created.ok()) {
    context_.fail_job(created.status());
    return;
  }
  sessions_created_.inc();
  if (created->query.reattached) queries_reattached_.inc();
  state_.session = created->session;
  state_.read_table = created->table;
  state_.read_options = DescribeReadSession(options_);
  if (!created->query.job_id.empty()) {
    state_.query_job = QueryJobRef(created->query.job_id, created->query.location);
  }
  if (!created->splits.empty()) {
    state_.avro_schema = created->splits.front().avro_schema;
    state_.session_expire_micros = created->splits.front().session_expire_micros;
  }
  state_.stream_count = static_cast<std::int64_t>(created->splits.size());
  spdlog::info("BigQuerySource: read session {} of {} has {} stream(s)", state_.session,
               state_.read_table, state_.stream_count);
  if (state_.stream_count < context_.current_parallelism()) {
    spdlog::warn(
        "BigQuerySource: {} stream(s) for a parallelism of {}: BigQuery decides the count (a "
        "small table is one stream), and the subtasks left without one finish at once",
        state_.stream_count, context_.current_parallelism());
  }
  assigner_.set_planned(std::move(created->splits));
}

absl::Status ReadSessionEnumerator::handle_split_request(int subtask) {
  assigner_.handle_split_request(subtask);
  return absl::OkStatus();
}

absl::Status ReadSessionEnumerator::add_splits_back(std::vector<ReadStreamSplit> splits,
                                                    int subtask) {
  (void)subtask;
  assigner_.add_back(std::move(splits));
  return absl::OkStatus();
}

absl::Status ReadSessionEnumerator::add_reader(int subtask) {
  (void)subtask;
  return absl::OkStatus();
}

absl::Status ReadSessionEnumerator::close() {
  closed_->store(true);
  return absl::OkStatus();
}

absl::StatusOr<BigQueryReadEnumState> ReadSessionEnumerator::snapshot_state(std::int64_t) {
  BigQueryReadEnumState out = state_;
  if (out.session.empty() && submitted_ != nullptr) {
    std::lock_guard lock(submitted_->mu);
    out.query_job = submitted_->job;  // a query still running: a restore waits for it
  }
  out.unassigned = assigner_.unassigned();
  return out;
}

}  // namespace gcpstream::bigquery
