// The BigQuery source's parts against a scripted BigQueryRead stub: the enumerator creates the
// read session once and never again on a restore (a second session would pin a second
// snapshot), streams go out one per request; the stream reader resumes a broken ReadRows at the
// row it reached (the API's offset), bounds attempts without progress by retryMaxAttempts,
// retries only what the read client libraries retry, and names an expired session; split and
// enumerator state survive a checkpoint and refuse corrupt bytes. Semantics followed: the
// Storage Read API reference (CreateReadSession, ReadRowsRequest.offset, ReadSession.
// expire_time) and ../shared/spec/bigquery.md, "Source".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>

#include "gcpstream/bigquery/source/read_session_enumerator.h"
#include "gcpstream/bigquery/source/read_stream_reader.h"
#include "gcpstream/runtime/metric_registry.h"
#include "google/protobuf/util/time_util.h"
#include "tests/fakes/bigquery/fake_avro.h"

namespace gcpstream::bigquery {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fake = testing::bigquery_fake;

constexpr char kTable[] = "projects/p/datasets/d/tables/t";

fake::Schema Columns() {
  return *fake::ParseSchema(nlohmann::json::parse(R"([{"name":"id","type":"INT64"}])"));
}

// One ReadRows call: blocks of `per_block` rows from the offset, then `end`.
// One ReadRows call: its blocks, then `end`; or, when `stall`, silence after the blocks until
// cancel() (then CANCELLED), as a connection that stopped answering.
class ScriptedCall final : public ReadRowsCall {
 public:
  ScriptedCall(std::deque<storage_v1::ReadRowsResponse> blocks, absl::Status end, bool stall)
      : blocks_(std::move(blocks)), end_(std::move(end)), stall_(stall) {}
  bool read(storage_v1::ReadRowsResponse* r) override {
    if (blocks_.empty()) {
      if (!stall_) return false;
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return cancelled_; });
      end_ = absl::CancelledError("cancelled");
      return false;
    }
    *r = std::move(blocks_.front());
    blocks_.pop_front();
    return true;
  }
  void cancel() override {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    cv_.notify_all();
  }
  absl::Status finish() override { return end_; }

 private:
  std::deque<storage_v1::ReadRowsResponse> blocks_;
  absl::Status end_;
  bool stall_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool cancelled_ = false;
};

// Streams of ids; a script of failures, each ending a call after `after` rows of it.
class ScriptedStub final : public BigQueryReadStub {
 public:
  struct Failure {
    int after;
    absl::Status status;
    bool stall = false;  // after `after` rows, silence until cancelled
  };
  std::map<std::string, int> stream_rows;  // name -> row count (ids 0..n-1)
  std::int64_t expire_micros = 0;
  int per_block = 4;
  std::deque<Failure> failures;
  std::vector<std::int64_t> offsets;  // every ReadRows offset asked for
  int sessions_created = 0;
  absl::Status create_status;

  absl::StatusOr<storage_v1::ReadSession> create_read_session(
      const storage_v1::CreateReadSessionRequest& request, std::chrono::milliseconds) override {
    std::lock_guard lock(mu_);
    last_request = request;
    if (!create_status.ok()) return create_status;
    ++sessions_created;
    storage_v1::ReadSession s;
    s.set_name("projects/p/locations/us/sessions/s1");
    s.mutable_avro_schema()->set_schema(fake::AvroSchemaFor(Columns()));
    *s.mutable_expire_time() =
        google::protobuf::util::TimeUtil::MicrosecondsToTimestamp(expire_micros);
    for (const auto& [name, n] : stream_rows) s.add_streams()->set_name(name);
    return s;
  }
  std::unique_ptr<ReadRowsCall> read_rows(const storage_v1::ReadRowsRequest& request) override {
    std::lock_guard lock(mu_);
    offsets.push_back(request.offset());
    const int n = stream_rows.at(request.read_stream());
    int stop = n;
    absl::Status end;
    bool stall = false;
    if (!failures.empty()) {
      stop = std::min(n, static_cast<int>(request.offset()) + failures.front().after);
      end = failures.front().status;
      stall = failures.front().stall;
      failures.pop_front();
    }
    auto writer = fake::AvroRowsWriter::Create(Columns());
    std::deque<storage_v1::ReadRowsResponse> blocks;
    for (int i = static_cast<int>(request.offset()); i < stop; i += per_block) {
      storage_v1::ReadRowsResponse r;
      const int end_row = std::min(stop, i + per_block);
      for (int id = i; id < end_row; ++id) {
        EXPECT_TRUE((*writer)
                        ->append({{"id", std::to_string(id)}},
                                 r.mutable_avro_rows()->mutable_serialized_binary_rows())
                        .ok());
      }
      r.set_row_count(end_row - i);
      blocks.push_back(std::move(r));
    }
    return std::make_unique<ScriptedCall>(std::move(blocks), end, stall);
  }
  storage_v1::CreateReadSessionRequest last_request;

