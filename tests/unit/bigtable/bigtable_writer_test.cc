// The Bigtable sink writer against fake batchers that complete nothing on their own. The sink
// has no timeout of its own (the client's 10 minutes bound a stalled MutateRows), so every test
// runs under a watchdog: past its deadline it fails the test, naming what had arrived, and answers
// everything still pending with DEADLINE_EXCEEDED so a broken wait ends instead of hanging.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "gcpstream/bigtable/sink/bigtable_sink.h"
#include "gcpstream/bigtable/sink/failed_mutation.h"
#include "tests/support/fake_bigtable.h"
#include "tests/support/fake_contexts.h"
#include "tests/support/watchdog.h"

namespace gcpstream::bigtable {
namespace {

using namespace std::chrono_literals;
using connector::TableDestination;
using testing::FakeInstanceClientFactory;
using testing::FakeMutationBatcher;
using ::testing::HasSubstr;

struct Row {
  std::string instance = "i1";
  std::string table = "t1";
  std::string key;
  std::string family = "f";
  int mutations = 1;  // 0: skip; -1: throw
};

// Ends a test's waits at a deadline (see the file comment).
std::string FailPending(FakeInstanceClientFactory& factory,
                        const std::vector<std::string>& tables) {
  std::string seen = "batchers:";
  for (const auto& t : tables) {
    auto b = factory.latest(t);
    if (!b) continue;
    seen += fmt::format(" {}: {} adds, {} pending, {} flushes;", t, b->size(), b->pending(),
                        b->flushes());
    b->complete_all(absl::DeadlineExceededError("watchdog"));
  }
  return seen;
}

class BigtableWriterTest : public ::testing::Test {
 protected:
  BigtableWriterTest() {
    options_.recovery.initial_backoff = 1ms;
    options_.recovery.max_backoff = 5ms;
  }

  BigtableSink<Row>::Builder builder() {
    auto b = BigtableSink<Row>::builder();
    b.destination_resolver([](const Row& r, const SinkWriterContext&) {
       return std::optional<TableDestination>(TableDestination::of("p", r.instance, r.table));
     })
        .serializer(BigtableSerializationSchema<Row>::of(
            [](const Row& r, const SinkWriterContext&) -> std::optional<RowMutationEntry> {
              if (r.mutations == 0) return std::nullopt;
              if (r.mutations < 0) throw std::runtime_error("cannot encode");
              RowMutationEntry e(r.key);
              for (int i = 0; i < r.mutations; ++i) {
                e.set_cell(r.family, "q" + std::to_string(i), 1000 * (i + 1), "v");
              }
              return e;
            }))
        .writer_options(options_)
        .clients(factory_);
    return b;
  }

  std::unique_ptr<SinkWriter<Row>> writer(BigtableSink<Row>::Builder b) {
    auto sink = b.build();
    EXPECT_TRUE(sink.ok()) << sink.status();
    auto w = (*sink)->create_writer(context_);
    EXPECT_TRUE(w.ok()) << w.status();
    return std::move(*w);
  }

  // Runs `fn` on another thread after `delay`, as a gRPC thread would answer.
  std::thread later(std::chrono::milliseconds delay, std::function<void()> fn) {
    return std::thread([delay, fn = std::move(fn)] {
      std::this_thread::sleep_for(delay);
      fn();
    });
  }

  // A handler that records what reaches it.
  std::shared_ptr<connector::FailureHandler> recording_handler() {
    return connector::FailureHandler::custom([this](const connector::FailedElement& e) {
      const auto& m = dynamic_cast<const FailedMutation&>(e);
      handled_.push_back({m.row_key(), e.status().code(), e.payload_bytes()});
      return absl::OkStatus();
    });
  }
  struct Handled {
    std::string row_key;
    absl::StatusCode code;
    std::string payload;
  };

  double metric(const std::string& name) { return context_.metric(name); }
  Row row(std::string key, std::string table = "t1") {
    Row r;
    r.key = std::move(key);
    r.table = std::move(table);
    return r;
  }

