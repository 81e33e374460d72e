// Pins the documented behaviours tests/fakes/bigtable_change_streams implements. Each test
// names the public Bigtable v2 reference it follows (google.bigtable.v2.Bigtable:
// GenerateInitialChangeStreamPartitions, ReadChangeStream; ReadChangeStreamRequest,
// ReadChangeStreamResponse.{DataChange, MutationChunk, Heartbeat, CloseStream},
// StreamPartition, StreamContinuationToken(s)).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/protobuf/util/time_util.h"
#include "tests/fakes/bigtable_change_streams.h"

namespace gcpstream::testing {
namespace {

namespace v2 = google::bigtable::v2;
using Response = v2::ReadChangeStreamResponse;
using google::protobuf::util::TimeUtil;
using namespace std::chrono_literals;

constexpr char kTable[] = "projects/p/instances/i/tables/t";

v2::Mutation SetCell(const std::string& qualifier, const std::string& value) {
  v2::Mutation m;
  auto* c = m.mutable_set_cell();
  c->set_family_name("f");
  c->set_column_qualifier(qualifier);
  c->set_timestamp_micros(1000);
  c->set_value(value);
  return m;
}

v2::StreamPartition Partition(const std::string& start, const std::string& end) {
  v2::StreamPartition p;
  if (!start.empty()) p.mutable_row_range()->set_start_key_closed(start);
  if (!end.empty()) p.mutable_row_range()->set_end_key_open(end);
  return p;
}

class ChangeStreamsFakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fake = BigtableChangeStreamsFake::Start();
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = *std::move(fake);
    fake_->add_table(kTable);
    stub_ = v2::Bigtable::NewStub(
        grpc::CreateChannel(fake_->endpoint(), grpc::InsecureChannelCredentials()));
    start_ = absl::Now() - absl::Seconds(1);
  }

  void Write(const std::string& row, const std::string& value) {
    grpc::ClientContext ctx;
    v2::MutateRowRequest request;
    request.set_table_name(kTable);
    request.set_row_key(row);
    *request.add_mutations() = SetCell("q", value);
    v2::MutateRowResponse response;
    ASSERT_TRUE(stub_->MutateRow(&ctx, request, &response).ok());
  }

  v2::ReadChangeStreamRequest FromStart(const v2::StreamPartition& partition) {
    v2::ReadChangeStreamRequest request;
    request.set_table_name(kTable);
    *request.mutable_partition() = partition;
    *request.mutable_start_time() = TimeUtil::MicrosecondsToTimestamp(absl::ToUnixMicros(start_));
    *request.mutable_heartbeat_duration() = TimeUtil::MillisecondsToDuration(200);
    return request;
  }

  // Reads until `stop` says so or the deadline passes; returns what arrived and the status.
  struct Read {
    std::vector<Response> responses;
    grpc::Status status;
  };
  Read ReadUntil(const v2::ReadChangeStreamRequest& request,
                 const std::function<bool(const std::vector<Response>&)>& stop,
                 std::chrono::milliseconds deadline = 5s) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    auto reader = stub_->ReadChangeStream(&ctx, request);
    Read out;
    Response r;
    while (reader->Read(&r)) {
      out.responses.push_back(r);
      if (stop(out.responses)) {
        ctx.TryCancel();
        break;
      }
    }
    out.status = reader->Finish();
    return out;
  }

  static std::vector<Response::DataChange> Changes(const std::vector<Response>& rs) {
    std::vector<Response::DataChange> out;
    for (const auto& r : rs) {
      if (r.has_data_change()) out.push_back(r.data_change());
    }
    return out;
  }
  static int Done(const std::vector<Response>& rs) {
    int n = 0;
    for (const auto& r : rs) n += r.has_data_change() && r.data_change().done() ? 1 : 0;
    return n;
  }
  static const Response* Close(const std::vector<Response>& rs) {
    for (const auto& r : rs) {
      if (r.has_close_stream()) return &r;
    }
    return nullptr;
  }

  std::unique_ptr<BigtableChangeStreamsFake> fake_;
  std::unique_ptr<v2::Bigtable::Stub> stub_;
  absl::Time start_;
};

