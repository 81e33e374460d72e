// The Spanner data client over a fake stub: streaming reads that resume from the last
// resume_token after a transient failure and never hand a row out twice (PartialResultSet
// reference: "resume_token ... can be used to resume from the last confirmed point"), commits
// in both forms with ABORTED retried (Spanner "Transactions": an aborted transaction applied
// nothing and should be retried) and UNAVAILABLE returned, and lost sessions replaced.
#include "gcpstream/spanner/client/data_client.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "gcpstream/util/timer_thread.h"
#include "tests/support/fake_spanner.h"

namespace gcpstream::spanner {
namespace {

using namespace std::chrono_literals;
namespace sp = google::spanner::v1;
using testing::FakeSpannerStub;

sp::PartialResultSet Part(std::vector<std::string> values, std::string token = "",
                          bool with_metadata = false, bool chunked = false) {
  sp::PartialResultSet part;
  if (with_metadata) {
    for (const char* name : {"Id", "Name"}) {
      auto* field = part.mutable_metadata()->mutable_row_type()->add_fields();
      field->set_name(name);
      field->mutable_type()->set_code(sp::STRING);
    }
  }
  for (auto& v : values) part.add_values()->set_string_value(std::move(v));
  part.set_resume_token(std::move(token));
  part.set_chunked_value(chunked);
  return part;
}

class DataClientTest : public ::testing::Test {
 protected:
  SpannerDataClient& client(DataClientOptions options = {}) {
    options.retry.jitter = 0;
    options.sleep = [this](std::chrono::milliseconds d) { sleeps_.push_back(d); };
    pool_ = std::make_shared<SessionPool>(kDb, stub_, timers_);
    client_ = std::make_unique<SpannerDataClient>(kDb, stub_, pool_, std::move(options));
    return *client_;
  }
  // Runs a query and collects its rows as "Id=Name".
  absl::Status Query(std::vector<std::string>& rows) {
    sp::ExecuteSqlRequest request;
    request.set_sql("SELECT Id, Name FROM T");
    return client_->ExecuteStreamingSql(request, [&](const sp::ResultSetMetadata& metadata,
                                                     std::vector<google::protobuf::Value> row) {
      EXPECT_EQ(metadata.row_type().fields_size(), 2);
      rows.push_back(row.at(0).string_value() + "=" + row.at(1).string_value());
      return absl::OkStatus();
    });
  }
  static Mutation Row(const std::string& id) {
    return *Mutation::InsertOrUpdate("T").Set("Id", Value::String(id)).Build();
  }