 private:
  std::mutex mu_;
};

BigQueryReadStubFactory Factory(std::shared_ptr<ScriptedStub> stub) {
  return [stub]() -> absl::StatusOr<std::shared_ptr<BigQueryReadStub>> { return stub; };
}

BigQueryReadOptions Options() {
  BigQueryReadOptions o;
  o.table = kTable;
  o.initial_retry_delay = std::chrono::milliseconds(1);
  o.max_records_per_fetch = 3;
  return o;
}

// --- State ---------------------------------------------------------------------------------

TEST(ReadStreamStateTest, SplitsAndEnumeratorStateSurviveACheckpointAndRefuseCorruptBytes) {
  ReadStreamSplitSerializer splits;
  ReadStreamSplit split{"projects/p/locations/us/sessions/s/streams/0", 42, "{\"type\":1}", 7};
  auto bytes = splits.serialize(split);
  ASSERT_TRUE(bytes.ok());
  auto back = splits.deserialize(splits.version(), *bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, split);
  for (std::size_t cut = 0; cut < bytes->size(); ++cut) {
    EXPECT_EQ(splits.deserialize(1, bytes->substr(0, cut)).status().code(),
              absl::StatusCode::kDataLoss)
        << "cut at " << cut;
  }
  EXPECT_EQ(splits.deserialize(1, *bytes + "x").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(splits.deserialize(2, *bytes).status().code(), absl::StatusCode::kFailedPrecondition);
  ReadStreamSplit negative = split;
  negative.offset = -1;
  EXPECT_EQ(splits.deserialize(1, *splits.serialize(negative)).status().code(),
            absl::StatusCode::kDataLoss);

  BigQueryReadEnumStateSerializer states;
  BigQueryReadEnumState state{"projects/p/locations/us/sessions/s",     3, {split}, "", kTable,
                              "selected_fields=[] row_restriction=\"\""};
  // The session's schema and expiry are kept once, and the unassigned splits get them back.
  state.avro_schema = split.avro_schema;
  state.session_expire_micros = split.session_expire_micros;
  auto state_bytes = states.serialize(state);
  ASSERT_TRUE(state_bytes.ok());
  auto state_back = states.deserialize(1, *state_bytes);
  ASSERT_TRUE(state_back.ok()) << state_back.status();
  EXPECT_EQ(*state_back, state);
  for (std::size_t cut = 0; cut < state_bytes->size(); ++cut) {
    EXPECT_EQ(states.deserialize(1, state_bytes->substr(0, cut)).status().code(),
              absl::StatusCode::kDataLoss)
        << "cut at " << cut;
  }
  BigQueryReadEnumState lying = state;
  lying.stream_count = 0;  // fewer streams than it holds unassigned
  EXPECT_EQ(states.deserialize(1, *states.serialize(lying)).status().code(),
            absl::StatusCode::kDataLoss);
}

// --- Enumerator ----------------------------------------------------------------------------

class RecordingCoordinator final : public SplitEnumeratorContext<ReadStreamSplit> {
 public:
  int current_parallelism() const override { return 2; }
  std::vector<int> registered_readers() const override { return {0, 1}; }
  void assign_splits(int subtask, std::vector<ReadStreamSplit> splits) override {
    for (auto& s : splits) assigned.emplace_back(subtask, s.stream);
  }
  void signal_no_more_splits(int subtask) override { finished.push_back(subtask); }
  void send_event_to_source_reader(int, std::shared_ptr<const SourceEvent>) override {}
  void run_in_coordinator_thread(absl::AnyInvocable<void() &&> fn) override { std::move(fn)(); }
  void run_on_worker(absl::AnyInvocable<void() &&> fn) override { std::move(fn)(); }
  void fail_job(absl::Status status) override { failure = std::move(status); }
  MetricGroup& metric_group() override { return registry_.group({{"test", "enumerator"}}); }

  std::vector<std::pair<int, std::string>> assigned;
  std::vector<int> finished;
  absl::Status failure;

 private:
  runtime::MetricRegistry registry_;
};

TEST(ReadSessionEnumeratorTest, CreatesTheSessionOnceAndHandsOutOneStreamPerRequest) {
  auto stub = std::make_shared<ScriptedStub>();
  stub->stream_rows = {{"st/0", 1}, {"st/1", 1}, {"st/2", 1}};
  RecordingCoordinator context;
  BigQueryReadOptions options = Options();
  options.selected_fields = {"id"};
  options.row_restriction = "id > 3";
  options.max_stream_count = 5;
  options.preferred_min_stream_count = 2;
  options.snapshot_time = absl::FromUnixSeconds(1786233600);
  ReadSessionEnumerator enumerator(context, Factory(stub), options);
  ASSERT_TRUE(enumerator.handle_split_request(1).ok());  // before the session: held
  ASSERT_TRUE(enumerator.start().ok());
  EXPECT_TRUE(context.failure.ok()) << context.failure;
  EXPECT_EQ(stub->sessions_created, 1);
  const auto& req = stub->last_request;
  EXPECT_EQ(req.parent(), "projects/p");
  EXPECT_EQ(req.read_session().table(), kTable);
  EXPECT_EQ(req.read_session().data_format(), storage_v1::DataFormat::AVRO);
  EXPECT_THAT(req.read_session().read_options().selected_fields(), ElementsAre("id"));
  EXPECT_EQ(req.read_session().read_options().row_restriction(), "id > 3");
  EXPECT_EQ(req.read_session().table_modifiers().snapshot_time().seconds(), 1786233600);
  EXPECT_EQ(req.max_stream_count(), 5);
  EXPECT_EQ(req.preferred_min_stream_count(), 2);
  ASSERT_TRUE(enumerator.handle_split_request(0).ok());
  EXPECT_THAT(context.assigned, ElementsAre(std::pair<int, std::string>{1, "st/0"},
                                            std::pair<int, std::string>{0, "st/1"}));

  // A checkpoint now, then a restore: the same session, only the stream not handed out yet.
  auto state = enumerator.snapshot_state(1);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->session, "projects/p/locations/us/sessions/s1");
  EXPECT_EQ(state->stream_count, 3);
  ASSERT_EQ(state->unassigned.size(), 1u);
  RecordingCoordinator after;
  ReadSessionEnumerator restored(after, Factory(stub), options, nullptr, *state);
  ASSERT_TRUE(restored.start().ok());
  EXPECT_EQ(stub->sessions_created, 1) << "a restore created a second session";
  ASSERT_TRUE(restored.add_splits_back({ReadStreamSplit{"st/0", 7, "", 0}}, 1).ok());
  ASSERT_TRUE(restored.handle_split_request(1).ok());
  ASSERT_TRUE(restored.handle_split_request(1).ok());
  ASSERT_TRUE(restored.handle_split_request(0).ok());
  EXPECT_THAT(after.assigned, ElementsAre(std::pair<int, std::string>{1, "st/0"},
                                          std::pair<int, std::string>{1, "st/2"}));
  EXPECT_THAT(after.finished, ElementsAre(0));

  EXPECT_EQ(state->avro_schema, fake::AvroSchemaFor(Columns()));
  BigQueryReadOptions narrower = options;
  narrower.row_restriction = "id > 4";
  RecordingCoordinator edited;
  ReadSessionEnumerator changed(edited, Factory(stub), narrower, nullptr, *state);
  absl::Status edit = changed.start();
  EXPECT_EQ(edit.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(edit.message(), HasSubstr("row_restriction=\"id > 3\""));
  EXPECT_THAT(edit.message(), HasSubstr("row_restriction=\"id > 4\""));

  BigQueryReadOptions other = options;
  other.table = "projects/p/datasets/d/tables/other";
  RecordingCoordinator moved;
  ReadSessionEnumerator refused(moved, Factory(stub), other, nullptr, *state);
  absl::Status status = refused.start();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("tables/other"));
}