// GenerateInitialChangeStreamPartitions: "Returns the current list of partitions that make up
// the table's change stream"; StreamPartition.row_range is [start_key_closed, end_key_open).
TEST_F(ChangeStreamsFakeTest, InitialPartitionsTileTheKeySpace) {
  ASSERT_TRUE(fake_->repartition({"g", "p"}).ok());
  grpc::ClientContext ctx;
  v2::GenerateInitialChangeStreamPartitionsRequest request;
  request.set_table_name(kTable);
  auto reader = stub_->GenerateInitialChangeStreamPartitions(&ctx, request);
  std::vector<std::pair<std::string, std::string>> ranges;
  v2::GenerateInitialChangeStreamPartitionsResponse r;
  while (reader->Read(&r)) {
    ranges.emplace_back(r.partition().row_range().start_key_closed(),
                        r.partition().row_range().end_key_open());
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(ranges,
            (std::vector<std::pair<std::string, std::string>>{{"", "g"}, {"g", "p"}, {"p", ""}}));
}

// A table must exist and have change streams enabled.
TEST_F(ChangeStreamsFakeTest, AnUnknownTableIsNotFound) {
  auto request = FromStart(Partition("", ""));
  request.set_table_name("projects/p/instances/i/tables/nope");
  auto read = ReadUntil(request, [](const auto&) { return false; });
  EXPECT_EQ(read.status.error_code(), grpc::StatusCode::NOT_FOUND);
}

// DataChange: row key, commit timestamp, type USER, source cluster; `done` on the last message
// with the token and the estimated low watermark; changes of a partition in commit order.
TEST_F(ChangeStreamsFakeTest, ChangesArriveInCommitOrderWithTokensAndLowWatermarks) {
  Write("a", "1");
  Write("b", "2");
  Write("a", "3");
  auto read = ReadUntil(FromStart(Partition("", "")), [](const auto& rs) { return Done(rs) == 3; });
  auto changes = Changes(read.responses);
  ASSERT_EQ(changes.size(), 3u);
  std::vector<std::string> seen;
  absl::Time last = absl::InfinitePast();
  for (const auto& c : changes) {
    EXPECT_EQ(c.type(), Response::DataChange::USER);
    EXPECT_EQ(c.source_cluster_id(), "fake-c1");
    EXPECT_TRUE(c.done());
    EXPECT_FALSE(c.token().empty());
    EXPECT_TRUE(c.has_estimated_low_watermark());
    const absl::Time commit =
        absl::FromUnixMicros(TimeUtil::TimestampToMicroseconds(c.commit_timestamp()));
    EXPECT_GT(commit, last);
    last = commit;
    seen.push_back(c.row_key() + "=" + c.chunks(0).mutation().set_cell().value());
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"a=1", "b=2", "a=3"}));
}

// MutationChunk.ChunkInfo: a large SetCell value comes in chunks (offset, total size,
// last_chunk), the later ones in CONTINUATION messages of the same DataChange.
TEST_F(ChangeStreamsFakeTest, ALargeValueIsChunkedAcrossMessages) {
  BigtableChangeStreamsFakeOptions options;
  options.max_value_chunk_bytes = 4;
  fake_->set_options(options);
  Write("a", "0123456789");
  auto read = ReadUntil(FromStart(Partition("", "")), [](const auto& rs) { return Done(rs) == 1; });
  auto changes = Changes(read.responses);
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(changes[0].type(), Response::DataChange::USER);
  EXPECT_EQ(changes[0].row_key(), "a");
  std::string value;
  for (std::size_t i = 0; i < changes.size(); ++i) {
    if (i > 0) {
      EXPECT_EQ(changes[i].type(), Response::DataChange::CONTINUATION);
    }
    ASSERT_EQ(changes[i].chunks_size(), 1);
    const auto& info = changes[i].chunks(0).chunk_info();
    EXPECT_EQ(info.chunked_value_size(), 10);
    EXPECT_EQ(info.chunked_value_offset(), static_cast<int>(value.size()));
    EXPECT_EQ(info.last_chunk(), i + 1 == changes.size());
    value += changes[i].chunks(0).mutation().set_cell().value();
    EXPECT_EQ(changes[i].done(), i + 1 == changes.size());
  }
  EXPECT_EQ(value, "0123456789");
}

// Heartbeat: a periodic message with a continuation token and a low watermark, every
// heartbeat_duration; an idle stream stays open.
TEST_F(ChangeStreamsFakeTest, AnIdleStreamSendsHeartbeatsAndStaysOpen) {
  auto read = ReadUntil(FromStart(Partition("", "")), [](const auto& rs) {
    int beats = 0;
    for (const auto& r : rs) beats += r.has_heartbeat() ? 1 : 0;
    return beats == 5;
  });
  ASSERT_EQ(read.responses.size(), 5u) << read.status.error_message();
  for (const auto& r : read.responses) {
    ASSERT_TRUE(r.has_heartbeat());
    EXPECT_FALSE(r.heartbeat().continuation_token().token().empty());
    EXPECT_TRUE(r.heartbeat().continuation_token().partition().has_row_range());
  }
}

