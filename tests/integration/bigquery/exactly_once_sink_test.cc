// The exactly-once BigQuery sink (BUFFERED streams, FlushRows in the committer) against the
// BigQuery fake: rows stay invisible until the committer runs after their checkpoint; a job
// writes each row once through failed and lost appends and a failed flush; a restored writer
// resumes its stream, or abandons it when the crashed run appended past the checkpoint, and
// nothing is lost or doubled either way; committing again after a restore is harmless; rows
// the service refuses are routed and the others written once.
// Service behaviour followed: https://cloud.google.com/bigquery/docs/write-api#buffered_type
// (explicit offsets, FlushRows) and ../shared/spec/bigquery.md "Exactly-once (buffered streams)".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "gcpstream/bigquery/sink/bigquery_sink.h"
#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/metric_registry.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "tests/fakes/bigquery/bigquery_fake.h"
#include "tests/support/fake_contexts.h"

namespace gcpstream::bigquery {
namespace {

using namespace std::chrono_literals;
using connector::BigQueryTableDestination;
using Positions = std::vector<BufferedStreamPosition>;

const BigQueryTableDestination kTable = BigQueryTableDestination::of("p", "d", "numbers");

TableSchema Schema() {
  return *TableSchemaFromJson(nlohmann::json::parse(R"([
    {"name": "n", "type": "INT64", "mode": "REQUIRED"},
    {"name": "code", "type": "STRING"}])"));
}

class TestCommitterContext final : public CommitterInitContext {
 public:
  int subtask_index() const override { return 0; }
  int parallelism() const override { return 1; }
  MetricGroup& metric_group() override { return registry_.group({{"test", "committer"}}); }

 private:
  runtime::MetricRegistry registry_;
};

class ExactlyOnceSinkIT : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fake = testing::BigQueryFake::Start();
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = std::move(*fake);
    ASSERT_TRUE(fake_->add_dataset("p", "d").ok());
  }
  template <typename T>
  typename BigQuerySink<T>::Builder builder(
      std::function<absl::StatusOr<std::optional<nlohmann::json>>(const T&)> to_json) {
    auto serializer = BigQuerySerializationSchema<T>::json(Schema(), std::move(to_json));
    EXPECT_TRUE(serializer.ok()) << serializer.status();
    auto b = BigQuerySink<T>::builder();
    BigQueryWriterOptions options;
    options.max_append_request_bytes = 500;  // many appends
    options.retry_initial_delay = 10ms;
    options.recovery.initial_backoff = 10ms;
    b.destination(kTable)
        .write_method(WriteMethod::kStorageApiExactlyOnce)
        .serializer(*serializer)
        .writer_options(options)
        .emulator_endpoint(fake_->grpc_endpoint())
        .emulator_rest_endpoint(fake_->rest_endpoint());
    return b;
  }
  std::shared_ptr<BigQuerySink<std::int64_t>> numbers_sink() {
    auto sink = builder<std::int64_t>([](const std::int64_t& n) {
                  return absl::StatusOr<std::optional<nlohmann::json>>(
                      nlohmann::json{{"n", n}, {"code", "c" + std::to_string(n % 7)}});
                }).build();
    EXPECT_TRUE(sink.ok()) << sink.status();
    return *sink;
  }
  // Visible rows, as n -> how many times.
  std::map<std::int64_t, int> visible() {
    std::map<std::int64_t, int> out;
    auto rows = fake_->rows(kTable.resource_name());
    if (!rows.ok()) return out;
    for (const auto& r : *rows) ++out[std::stoll(r["n"].get<std::string>())];
    return out;
  }
  static std::map<std::int64_t, int> once(std::int64_t from, std::int64_t to) {
    std::map<std::int64_t, int> out;
    for (std::int64_t n = from; n < to; ++n) out[n] = 1;
    return out;
  }
  static void write(SinkWriter<std::int64_t>& w, std::int64_t from, std::int64_t to) {
    SinkWriterContext ctx;
    for (std::int64_t n = from; n < to; ++n) ASSERT_TRUE(w.write(n, ctx).ok()) << n;
  }
  // The writer's committables at a checkpoint (after flush()).
  static absl::StatusOr<Positions> prepare(SinkWriter<std::int64_t>& w) {
    auto* committing =
        dynamic_cast<CommittingSinkWriter<std::int64_t, BufferedStreamPosition>*>(&w);
    if (committing == nullptr) return absl::InternalError("not a committing writer");
    return committing->prepare_commit();
  }
  static absl::Status commit(Committer<BufferedStreamPosition>& c, const Positions& positions) {
    std::vector<CommitRequest<BufferedStreamPosition>> requests;
    for (const auto& p : positions) requests.emplace_back(p);
    GCP_RETURN_IF_ERROR(c.commit(requests));
    for (const auto& r : requests) {
      if (!r.failure().ok()) return r.failure();
    }
    return absl::OkStatus();
  }