  BigtableWriterOptions options_;
  std::shared_ptr<FakeInstanceClientFactory> factory_ =
      std::make_shared<FakeInstanceClientFactory>();
  testing::Watchdog watchdog_{20s, [f = factory_] { return FailPending(*f, {"t1", "t2", "t3"}); }};
  testing::TestMailbox mailbox_;
  testing::FakeWriterInitContext context_{mailbox_};
  SinkWriterContext ctx_;
  std::vector<Handled> handled_;
};

TEST_F(BigtableWriterTest, ASkippedRecordIsCountedAndNeitherWrittenNorFailed) {
  auto w = writer(builder().failed_mutation_handler(recording_handler()));
  Row r = row("k");
  r.mutations = 0;
  ASSERT_TRUE(w->write(r, ctx_).ok());
  EXPECT_EQ(metric("recordsSkipped"), 1);
  EXPECT_EQ(metric("numRecordsSend"), 0);
  EXPECT_TRUE(handled_.empty());
  EXPECT_EQ(factory_->latest("t1"), nullptr) << "a skipped record opened a batcher";
  EXPECT_TRUE(factory_->opened().empty()) << "a skipped record opened an instance client";
  ASSERT_TRUE(w->close().ok());
}

TEST_F(BigtableWriterTest, TheEntryCapBackpressuresAndSendsTheBatchesBeforeWaiting) {
  options_.max_in_flight_entries = 3;
  auto w = writer(builder());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(w->write(row("k" + std::to_string(i)), ctx_).ok());
  auto batcher = factory_->latest("t1");
  ASSERT_EQ(batcher->size(), 3u);
  EXPECT_EQ(metric("inFlightEntries"), 3);
  const int flushes_before = batcher->flushes();
  auto completer = later(50ms, [&] { batcher->complete(0); });
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(w->write(row("k3"), ctx_).ok());
  completer.join();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 40ms) << "the 4th write did not wait";
  EXPECT_GT(batcher->flushes(), flushes_before)
      << "waiting at the cap must send what the batcher holds, or nothing can complete";
  EXPECT_EQ(batcher->size(), 4u);
  EXPECT_EQ(metric("inFlightEntries"), 3);
  batcher->complete_all();
  ASSERT_TRUE(w->flush(false).ok());
  EXPECT_EQ(metric("inFlightEntries"), 0);
  EXPECT_EQ(metric("numRecordsSend"), 4);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(BigtableWriterTest, TheByteCapBindsBelowTheEntryCapAndAnOversizedEntryIsAdmittedAlone) {
  options_.max_in_flight_entries = 1000;
  options_.max_in_flight_bytes = 200;
  auto w = writer(builder());
  Row big = row("big");
  big.mutations = 50;  // well over 200 serialized bytes
  ASSERT_TRUE(w->write(big, ctx_).ok())
      << "an entry over the byte cap is admitted on an empty writer";
  auto batcher = factory_->latest("t1");
  EXPECT_GT(metric("inFlightBytes"), 200);
  auto completer = later(50ms, [&] { batcher->complete(0); });
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(w->write(row("small"), ctx_).ok());
  completer.join();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 40ms)
      << "1 entry in flight, far below the entry cap, yet the byte cap must hold the next one";
  batcher->complete_all();
  ASSERT_TRUE(w->flush(false).ok());
  EXPECT_EQ(metric("inFlightBytes"), 0);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(BigtableWriterTest, FlushSendsEveryBatcherThenWaitsForEveryEntry) {
  auto w = writer(builder());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(w->write(row("a" + std::to_string(i), "t1"), ctx_).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(w->write(row("b" + std::to_string(i), "t2"), ctx_).ok());
  auto t1 = factory_->latest("t1");
  auto t2 = factory_->latest("t2");
  // Entries complete only once their batcher was flushed: a drain that waited before sending
  // would never end (the watchdog would fail the test).
  std::atomic<bool> t1_flushed{false}, t2_flushed{false};
  std::vector<std::thread> answers;
  t1->on_flush = [&] {
    if (!t1_flushed.exchange(true)) answers.push_back(later(30ms, [&] { t1->complete_all(); }));
  };
  t2->on_flush = [&] {
    if (!t2_flushed.exchange(true)) answers.push_back(later(30ms, [&] { t2->complete_all(); }));
  };
  ASSERT_TRUE(w->flush(false).ok());
  for (auto& t : answers) t.join();
  EXPECT_EQ(t1->pending(), 0u);
  EXPECT_EQ(t2->pending(), 0u);
  EXPECT_EQ(metric("inFlightEntries"), 0);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(BigtableWriterTest, AFailureRaisedInACallbackSurvivesToTheNextCallWithItsCode) {
  auto w = writer(builder().failed_mutation_handler(connector::FailureHandler::log_and_drop()));
  ASSERT_TRUE(w->write(row("k0"), ctx_).ok());
  auto batcher = factory_->latest("t1");
  batcher->complete(0, absl::PermissionDeniedError("caller lacks bigtable.tables.mutateRows"));
  ASSERT_TRUE(mailbox_.drain().ok());  // the completion mail runs on the writer's thread
  absl::Status s = w->write(row("k1"), ctx_);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("projects/p/instances/i1/tables/t1"));
  EXPECT_EQ(w->flush(false).code(), absl::StatusCode::kPermissionDenied)
      << "the failure stays until the job restarts";
  EXPECT_EQ(metric("errorClass.PERMISSION_DENIED.errors"), 1);
  ASSERT_TRUE(w->close().ok()) << "close absorbs a failure already reported";
}

TEST_F(BigtableWriterTest, AnOutageNeverReachesADroppingHandler) {
  auto w = writer(builder().failed_mutation_handler(recording_handler()));
  ASSERT_TRUE(w->write(row("k0"), ctx_).ok());
  auto batcher = factory_->latest("t1");
  batcher->complete(0, absl::UnavailableError("retries exhausted after 10 min"));
  absl::Status s = w->flush(false);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE(handled_.empty()) << "an outage was handed to the failure handler";
  ASSERT_TRUE(w->close().ok());
}

TEST_F(BigtableWriterTest, ABatchRejectionIsIsolatedAndOnlyTheGuiltyEntryReachesTheHandler) {
  auto w = writer(builder().failed_mutation_handler(recording_handler()));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(w->write(row("k" + std::to_string(i)), ctx_).ok());
  auto batcher = factory_->latest("t1");
  // The service rejects the whole request for one bad entry; solo re-submissions answer alone.
  batcher->on_add = [&](std::size_t index, const FakeMutationBatcher::Call& call) {
    if (!call.solo) return;
    if (call.entry.row_key() == "k1") {
      batcher->complete(index, absl::InvalidArgumentError("Timestamp granularity mismatch"));
    } else {
      batcher->complete(index);
    }
  };
  for (std::size_t i = 0; i < 3; ++i) {
    batcher->complete(i, absl::InvalidArgumentError("Timestamp granularity mismatch"));
  }
  ASSERT_TRUE(w->flush(false).ok());
  ASSERT_EQ(handled_.size(), 1u);
  EXPECT_EQ(handled_[0].row_key, "k1");
  EXPECT_EQ(handled_[0].code, absl::StatusCode::kInvalidArgument);
  Entry payload;
  ASSERT_TRUE(payload.ParseFromString(handled_[0].payload)) << "the payload is a serialized Entry";
  EXPECT_EQ(payload.row_key(), "k1");
  EXPECT_EQ(payload.mutations_size(), 1);
  std::size_t solos = 0;
  for (std::size_t i = 0; i < batcher->size(); ++i) solos += batcher->call(i).solo ? 1 : 0;
  EXPECT_EQ(solos, 3u) << "each parked entry is re-submitted alone";
  EXPECT_EQ(metric("numRecordsSendErrors"), 1);
  EXPECT_EQ(metric("errorClass.INVALID_ARGUMENT.errors"), 1) << "the batch fan-out is not counted";
  EXPECT_EQ(metric("parkedEntries"), 0) << "nothing stays parked across a checkpoint";
  EXPECT_EQ(metric("numRecordsSend"), 3) << "an isolation re-submission is not another record";
  ASSERT_TRUE(w->close().ok());
}

TEST_F(BigtableWriterTest, ConsecutiveRejectionsFailTheJobAtTheLimit) {
  options_.max_consecutive_rejections = 2;
  auto w = writer(builder().failed_mutation_handler(recording_handler()));
  factory_->configure = [](const std::string&, FakeMutationBatcher& b) {
    b.on_add = [&b](std::size_t index, const FakeMutationBatcher::Call&) {
      b.complete(index, absl::InvalidArgumentError("bad row"));
    };
  };
  absl::Status s;
  for (int i = 0; i < 5 && s.ok(); ++i) {
    s = w->write(row("k" + std::to_string(i)), ctx_);
    if (s.ok()) s = w->flush(false);
  }
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("max_consecutive_rejections"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("INVALID_ARGUMENT: bad row")) << "the last cause";
  EXPECT_EQ(handled_.size(), 2u) << "both rejections were handled; the bound then fails the job";
  ASSERT_TRUE(w->close().ok());
}

TEST_F(BigtableWriterTest, NotFoundUnderCreateNeverFailsNamingTheDisposition) {
  auto w = writer(builder().failed_mutation_handler(recording_handler()));
  ASSERT_TRUE(w->write(row("k0"), ctx_).ok());
  factory_->latest("t1")->complete(0, absl::NotFoundError("table not found"));
  absl::Status s = w->flush(false);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("CREATE_NEVER"));
  EXPECT_TRUE(handled_.empty());
  ASSERT_TRUE(w->close().ok());
}

TEST_F(BigtableWriterTest, NotFoundUnderCreateIfNeededCreatesTheTableAndReappliesInOrder) {
  auto w = writer(
      builder()
          .create_disposition(CreateDisposition::kCreateIfNeeded)
          .table_create_options(TableCreateOptions().column_family("f", GcRule::max_versions(1))));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(w->write(row("k" + std::to_string(i)), ctx_).ok());
  auto batcher = factory_->latest("t1");
  for (std::size_t i = 0; i < 3; ++i) batcher->complete(i, absl::NotFoundError("table not found"));
  batcher->on_add = [&](std::size_t index, const FakeMutationBatcher::Call&) {
    batcher->complete(index);
  };
  ASSERT_TRUE(w->flush(false).ok());
  ASSERT_EQ(factory_->admin->creates, std::vector<std::string>{"t1"});
  ASSERT_EQ(batcher->size(), 6u);
  for (std::size_t i = 3; i < 6; ++i) {
    EXPECT_EQ(batcher->call(i).entry.row_key(), "k" + std::to_string(i - 3))
        << "parked entries are re-applied in their original order";
  }
  EXPECT_EQ(metric("tablesCreated"), 1);
  EXPECT_EQ(metric("errorClass.NOT_FOUND.errors"), 3);
  EXPECT_EQ(metric("numRecordsSend"), 3);
  EXPECT_EQ(metric("parkedEntries"), 0);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(BigtableWriterTest, AMissingFamilyThatIsDeclaredIsAddedToTheExistingTable) {
  factory_->admin->tables["t1"];  // exists, without families
  factory_->admin->create_answers = {absl::AlreadyExistsError("table exists")};
  auto w = writer(builder()
                      .create_disposition(CreateDisposition::kCreateIfNeeded)
                      .table_create_options(TableCreateOptions().column_family("f")));
  ASSERT_TRUE(w->write(row("k0"), ctx_).ok());
  auto batcher = factory_->latest("t1");
  batcher->complete(0, absl::NotFoundError("column family f not found"));
  batcher->on_add = [&](std::size_t index, const FakeMutationBatcher::Call&) {
    batcher->complete(index);
  };
  ASSERT_TRUE(w->flush(false).ok());
  ASSERT_EQ(factory_->admin->added.size(), 1u);
  EXPECT_EQ(factory_->admin->added[0], std::vector<std::string>{"f"});
  EXPECT_EQ(metric("columnFamiliesAdded"), 1);
  EXPECT_EQ(metric("tablesCreated"), 0);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(BigtableWriterTest, AMissingUndeclaredFamilyFailsAtOnceNamingTableAndFamily) {
  factory_->admin->tables["t1"];
  factory_->admin->create_answers = {absl::AlreadyExistsError("table exists")};
  auto w = writer(builder()
                      .create_disposition(CreateDisposition::kCreateIfNeeded)
                      .table_create_options(TableCreateOptions().column_family("f")));
  Row r = row("k0");
  r.family = "undeclared";
  ASSERT_TRUE(w->write(r, ctx_).ok());
  factory_->latest("t1")->complete(0, absl::NotFoundError("column family not found"));
  absl::Status s = w->flush(false);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("'undeclared'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("tables/t1"));
  EXPECT_EQ(factory_->admin->creates.size(), 1u) << "no recovery budget spent on it";
  ASSERT_TRUE(w->close().ok());
}

TEST_F(BigtableWriterTest, ACreationThatKeepsFailingSpendsTheRecoveryBudgetThenFails) {
  options_.recovery.max_attempts = 3;
  factory_->admin->create_answers.assign(10, absl::UnavailableError("admin unavailable"));
  auto w = writer(builder()
                      .create_disposition(CreateDisposition::kCreateIfNeeded)
                      .table_create_options(TableCreateOptions().column_family("f")));
  ASSERT_TRUE(w->write(row("k0"), ctx_).ok());
  factory_->latest("t1")->complete(0, absl::NotFoundError("table not found"));
  absl::Status s = w->flush(false);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("recovery"));
  EXPECT_EQ(factory_->admin->creates.size(), 4u) << "the first try plus 3 recovery attempts";
  ASSERT_TRUE(w->close().ok());
}

TEST_F(BigtableWriterTest, ADeclaredAggregateTypeIsCheckedBeforeTheFirstWrite) {
  // The table exists with "sum" as a raw family, but the job declares it INT64 Sum.
  auto& t = factory_->admin->tables["t1"];
  (*t.mutable_column_families())["sum"];
  auto w = writer(builder()
                      .create_disposition(CreateDisposition::kCreateIfNeeded)
                      .table_create_options(TableCreateOptions().column_family(
                          "sum", std::nullopt, ColumnFamilyType::kInt64Sum)));
  absl::Status s = w->write(row("k0"), ctx_);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("'sum'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("INT64"));
  auto batcher = factory_->latest("t1");
  EXPECT_EQ(batcher == nullptr ? 0u : batcher->size(), 0u) << "nothing was sent";
  ASSERT_TRUE(w->close().ok());
}

TEST_F(BigtableWriterTest, AnEntryOverTheMutationLimitIsRefusedBeforeAnyRpc) {
  auto w = writer(builder().failed_mutation_handler(recording_handler()));
  Row r = row("huge");
  r.mutations = static_cast<int>(kMaxMutationsPerRequest) + 1;
  ASSERT_TRUE(w->write(r, ctx_).ok()) << "routed to the handler, which accepts it";
  ASSERT_EQ(handled_.size(), 1u);
  EXPECT_EQ(handled_[0].code, absl::StatusCode::kInvalidArgument);
  auto batcher = factory_->latest("t1");
  EXPECT_EQ(batcher == nullptr ? 0u : batcher->size(), 0u);
  EXPECT_EQ(metric("numRecordsSend"), 0);

  auto failing = writer(builder());  // the default handler fails the job
  absl::Status s = failing->write(r, ctx_);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("100000"));
  ASSERT_TRUE(w->close().ok());
  ASSERT_TRUE(failing->close().ok());
}

TEST_F(BigtableWriterTest, ARowKeyTheServiceRefusesIsARecordFailureBeforeAnyRpc) {
  // Bigtable documents row keys as required and at most 4 KiB; the emulator answers an empty
  // key with INTERNAL, which would fail the job even under a dropping handler.
  auto w = writer(builder().failed_mutation_handler(recording_handler()));
  ASSERT_TRUE(w->write(row(""), ctx_).ok()) << "routed to the handler, which accepts it";
  ASSERT_TRUE(w->write(row(std::string(kMaxRowKeyBytes + 1, 'k')), ctx_).ok());
  ASSERT_TRUE(w->write(row(std::string(kMaxRowKeyBytes, 'k')), ctx_).ok()) << "at the limit";
  ASSERT_EQ(handled_.size(), 2u);
  EXPECT_EQ(handled_[0].code, absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(handled_[1].code, absl::StatusCode::kInvalidArgument);
  ASSERT_NE(factory_->latest("t1"), nullptr);
  EXPECT_EQ(factory_->latest("t1")->size(), 1u) << "only the valid key was sent";
  factory_->latest("t1")->complete_all();
  ASSERT_TRUE(w->flush(false).ok());
  ASSERT_TRUE(w->close().ok());
}

TEST_F(BigtableWriterTest, ACellTimestampTheServiceRefusesIsARecordFailureBeforeAnyRpc) {
  // A negative timestamp from a record's field made the emulator answer INTERNAL, which failed
  // the job even under log_and_drop.
  for (std::int64_t ts : {-5000LL, -2LL, 1500LL}) {
    RowMutationEntry e("k");
    e.set_cell("f", "q", ts, "v");
    const absl::Status s = ValidateEntry(std::move(e).release());
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << ts;
  }
  for (std::int64_t ts : {-1LL, 0LL, 1'000LL, 1'700'000'000'000'000LL}) {
    RowMutationEntry e("k");
    e.set_cell("f", "q", ts, "v");
    EXPECT_TRUE(ValidateEntry(std::move(e).release()).ok()) << ts;
  }
}

TEST_F(BigtableWriterTest, AFamilyNameThatIsNotUtf8IsARecordFailureBeforeAnyRpc) {
  // A protobuf string: the service cannot parse a request carrying it.
  RowMutationEntry bad("k");
  bad.set_cell("f\xc0", "q", 1000, "v");
  const absl::Status s = ValidateEntry(std::move(bad).release());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("not valid UTF-8 (byte 1)"));
  RowMutationEntry deletes("k");
  deletes.delete_family("\xff");
  EXPECT_EQ(ValidateEntry(std::move(deletes).release()).code(), absl::StatusCode::kInvalidArgument);
  RowMutationEntry good("k");
  good.set_cell("f", "q\xff binary qualifiers are bytes", 1000, "\xff");
  EXPECT_TRUE(ValidateEntry(std::move(good).release()).ok());
}

TEST_F(BigtableWriterTest, AnInvalidTableIdIsAConfigurationErrorNeverARecordFailure) {
  auto fixed = builder().table(TableDestination::of("p", "i1", "bad/table")).build();
  ASSERT_FALSE(fixed.ok());
  EXPECT_THAT(std::string(fixed.status().message()), HasSubstr("'bad/table'"));
  auto w = writer(builder().failed_mutation_handler(recording_handler()));
  absl::Status s = w->write(row("k", "no table"), ctx_);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_TRUE(handled_.empty());
  EXPECT_FALSE(ValidateTableId("").ok());
  EXPECT_FALSE(ValidateTableId(".hidden").ok());
  EXPECT_FALSE(ValidateTableId(std::string(51, 't')).ok());
  EXPECT_TRUE(ValidateTableId("flights_2001-v1.0").ok());
  ASSERT_TRUE(w->close().ok());
}

TEST_F(BigtableWriterTest, ASerializerThatThrowsIsASerializationFailure) {
  auto w = writer(builder().failed_mutation_handler(recording_handler()));
  Row r = row("k");
  r.mutations = -1;
  ASSERT_TRUE(w->write(r, ctx_).ok());
  ASSERT_EQ(handled_.size(), 1u);
  EXPECT_TRUE(handled_[0].payload.empty()) << "no entry was built";
  EXPECT_EQ(metric("numRecordsSendErrors"), 1);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(BigtableWriterTest, TheLeastRecentlyUsedInstanceIsEvictedAfterDrainingAtTheCap) {
  options_.max_active_instances = 2;
  factory_->configure = [](const std::string&, FakeMutationBatcher& b) {
    b.on_add = [&b](std::size_t index, const FakeMutationBatcher::Call&) { b.complete(index); };
  };
  auto w = writer(builder());
  Row a = row("a", "t1");
  a.instance = "i1";
  Row b = row("b", "t2");
  b.instance = "i2";
  Row c = row("c", "t3");
  c.instance = "i3";
  ASSERT_TRUE(w->write(a, ctx_).ok());
  ASSERT_TRUE(w->flush(false).ok());
  ASSERT_TRUE(w->write(b, ctx_).ok());
  ASSERT_TRUE(w->write(c, ctx_).ok());
  EXPECT_EQ(metric("capacityEvictions"), 1);
  EXPECT_EQ(factory_->closed(), std::vector<std::string>{"i1"});
  EXPECT_EQ(factory_->latest("t1")->shutdowns(), 1);
  EXPECT_EQ(metric("activeClients"), 2);
  ASSERT_TRUE(w->close().ok());
  EXPECT_EQ(factory_->closed().size(), 3u) << "close releases every client";
}

TEST_F(BigtableWriterTest, AnIdleTableIsReleasedAfterASuccessfulFlush) {
  options_.destination_idle_timeout = 1ms;
  factory_->configure = [](const std::string&, FakeMutationBatcher& b) {
    b.on_add = [&b](std::size_t index, const FakeMutationBatcher::Call&) { b.complete(index); };
  };
  auto w = writer(builder());
  ASSERT_TRUE(w->write(row("k"), ctx_).ok());
  ASSERT_TRUE(w->flush(false).ok());  // used since the last flush: stays
  EXPECT_EQ(factory_->latest("t1")->shutdowns(), 0);
  std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(w->flush(false).ok());
  EXPECT_EQ(factory_->latest("t1")->shutdowns(), 1);
  EXPECT_EQ(metric("idleEvictions"), 1);
  EXPECT_EQ(metric("activeClients"), 0);
  ASSERT_TRUE(w->write(row("k2"), ctx_).ok()) << "a later record reopens the table";
  EXPECT_EQ(factory_->batchers_created("t1"), 2u);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(BigtableWriterTest, PerDestinationMetricsCountEachTable) {
  options_.per_destination_metrics = true;
  auto w = writer(builder().failed_mutation_handler(recording_handler()));
  ASSERT_TRUE(w->write(row("a", "t1"), ctx_).ok());
  ASSERT_TRUE(w->write(row("b", "t2"), ctx_).ok());
  ASSERT_TRUE(w->write(row("c", "t2"), ctx_).ok());
  factory_->latest("t1")->complete_all();
  auto t2 = factory_->latest("t2");
  t2->on_add = [&](std::size_t index, const FakeMutationBatcher::Call&) {
    t2->complete(index, absl::InvalidArgumentError("bad"));
  };
  t2->complete_all(absl::InvalidArgumentError("bad"));
  ASSERT_TRUE(w->flush(false).ok());
  EXPECT_EQ(metric("destination.t1.recordsSend"), 1);
  EXPECT_EQ(metric("destination.t2.recordsSend"), 2);
  EXPECT_EQ(metric("destination.t2.sendErrors"), 2);
  EXPECT_EQ(metric("destination.t1.sendErrors"), 0);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(BigtableWriterTest, CloseReleasesTheClientsWhileEntriesAreStillInFlight) {
  auto w = writer(builder());
  ASSERT_TRUE(w->write(row("k"), ctx_).ok());
  ASSERT_TRUE(w->close().ok());
  EXPECT_EQ(factory_->latest("t1")->shutdowns(), 1);
  EXPECT_EQ(factory_->closed(), std::vector<std::string>{"i1"});
  factory_->latest("t1")->complete_all();  // a late answer finds nobody listening
  ASSERT_TRUE(mailbox_.drain().ok());
}

TEST(BigtableSinkBuilderTest, InvalidConfigurationsFailAtBuildNamingTheOption) {
  auto serializer = BigtableSerializationSchema<int>::of(
      [](const int&, const SinkWriterContext&) -> std::optional<RowMutationEntry> {
        return RowMutationEntry("k").set_cell("f", "q", 1000, "v");
      });
  const auto table = TableDestination::of("p", "i", "t");
  auto message = [](const absl::Status& s) { return std::string(s.message()); };

  auto no_destination = BigtableSink<int>::builder().serializer(serializer).build();
  EXPECT_THAT(message(no_destination.status()), HasSubstr("destination"));
  auto no_serializer = BigtableSink<int>::builder().table(table).build();
  EXPECT_THAT(message(no_serializer.status()), HasSubstr("serializer"));

  BigtableWriterOptions too_big;
  too_big.batch_element_count = 20'000;
  auto b1 = BigtableSink<int>::builder()
                .table(table)
                .serializer(serializer)
                .writer_options(too_big)
                .build();
  EXPECT_EQ(b1.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message(b1.status()), HasSubstr("batch_element_count"));
  too_big.batch_element_count = 19'999;
  too_big.batch_byte_size = 100LL * 1024 * 1024;
  auto b2 = BigtableSink<int>::builder()
                .table(table)
                .serializer(serializer)
                .writer_options(too_big)
                .build();
  EXPECT_THAT(message(b2.status()), HasSubstr("batch_byte_size"));

  auto needs_options = BigtableSink<int>::builder()
                           .table(table)
                           .serializer(serializer)
                           .create_disposition(CreateDisposition::kCreateIfNeeded)
                           .build();
  EXPECT_THAT(message(needs_options.status()), HasSubstr("table_create_options"));
  auto rejects_options = BigtableSink<int>::builder()
                             .table(table)
                             .serializer(serializer)
                             .table_create_options(TableCreateOptions().column_family("f"))
                             .build();
  EXPECT_THAT(message(rejects_options.status()), HasSubstr("CREATE_NEVER"));

  auto bad_endpoint = BigtableSink<int>::builder()
                          .table(table)
                          .serializer(serializer)
                          .emulator_endpoint("no port")
                          .build();
  EXPECT_EQ(bad_endpoint.status().code(), absl::StatusCode::kInvalidArgument);

  auto ok = BigtableSink<int>::builder()
                .table(table)
                .serializer(serializer)
                .create_disposition(CreateDisposition::kCreateIfNeeded)
                .table_create_options(TableCreateOptions().column_family("f"))
                .build();
  EXPECT_TRUE(ok.ok()) << ok.status();
}

TEST(BigtableSinkBuilderTest, LargeInFlightBoundsAreWarnedAboutNotRefused) {
  BigtableWriterOptions o;
  EXPECT_TRUE(o.warnings().empty());
  o.max_in_flight_entries = 20'001;
  o.max_in_flight_bytes = 100LL * 1024 * 1024 + 1;
  EXPECT_TRUE(o.validate().ok());
  ASSERT_EQ(o.warnings().size(), 2u);
  EXPECT_THAT(o.warnings()[0], HasSubstr("max_in_flight_entries"));
  EXPECT_THAT(o.warnings()[1], HasSubstr("max_in_flight_bytes"));
}

TEST(BigtableSinkBuilderTest, DefaultsArePinned) {
  BigtableWriterOptions o;
  EXPECT_EQ(o.max_in_flight_entries, 1000);
  EXPECT_EQ(o.max_in_flight_bytes, 64LL * 1024 * 1024);
  EXPECT_EQ(o.max_consecutive_rejections, 100);
  EXPECT_EQ(o.destination_idle_timeout, std::chrono::hours(1));
  EXPECT_EQ(o.max_active_instances, 16);
  EXPECT_FALSE(o.per_destination_metrics);
  const BatchingThresholds t = o.thresholds();
  EXPECT_EQ(t.element_count, 100);
  EXPECT_EQ(t.byte_size, 20LL * 1024 * 1024);
  EXPECT_EQ(t.delay, std::chrono::seconds(1));
  const MutateRowsRetrySettings r;
  EXPECT_EQ(r.retryable_codes, (std::set<absl::StatusCode>{absl::StatusCode::kUnavailable,
                                                           absl::StatusCode::kDeadlineExceeded,
                                                           absl::StatusCode::kAborted}));
  EXPECT_EQ(r.initial_delay, std::chrono::milliseconds(10));
  EXPECT_EQ(r.max_delay, std::chrono::minutes(1));
  EXPECT_EQ(r.total_timeout, std::chrono::minutes(10));
}

}  // namespace
}  // namespace gcpstream::bigtable