// A request held while the session is created, from a subtask that failed meanwhile, is not
// served (assigning to an unregistered reader would fail the job); it asks again on restart.
TEST(ReadSessionEnumeratorTest, AHeldRequestOfAReaderThatFailedMeanwhileIsDropped) {
  class OneReader final : public SplitEnumeratorContext<ReadStreamSplit> {
   public:
    int current_parallelism() const override { return 2; }
    std::vector<int> registered_readers() const override { return {0}; }
    void assign_splits(int subtask, std::vector<ReadStreamSplit>) override {
      assigned.push_back(subtask);
    }
    void signal_no_more_splits(int) override {}
    void send_event_to_source_reader(int, std::shared_ptr<const SourceEvent>) override {}
    void run_in_coordinator_thread(absl::AnyInvocable<void() &&> fn) override { std::move(fn)(); }
    void run_on_worker(absl::AnyInvocable<void() &&> fn) override { std::move(fn)(); }
    void fail_job(absl::Status) override {}
    MetricGroup& metric_group() override { return registry_.group({{"test", "enumerator"}}); }
    std::vector<int> assigned;

   private:
    runtime::MetricRegistry registry_;
  };
  auto stub = std::make_shared<ScriptedStub>();
  stub->stream_rows = {{"st/0", 1}, {"st/1", 1}};
  OneReader context;
  ReadSessionEnumerator enumerator(context, Factory(stub), Options());
  ASSERT_TRUE(enumerator.handle_split_request(1).ok());  // subtask 1 then fails
  ASSERT_TRUE(enumerator.handle_split_request(0).ok());
  ASSERT_TRUE(enumerator.start().ok());
  EXPECT_THAT(context.assigned, ElementsAre(0));
}