  std::unique_ptr<testing::BigQueryFake> fake_;
};

TEST_F(ExactlyOnceSinkIT, RowsBecomeVisibleOnlyWhenTheCommitterFlushesTheirCheckpoint) {
  auto sink = numbers_sink();
  testing::TestMailbox mailbox;
  testing::FakeWriterInitContext context(mailbox);
  TestCommitterContext committer_context;
  auto w = sink->restore_writer(context, {});
  ASSERT_TRUE(w.ok()) << w.status();
  auto committer = sink->create_committer(committer_context);
  ASSERT_TRUE(committer.ok()) << committer.status();

  write(**w, 0, 300);
  ASSERT_TRUE((*w)->flush(false).ok());
  auto first = prepare(**w);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ((*first)[0].offset, 300);
  EXPECT_EQ((*first)[0].table, kTable.resource_name());
  auto state = (*w)->snapshot_state(1);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(*state, *first);
  EXPECT_TRUE(visible().empty()) << "appended rows are visible before their checkpoint completed";

  write(**w, 300, 400);
  ASSERT_TRUE((*w)->flush(false).ok());
  ASSERT_TRUE(commit(**committer, *first).ok());
  EXPECT_EQ(visible(), once(0, 300)) << "only the completed checkpoint's rows are visible";

  auto second = prepare(**w);
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ((*second)[0].stream, (*first)[0].stream) << "the stream is reused across checkpoints";
  EXPECT_EQ((*second)[0].offset, 400);
  auto nothing = prepare(**w);
  ASSERT_TRUE(nothing.ok());
  EXPECT_TRUE(nothing->empty()) << "an unchanged table yields no committable";
  ASSERT_TRUE(commit(**committer, *second).ok());
  EXPECT_EQ(visible(), once(0, 400));
  // A restart commits the restored committables again: nothing changes.
  ASSERT_TRUE(commit(**committer, *first).ok());
  ASSERT_TRUE(commit(**committer, *second).ok());
  EXPECT_EQ(visible(), once(0, 400));
  EXPECT_EQ(fake_->streams_created(), 1);
  ASSERT_TRUE((*w)->close().ok());
}

TEST_F(ExactlyOnceSinkIT, ARestoredWriterAbandonsAStreamTheCrashedRunAppendedPast) {
  auto sink = numbers_sink();
  TestCommitterContext committer_context;
  auto committer = sink->create_committer(committer_context);
  ASSERT_TRUE(committer.ok()) << committer.status();
  Positions checkpointed;
  {
    testing::TestMailbox mailbox;
    testing::FakeWriterInitContext context(mailbox);
    auto w = sink->restore_writer(context, {});
    ASSERT_TRUE(w.ok()) << w.status();
    write(**w, 0, 100);
    ASSERT_TRUE((*w)->flush(false).ok());
    ASSERT_TRUE(prepare(**w).ok());
    checkpointed = *(*w)->snapshot_state(1);
    // Appended after the checkpoint, then the process dies before the next one.
    write(**w, 100, 150);
    ASSERT_TRUE((*w)->flush(false).ok());
    ASSERT_TRUE((*w)->close().ok());
  }
  ASSERT_EQ(checkpointed.size(), 1u);
  ASSERT_EQ(checkpointed[0].offset, 100);
  // The restored job commits its checkpoint's committables first, then replays 100..149.
  ASSERT_TRUE(commit(**committer, checkpointed).ok());
  testing::TestMailbox mailbox;
  testing::FakeWriterInitContext context(mailbox);
  auto w = sink->restore_writer(context, checkpointed);
  ASSERT_TRUE(w.ok()) << w.status();
  auto before = (*w)->snapshot_state(2);
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(*before, checkpointed) << "a restored table not yet written keeps its position";
  write(**w, 100, 150);
  ASSERT_TRUE((*w)->flush(false).ok());
  auto next = prepare(**w);
  ASSERT_TRUE(next.ok());
  ASSERT_EQ(next->size(), 1u);
  EXPECT_NE((*next)[0].stream, checkpointed[0].stream)
      << "the probe found rows past the checkpoint (OFFSET_ALREADY_EXISTS): a fresh stream";
  EXPECT_EQ((*next)[0].offset, 50);
  ASSERT_TRUE(commit(**committer, *next).ok());
  EXPECT_EQ(visible(), once(0, 150)) << "no loss, no duplicate";
  EXPECT_EQ(fake_->streams_created(), 2);
  ASSERT_TRUE((*w)->close().ok());
}