// ReadChangeStreamRequest.continuation_tokens: reading resumes where the token was issued:
// nothing before it again, nothing after it skipped.
TEST_F(ChangeStreamsFakeTest, ResumingFromATokenNeitherRepeatsNorSkips) {
  Write("a", "1");
  Write("b", "2");
  auto first =
      ReadUntil(FromStart(Partition("", "")), [](const auto& rs) { return Done(rs) == 1; });
  const std::string token = Changes(first.responses).back().token();
  Write("c", "3");
  v2::ReadChangeStreamRequest request = FromStart(Partition("", ""));
  request.clear_start_time();
  auto* t = request.mutable_continuation_tokens()->add_tokens();
  *t->mutable_partition() = Partition("", "");
  t->set_token(token);
  auto second = ReadUntil(request, [](const auto& rs) { return Done(rs) == 2; });
  std::vector<std::string> rows;
  for (const auto& c : Changes(second.responses)) rows.push_back(c.row_key());
  EXPECT_EQ(rows, (std::vector<std::string>{"b", "c"}));
}

// "If multiple tokens are provided ... the union of the token partitions must exactly cover the
// request's partition. Otherwise, INVALID_ARGUMENT will be returned."
TEST_F(ChangeStreamsFakeTest, TokensThatDoNotCoverThePartitionAreInvalid) {
  ASSERT_TRUE(fake_->split_at("m").ok());
  auto read = ReadUntil(FromStart(Partition("", "m")), [](const auto& rs) { return !rs.empty(); });
  const std::string token = read.responses.front().heartbeat().continuation_token().token();
  ASSERT_TRUE(fake_->merge_at("m").ok());
  v2::ReadChangeStreamRequest request = FromStart(Partition("", ""));
  request.clear_start_time();
  auto* t = request.mutable_continuation_tokens()->add_tokens();
  *t->mutable_partition() = Partition("", "m");
  t->set_token(token);
  auto bad = ReadUntil(request, [](const auto&) { return true; });
  EXPECT_EQ(bad.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// CloseStream on a split: status OK, a continuation token for each piece of the old range and
// the new partitions; reading each new partition from its token continues without a gap.
TEST_F(ChangeStreamsFakeTest, ASplitClosesTheStreamWithTokensForBothChildren) {
  Write("a", "before");
  std::thread splitter([&] {
    std::this_thread::sleep_for(300ms);
    ASSERT_TRUE(fake_->split_at("m").ok());
    Write("z", "after");
  });
  auto read = ReadUntil(FromStart(Partition("", "")), [](const auto& rs) { return Close(rs); });
  splitter.join();
  const Response* close = Close(read.responses);
  ASSERT_NE(close, nullptr);
  EXPECT_EQ(close->close_stream().status().code(), 0);
  ASSERT_EQ(close->close_stream().new_partitions_size(), 2);
  ASSERT_EQ(close->close_stream().continuation_tokens_size(), 2);
  // The change made before the split came on the parent; the one after it does not.
  std::vector<std::string> rows;
  for (const auto& c : Changes(read.responses)) rows.push_back(c.row_key());
  EXPECT_EQ(rows, std::vector<std::string>{"a"});
  // The right child, from its token, has the later change.
  const auto& right = close->close_stream().continuation_tokens(1);
  EXPECT_EQ(right.partition().row_range().start_key_closed(), "m");
  v2::ReadChangeStreamRequest request = FromStart(right.partition());
  request.clear_start_time();
  *request.mutable_continuation_tokens()->add_tokens() = right;
  auto child = ReadUntil(request, [](const auto& rs) { return Done(rs) == 1; });
  ASSERT_EQ(Changes(child.responses).size(), 1u);
  EXPECT_EQ(Changes(child.responses)[0].row_key(), "z");
}

// CloseStream on a merge: each parent hands over the token of its own range and names the
// merged partition, which reads only with both tokens.
TEST_F(ChangeStreamsFakeTest, AMergeNeedsTheTokensOfEveryParent) {
  ASSERT_TRUE(fake_->split_at("m").ok());
  std::thread merger([&] {
    std::this_thread::sleep_for(300ms);
    ASSERT_TRUE(fake_->merge_at("m").ok());
    Write("b", "merged");
  });
  auto left = ReadUntil(FromStart(Partition("", "m")), [](const auto& rs) { return Close(rs); });
  merger.join();
  auto right = ReadUntil(FromStart(Partition("m", "")), [](const auto& rs) { return Close(rs); });
  const Response* lc = Close(left.responses);
  const Response* rc = Close(right.responses);
  ASSERT_NE(lc, nullptr);
  // A read of the retired right partition after the merge: OUT_OF_RANGE, with the way on.
  ASSERT_NE(rc, nullptr);
  EXPECT_EQ(rc->close_stream().status().code(), grpc::StatusCode::OUT_OF_RANGE);
  ASSERT_EQ(lc->close_stream().new_partitions_size(), 1);
  EXPECT_FALSE(lc->close_stream().new_partitions(0).row_range().has_start_key_closed());
  EXPECT_FALSE(lc->close_stream().new_partitions(0).row_range().has_end_key_open());
  v2::ReadChangeStreamRequest request = FromStart(Partition("", ""));
  request.clear_start_time();
  *request.mutable_continuation_tokens()->add_tokens() = lc->close_stream().continuation_tokens(0);
  auto one = ReadUntil(request, [](const auto&) { return true; });
  EXPECT_EQ(one.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  *request.mutable_continuation_tokens()->add_tokens() = rc->close_stream().continuation_tokens(0);
  auto both = ReadUntil(request, [](const auto& rs) { return Done(rs) == 1; });
  ASSERT_EQ(Changes(both.responses).size(), 1u) << both.status.error_message();
  EXPECT_EQ(Changes(both.responses)[0].row_key(), "b");
}

// end_time: "OK will be returned when the stream advances beyond this time": a CloseStream
// with status OK and no tokens or partitions, then the call ends OK.
TEST_F(ChangeStreamsFakeTest, TheStreamEndsOnceItPassesTheEndTime) {
  Write("a", "1");
  auto request = FromStart(Partition("", ""));
  *request.mutable_end_time() =
      TimeUtil::MicrosecondsToTimestamp(absl::ToUnixMicros(absl::Now() + absl::Milliseconds(300)));
  auto read = ReadUntil(request, [](const auto&) { return false; });
  EXPECT_TRUE(read.status.ok()) << read.status.error_message();
  const Response* close = Close(read.responses);
  ASSERT_NE(close, nullptr);
  EXPECT_EQ(close->close_stream().continuation_tokens_size(), 0);
  EXPECT_EQ(close->close_stream().new_partitions_size(), 0);
  EXPECT_EQ(Done(read.responses), 1);
}

// Table.change_stream_config.retention_period through BigtableTableAdmin.GetTable; a start time
// before the retention answers INVALID_ARGUMENT ("must be within the change stream retention
// period"), a token older than it OUT_OF_RANGE (the fake's choice: the reference names no code).
TEST_F(ChangeStreamsFakeTest, TheRetentionIsReportedAndEnforced) {
  auto admin = google::bigtable::admin::v2::BigtableTableAdmin::NewStub(
      grpc::CreateChannel(fake_->endpoint(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  google::bigtable::admin::v2::GetTableRequest get;
  get.set_name(kTable);
  google::bigtable::admin::v2::Table table;
  ASSERT_TRUE(admin->GetTable(&ctx, get, &table).ok());
  EXPECT_EQ(table.change_stream_config().retention_period().seconds(), 7 * 24 * 3600);

  Write("a", "1");
  auto read = ReadUntil(FromStart(Partition("", "")), [](const auto& rs) { return Done(rs) == 1; });
  const std::string token = Changes(read.responses).back().token();
  auto offset = std::make_shared<std::atomic<int>>(0);
  BigtableChangeStreamsFakeOptions options;
  options.retention = absl::Hours(1);
  options.clock = [offset] { return absl::Now() + absl::Hours(offset->load()); };
  fake_->set_options(options);
  offset->store(2);
  v2::ReadChangeStreamRequest request = FromStart(Partition("", ""));
  request.clear_start_time();
  auto* t = request.mutable_continuation_tokens()->add_tokens();
  *t->mutable_partition() = Partition("", "");
  t->set_token(token);
  EXPECT_EQ(ReadUntil(request, [](const auto&) { return true; }).status.error_code(),
            grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_EQ(
      ReadUntil(FromStart(Partition("", "")), [](const auto&) { return true; }).status.error_code(),
      grpc::StatusCode::INVALID_ARGUMENT);
}

// Fault: a stream cut after the first message of a chunked change fails with UNAVAILABLE.
TEST_F(ChangeStreamsFakeTest, TheCutFaultStopsAStreamMidChange) {
  BigtableChangeStreamsFakeOptions options;
  options.max_value_chunk_bytes = 4;
  options.cut_next_chunked_change = true;
  fake_->set_options(options);
  Write("a", "0123456789");
  auto read = ReadUntil(FromStart(Partition("", "")), [](const auto&) { return false; });
  EXPECT_EQ(read.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  ASSERT_EQ(Changes(read.responses).size(), 1u);
  EXPECT_FALSE(Changes(read.responses)[0].done());
}

}  // namespace
}  // namespace gcpstream::testing