TEST(ReadSessionEnumeratorTest, AnEmptyTableFinishesEveryReaderAndAViewRefusalSaysWhy) {
  auto stub = std::make_shared<ScriptedStub>();
  RecordingCoordinator context;
  ReadSessionEnumerator enumerator(context, Factory(stub), Options());
  ASSERT_TRUE(enumerator.start().ok());
  ASSERT_TRUE(enumerator.handle_split_request(0).ok());
  ASSERT_TRUE(enumerator.handle_split_request(1).ok());
  EXPECT_TRUE(context.assigned.empty());
  EXPECT_THAT(context.finished, ElementsAre(0, 1));

  stub->create_status = absl::InvalidArgumentError(
      "request failed: non-table entities cannot be read with the storage API");
  RecordingCoordinator failing;
  ReadSessionEnumerator view(failing, Factory(stub), Options());
  ASSERT_TRUE(view.start().ok());
  EXPECT_EQ(failing.failure.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(failing.failure.message(), HasSubstr("a view has none"));
  EXPECT_THAT(failing.failure.message(), HasSubstr("query(\"SELECT"))
      << "the refusal names the way round it";
  EXPECT_THAT(failing.failure.message(), HasSubstr("YAML `materialize_views: true`"))
      << "and its spelling for a pipeline file";
}

// --- Stream reader -------------------------------------------------------------------------

// Fetches until `stream` finishes or a fetch fails; the ids read, in order.
absl::StatusOr<std::vector<std::int64_t>> ReadAll(ReadStreamReader& reader,
                                                  const std::string& stream,
                                                  std::vector<std::size_t>* fetch_sizes = nullptr) {
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 10000; ++i) {
    auto batch = reader.fetch();
    if (!batch.ok()) return batch.status();
    for (auto& s : batch->splits) {
      if (fetch_sizes) fetch_sizes->push_back(s.elements.size());
      for (auto& e : s.elements) ids.push_back(*e.row.values[0].as_int64());
    }
    for (const auto& f : batch->finished_splits) {
      if (f == stream) return ids;
    }
  }
  return absl::DeadlineExceededError("the stream never finished");
}