// The restore probe's batch holds a row the table refuses: the refused request proves nothing
// about the offset (the service may check rows first), so the next batch probes again.
TEST_F(ExactlyOnceSinkIT, AProbeRefusedForARowProbesAgainWithTheNextBatch) {
  auto fields = TableSchemaToJson(Schema());
  fields[1]["maxLength"] = "2";
  ASSERT_TRUE(fake_
                  ->add_table("p", "d",
                              {{"tableReference", {{"tableId", "numbers"}}},
                               {"schema", {{"fields", fields}}}})
                  .ok());
  int routed = 0;
  auto b = builder<std::int64_t>([](const std::int64_t& n) {
    return absl::StatusOr<std::optional<nlohmann::json>>(
        nlohmann::json{{"n", n}, {"code", n == 101 ? "toolong" : "ok"}});
  });
  b.failure_handler(connector::FailureHandler::custom([&](const connector::FailedElement&) {
    ++routed;
    return absl::OkStatus();
  }));
  auto sink = b.build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  TestCommitterContext committer_context;
  auto committer = (*sink)->create_committer(committer_context);
  ASSERT_TRUE(committer.ok());
  Positions checkpointed;
  {
    testing::TestMailbox mailbox;
    testing::FakeWriterInitContext context(mailbox);
    auto w = (*sink)->restore_writer(context, {});
    ASSERT_TRUE(w.ok());
    write(**w, 0, 100);
    ASSERT_TRUE((*w)->flush(false).ok());
    auto c = prepare(**w);
    ASSERT_TRUE(c.ok());
    checkpointed = *c;
    write(**w, 102, 150);  // appended past the checkpoint, then killed
    ASSERT_TRUE((*w)->flush(false).ok());
    ASSERT_TRUE((*w)->close().ok());
  }
  ASSERT_TRUE(commit(**committer, checkpointed).ok());
  routed = 0;
  testing::TestMailbox mailbox;
  testing::FakeWriterInitContext context(mailbox);
  auto w = (*sink)->restore_writer(context, checkpointed);
  ASSERT_TRUE(w.ok());
  write(**w, 100, 150);  // the replay: its first batch holds row 101
  ASSERT_TRUE((*w)->flush(false).ok()) << "the first probe's refusal is not a verdict";
  auto next = prepare(**w);
  ASSERT_TRUE(next.ok());
  ASSERT_EQ(next->size(), 1u);
  EXPECT_NE((*next)[0].stream, checkpointed[0].stream) << "the second probe found rows past 100";
  ASSERT_TRUE(commit(**committer, *next).ok());
  auto want = once(0, 150);
  want.erase(101);
  EXPECT_EQ(visible(), want);
  EXPECT_EQ(routed, 1);
  ASSERT_TRUE((*w)->close().ok());
}

TEST_F(ExactlyOnceSinkIT, ARestoredWriterResumesItsStreamWhenNothingFollowedTheCheckpoint) {
  auto sink = numbers_sink();
  TestCommitterContext committer_context;
  auto committer = sink->create_committer(committer_context);
  ASSERT_TRUE(committer.ok());
  Positions checkpointed;
  {
    testing::TestMailbox mailbox;
    testing::FakeWriterInitContext context(mailbox);
    auto w = sink->restore_writer(context, {});
    ASSERT_TRUE(w.ok());
    write(**w, 0, 80);
    ASSERT_TRUE((*w)->flush(false).ok());
    auto c = prepare(**w);
    ASSERT_TRUE(c.ok());
    checkpointed = *c;
    // Killed between the checkpoint and its completion notification: nothing committed yet.
    ASSERT_TRUE((*w)->close().ok());
  }
  EXPECT_TRUE(visible().empty());
  ASSERT_TRUE(commit(**committer, checkpointed).ok());
  testing::TestMailbox mailbox;
  testing::FakeWriterInitContext context(mailbox);
  auto w = sink->restore_writer(context, checkpointed);
  ASSERT_TRUE(w.ok());
  write(**w, 80, 120);
  ASSERT_TRUE((*w)->flush(false).ok());
  auto next = prepare(**w);
  ASSERT_TRUE(next.ok());
  ASSERT_EQ(next->size(), 1u);
  EXPECT_EQ((*next)[0].stream, checkpointed[0].stream) << "the probe at offset 80 succeeded";
  EXPECT_EQ((*next)[0].offset, 120);
  ASSERT_TRUE(commit(**committer, *next).ok());
  EXPECT_EQ(visible(), once(0, 120));
  EXPECT_EQ(fake_->streams_created(), 1);
  ASSERT_TRUE((*w)->close().ok());
}

