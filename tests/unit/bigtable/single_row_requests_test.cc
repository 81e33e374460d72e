// Single-row request values (CheckAndMutateRow predicate filters and branches, ReadModifyWrite
// rules), their validation against Bigtable's documented limits, and the async surface's
// timeout and failure handling over a fake stub.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>

#include "gcpstream/bigtable/requests/bigtable_request_async.h"
#include "gcpstream/bigtable/requests/single_row_sink.h"
#include "gcpstream/runtime/builtin/collect_sink.h"
#include "gcpstream/runtime/builtin/number_sequence_source.h"

namespace gcpstream::bigtable {
namespace {

using namespace std::chrono_literals;
using connector::TableDestination;
namespace v2 = google::bigtable::v2;

TEST(ConditionalFilterTest, LatestCellValueEqualsNarrowsToTheColumnItsNewestVersionAndTheValue) {
  const v2::RowFilter f =
      ConditionalFilter::latest_cell_value_equals("profile", "na.me", "Ada").proto();
  ASSERT_EQ(f.chain().filters_size(), 3);
  const auto& column = f.chain().filters(0).column_range_filter();
  EXPECT_EQ(column.family_name(), "profile");
  EXPECT_EQ(column.start_qualifier_closed(), "na.me") << "exact, not a regular expression";
  EXPECT_EQ(column.end_qualifier_closed(), "na.me");
  EXPECT_EQ(f.chain().filters(1).cells_per_column_limit_filter(), 1);
  EXPECT_EQ(f.chain().filters(2).value_range_filter().start_value_closed(), "Ada");
  EXPECT_EQ(f.chain().filters(2).value_range_filter().end_value_closed(), "Ada");
}

TEST(ConditionalFilterTest, ExistenceChecksAndCompositions) {
  EXPECT_EQ(ConditionalFilter::row_exists().proto().cells_per_row_limit_filter(), 1);
  const auto cell = ConditionalFilter::cell_exists("f", "q").proto();
  EXPECT_EQ(cell.chain().filters(0).column_range_filter().family_name(), "f");
  EXPECT_EQ(ConditionalFilter::family("a.b").proto().family_name_regex_filter(), "^a\\.b$");
  const auto either = ConditionalFilter::interleave(
      {ConditionalFilter::cell_exists("f", "a"), ConditionalFilter::cell_exists("f", "b")});
  EXPECT_EQ(either.proto().interleave().filters_size(), 2);
  const auto ts = ConditionalFilter::timestamp_range(1000, 5000).proto().timestamp_range_filter();
  EXPECT_EQ(ts.start_timestamp_micros(), 1000);
  EXPECT_EQ(ts.end_timestamp_micros(), 5000);
}

TEST(ConditionalFilterTest, AFilterTheServiceWouldRefuseFailsValidationBeforeAnyRpc) {
  EXPECT_FALSE(ConditionalFilter::latest_versions(0).validate().ok());
  EXPECT_FALSE(ConditionalFilter::cell_exists("", "q").validate().ok());
  EXPECT_FALSE(ConditionalFilter::family(std::string("f\xff", 2)).validate().ok());
  EXPECT_FALSE(ConditionalFilter::chain({}).validate().ok());
  const auto nested = ConditionalFilter::interleave(
      {ConditionalFilter::row_exists(),
       ConditionalFilter::chain({ConditionalFilter::latest_versions(-1)})});
  EXPECT_NE(nested.validate().message().find("latest_versions"), std::string::npos)
      << "an error deep in a composition surfaces";
  ConditionalRequest r("row", nested);
  r.on_match().delete_row();
  EXPECT_EQ(r.validate().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.validate().message().find("invalid predicate"), std::string::npos) << r.validate();
  EXPECT_TRUE(ConditionalFilter::latest_cell_value_equals("f", "q", "v").validate().ok());
}

TEST(ConditionalRequestTest, BranchesKeepTheirOrderOnTheWire) {
  ConditionalRequest r("row", ConditionalFilter::row_exists());
  r.on_match().delete_cells("f", "q").set_cell("f", "q", 2000, "v");
  r.otherwise().delete_row();
  ASSERT_TRUE(r.validate().ok()) << r.validate();
  const auto proto = r.to_proto("projects/p/instances/i/tables/t", "profile");
  EXPECT_EQ(proto.table_name(), "projects/p/instances/i/tables/t");
  EXPECT_EQ(proto.app_profile_id(), "profile");
  ASSERT_EQ(proto.true_mutations_size(), 2);
  EXPECT_TRUE(proto.true_mutations(0).has_delete_from_column());
  EXPECT_TRUE(proto.true_mutations(1).has_set_cell());
  ASSERT_EQ(proto.false_mutations_size(), 1);
  EXPECT_TRUE(proto.false_mutations(0).has_delete_from_row());
}

TEST(ConditionalRequestTest, ValidationFollowsBigtablesLimits) {
  ConditionalRequest empty("row", ConditionalFilter::row_exists());
  EXPECT_NE(empty.validate().message().find("either branch"), std::string::npos);
  ConditionalRequest only_false("row", ConditionalFilter::row_exists());
  only_false.otherwise().delete_row();
  EXPECT_TRUE(only_false.validate().ok()) << "one nonempty branch is enough";

  ConditionalRequest no_key("", ConditionalFilter::row_exists());
  no_key.on_match().delete_row();
  EXPECT_EQ(no_key.validate().code(), absl::StatusCode::kInvalidArgument);

  ConditionalRequest big("row", ConditionalFilter::row_exists());
  for (int i = 0; i <= 100000; ++i) big.on_match().delete_family("f");
  EXPECT_NE(big.validate().message().find("100000"), std::string::npos) << big.validate();

  ConditionalRequest aggregate("row", ConditionalFilter::row_exists());
  aggregate.on_match().add_to_cell("sum", "n", -1, AggregateValue::int64(1));
  EXPECT_NE(aggregate.validate().message().find("aggregate"), std::string::npos);
  ConditionalRequest at_zero("row", ConditionalFilter::row_exists());
  at_zero.on_match().add_to_cell("sum", "n", 0, AggregateValue::int64(1));
  EXPECT_TRUE(at_zero.validate().ok()) << "zero is a concrete timestamp";

  ConditionalRequest server_time("row", ConditionalFilter::row_exists());
  server_time.on_match().set_cell_server_time("f", "q", "v");
  EXPECT_TRUE(server_time.validate().ok()) << "only SetCell may ask for server time";
}

TEST(ReadModifyWriteRequestTest, ValidationAndWireForm) {
  ReadModifyWriteRequest none("row");
  EXPECT_NE(none.validate().message().find("no rule"), std::string::npos);
  ReadModifyWriteRequest empty_append("row");
  empty_append.append("f", "q", "");
  EXPECT_NE(empty_append.validate().message().find("empty value"), std::string::npos);
  ReadModifyWriteRequest too_many("row");
  for (int i = 0; i <= 100000; ++i) too_many.increment("f", "q", 1);
  EXPECT_NE(too_many.validate().message().find("100000"), std::string::npos);
  ReadModifyWriteRequest ok("row");
  ok.append("f", "q", "x").increment("f", "n", -3).increment("f", "n", 0);
  ASSERT_TRUE(ok.validate().ok()) << ok.validate();
  const auto proto = ok.to_proto("t", "");
  ASSERT_EQ(proto.rules_size(), 3);
  EXPECT_EQ(proto.rules(0).append_value(), "x");
  EXPECT_EQ(proto.rules(1).increment_amount(), -3);
}

TEST(ReadModifyWriteRequestTest, CountersAreEightBytesBigEndian) {
  EXPECT_EQ(*DecodeCounter(std::string("\x00\x00\x00\x00\x00\x00\x01\x02", 8)), 258);
  EXPECT_EQ(*DecodeCounter(std::string(8, '\xff')), -1);
  EXPECT_EQ(DecodeCounter("abc").status().code(), absl::StatusCode::kInvalidArgument);
}

// Answers nothing until cancelled (then CANCELLED), and records what it was asked.
class SilentStub final : public BigtableDataStub {
 public:
  std::function<void()> async_mutate_rows(std::shared_ptr<const v2::MutateRowsRequest>,
                                          std::chrono::milliseconds,
                                          std::function<void(MutateRowsResult)>) override {
    return [] {};
  }
  std::function<void()> async_check_and_mutate_row(
      std::shared_ptr<const v2::CheckAndMutateRowRequest> request, std::chrono::milliseconds,
      std::function<void(absl::StatusOr<v2::CheckAndMutateRowResponse>)> done) override {
    std::lock_guard lock(mu);
    requests.push_back(*request);
    auto pending = std::make_shared<decltype(done)>(std::move(done));
    return [this, pending] {
      cancels.fetch_add(1);
      if (*pending) {
        auto d = std::move(*pending);
        *pending = nullptr;
        d(absl::CancelledError("cancelled by the client"));
      }
    };
  }
  std::mutex mu;
  std::vector<v2::CheckAndMutateRowRequest> requests;
  std::atomic<int> cancels{0};
};

absl::StatusOr<BigtableConditionalAsync<std::int64_t>> Conditional(
    std::shared_ptr<BigtableDataStub> stub, bool valid = true) {
  BigtableRequestOptions options;
  options.request_timeout = 100ms;
  return BigtableConditionalAsync<std::int64_t>::builder()
      .table(TableDestination::of("p", "i", "t"))
      .stub_for_testing(std::move(stub))
      .request_options(options)
      .serializer([valid](const std::int64_t& i) -> std::optional<ConditionalRequest> {
        ConditionalRequest r("row" + std::to_string(i), ConditionalFilter::row_exists());
        if (valid) r.on_match().delete_row();
        return r;
      })
      .build();
}

runtime::JobResult RunOne(const BigtableConditionalAsync<std::int64_t>& conditional,
                          std::chrono::milliseconds operator_timeout) {
  StreamExecutionEnvironment env;
  env.set_parallelism(1);
  auto input = env.from_source(std::make_shared<NumberSequenceSource>(0, 0, 1),
                               WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers");
  auto results = conditional.unordered_wait(input, operator_timeout, "conditional");
  EXPECT_TRUE(results.ok()) << results.status();
  results->sink_to(std::make_shared<CollectSink<std::pair<std::int64_t, ConditionalResult>>>());
  return env.execute("single-row");
}

TEST(BigtableRequestAsyncTest, TheOperatorTimeoutCancelsTheRequestAndNamesBothTimeouts) {
  auto stub = std::make_shared<SilentStub>();
  auto conditional = Conditional(stub);
  ASSERT_TRUE(conditional.ok()) << conditional.status();
  auto result = RunOne(*conditional, 300ms);
  EXPECT_EQ(result.status.code(), absl::StatusCode::kDeadlineExceeded) << result.status;
  EXPECT_NE(result.status.message().find("300 ms"), std::string::npos) << result.status;
  EXPECT_NE(result.status.message().find("requestTimeout 100 ms"), std::string::npos)
      << result.status;
  EXPECT_EQ(stub->cancels.load(), 1);
  std::lock_guard lock(stub->mu);
  ASSERT_EQ(stub->requests.size(), 1u);
  EXPECT_EQ(stub->requests[0].table_name(), "projects/p/instances/i/tables/t");
}

TEST(BigtableRequestAsyncTest, AnInvalidRequestFailsTheJobBeforeAnyRpc) {
  auto stub = std::make_shared<SilentStub>();
  auto conditional = Conditional(stub, /*valid=*/false);
  ASSERT_TRUE(conditional.ok());
  auto result = RunOne(*conditional, 300ms);
  EXPECT_EQ(result.status.code(), absl::StatusCode::kInvalidArgument) << result.status;
  EXPECT_NE(result.status.message().find("row0"), std::string::npos) << result.status;
  std::lock_guard lock(stub->mu);
  EXPECT_TRUE(stub->requests.empty());
}

TEST(BigtableRequestAsyncTest, TheOperatorTimeoutMustExceedTheRequestTimeout) {
  auto conditional = Conditional(std::make_shared<SilentStub>());
  ASSERT_TRUE(conditional.ok());
  auto fn = conditional->make_function(100ms);
  EXPECT_EQ(fn.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(fn.status().message().find("requestTimeout (100 ms)"), std::string::npos)
      << fn.status();
  EXPECT_TRUE(conditional->make_function(101ms).ok());
}

TEST(BigtableRequestAsyncTest, TheBuilderNamesWhatIsMissing) {
  auto no_table = BigtableConditionalAsync<int>::builder()
                      .serializer([](const int&) { return std::optional<ConditionalRequest>(); })
                      .build();
  EXPECT_NE(no_table.status().message().find("table"), std::string::npos);
  auto no_serializer =
      BigtableConditionalAsync<int>::builder().table(TableDestination::of("p", "i", "t")).build();
  EXPECT_NE(no_serializer.status().message().find("serializer"), std::string::npos);
  BigtableRequestOptions bad;
  bad.max_in_flight_requests = 0;
  auto bad_options =
      BigtableReadModifyWriteAsync<int>::builder()
          .table(TableDestination::of("p", "i", "t"))
          .serializer([](const int&) { return std::optional<ReadModifyWriteRequest>(); })
          .request_options(bad)
          .build();
  EXPECT_NE(bad_options.status().message().find("maxInFlightRequests"), std::string::npos);
}

}  // namespace
}  // namespace gcpstream::bigtable

namespace gcpstream::bigtable {
namespace {

// Answers by row key: "invalid*" INVALID_ARGUMENT, "unavailable*" UNAVAILABLE, "match*" a
// matched predicate, anything else a predicate that did not match.
class ScriptedStub final : public BigtableDataStub {
 public:
  std::function<void()> async_mutate_rows(std::shared_ptr<const v2::MutateRowsRequest>,
                                          std::chrono::milliseconds,
                                          std::function<void(MutateRowsResult)>) override {
    return [] {};
  }
  std::function<void()> async_check_and_mutate_row(
      std::shared_ptr<const v2::CheckAndMutateRowRequest> request, std::chrono::milliseconds,
      std::function<void(absl::StatusOr<v2::CheckAndMutateRowResponse>)> done) override {
    sent.fetch_add(1);
    const std::string& key = request->row_key();
    if (key.rfind("invalid", 0) == 0) {
      done(absl::InvalidArgumentError("bad request"));
    } else if (key.rfind("unavailable", 0) == 0) {
      done(absl::UnavailableError("connection reset"));
    } else {
      v2::CheckAndMutateRowResponse r;
      r.set_predicate_matched(key.rfind("match", 0) == 0);
      done(r);
    }
    return [] {};
  }
  std::atomic<int> sent{0};
};

struct Keyed {
  std::string key;
  bool with_otherwise = true;
};

runtime::JobResult RunSink(std::shared_ptr<BigtableDataStub> stub, std::vector<Keyed> inputs,
                           std::shared_ptr<connector::FailureHandler> handler,
                           EmptyBranchPolicy policy = EmptyBranchPolicy::kIgnore) {
  auto sink = BigtableConditionalSink<Keyed>::builder()
                  .table(TableDestination::of("p", "i", "t"))
                  .stub_for_testing(std::move(stub))
                  .failure_handler(std::move(handler))
                  .empty_branch_policy(policy)
                  .serializer([](const Keyed& k) -> std::optional<ConditionalRequest> {
                    if (k.key == "skip") return std::nullopt;
                    ConditionalRequest r(k.key, ConditionalFilter::row_exists());
                    r.on_match().delete_row();
                    if (k.with_otherwise) r.otherwise().set_cell("f", "q", 1000, "v");
                    if (k.key == "empty-key") return ConditionalRequest("", r.predicate());
                    return r;
                  })
                  .build();
  EXPECT_TRUE(sink.ok()) << sink.status();
  StreamExecutionEnvironment env;
  env.set_parallelism(1);
  const auto n = static_cast<std::int64_t>(inputs.size());
  env.from_source(std::make_shared<NumberSequenceSource>(0, n - 1, 1),
                  WatermarkStrategy<std::int64_t>::no_watermarks(), "numbers")
      .map([inputs](std::int64_t i) { return inputs[static_cast<std::size_t>(i)]; })
      .sink_to(*sink, "conditional sink");
  return env.execute("single-row-sink");
}

TEST(SingleRowSinkTest, RejectionsAndInvalidRequestsReachTheHandlerAndTheRestIsSent) {
  auto stub = std::make_shared<ScriptedStub>();
  std::mutex mu;
  std::vector<std::string> routed;
  auto handler = connector::FailureHandler::custom([&](const connector::FailedElement& e) {
    std::lock_guard lock(mu);
    routed.push_back(std::string(e.status().message()));
    return absl::OkStatus();
  });
  auto result =
      RunSink(stub, {{"match-1"}, {"invalid-1"}, {"skip"}, {"empty-key"}, {"other"}}, handler);
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_EQ(stub->sent.load(), 3) << "skipped and invalid requests are never sent";
  std::lock_guard lock(mu);
  ASSERT_EQ(routed.size(), 2u) << ::testing::PrintToString(routed);
  EXPECT_NE(routed[0].find("bad request"), std::string::npos) << routed[0];
  EXPECT_NE(routed[1].find("empty row key"), std::string::npos) << routed[1];
}

TEST(SingleRowSinkTest, AnAmbiguousFailureFailsTheJobEvenWithADroppingHandler) {
  auto stub = std::make_shared<ScriptedStub>();
  auto result =
      RunSink(stub, {{"match-1"}, {"unavailable-2"}}, connector::FailureHandler::log_and_drop());
  EXPECT_EQ(result.status.code(), absl::StatusCode::kUnavailable) << result.status;
  EXPECT_NE(result.status.message().find("ambiguous"), std::string::npos) << result.status;
  EXPECT_NE(result.status.message().find("projects/p/instances/i/tables/t"), std::string::npos)
      << result.status;
}

TEST(SingleRowSinkTest, TheFailPolicyFailsOnAnEmptySelectedBranchWhateverTheHandler) {
  auto stub = std::make_shared<ScriptedStub>();
  Keyed no_otherwise{"other", /*with_otherwise=*/false};
  auto ignored = RunSink(stub, {no_otherwise}, connector::FailureHandler::log_and_drop());
  EXPECT_TRUE(ignored.status.ok()) << "kIgnore accepts an empty selected branch";
  auto failed = RunSink(stub, {no_otherwise}, connector::FailureHandler::log_and_drop(),
                        EmptyBranchPolicy::kFail);
  EXPECT_EQ(failed.status.code(), absl::StatusCode::kFailedPrecondition) << failed.status;
  EXPECT_NE(failed.status.message().find("EmptyBranchPolicy FAIL"), std::string::npos)
      << failed.status;
}

}  // namespace
}  // namespace gcpstream::bigtable
