// The Spanner sink writer over a fake stub: the options and their documented ceilings, batch
// cutting by mutations, cells (with secondary-index weights) and bytes, the three failure
// classes of the Spanner connector spec ("Error handling"), the sink-owned retry of undecided
// groups, session replacement, metrics and lineage.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "gcpstream/connector/grpc_status.h"
#include "gcpstream/spanner/client/batch_write.h"
#include "gcpstream/spanner/sink/index_weights.h"
#include "gcpstream/spanner/sink/spanner_sink.h"
#include "google/rpc/error_details.pb.h"
#include "tests/support/fake_contexts.h"
#include "tests/support/fake_spanner.h"
#include "tests/support/manual_scheduler.h"

namespace gcpstream::spanner {
namespace {

using namespace std::chrono_literals;
using connector::BatchCallResult;
using connector::DatabaseDestination;
using ::testing::HasSubstr;
namespace sp = google::spanner::v1;

struct Flight {
  std::string id;
  std::int64_t delay = 0;
  std::string note;
};

const DatabaseDestination kDb = DatabaseDestination::of("p", "inst", "flights");

// Moves a manual clock on a thread of its own (the test thread runs the writer's mailbox),
// jumping straight to each timer due within a minute (every backoff and attempt deadline here;
// not the session keep-alive, which would otherwise move the clock while a call is being set
// up), until destroyed.
class ClockDriver {
 public:
  explicit ClockDriver(std::shared_ptr<testing::ManualScheduler> clock)
      : clock_(std::move(clock)), thread_([this] {
          while (!stop_.load()) clock_->run_next(5ms, 1min);
        }) {}
  ~ClockDriver() {
    stop_.store(true);
    thread_.join();
  }

 private:
  std::shared_ptr<testing::ManualScheduler> clock_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::chrono::milliseconds Since(util::Scheduler::Time from, util::Scheduler::Time to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from);
}

// A Session-not-found refusal of the whole call, as Spanner sends it (ResourceInfo detail).
absl::Status SessionNotFound(const std::string& session) {
  google::rpc::Status details;
  details.set_code(5);
  google::rpc::ResourceInfo info;
  info.set_resource_type("type.googleapis.com/google.spanner.v1.Session");
  info.set_resource_name(session);
  details.add_details()->PackFrom(info);
  absl::Status status = absl::NotFoundError("Session not found");
  status.SetPayload(connector::kRpcStatusPayload, absl::Cord(details.SerializeAsString()));
  return status;
}

struct Recorded {
  std::mutex mu;
  std::vector<std::string> payloads;
  std::vector<absl::StatusCode> codes;
};

class SpannerWriterTest : public ::testing::Test {
 protected:
  SpannerWriterTest() {
    options_.retry_initial_backoff = 1ms;
    options_.retry_max_backoff = 2ms;
  }

  SpannerSink<Flight>::Builder builder() {
    auto b = SpannerSink<Flight>::builder();
    b.database(kDb)
        .serializer([](const Flight& f,
                       const SinkWriterContext&) -> absl::StatusOr<std::optional<Mutation>> {
          if (f.id == "skip") return std::nullopt;
          if (f.id == "throw") throw std::runtime_error("no flight");
          auto m = Mutation::InsertOrUpdate("Flights")
                       .Set("Id", Value::String(f.id))
                       .Set("Delay", Value::Int64(f.delay));
          if (!f.note.empty()) m.Set("Note", Value::String(f.note));
          return std::move(m).Build();
        })
        .writer_options(options_)
        .stub(stub_)
        .uniform01([] { return 0.5; });
    return b;
  }
  std::unique_ptr<SinkWriter<Flight>> writer(SpannerSink<Flight>::Builder b) {
    auto sink = b.build();
    EXPECT_TRUE(sink.ok()) << sink.status();
    auto w = (*sink)->create_writer(context_);
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? std::move(*w) : nullptr;
  }
  std::shared_ptr<connector::FailureHandler> recording() {
    return connector::FailureHandler::custom([r = recorded_](const connector::FailedElement& e) {
      std::lock_guard lock(r->mu);
      r->payloads.push_back(e.payload_bytes());
      r->codes.push_back(e.status().code());
      return absl::OkStatus();
    });
  }
  absl::Status write_all(SinkWriter<Flight>& w, int n, const std::string& prefix = "f") {
    for (int i = 0; i < n; ++i) {
      if (absl::Status s = w.write(Flight{prefix + std::to_string(i), i}, ctx_); !s.ok()) {
        return s;
      }
    }
    return w.flush(false);
  }
  // Group ids of call `i`, in order.
  std::vector<std::string> ids(std::size_t i) {
    std::vector<std::string> out;
    const auto call = stub_->call(i);
    for (const auto& g : call.request.mutation_groups()) {
      out.push_back(g.mutations(0).insert_or_update().values(0).values(0).string_value());
    }
    return out;
  }