TEST_F(ExactlyOnceSinkIT, AJobWritesEachRowOnceThroughFailedAndLostAppendsAndAFailedFlush) {
  testing::FakeOptions faults;
  faults.unavailable_on_append = 4;
  faults.lose_response_on_append = 9;
  faults.unavailable_on_flush = 1;  // the first FlushRows: every run has one
  fake_->set_options(faults);
  StreamExecutionEnvironment env;
  env.set_parallelism(2);
  env.enable_checkpointing(50ms);
  env.from_source(std::make_shared<NumberSequenceSource>(0, 2999, 1),
                  WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
      .sink_to(numbers_sink(), "bigquery");
  auto result = env.execute("bigquery-exactly-once-3000");
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_EQ(visible(), once(0, 3000));
  // One buffered stream per writer subtask that received rows, reused by every checkpoint.
  EXPECT_GE(fake_->streams_created(), 1);
  EXPECT_LE(fake_->streams_created(), 2);
  EXPECT_EQ(result.metric("bigquery", "numRecordsSend"), 3000);
  EXPECT_GE(result.metric("bigquery", "appendRetries"), 2);
  EXPECT_GE(result.metric("bigquery", "flushRowsRetries"), 1);
}

TEST_F(ExactlyOnceSinkIT, ARunOfQuotaRefusalsIsOutlastedAndEachRowWrittenOnce) {
  testing::FakeOptions quota;
  quota.resource_exhausted_from = 3;
  quota.resource_exhausted_count = 6;
  fake_->set_options(quota);
  StreamExecutionEnvironment env;
  env.set_parallelism(1);
  env.enable_checkpointing(50ms);
  env.from_source(std::make_shared<NumberSequenceSource>(0, 1999, 1),
                  WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
      .sink_to(numbers_sink(), "bigquery");
  auto result = env.execute("bigquery-exactly-once-quota");
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_EQ(visible(), once(0, 2000));
  EXPECT_GE(result.metric("bigquery", "appendRetries"), 6);
  EXPECT_EQ(result.metric("bigquery", "numRecordsSendErrors"), 0);
}

TEST_F(ExactlyOnceSinkIT, AnAppendNeverAnsweredIsCutAndAppendedAgainAtItsOffset) {
  testing::FakeOptions faults;
  faults.stall_on_append = 3;
  faults.stall = 20s;
  fake_->set_options(faults);
  auto serializer =
      BigQuerySerializationSchema<std::int64_t>::json(Schema(), [](const std::int64_t& n) {
        return absl::StatusOr<std::optional<nlohmann::json>>(nlohmann::json{{"n", n}});
      });
  ASSERT_TRUE(serializer.ok());
  BigQueryWriterOptions options;
  options.max_append_request_bytes = 500;
  options.append_answer_timeout = 300ms;  // the watchdog; the default is 5 minutes
  options.recovery.initial_backoff = 10ms;
  auto sink = BigQuerySink<std::int64_t>::builder()
                  .destination(kTable)
                  .write_method(WriteMethod::kStorageApiExactlyOnce)
                  .serializer(*serializer)
                  .writer_options(options)
                  .emulator_endpoint(fake_->grpc_endpoint())
                  .emulator_rest_endpoint(fake_->rest_endpoint())
                  .build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  testing::TestMailbox mailbox;
  testing::FakeWriterInitContext context(mailbox);
  TestCommitterContext committer_context;
  auto w = (*sink)->restore_writer(context, {});
  ASSERT_TRUE(w.ok());
  auto committer = (*sink)->create_committer(committer_context);
  ASSERT_TRUE(committer.ok());
  const auto start = std::chrono::steady_clock::now();
  write(**w, 0, 500);
  ASSERT_TRUE((*w)->flush(false).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s) << "the stalled append was not cut";
  auto c = prepare(**w);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->size(), 1u);
  EXPECT_EQ((*c)[0].offset, 500);
  ASSERT_TRUE(commit(**committer, *c).ok());
  EXPECT_EQ(visible(), once(0, 500));
  EXPECT_GE(context.metric("appendRetries"), 1);
  ASSERT_TRUE((*w)->close().ok());
}

TEST_F(ExactlyOnceSinkIT, RowsTheServiceRefusesAreRoutedAndTheOthersWrittenOnce) {
  auto fields = TableSchemaToJson(Schema());
  fields[1]["maxLength"] = "2";
  ASSERT_TRUE(fake_
                  ->add_table("p", "d",
                              {{"tableReference", {{"tableId", "numbers"}}},
                               {"schema", {{"fields", fields}}}})
                  .ok());
  std::vector<std::int64_t> routed;
  auto b = builder<std::int64_t>([](const std::int64_t& n) {
    // Every tenth row carries a code the table refuses.
    return absl::StatusOr<std::optional<nlohmann::json>>(
        nlohmann::json{{"n", n}, {"code", n % 10 == 3 ? "toolong" : "ok"}});
  });
  b.failure_handler(connector::FailureHandler::custom([&](const connector::FailedElement& e) {
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    routed.push_back(0);
    return absl::OkStatus();
  }));
  auto sink = b.build();
  ASSERT_TRUE(sink.ok()) << sink.status();
  testing::TestMailbox mailbox;
  testing::FakeWriterInitContext context(mailbox);
  TestCommitterContext committer_context;
  auto w = (*sink)->restore_writer(context, {});
  ASSERT_TRUE(w.ok());
  auto committer = (*sink)->create_committer(committer_context);
  ASSERT_TRUE(committer.ok());
  write(**w, 0, 200);
  ASSERT_TRUE((*w)->flush(false).ok());
  auto c = prepare(**w);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->size(), 1u);
  EXPECT_EQ((*c)[0].offset, 180) << "refused requests never advance the stream";
  ASSERT_TRUE(commit(**committer, *c).ok());
  std::map<std::int64_t, int> expected;
  for (std::int64_t n = 0; n < 200; ++n) {
    if (n % 10 != 3) expected[n] = 1;
  }
  EXPECT_EQ(visible(), expected);
  EXPECT_EQ(routed.size(), 20u);
  EXPECT_EQ(context.metric("numRecordsSendErrors"), 20);
  ASSERT_TRUE((*w)->close().ok());
}