  static constexpr char kDb[] = "projects/p/instances/i/databases/d";
  std::shared_ptr<FakeSpannerStub> stub_ = std::make_shared<FakeSpannerStub>();
  std::shared_ptr<util::TimerThread> timers_ = std::make_shared<util::TimerThread>();
  std::shared_ptr<SessionPool> pool_;
  std::unique_ptr<SpannerDataClient> client_;
  std::vector<std::chrono::milliseconds> sleeps_;
};

TEST_F(DataClientTest, AStreamThatFailsResumesFromItsLastTokenAndRepeatsNoRow) {
  stub_->on_stream = [](std::size_t call, const std::string& token) {
    if (call == 0) {
      EXPECT_EQ(token, "");
      return FakeSpannerStub::StreamScript{
          {Part({"1", "a"}, "t1", true), Part({"2", "b"}), Part({"3"})},
          absl::UnavailableError("connection reset")};
    }
    EXPECT_EQ(token, "t1") << "the resumed stream starts after the last confirmed row";
    return FakeSpannerStub::StreamScript{{Part({"2", "b", "3", "c"}, "t2")}, absl::OkStatus()};
  };
  client();
  std::vector<std::string> rows;
  ASSERT_TRUE(Query(rows).ok());
  EXPECT_EQ(rows, (std::vector<std::string>{"1=a", "2=b", "3=c"}));
  ASSERT_EQ(stub_->streams().size(), 2u);
  EXPECT_EQ(stub_->streams()[1].resume_token, "t1");
  EXPECT_EQ(stub_->streams()[0].session, stub_->streams()[1].session)
      << "a resume stays on its session";
  EXPECT_EQ(sleeps_, (std::vector<std::chrono::milliseconds>{250ms}));
}

// A stalled network or service: the stream stays open and sends nothing. With
// stream_idle_timeout the attempt is cut and resumed from its last token like a dropped
// connection; without progress the read ends with DEADLINE_EXCEEDED naming the option.
TEST_F(DataClientTest, AStreamSilentForTheIdleTimeoutIsCutAndResumedFromItsLastToken) {
  stub_->on_stream = [](std::size_t call, const std::string& token) {
    if (call == 0) {
      FakeSpannerStub::StreamScript stalled{{Part({"1", "a"}, "t1", true)}, absl::OkStatus()};
      stalled.hang = true;
      return stalled;
    }
    EXPECT_EQ(token, "t1");
    return FakeSpannerStub::StreamScript{{Part({"2", "b"}, "t2")}, absl::OkStatus()};
  };
  DataClientOptions options;
  options.stream_idle_timeout = 100ms;
  client(options);
  std::vector<std::string> rows;
  absl::Status s = Query(rows);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(rows, (std::vector<std::string>{"1=a", "2=b"}));
  ASSERT_EQ(stub_->streams().size(), 2u);
  EXPECT_EQ(stub_->streams()[1].resume_token, "t1");
}

TEST_F(DataClientTest, AStreamThatStaysSilentFailsNamingTheIdleTimeout) {
  stub_->on_stream = [](std::size_t, const std::string&) {
    FakeSpannerStub::StreamScript stalled{{}, absl::OkStatus()};
    stalled.hang = true;
    return stalled;
  };
  DataClientOptions options;
  options.stream_idle_timeout = 50ms;
  options.retry.max_attempts = 2;
  client(options);
  std::vector<std::string> rows;
  absl::Status s = Query(rows);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_NE(s.message().find("stream_idle_timeout"), std::string::npos) << s;
  EXPECT_EQ(stub_->streams().size(), 3u) << "the first attempt and two resumes";
  EXPECT_TRUE(rows.empty());
}

TEST_F(DataClientTest, AValueChunkedAcrossMessagesAndAResumeIsJoinedOnce) {
  stub_->on_stream = [](std::size_t call, const std::string&) {
    if (call == 0) {
      // The token confirms the chunk "he", so the resumed stream continues it.
      return FakeSpannerStub::StreamScript{
          {Part({"1", "he"}, "t1", true, true), Part({"ll"}, "", false, true)},
          absl::UnavailableError("reset")};
    }
    return FakeSpannerStub::StreamScript{{Part({"llo"}, "t2")}, absl::OkStatus()};
  };
  client();
  std::vector<std::string> rows;
  ASSERT_TRUE(Query(rows).ok());
  EXPECT_EQ(rows, (std::vector<std::string>{"1=hello"}));
}

TEST_F(DataClientTest, AStreamWithoutATokenYetRestartsFromTheBeginning) {
  stub_->on_stream = [](std::size_t call, const std::string& token) {
    EXPECT_EQ(token, "");
    if (call == 0) {
      return FakeSpannerStub::StreamScript{{Part({"1", "a"}, "", true)},
                                           absl::ResourceExhaustedError("busy")};
    }
    return FakeSpannerStub::StreamScript{{Part({"1", "a"}, "", true)}, absl::OkStatus()};
  };
  client();
  std::vector<std::string> rows;
  ASSERT_TRUE(Query(rows).ok());
  EXPECT_EQ(rows, (std::vector<std::string>{"1=a"})) << "rows held back until confirmed";
}

TEST_F(DataClientTest, APermanentFailureIsReturnedWithItsCodeAndNotRetried) {
  stub_->on_stream = [](std::size_t, const std::string&) {
    return FakeSpannerStub::StreamScript{{Part({"1", "a"}, "t1", true)},
                                         absl::InvalidArgumentError("bad column")};
  };
  client();
  std::vector<std::string> rows;
  const absl::Status s = Query(rows);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(stub_->streams().size(), 1u);
  EXPECT_EQ(rows, (std::vector<std::string>{"1=a"}));
}

TEST_F(DataClientTest, RowsReleasedBeyondTheLastTokenMakeAFailureFinal) {
  stub_->on_stream = [](std::size_t, const std::string&) {
    return FakeSpannerStub::StreamScript{{Part({"1", "a"}, "", true), Part({"2", "b"})},
                                         absl::UnavailableError("reset")};
  };
  DataClientOptions options;
  options.max_unconfirmed_bytes = 1;  // every row is released unconfirmed
  client(options);
  std::vector<std::string> rows;
  const absl::Status s = Query(rows);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(stub_->streams().size(), 1u) << "resuming would repeat or skip rows";
  EXPECT_EQ(rows, (std::vector<std::string>{"1=a", "2=b"}));
}

TEST_F(DataClientTest, TheResumeBudgetIsBoundedAndTheLastFailureReturned) {
  stub_->on_stream = [](std::size_t, const std::string&) {
    return FakeSpannerStub::StreamScript{{}, absl::UnavailableError("down")};
  };
  DataClientOptions options;
  options.retry.max_attempts = 3;
  client(options);
  std::vector<std::string> rows;
  const absl::Status s = Query(rows);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(stub_->streams().size(), 4u) << "the first attempt and 3 retries";
  EXPECT_EQ(sleeps_, (std::vector<std::chrono::milliseconds>{250ms, 500ms, 1000ms}));
}

TEST_F(DataClientTest, ACorruptStreamIsInternalNotARetry) {
  stub_->on_stream = [](std::size_t, const std::string&) {
    return FakeSpannerStub::StreamScript{{Part({"1", "a"})}, absl::OkStatus()};  // no metadata
  };
  client();
  std::vector<std::string> rows;
  EXPECT_EQ(Query(rows).code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(rows.empty());
}

TEST_F(DataClientTest, ACallbackErrorStopsTheReadAndIsReturned) {
  stub_->on_stream = [](std::size_t, const std::string&) {
    return FakeSpannerStub::StreamScript{{Part({"1", "a", "2", "b"}, "t", true)}, absl::OkStatus()};
  };
  client();
  int seen = 0;
  const absl::Status s = client_->ExecuteStreamingSql(
      sp::ExecuteSqlRequest(),
      [&](const sp::ResultSetMetadata&, std::vector<google::protobuf::Value>) {
        ++seen;
        return absl::CancelledError("enough");
      });
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(seen, 1);
}

TEST_F(DataClientTest, ALostPoolSessionBeforeAnyRowRerunsTheReadOnAnotherSession) {
  stub_->on_stream = [](std::size_t call, const std::string&) {
    if (call == 0) return FakeSpannerStub::StreamScript{{}, FakeSpannerStub::SessionNotFound()};
    return FakeSpannerStub::StreamScript{{Part({"1", "a"}, "t", true)}, absl::OkStatus()};
  };
  client();
  std::vector<std::string> rows;
  ASSERT_TRUE(Query(rows).ok());
  ASSERT_EQ(stub_->streams().size(), 2u);
  EXPECT_NE(stub_->streams()[0].session, stub_->streams()[1].session);
  EXPECT_EQ(rows, (std::vector<std::string>{"1=a"}));
}

TEST_F(DataClientTest, AReadOnANamedSessionNeverSwapsIt) {
  stub_->on_stream = [](std::size_t, const std::string&) {
    return FakeSpannerStub::StreamScript{{}, FakeSpannerStub::SessionNotFound()};
  };
  client();
  sp::ExecuteSqlRequest request;
  request.set_session("sessions/mine");
  const absl::Status s = client_->ExecuteStreamingSql(
      request, [](const sp::ResultSetMetadata&, std::vector<google::protobuf::Value>) {
        return absl::OkStatus();
      });
  EXPECT_TRUE(IsSessionNotFound(s)) << s;
  ASSERT_EQ(stub_->streams().size(), 1u);
  EXPECT_EQ(stub_->streams()[0].session, "sessions/mine");
}

TEST_F(DataClientTest, ASingleUseCommitIsOneCallWithTheMutationsAndOptions) {
  client();
  CommitOptions options;
  options.return_commit_stats = true;
  options.max_commit_delay = 100ms;
  options.transaction_tag = "tag";
  auto r = client_->Commit({Row("a"), Row("b")}, options);
  ASSERT_TRUE(r.ok()) << r.status();
  const auto commits = stub_->commits();
  ASSERT_EQ(commits.size(), 1u);
  const auto& c = commits[0];
  EXPECT_TRUE(c.single_use_transaction().has_read_write());
  EXPECT_EQ(c.mutations_size(), 2);
  EXPECT_TRUE(c.return_commit_stats());
  EXPECT_EQ(c.max_commit_delay().nanos(), 100000000);
  EXPECT_EQ(c.request_options().transaction_tag(), "tag");
  EXPECT_EQ(stub_->begins(), 0);
}

TEST_F(DataClientTest, BeginThenCommitNamesTheTransactionAndRollsBackAFailedCommit) {
  stub_->on_commit = [](std::size_t call,
                        const sp::CommitRequest&) -> absl::StatusOr<sp::CommitResponse> {
    if (call == 0) return sp::CommitResponse();
    return absl::FailedPreconditionError("constraint");
  };
  client();
  CommitOptions options;
  options.mode = CommitMode::kBeginThenCommit;
  ASSERT_TRUE(client_->Commit({Row("a")}, options).ok());
  ASSERT_EQ(stub_->commits().size(), 1u);
  EXPECT_EQ(stub_->commits()[0].transaction_id(), "tx0");
  EXPECT_EQ(stub_->begins(), 1);
  EXPECT_EQ(client_->Commit({Row("a")}, options).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(stub_->rollbacks(), (std::vector<std::string>{"tx1"}));
}

TEST_F(DataClientTest, AnAbortedCommitIsRetriedAndAnUnavailableOneReturned) {
  stub_->on_commit = [](std::size_t call,
                        const sp::CommitRequest&) -> absl::StatusOr<sp::CommitResponse> {
    if (call == 0) return absl::AbortedError("lock conflict");
    if (call == 1) return sp::CommitResponse();
    return absl::UnavailableError("answer lost");
  };
  client();
  ASSERT_TRUE(client_->Commit({Row("a")}).ok());
  EXPECT_EQ(stub_->commits().size(), 2u);
  EXPECT_EQ(sleeps_, (std::vector<std::chrono::milliseconds>{250ms}));
  const auto lost = client_->Commit({Row("b")});
  EXPECT_EQ(lost.status().code(), absl::StatusCode::kUnavailable)
      << "a commit that may have applied is not run again";
  EXPECT_EQ(stub_->commits().size(), 3u);
}

TEST_F(DataClientTest, ALostSessionCommitRunsAgainOnANewSessionAtOnce) {
  stub_->on_commit = [](std::size_t call,
                        const sp::CommitRequest&) -> absl::StatusOr<sp::CommitResponse> {
    if (call == 0) return FakeSpannerStub::SessionNotFound();
    return sp::CommitResponse();
  };
  client();
  ASSERT_TRUE(client_->Commit({Row("a")}).ok());
  ASSERT_EQ(stub_->commits().size(), 2u);
  EXPECT_NE(stub_->commits()[0].session(), stub_->commits()[1].session());
  EXPECT_TRUE(sleeps_.empty());
}

TEST_F(DataClientTest, CommitRefusesNothingToDoAndAnOutOfRangeDelayWithoutACall) {
  client();
  EXPECT_EQ(client_->Commit({}).status().code(), absl::StatusCode::kInvalidArgument);
  CommitOptions options;
  options.max_commit_delay = 501ms;
  EXPECT_EQ(client_->Commit({Row("a")}, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(stub_->commits().empty());
}

TEST_F(DataClientTest, AResumedStreamThatMakesProgressGetsTheWholeBudgetAgain) {
  // Five outages, each after one more confirmed row, with a budget of two retries.
  stub_->on_stream = [](std::size_t call, const std::string&) {
    const std::string id = std::to_string(call);
    const bool last = call == 5;
    return FakeSpannerStub::StreamScript{{Part({id, "x"}, "t" + id, call == 0)},
                                         last ? absl::OkStatus() : absl::UnavailableError("blip")};
  };
  DataClientOptions options;
  options.retry.max_attempts = 2;
  client(options);
  std::vector<std::string> rows;
  ASSERT_TRUE(Query(rows).ok());
  EXPECT_EQ(rows.size(), 6u);
  EXPECT_EQ(sleeps_, std::vector<std::chrono::milliseconds>(5, 250ms))
      << "the backoff starts over after progress";
}

TEST_F(DataClientTest, NewTokensInsideOneUnfinishedRowAreNotProgress) {
  // Every attempt brings a new token but only another chunk of the same value: no row is ever
  // complete, so the budget of two retries runs out instead of looping for ever.
  stub_->on_stream = [](std::size_t call, const std::string&) {
    return FakeSpannerStub::StreamScript{
        {call == 0 ? Part({"1", "he"}, "t0", true, true)
                   : Part({"l"}, "t" + std::to_string(call), false, true)},
        absl::UnavailableError("cut")};
  };
  DataClientOptions options;
  options.retry.max_attempts = 2;
  client(options);
  std::vector<std::string> rows;
  const absl::Status status = Query(rows);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_TRUE(rows.empty());
  EXPECT_EQ(stub_->streams().size(), 3u) << "one read and two retries";
}

TEST_F(DataClientTest, ACancelFromAnotherThreadEndsAStalledReadWithCancelled) {
  stub_->on_stream = [](std::size_t, const std::string&) {
    FakeSpannerStub::StreamScript script{{Part({"1", "a"}, "t", true)}, absl::OkStatus()};
    script.hang = true;  // then nothing more, until the client cancels
    return script;
  };
  client();
  ReadCancellation cancel;
  std::vector<std::string> rows;
  auto read = std::async(std::launch::async, [&] {
    return client_->ExecuteStreamingSql(
        sp::ExecuteSqlRequest(),
        [&](const sp::ResultSetMetadata&, std::vector<google::protobuf::Value> row) {
          rows.push_back(row[0].string_value());
          return absl::OkStatus();
        },
        &cancel);
  });
  EXPECT_EQ(read.wait_for(100ms), std::future_status::timeout) << "the stream stalls";
  cancel.cancel();
  ASSERT_EQ(read.wait_for(10s), std::future_status::ready) << "cancel did not end the read";
  EXPECT_EQ(read.get().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(rows, (std::vector<std::string>{"1"}));
  EXPECT_EQ(stub_->streams().size(), 1u);
}

TEST_F(DataClientTest, ACancelBeforeTheReadStartsSendsNothing) {
  client();
  ReadCancellation cancel;
  cancel.cancel();
  EXPECT_EQ(client_
                ->ExecuteStreamingSql(
                    sp::ExecuteSqlRequest(),
                    [](const sp::ResultSetMetadata&, std::vector<google::protobuf::Value>) {
                      return absl::OkStatus();
                    },
                    &cancel)
                .code(),
            absl::StatusCode::kCancelled);
  EXPECT_TRUE(stub_->streams().empty());
}

TEST_F(DataClientTest, ASessionLostAfterRowsWereHandedOutFailsInsteadOfReRunning) {
  stub_->on_stream = [](std::size_t, const std::string&) {
    return FakeSpannerStub::StreamScript{{Part({"1", "a"}, "t", true)},
                                         FakeSpannerStub::SessionNotFound()};
  };
  client();
  std::vector<std::string> rows;
  const absl::Status s = Query(rows);
  EXPECT_TRUE(IsSessionNotFound(s)) << s;
  EXPECT_EQ(stub_->streams().size(), 1u) << "a re-run would hand out row 1 again";
  EXPECT_EQ(pool_->size(), 0) << "the lost session was discarded, not given back";
}

TEST_F(DataClientTest, ANotFoundTableIsReturnedAtOnceNotTakenForALostSession) {
  stub_->on_commit = [](std::size_t,
                        const sp::CommitRequest&) -> absl::StatusOr<sp::CommitResponse> {
    google::rpc::Status details;
    google::rpc::ResourceInfo info;
    info.set_resource_type("spanner.googleapis.com/Table");
    info.set_resource_name("Missing");
    details.add_details()->PackFrom(info);
    absl::Status out = absl::NotFoundError("Table not found: Missing");
    out.SetPayload(connector::kRpcStatusPayload, absl::Cord(details.SerializeAsString()));
    return out;
  };
  client();
  EXPECT_EQ(client_->Commit({Row("a")}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(stub_->commits().size(), 1u);
  EXPECT_EQ(pool_->size(), 1) << "the session is fine and goes back to the pool";
  EXPECT_TRUE(sleeps_.empty());
}

TEST_F(DataClientTest, AnAbortIsRetriedOnTheSameSessionAfterTheDelayTheServiceAsks) {
  stub_->on_commit = [](std::size_t call,
                        const sp::CommitRequest&) -> absl::StatusOr<sp::CommitResponse> {
    if (call > 0) return sp::CommitResponse();
    google::rpc::Status details;
    google::rpc::RetryInfo info;
    info.mutable_retry_delay()->set_nanos(40000000);
    details.add_details()->PackFrom(info);
    absl::Status out = absl::AbortedError("Transaction was aborted");
    out.SetPayload(connector::kRpcStatusPayload, absl::Cord(details.SerializeAsString()));
    return out;
  };
  client();
  ASSERT_TRUE(client_->Commit({Row("a")}).ok());
  const auto commits = stub_->commits();
  ASSERT_EQ(commits.size(), 2u);
  EXPECT_EQ(commits[0].session(), commits[1].session());
  EXPECT_EQ(sleeps_, (std::vector<std::chrono::milliseconds>{40ms}));
}

TEST_F(DataClientTest, ABegunCommitWhoseAnswerWasLostIsAskedAgainForTheSameTransaction) {
  stub_->on_commit = [](std::size_t call,
                        const sp::CommitRequest&) -> absl::StatusOr<sp::CommitResponse> {
    if (call == 0) return absl::UnavailableError("answer lost");
    if (call == 1) return absl::DeadlineExceededError("slow");
    return sp::CommitResponse();
  };
  client();
  CommitOptions options;
  options.mode = CommitMode::kBeginThenCommit;
  ASSERT_TRUE(client_->Commit({Row("a")}, options).ok());
  const auto commits = stub_->commits();
  ASSERT_EQ(commits.size(), 3u);
  for (const auto& c : commits) EXPECT_EQ(c.transaction_id(), "tx0");
  EXPECT_EQ(stub_->begins(), 1);
  EXPECT_TRUE(stub_->rollbacks().empty());
}

TEST_F(DataClientTest, AFailedBeginIsRetriedWhenUnavailableAndReturnedOtherwise) {
  stub_->on_begin = [](std::size_t call) {
    if (call == 0) return absl::UnavailableError("blip");
    if (call == 2) return absl::PermissionDeniedError("no");
    return absl::OkStatus();
  };
  client();
  CommitOptions options;
  options.mode = CommitMode::kBeginThenCommit;
  ASSERT_TRUE(client_->Commit({Row("a")}, options).ok());
  EXPECT_EQ(client_->Commit({Row("b")}, options).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(stub_->commits().size(), 1u) << "no Commit without a transaction";
}

TEST_F(DataClientTest, PartitionCallsAreRetriedWhenUnavailable) {
  stub_->on_partition = [](std::size_t call) {
    return call == 0 ? absl::UnavailableError("blip") : absl::OkStatus();
  };
  client();
  auto query = client_->PartitionQuery(sp::PartitionQueryRequest());
  ASSERT_TRUE(query.ok()) << query.status();
  EXPECT_EQ(query->partitions_size(), 2);
  stub_->on_partition = [](std::size_t) { return absl::InvalidArgumentError("not partitionable"); };
  EXPECT_EQ(client_->PartitionRead(sp::PartitionReadRequest()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(stub_->partition_calls(), 3);
}

}  // namespace
}  // namespace gcpstream::spanner