TEST(ReadStreamReaderTest, ABrokenReadResumesAtTheRowItReachedAndFetchesStayBounded) {
  auto stub = std::make_shared<ScriptedStub>();
  stub->stream_rows = {{"st/0", 20}};
  stub->failures = {{6, absl::UnavailableError("connection reset")},
                    {0, absl::InternalError("Received RST_STREAM with error code 2")},
                    {5, absl::UnavailableError("again")}};
  runtime::MetricRegistry registry;
  Counter& retries = registry.group({{"t", "r"}}).counter("readRetries");
  ReadStreamReader reader(Factory(stub), Options(), retries);
  ASSERT_TRUE(
      reader
          .handle_splits_addition({{ReadStreamSplit{"st/0", 2, fake::AvroSchemaFor(Columns()), 0}}})
          .ok());
  std::vector<std::size_t> sizes;
  auto ids = ReadAll(reader, "st/0", &sizes);
  ASSERT_TRUE(ids.ok()) << ids.status();
  std::vector<std::int64_t> expected;
  for (int i = 2; i < 20; ++i) expected.push_back(i);
  EXPECT_EQ(*ids, expected) << "a row was read twice or skipped";
  EXPECT_THAT(stub->offsets, ElementsAre(2, 8, 8, 13));
  EXPECT_EQ(retries.get(), 3);
  for (std::size_t n : sizes) EXPECT_LE(n, 3u) << "max_records_per_fetch";
  ASSERT_TRUE(reader.close().ok());
}

TEST(ReadStreamReaderTest, AttemptsWithoutProgressAreBoundedAndOnlyRetryableCodesAreRetried) {
  auto stub = std::make_shared<ScriptedStub>();
  stub->stream_rows = {{"st/0", 10}};
  for (int i = 0; i < 10; ++i) stub->failures.push_back({0, absl::UnavailableError("down")});
  runtime::MetricRegistry registry;
  Counter& retries = registry.group({{"t", "r"}}).counter("readRetries");
  BigQueryReadOptions options = Options();
  options.retry_max_attempts = 4;
  ReadStreamReader reader(Factory(stub), options, retries);
  ASSERT_TRUE(
      reader
          .handle_splits_addition({{ReadStreamSplit{"st/0", 0, fake::AvroSchemaFor(Columns()), 0}}})
          .ok());
  auto ids = ReadAll(reader, "st/0");
  EXPECT_EQ(ids.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(ids.status().message(), HasSubstr("4 attempts without a row"));
  EXPECT_EQ(stub->offsets.size(), 4u);
  EXPECT_EQ(retries.get(), 3);

  EXPECT_FALSE(ReadRetryDelay(absl::InternalError("bare internal"), std::chrono::milliseconds(5)));
  EXPECT_FALSE(
      ReadRetryDelay(absl::ResourceExhaustedError("no RetryInfo"), std::chrono::milliseconds(5)));
  EXPECT_FALSE(ReadRetryDelay(absl::PermissionDeniedError("x"), std::chrono::milliseconds(5)));
  EXPECT_EQ(ReadRetryDelay(absl::InternalError("Received unexpected EOS on DATA frame from server"),
                           std::chrono::milliseconds(5)),
            std::chrono::milliseconds(1));
  auto jittered = ReadRetryDelay(absl::UnavailableError("x"), std::chrono::milliseconds(50));
  ASSERT_TRUE(jittered.has_value());
  EXPECT_LE(jittered->count(), 50);
}

TEST(ReadStreamReaderTest, AStalledCallIsCancelledAndResumedAndProgressNeverCountsAgainstTheBound) {
  auto stub = std::make_shared<ScriptedStub>();
  stub->stream_rows = {{"st/0", 12}};
  // A stall after 3 rows, then drops that each deliver rows: with retry_max_attempts 1 every one
  // of them is resumed, since only attempts without a row count.
  stub->failures = {{3, absl::OkStatus(), /*stall=*/true},
                    {2, absl::UnavailableError("drop")},
                    {2, absl::UnavailableError("drop")}};
  runtime::MetricRegistry registry;
  Counter& retries = registry.group({{"t", "r"}}).counter("readRetries");
  BigQueryReadOptions options = Options();
  options.retry_max_attempts = 1;
  options.stall_timeout = std::chrono::milliseconds(50);
  ReadStreamReader reader(Factory(stub), options, retries);
  ASSERT_TRUE(
      reader
          .handle_splits_addition({{ReadStreamSplit{"st/0", 0, fake::AvroSchemaFor(Columns()), 0}}})
          .ok());
  auto ids = ReadAll(reader, "st/0");
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->size(), 12u);
  EXPECT_THAT(stub->offsets, ElementsAre(0, 3, 5, 7));
  EXPECT_EQ(retries.get(), 3);
}