TEST_F(ExactlyOnceSinkIT, AFinalizedStreamFailsTheCommitNamingIt) {
  auto sink = numbers_sink();
  testing::TestMailbox mailbox;
  testing::FakeWriterInitContext context(mailbox);
  TestCommitterContext committer_context;
  auto w = sink->restore_writer(context, {});
  ASSERT_TRUE(w.ok());
  auto committer = sink->create_committer(committer_context);
  ASSERT_TRUE(committer.ok());
  write(**w, 0, 10);
  ASSERT_TRUE((*w)->flush(false).ok());
  auto c = prepare(**w);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->size(), 1u);
  connector::ClientOptions client;
  ASSERT_TRUE(client.set_emulator_endpoint(fake_->grpc_endpoint()).ok());
  auto stub = MakeBigQueryWriteStub(client);
  ASSERT_TRUE(stub.ok());
  storage_v1::FinalizeWriteStreamRequest finalize;
  finalize.set_name((*c)[0].stream);
  ASSERT_TRUE((*stub)->finalize_write_stream(finalize, 10s).ok());
  absl::Status committed = commit(**committer, *c);
  EXPECT_FALSE(committed.ok());
  EXPECT_THAT(std::string(committed.message()), ::testing::HasSubstr("finalized"));
  EXPECT_THAT(std::string(committed.message()), ::testing::HasSubstr((*c)[0].stream));
  EXPECT_TRUE(visible().empty());
  ASSERT_TRUE((*w)->close().ok());
}

}  // namespace
}  // namespace gcpstream::bigquery