  SpannerWriterOptions options_;
  std::shared_ptr<testing::FakeSpannerStub> stub_ = std::make_shared<testing::FakeSpannerStub>();
  testing::TestMailbox mailbox_;
  testing::FakeWriterInitContext context_{mailbox_};
  SinkWriterContext ctx_;
  std::shared_ptr<Recorded> recorded_ = std::make_shared<Recorded>();
};

TEST_F(SpannerWriterTest, TheDefaultsAndCeilingsAreTheReferences) {
  SpannerWriterOptions o;
  EXPECT_EQ(o.max_batch_cells, 5000);
  EXPECT_EQ(o.max_batch_mutations, 500);
  EXPECT_EQ(o.max_batch_bytes, 1048576);
  EXPECT_EQ(o.retry_initial_backoff, 500ms);
  EXPECT_EQ(o.retry_max_backoff, 10s);
  EXPECT_EQ(o.retry_max_attempts, 10);
  EXPECT_EQ(o.batch_write_timeout, 30s);
  EXPECT_FALSE(o.max_commit_delay.has_value());
  EXPECT_FALSE(o.rpc_priority.has_value());
  EXPECT_EQ(o.worst_case_write_time(), 369375ms) << "300 s in ten attempts + 69.375 s of backoff";
  EXPECT_TRUE(o.warnings().empty());
  for (auto [set, option] :
       std::vector<std::pair<std::function<void(SpannerWriterOptions&)>, std::string>>{
           {[](auto& o) { o.max_batch_cells = 80001; }, "max_batch_cells"},
           {[](auto& o) { o.max_batch_cells = 0; }, "max_batch_cells"},
           {[](auto& o) { o.max_batch_mutations = 80001; }, "max_batch_mutations"},
           {[](auto& o) { o.max_batch_bytes = 104857601; }, "max_batch_bytes"},
           {[](auto& o) { o.max_commit_delay = 501ms; }, "max_commit_delay"},
           {[](auto& o) { o.retry_initial_backoff = 0ms; }, "retry_initial_backoff"},
           {[](auto& o) { o.retry_max_backoff = 100ms; }, "retry_max_backoff"},
           {[](auto& o) { o.retry_max_attempts = 0; }, "retry_max_attempts"},
           {[](auto& o) { o.batch_write_timeout = 0ms; }, "batch_write_timeout"},
       }) {
    SpannerWriterOptions o;
    set(o);
    absl::Status s = o.validate();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << option;
    EXPECT_THAT(std::string(s.message()), HasSubstr(option));
  }
  SpannerWriterOptions edge;
  edge.max_batch_cells = 80000;
  edge.max_batch_mutations = 80000;
  edge.max_batch_bytes = 104857600;
  edge.max_commit_delay = 500ms;
  EXPECT_TRUE(edge.validate().ok()) << "the ceilings themselves are allowed";
  SpannerWriterOptions unreachable;
  unreachable.max_batch_mutations = 6000;
  ASSERT_EQ(unreachable.warnings().size(), 1u);
  EXPECT_THAT(unreachable.warnings()[0], HasSubstr("6000"));
  EXPECT_THAT(unreachable.warnings()[0], HasSubstr("5000"));
}

TEST_F(SpannerWriterTest, TheBuilderNamesWhatIsMissing) {
  auto no_db =
      SpannerSink<Flight>::builder()
          .serializer([](const Flight&,
                         const SinkWriterContext&) -> absl::StatusOr<std::optional<Mutation>> {
            return std::nullopt;
          })
          .build();
  EXPECT_THAT(std::string(no_db.status().message()), HasSubstr("database(...)"));
  auto no_serializer = SpannerSink<Flight>::builder().database(kDb).build();
  EXPECT_THAT(std::string(no_serializer.status().message()), HasSubstr("serializer(...)"));
  auto bad_db = builder().database(DatabaseDestination::of("p", "inst", "9x")).build();
  EXPECT_THAT(std::string(bad_db.status().message()), HasSubstr("database '9x'"));
  auto both = builder().emulator_endpoint("127.0.0.1:9010").service_account_key_file("/k.json");
  EXPECT_EQ(both.build().status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(SpannerWriterTest, OneMutationPerGroupAndRequestsCutAtTheMutationLimit) {
  options_.max_batch_mutations = 3;
  auto w = writer(builder());
  ASSERT_TRUE(write_all(*w, 7).ok());
  ASSERT_EQ(stub_->size(), 3u);
  EXPECT_EQ(ids(0), (std::vector<std::string>{"f0", "f1", "f2"}));
  EXPECT_EQ(ids(2), (std::vector<std::string>{"f6"})) << "the checkpoint flush sends the rest";
  const auto first = stub_->call(0);
  for (const auto& g : first.request.mutation_groups()) {
    EXPECT_EQ(g.mutations_size(), 1);
  }
  EXPECT_LE(stub_->call(0).timeout, 30s) << "batch_write_timeout bounds each attempt";
  EXPECT_GT(stub_->call(0).timeout, 29s) << "less only the session acquisition";
  EXPECT_THAT(stub_->call(0).request.session(), HasSubstr("sessions/"));
  EXPECT_EQ(context_.metric("numRecordsSend"), 7);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(SpannerWriterTest, CellsCountEverySecondaryIndexContainingAColumn) {
  // Delay is in two indexes (a key and a STORING column), Id in none: a row costs
  // 1 (Id) + 3 (Delay) = 4 cells.
  stub_->index_rows = {{"", "Flights", "ByDelay", "Delay"},
                       {"", "Flights", "ByNote", "Note"},
                       {"", "Flights", "ByNote", "Delay"}};
  options_.max_batch_cells = 10;
  auto w = writer(builder());
  ASSERT_TRUE(write_all(*w, 5).ok());
  ASSERT_EQ(stub_->size(), 3u) << "4 + 4 fit in 10 cells, a third would not";
  EXPECT_EQ(ids(0).size(), 2u);
  EXPECT_EQ(ids(1).size(), 2u);

  IndexWeights weights(Dialect::kGoogleSql,
                       {{"", "Flights", "ByDelay", "Delay"}, {"", "Flights", "ByNote", "Note"}});
  auto lower = Mutation::Insert("flights").Set("delay", Value::Int64(1)).Build();
  EXPECT_EQ(weights.cells(lower->proto()), 2) << "GoogleSQL names match case-insensitively";
  auto del = Mutation::Delete(
      "Flights",
      KeySet().AddKey({Value::String("a").value()}).AddKey({Value::String("b").value()}));
  EXPECT_EQ(weights.cells(del->proto()), 6) << "two keys × (table + 2 indexes)";
  IndexWeights pg(Dialect::kPostgreSql, {{"public", "flights", "by_delay", "delay"}});
  auto pg_m = Mutation::Insert("flights").Set("delay", Value::Int64(1)).Build();
  auto pg_upper = Mutation::Insert("Flights").Set("delay", Value::Int64(1)).Build();
  EXPECT_EQ(pg.cells(pg_m->proto()), 2);
  EXPECT_EQ(pg.cells(pg_upper->proto()), 1) << "PostgreSQL names are exact";
  IndexWeights schemas(Dialect::kGoogleSql, {{"sales", "Orders", "ByTotal", "Total"}});
  auto qualified = Mutation::Insert("sales.Orders").Set("Total", Value::Int64(1)).Build();
  auto unqualified = Mutation::Insert("Orders").Set("Total", Value::Int64(1)).Build();
  EXPECT_EQ(schemas.cells(qualified->proto()), 2);
  EXPECT_EQ(schemas.cells(unqualified->proto()), 1) << "another schema's table of the same name";
  ASSERT_TRUE(w->close().ok());
}

TEST_F(SpannerWriterTest, TheByteLimitIsACapNotAThreshold) {
  options_.max_batch_bytes = 1000;
  auto w = writer(builder());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(w->write(Flight{"f" + std::to_string(i), i, std::string(400, 'x')}, ctx_).ok());
  }
  ASSERT_TRUE(w->flush(false).ok());
  ASSERT_EQ(stub_->size(), 2u);
  EXPECT_EQ(ids(0).size(), 2u);
  EXPECT_LE(stub_->call(0).request.ByteSizeLong(), 1000u + 64u);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(SpannerWriterTest, ARefusedGroupIsRoutedAloneWithItsMutationAsPayload) {
  stub_->on_batch_write = [](std::size_t, const sp::BatchWriteRequest& r) {
    BatchCallResult out;
    for (int i = 0; i < r.mutation_groups_size(); ++i) {
      out.entries.emplace_back(i, i == 1   ? absl::AlreadyExistsError("row exists")
                                  : i == 2 ? absl::InvalidArgumentError("bad value")
                                           : absl::OkStatus());
    }
    return out;
  };
  auto w = writer(builder().failed_mutation_handler(recording()));
  ASSERT_TRUE(write_all(*w, 4).ok());
  EXPECT_EQ(stub_->size(), 1u) << "no isolation resend: a group's verdict is already its own";
  ASSERT_EQ(recorded_->codes.size(), 2u);
  EXPECT_EQ(recorded_->codes[0], absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(recorded_->codes[1], absl::StatusCode::kInvalidArgument);
  sp::Mutation routed;
  ASSERT_TRUE(routed.ParseFromString(recorded_->payloads[0]));
  EXPECT_EQ(routed.insert_or_update().values(0).values(0).string_value(), "f1");
  EXPECT_EQ(context_.metric("numRecordsSendErrors"), 2);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(SpannerWriterTest, ConstraintViolationsFailTheJobUnlessRouted) {
  stub_->on_batch_write = [](std::size_t, const sp::BatchWriteRequest& r) {
    BatchCallResult out = testing::FakeSpannerStub::All(r, absl::OkStatus());
    out.entries[0].second = absl::FailedPreconditionError("Id must not be NULL");
    return out;
  };
  {
    auto w = writer(builder().failed_mutation_handler(recording()));
    absl::Status s = write_all(*w, 2);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(s.message()), HasSubstr("constraint_violation_policy"));
    EXPECT_TRUE(recorded_->codes.empty()) << "never routed under FAIL_JOB";
    (void)w->close();
  }
  auto w =
      writer(builder()
                 .failed_mutation_handler(recording())
                 .constraint_violation_policy(ConstraintViolationPolicy::kRouteToFailureHandler));
  ASSERT_TRUE(write_all(*w, 2).ok());
  ASSERT_EQ(recorded_->codes.size(), 1u);
  EXPECT_EQ(recorded_->codes[0], absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(SpannerWriterTest, NotFoundFailsTheJobSayingTheSinkCreatesNothing) {
  stub_->on_batch_write = [](std::size_t, const sp::BatchWriteRequest& r) {
    return testing::FakeSpannerStub::All(r, absl::NotFoundError("Table not found: Flights"));
  };
  auto w = writer(builder().failed_mutation_handler(connector::FailureHandler::log_and_drop()));
  absl::Status s = write_all(*w, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("creates nothing"));
  (void)w->close();
}

TEST_F(SpannerWriterTest, TransientGroupsAreRetriedAloneOnTheSinksBudget) {
  stub_->on_batch_write = [](std::size_t call, const sp::BatchWriteRequest& r) {
    BatchCallResult out = testing::FakeSpannerStub::All(r, absl::OkStatus());
    if (call == 0) out.entries[1].second = absl::AbortedError("conflict");
    return out;
  };
  auto w = writer(builder());
  ASSERT_TRUE(write_all(*w, 3).ok());
  ASSERT_EQ(stub_->size(), 2u);
  EXPECT_EQ(ids(1), (std::vector<std::string>{"f1"})) << "only the undecided group is re-sent";
  EXPECT_EQ(context_.metric("mutationsRetried"), 1);
  EXPECT_EQ(context_.metric("errorClass.ABORTED.errors"), 1);
  EXPECT_EQ(context_.metric("numRecordsSend"), 3);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(SpannerWriterTest, AStreamCutPartWayReSendsOnlyTheGroupsItNeverReported) {
  stub_->on_batch_write = [](std::size_t call, const sp::BatchWriteRequest& r) {
    BatchCallResult out;
    if (call == 0) {
      out.entries.emplace_back(0, absl::OkStatus());
      out.entries.emplace_back(1, absl::AlreadyExistsError("dup"));
      out.rpc = absl::UnavailableError("stream reset");
      return out;
    }
    return testing::FakeSpannerStub::All(r, absl::OkStatus());
  };
  auto w = writer(builder().failed_mutation_handler(recording()));
  ASSERT_TRUE(write_all(*w, 4).ok());
  ASSERT_EQ(stub_->size(), 2u);
  EXPECT_EQ(ids(1), (std::vector<std::string>{"f2", "f3"}));
  EXPECT_EQ(recorded_->codes.size(), 1u) << "the reported refusal is routed, not re-sent";
  EXPECT_EQ(context_.metric("errorClass.UNAVAILABLE.errors"), 2);
  ASSERT_TRUE(w->close().ok());
}

// Off by default (replayed inserts are refused ALREADY_EXISTS, which a dropping handler
// absorbs). Once set, a run of refusals fails the job after the handler saw the last of them;
// the run is counted in the order verdicts arrive, so successes reported between refusals of
// one call break it even though refusals are routed after the call's successes.
TEST_F(SpannerWriterTest, MaxConsecutiveRejectionsCountsRunsInTheOrderVerdictsArrive) {
  stub_->on_batch_write = [](std::size_t, const sp::BatchWriteRequest& r) {
    return testing::FakeSpannerStub::All(r, absl::InvalidArgumentError("no such column"));
  };
  {
    auto w = writer(builder().failed_mutation_handler(connector::FailureHandler::log_and_drop()));
    ASSERT_TRUE(write_all(*w, 5).ok()) << "no bound by default";
    EXPECT_EQ(context_.metric("numRecordsSendErrors"), 5);
    ASSERT_TRUE(w->close().ok());
  }
  options_.max_consecutive_rejections = 3;
  {
    auto w = writer(builder().failed_mutation_handler(recording()));
    absl::Status s = write_all(*w, 5, "g");
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("max_consecutive_rejections (3)"));
    EXPECT_EQ(recorded_->codes.size(), 3u)
        << "the handler saw the third refusal, then the job failed";
    (void)w->close();
  }
  // Refused, applied, refused, applied, ... in one call: never three refusals in a row.
  stub_->on_batch_write = [](std::size_t, const sp::BatchWriteRequest& r) {
    BatchCallResult out;
    for (int i = 0; i < r.mutation_groups_size(); ++i) {
      out.entries.emplace_back(
          i, i % 2 == 0 ? absl::InvalidArgumentError("no such column") : absl::OkStatus());
    }
    return out;
  };
  recorded_->codes.clear();
  auto w = writer(builder().failed_mutation_handler(recording()));
  ASSERT_TRUE(write_all(*w, 8, "h").ok()) << "four refusals, each followed by a success";
  EXPECT_EQ(recorded_->codes.size(), 4u);
  ASSERT_TRUE(w->close().ok());
  SpannerWriterOptions zero;
  zero.max_consecutive_rejections = 0;
  EXPECT_THAT(std::string(zero.validate().message()), HasSubstr("max_consecutive_rejections"));
}

TEST_F(SpannerWriterTest, AFailureOfTheWholeCallFailsTheJobWhateverTheHandler) {
  stub_->on_batch_write = [](std::size_t, const sp::BatchWriteRequest&) {
    BatchCallResult out;
    out.rpc = absl::InvalidArgumentError("The transaction contains too many mutations.");
    return out;
  };
  auto w = writer(builder().failed_mutation_handler(connector::FailureHandler::log_and_drop()));
  absl::Status s = write_all(*w, 2);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("failed as a whole"));
  EXPECT_EQ(context_.metric("numRecordsSendErrors"), 0) << "nothing reached the dropping handler";
  (void)w->close();
}

TEST_F(SpannerWriterTest, AnExhaustedBudgetFailsTheJobAfterExactlyTheAttemptsConfigured) {
  options_.retry_max_attempts = 4;
  stub_->on_batch_write = [](std::size_t, const sp::BatchWriteRequest& r) {
    return testing::FakeSpannerStub::All(r, absl::UnavailableError("down"));
  };
  auto w = writer(builder().failed_mutation_handler(connector::FailureHandler::log_and_drop()));
  absl::Status s = write_all(*w, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.message()), HasSubstr("after 4 attempts"));
  EXPECT_EQ(stub_->size(), 4u);
  EXPECT_EQ(context_.metric("mutationsRetried"), 3);
  (void)w->close();
}

// The retry budget on a clock the test moves (spanner_writer_options.h, worst_case_write_time):
// with the defaults (30 s per attempt, backoff 500 ms doubling to 10 s, 10 attempts) and the
// jitter at its +25 % extreme, a call that never answers is abandoned at each attempt's
// deadline, the next attempt starts after exactly the jittered backoff, and the job fails at
// exactly the documented worst case, 369.375 s after the first send.
TEST_F(SpannerWriterTest, EveryAttemptStallingSpendsExactlyTheDocumentedWorstCase) {
  options_ = SpannerWriterOptions{};
  auto clock = std::make_shared<testing::ManualScheduler>();
  std::mutex mu;
  std::optional<util::Scheduler::Time> first;  // the first send: the writer's own timers
                                               // (session keep-alive) may run before it
  std::vector<std::chrono::milliseconds> sent;
  std::vector<std::chrono::milliseconds> timeouts;
  std::chrono::milliseconds failed_at{-1};
  testing::FakeSpannerStub* stub = stub_.get();
  stub_->on_batch_write = [&](std::size_t call,
                              const sp::BatchWriteRequest&) -> std::optional<BatchCallResult> {
    const auto timeout = stub->call(call).timeout;
    {
      std::lock_guard lock(mu);
      if (!first) first = clock->now();
      sent.push_back(Since(*first, clock->now()));
      timeouts.push_back(timeout);
    }
    // What gRPC does to a call that outlives its deadline.
    clock->schedule(clock->now() + timeout, [&, call] {
      {
        std::lock_guard lock(mu);
        failed_at = Since(*first, clock->now());
      }
      BatchCallResult r;
      r.rpc = absl::DeadlineExceededError("Deadline Exceeded");
      stub->complete(call, std::move(r));
    });
    return std::nullopt;
  };
  ClockDriver driver(clock);
  auto w = writer(builder().uniform01([] { return 1.0; }).scheduler(clock));
  absl::Status s = write_all(*w, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("after 10 attempts"));
  {
    std::lock_guard lock(mu);
    // Attempt k starts (k - 1) x 30 s plus the backoffs before it: 625, 1250, 2500, 5000, 10000,
    // then 12500 (the 10 s cap, +25 %).
    const std::vector<std::chrono::milliseconds> expected = {
        0ms, 30625ms, 61875ms, 94375ms, 129375ms, 169375ms, 211875ms, 254375ms, 296875ms, 339375ms};
    EXPECT_EQ(sent, expected);
    EXPECT_EQ(timeouts, std::vector<std::chrono::milliseconds>(10, 30000ms))
        << "every attempt gets a whole batch_write_timeout";
    EXPECT_EQ(failed_at, options_.worst_case_write_time());
    EXPECT_EQ(options_.worst_case_write_time(), 369375ms);
    EXPECT_EQ(context_.metric("errorClass.DEADLINE_EXCEEDED.errors"), 10)
        << "nine retried verdicts and the final one";
  }
  (void)w->close();
}

// Groups refused at once with a transient code wait out only the backoffs: with the jitter at
// its -25 % extreme the delays are 375, 750, 1500, 3000, 6000, then 7500 (the cap) four times.
TEST_F(SpannerWriterTest, BackoffsDoubleFromTheInitialDelayUpToTheCapWithTheirJitter) {
  options_ = SpannerWriterOptions{};
  auto clock = std::make_shared<testing::ManualScheduler>();
  std::mutex mu;
  std::optional<util::Scheduler::Time> first;
  std::vector<std::chrono::milliseconds> sent;
  stub_->on_batch_write = [&](std::size_t, const sp::BatchWriteRequest& r) {
    std::lock_guard lock(mu);
    if (!first) first = clock->now();
    sent.push_back(Since(*first, clock->now()));
    return testing::FakeSpannerStub::All(r, absl::UnavailableError("down"));
  };
  ClockDriver driver(clock);
  auto w = writer(builder().uniform01([] { return 0.0; }).scheduler(clock));
  absl::Status s = write_all(*w, 2);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  std::lock_guard lock(mu);
  const std::vector<std::chrono::milliseconds> expected = {
      0ms, 375ms, 1125ms, 2625ms, 5625ms, 11625ms, 19125ms, 26625ms, 34125ms, 41625ms};
  EXPECT_EQ(sent, expected);
  EXPECT_EQ(context_.metric("mutationsRetried"), 18) << "both groups, nine retries each";
  (void)w->close();
}

// A session lost mid-attempt is replaced inside the same attempt: the re-sent call gets only
// what is left of the attempt's batch_write_timeout, so the budget is never stretched.
TEST_F(SpannerWriterTest, ASessionReplacementStaysInsideTheAttemptsDeadline) {
  options_ = SpannerWriterOptions{};
  auto clock = std::make_shared<testing::ManualScheduler>();
  testing::FakeSpannerStub* stub = stub_.get();
  stub_->on_batch_write = [&](std::size_t call,
                              const sp::BatchWriteRequest& r) -> std::optional<BatchCallResult> {
    if (call > 0) return testing::FakeSpannerStub::All(r, absl::OkStatus());
    clock->schedule(clock->now() + 12s, [stub, session = r.session()] {
      BatchCallResult lost;
      lost.rpc = SessionNotFound(session);
      stub->complete(0, std::move(lost));
    });
    return std::nullopt;
  };
  ClockDriver driver(clock);
  auto w = writer(builder().scheduler(clock));
  ASSERT_TRUE(write_all(*w, 1).ok());
  ASSERT_EQ(stub_->size(), 2u);
  EXPECT_EQ(stub_->call(0).timeout, 30s);
  EXPECT_EQ(stub_->call(1).timeout, 18s) << "30 s less the 12 s the lost session took";
  ASSERT_TRUE(w->close().ok());
}

TEST_F(SpannerWriterTest, ALostSessionIsReplacedAndTheSameRequestReSentWithoutSpendingBudget) {
  stub_->on_batch_write = [](std::size_t call, const sp::BatchWriteRequest& r) {
    if (call == 0) {
      BatchCallResult out;
      out.rpc = SessionNotFound(r.session());
      return out;
    }
    return testing::FakeSpannerStub::All(r, absl::OkStatus());
  };
  auto w = writer(builder());
  ASSERT_TRUE(write_all(*w, 2).ok());
  ASSERT_EQ(stub_->size(), 2u);
  EXPECT_NE(stub_->call(0).request.session(), stub_->call(1).request.session());
  EXPECT_EQ(stub_->call(1).request.mutation_groups_size(), 2);
  EXPECT_LE(context_.metric("mutationsRetried"), 0) << "a session replacement is not a retry";
  ASSERT_TRUE(w->close().ok());
}

TEST_F(SpannerWriterTest, ASessionLostPartWayReSendsOnlyTheUnreportedGroups) {
  stub_->on_batch_write = [](std::size_t call, const sp::BatchWriteRequest& r) {
    if (call == 0) {
      BatchCallResult out;
      out.entries.emplace_back(0, absl::OkStatus());
      out.rpc = SessionNotFound(r.session());
      return out;
    }
    return testing::FakeSpannerStub::All(r, absl::OkStatus());
  };
  auto w = writer(builder());
  ASSERT_TRUE(write_all(*w, 3).ok());
  ASSERT_EQ(stub_->size(), 2u);
  EXPECT_EQ(ids(1), (std::vector<std::string>{"f1", "f2"}));
  EXPECT_NE(stub_->call(0).request.session(), stub_->call(1).request.session());
  ASSERT_TRUE(w->close().ok());
}

TEST_F(SpannerWriterTest, AFailedSchemaReadFailsTheJobAndNeverReachesTheHandler) {
  stub_->schema_error = absl::InvalidArgumentError("permission to select denied");
  auto w =
      writer(builder()
                 .failed_mutation_handler(connector::FailureHandler::log_and_drop())
                 .constraint_violation_policy(ConstraintViolationPolicy::kRouteToFailureHandler));
  absl::Status s = w->write(Flight{"a", 1}, ctx_);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("INFORMATION_SCHEMA"));
  EXPECT_LE(context_.metric("numRecordsSendErrors"), 0) << "never routed to the dropping handler";
  EXPECT_EQ(stub_->size(), 0u);
  (void)w->close();
}

TEST_F(SpannerWriterTest, GroupBytesAreExactlyWhatAGroupAddsToTheRequest) {
  for (std::size_t note : {0u, 100u, 200u, 20000u}) {
    auto m = Mutation::Insert("Flights")
                 .Set("Id", Value::String("x"))
                 .Set("Note", Value::String(std::string(note, 'n')))
                 .Build();
    ASSERT_TRUE(m.ok());
    sp::BatchWriteRequest request;
    *request.add_mutation_groups()->add_mutations() = m->proto();
    EXPECT_EQ(GroupWireBytes(m->proto()), static_cast<std::int64_t>(request.ByteSizeLong()))
        << note;
  }
}

TEST_F(SpannerWriterTest, SkipsAreCountedAndSerializerFailuresRoutedWithoutPayload) {
  auto w = writer(builder().failed_mutation_handler(recording()));
  ASSERT_TRUE(w->write(Flight{"skip"}, ctx_).ok());
  ASSERT_TRUE(w->write(Flight{"throw"}, ctx_).ok());
  ASSERT_TRUE(w->write(Flight{"ok", 1}, ctx_).ok());
  ASSERT_TRUE(w->flush(false).ok());
  EXPECT_EQ(context_.metric("recordsSkipped"), 1);
  ASSERT_EQ(recorded_->payloads.size(), 1u);
  EXPECT_TRUE(recorded_->payloads[0].empty());
  EXPECT_EQ(stub_->size(), 1u);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(SpannerWriterTest, AMutationNoRequestCanCarryIsTheRecordsFailureBeforeAnyRpc) {
  std::vector<std::array<std::string, 4>> rows;
  for (int i = 0; i < 3; ++i) rows.push_back({"", "Wide", "I" + std::to_string(i), "C"});
  stub_->index_rows = rows;
  auto w = writer(
      builder()
          .serializer([](const Flight&,
                         const SinkWriterContext&) -> absl::StatusOr<std::optional<Mutation>> {
            KeySet keys;
            for (int i = 0; i < 20001; ++i) keys.AddKey({Value::Int64(i)});
            return Mutation::Delete("Wide", keys);
          })
          .failed_mutation_handler(recording()));
  ASSERT_TRUE(w->write(Flight{"x"}, ctx_).ok());
  ASSERT_TRUE(w->flush(false).ok());
  EXPECT_EQ(stub_->size(), 0u);
  ASSERT_EQ(recorded_->codes.size(), 1u) << "20,001 keys × 4 cells is over 80,000";
  EXPECT_EQ(recorded_->codes[0], absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(w->close().ok());
}

TEST_F(SpannerWriterTest, PriorityTravelsWithEachRequestAndLineageNamesTheDatabase) {
  options_.rpc_priority = RpcPriority::kLow;
  auto b = builder();
  auto sink = b.build();
  ASSERT_TRUE(sink.ok());
  LineageVertex v = (*sink)->lineage_vertex();
  ASSERT_EQ(v.datasets.size(), 1u);
  EXPECT_EQ(v.datasets[0].name_space, "spanner://p:inst");
  EXPECT_EQ(v.datasets[0].name, "flights");
  auto w = writer(std::move(b));
  ASSERT_TRUE(write_all(*w, 1).ok());
  EXPECT_EQ(stub_->call(0).request.request_options().priority(), sp::RequestOptions::PRIORITY_LOW);
  ASSERT_TRUE(w->close().ok());
  EXPECT_GE(stub_->sessions_deleted(), 1) << "close deletes the sessions it made";
}

TEST_F(SpannerWriterTest, AMissingDatabaseFailsAtOpenNamingIt) {
  stub_->schema_error = absl::NotFoundError("Database not found");
  auto sink = builder().build();
  ASSERT_TRUE(sink.ok());
  auto w = (*sink)->create_writer(context_);
  absl::Status s = w.ok() ? (*w)->write(Flight{"a"}, ctx_) : w.status();
  if (s.ok() && w.ok()) s = (*w)->flush(false);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(kDb.resource_name()));
  if (w.ok()) (void)(*w)->close();
}

}  // namespace
}  // namespace gcpstream::spanner