TEST(ReadStreamReaderTest, AFailureAfterTheSessionExpiredSaysSoAndAnOffsetPastTheEndIsNamed) {
  auto stub = std::make_shared<ScriptedStub>();
  stub->stream_rows = {{"st/0", 10}};
  stub->failures = {{0, absl::FailedPreconditionError("session expired")}};
  runtime::MetricRegistry registry;
  Counter& retries = registry.group({{"t", "r"}}).counter("readRetries");
  ReadStreamReader reader(Factory(stub), Options(), retries);
  const std::int64_t expired = absl::ToUnixMicros(absl::Now() - absl::Hours(1));
  ASSERT_TRUE(reader
                  .handle_splits_addition(
                      {{ReadStreamSplit{"st/0", 3, fake::AvroSchemaFor(Columns()), expired}}})
                  .ok());
  auto ids = ReadAll(reader, "st/0");
  EXPECT_EQ(ids.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(ids.status().message(), HasSubstr("the read session expired at"));
  EXPECT_THAT(ids.status().message(), HasSubstr("start the job over"));
  EXPECT_EQ(stub->offsets.size(), 1u) << "an expired session is not retried";

  auto stub2 = std::make_shared<ScriptedStub>();
  stub2->stream_rows = {{"st/0", 10}};
  stub2->failures = {{0, absl::FailedPreconditionError("the offset 9 is beyond the end")}};
  ReadStreamReader past(Factory(stub2), Options(), retries);
  ASSERT_TRUE(
      past.handle_splits_addition({{ReadStreamSplit{"st/0", 9, fake::AvroSchemaFor(Columns()), 0}}})
          .ok());
  auto refused = ReadAll(past, "st/0");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("past the rows this stream holds"));
}

TEST(ReadStreamReaderTest, ABlockThatDoesNotDecodeFailsWithDataLossNamingTheStream) {
  auto stub = std::make_shared<ScriptedStub>();
  stub->stream_rows = {{"st/0", 4}};
  runtime::MetricRegistry registry;
  Counter& retries = registry.group({{"t", "r"}}).counter("readRetries");
  ReadStreamReader reader(Factory(stub), Options(), retries);
  // The split claims a schema of three longs: the block's four rows of one nullable long (a
  // branch index and a value, eight varints in all) hold fewer than four such rows need.
  const std::string wrong = R"({"type":"record","name":"__root__","fields":[
      {"name":"id","type":"long"},{"name":"x","type":"long"},{"name":"y","type":"long"}]})";
  ASSERT_TRUE(reader.handle_splits_addition({{ReadStreamSplit{"st/0", 0, wrong, 0}}}).ok());
  auto ids = ReadAll(reader, "st/0");
  EXPECT_EQ(ids.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(ids.status().message(), HasSubstr("st/0"));
}

}  // namespace
}  // namespace gcpstream::bigquery
