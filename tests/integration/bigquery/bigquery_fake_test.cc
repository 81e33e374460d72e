// The BigQuery fake's documented behaviours, one test each, through a real gRPC channel and
// HTTP. Each test names the public documentation it follows: the Storage Write API reference
// (google/cloud/bigquery/storage/v1/storage.proto, stream.proto — the same text as
// cloud.google.com/bigquery/docs/reference/storage/rpc), the Storage Write API guides ("Use the
// Storage Write API": default, committed, pending and buffered types; "Supported protocol buffer
// data types"; quotas), the v2 REST reference (tables, datasets, tabledata.list) and "Modifying
// table schemas"; and where the service was measured rather than documented,
// ../shared/spec/bigquery.md.
#include "tests/fakes/bigquery/bigquery_fake.h"

#include <gmock/gmock.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "google/cloud/bigquery/storage/v1/storage.grpc.pb.h"
#include "google/rpc/status.pb.h"

namespace gcpstream::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
namespace storage = google::cloud::bigquery::storage::v1;
using google::protobuf::FieldDescriptorProto;

constexpr char kTable[] = "projects/p/datasets/d/tables/t";

// The test table: every column type the row tests use.
nlohmann::json TableResource(const std::string& id = "t") {
  return {{"tableReference", {{"tableId", id}}},
          {"schema",
           {{"fields",
             {{{"name", "name"}, {"type", "STRING"}, {"mode", "REQUIRED"}},
              {{"name", "count"}, {"type", "INTEGER"}},
              {{"name", "day"}, {"type", "DATE"}},
              {{"name", "at"}, {"type", "TIMESTAMP"}},
              {{"name", "amount"}, {"type", "NUMERIC"}},
              {{"name", "when"}, {"type", "DATETIME"}},
              {{"name", "doc"}, {"type", "JSON"}},
              {{"name", "tags"}, {"type", "STRING"}, {"mode", "REPEATED"}}}}}}};
}

// A proto2 writer schema with one field per (name, type) and a way to encode rows with it.
class Rows {
 public:
  Rows(std::vector<std::pair<std::string, FieldDescriptorProto::Type>> fields) {
    descriptor_.set_name("Row");
    int number = 1;
    for (const auto& [name, type] : fields) {
      auto* f = descriptor_.add_field();
      f->set_name(name);
      f->set_number(number++);
      f->set_type(type);
      f->set_label(name == "tags" ? FieldDescriptorProto::LABEL_REPEATED
                                  : FieldDescriptorProto::LABEL_OPTIONAL);
    }
    google::protobuf::FileDescriptorProto file;
    file.set_name("rows_test.proto");
    *file.add_message_type() = descriptor_;
    file_ = pool_.BuildFile(file);
  }
  static Rows Standard() {
    return Rows({{"name", FieldDescriptorProto::TYPE_STRING},
                 {"count", FieldDescriptorProto::TYPE_INT64},
                 {"day", FieldDescriptorProto::TYPE_INT32},
                 {"at", FieldDescriptorProto::TYPE_INT64},
                 {"amount", FieldDescriptorProto::TYPE_BYTES},
                 {"when", FieldDescriptorProto::TYPE_INT64},
                 {"doc", FieldDescriptorProto::TYPE_STRING},
                 {"tags", FieldDescriptorProto::TYPE_STRING}});
  }
  // A row setting the given fields (by name; values by the field's type).
  std::string row(const std::map<std::string, std::string>& values) {
    const auto* d = file_->message_type(0);
    std::unique_ptr<google::protobuf::Message> m(factory_.GetPrototype(d)->New());
    const auto* r = m->GetReflection();
    for (const auto& [name, value] : values) {
      const auto* f = d->FindFieldByName(name);
      if (f->is_repeated()) {
        r->AddString(m.get(), f, value);
      } else if (f->type() == google::protobuf::FieldDescriptor::TYPE_INT64) {
        r->SetInt64(m.get(), f, std::stoll(value));
      } else if (f->type() == google::protobuf::FieldDescriptor::TYPE_INT32) {
        r->SetInt32(m.get(), f, std::stoi(value));
      } else {
        r->SetString(m.get(), f, value);
      }
    }
    return m->SerializeAsString();
  }
  std::string named(const std::string& name) { return row({{"name", name}}); }
  const google::protobuf::DescriptorProto& descriptor() const { return descriptor_; }

 private:
  google::protobuf::DescriptorProto descriptor_;
  google::protobuf::DescriptorPool pool_;
  google::protobuf::DynamicMessageFactory factory_{&pool_};
  const google::protobuf::FileDescriptor* file_ = nullptr;
};

// The StorageError a failure carries in its details, if any.
storage::StorageError StorageErrorOf(const google::rpc::Status& status) {
  storage::StorageError e;
  for (const auto& any : status.details()) {
    if (any.UnpackTo(&e)) return e;
  }
  return e;
}
storage::StorageError StorageErrorOf(const grpc::Status& status) {
  google::rpc::Status s;
  s.ParseFromString(status.error_details());
  return StorageErrorOf(s);
}

class BigQueryFakeTest : public ::testing::Test {
 protected:
  // Options on the test's clock.
  FakeOptions options() {
    FakeOptions options;
    options.clock = [this] {
      std::lock_guard lock(clock_mu_);
      return now_;
    };
    return options;
  }
  void SetUp() override {
    auto fake = BigQueryFake::Start(options());
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = std::move(*fake);
    ASSERT_TRUE(fake_->add_dataset("p", "d").ok());
    ASSERT_TRUE(fake_->add_table("p", "d", TableResource()).ok());
    stub_ = storage::BigQueryWrite::NewStub(
        grpc::CreateChannel(fake_->grpc_endpoint(), grpc::InsecureChannelCredentials()));
    http_ = std::make_unique<httplib::Client>(fake_->rest_endpoint());
    http_->set_read_timeout(10, 0);
  }
  void advance(absl::Duration d) {
    std::lock_guard lock(clock_mu_);
    now_ += d;
  }

  std::string create_stream(storage::WriteStream::Type type, const std::string& table = kTable) {
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + 10s);
    storage::CreateWriteStreamRequest r;
    r.set_parent(table);
    r.mutable_write_stream()->set_type(type);
    storage::WriteStream out;
    grpc::Status s = stub_->CreateWriteStream(&c, r, &out);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return out.name();
  }

  // An AppendRows connection: send requests one by one, read each answer.
  class Connection {
   public:
    Connection(storage::BigQueryWrite::Stub& stub, std::string stream, Rows& rows)
        : stream_(std::move(stream)), rows_(rows) {
      context_.set_deadline(std::chrono::system_clock::now() + 30s);
      rw_ = stub.AppendRows(&context_);
    }
    ~Connection() {
      if (finished_) return;
      rw_->WritesDone();
      (void)rw_->Finish();
    }
    // Appends `rows`, at `offset` if given; the response, or nullopt when the connection ended
    // (then `ended` holds its status).
    std::optional<storage::AppendRowsResponse> append(std::vector<std::string> rows,
                                                      std::optional<std::int64_t> offset = {}) {
      storage::AppendRowsRequest r;
      if (first_) {
        r.set_write_stream(stream_);
        *r.mutable_proto_rows()->mutable_writer_schema()->mutable_proto_descriptor() =
            rows_.descriptor();
        first_ = false;
      }
      if (offset) r.mutable_offset()->set_value(*offset);
      for (auto& row : rows) r.mutable_proto_rows()->mutable_rows()->add_serialized_rows(row);
      storage::AppendRowsResponse response;
      if (!rw_->Write(r) || !rw_->Read(&response)) {
        rw_->WritesDone();
        ended = rw_->Finish();
        finished_ = true;
        return std::nullopt;
      }
      return response;
    }
    grpc::Status ended;

   private:
    grpc::ClientContext context_;
    std::string stream_;
    Rows& rows_;
    bool first_ = true;
    bool finished_ = false;
    std::unique_ptr<
        grpc::ClientReaderWriter<storage::AppendRowsRequest, storage::AppendRowsResponse>>
        rw_;
  };

  grpc::Status flush(const std::string& stream, std::int64_t offset,
                     storage::FlushRowsResponse* out = nullptr) {
    grpc::ClientContext c;
    storage::FlushRowsRequest r;
    r.set_write_stream(stream);
    r.mutable_offset()->set_value(offset);
    storage::FlushRowsResponse ignored;
    return stub_->FlushRows(&c, r, out ? out : &ignored);
  }

  std::vector<std::string> visible_names(const std::string& table = kTable) {
    auto rows = fake_->rows(table);
    EXPECT_TRUE(rows.ok()) << rows.status();
    std::vector<std::string> names;
    if (rows.ok()) {
      for (const auto& r : *rows) names.push_back(r["name"].get<std::string>());
    }
    return names;
  }

  std::mutex clock_mu_;
  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
  std::unique_ptr<BigQueryFake> fake_;
  std::unique_ptr<storage::BigQueryWrite::Stub> stub_;
  std::unique_ptr<httplib::Client> http_;
  Rows rows_ = Rows::Standard();
};

// "Use the Storage Write API", default stream: rows are available as soon as the append
// succeeds; AppendResult reference: the offset is not set on the default stream; offsets are
// for application-created streams only.
TEST_F(BigQueryFakeTest, TheDefaultStreamShowsRowsAtOnceAndRefusesOffsets) {
  Connection c(*stub_, std::string(kTable) + "/streams/_default", rows_);
  auto r = c.append({rows_.named("a"), rows_.named("b")});
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->has_error()) << r->error().message();
  EXPECT_FALSE(r->append_result().has_offset());
  EXPECT_EQ(visible_names(), (std::vector<std::string>{"a", "b"}));
  auto refused = c.append({rows_.named("c")}, 2);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(visible_names().size(), 2u);
}

// AppendRowsResponse.error: ALREADY_EXISTS when the offset was already written (retries),
// OUT_OF_RANGE when it is beyond the end; StorageError OFFSET_ALREADY_EXISTS /
// OFFSET_OUT_OF_RANGE; the connection stays usable.
TEST_F(BigQueryFakeTest, ExplicitOffsetsAppendOnlyAtTheEnd) {
  const auto stream = create_stream(storage::WriteStream::COMMITTED);
  Connection c(*stub_, stream, rows_);
  auto first = c.append({rows_.named("a"), rows_.named("b")}, 0);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->append_result().offset().value(), 0);
  auto again = c.append({rows_.named("a")}, 1);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->error().code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(StorageErrorOf(again->error()).code(), storage::StorageError::OFFSET_ALREADY_EXISTS);
  auto beyond = c.append({rows_.named("z")}, 5);
  ASSERT_TRUE(beyond.has_value());
  EXPECT_EQ(beyond->error().code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_EQ(StorageErrorOf(beyond->error()).code(), storage::StorageError::OFFSET_OUT_OF_RANGE);
  auto next = c.append({rows_.named("c")}, 2);
  ASSERT_TRUE(next.has_value());
  EXPECT_FALSE(next->has_error());
  EXPECT_EQ(next->append_result().offset().value(), 2);
  // COMMITTED type: visible as soon as appended.
  EXPECT_EQ(visible_names(), (std::vector<std::string>{"a", "b", "c"}));
}

// "Use the Storage Write API", buffered type and FlushRows reference: appended rows stay
// invisible until flushed; a flush makes rows up to and including its offset visible; flushing
// an offset already flushed succeeds and adds nothing; an offset beyond the appended end fails.
TEST_F(BigQueryFakeTest, BufferedRowsBecomeVisibleThroughFlushRows) {
  const auto stream = create_stream(storage::WriteStream::BUFFERED);
  Connection c(*stub_, stream, rows_);
  ASSERT_TRUE(c.append({rows_.named("a"), rows_.named("b"), rows_.named("c")}, 0).has_value());
  EXPECT_TRUE(visible_names().empty());
  storage::FlushRowsResponse flushed;
  ASSERT_TRUE(flush(stream, 1, &flushed).ok());
  EXPECT_EQ(flushed.offset(), 1);
  EXPECT_EQ(visible_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(flush(stream, 1).ok());
  EXPECT_TRUE(flush(stream, 0).ok());
  EXPECT_EQ(visible_names().size(), 2u);
  grpc::Status beyond = flush(stream, 3);
  EXPECT_EQ(beyond.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_EQ(StorageErrorOf(beyond).code(), storage::StorageError::OFFSET_OUT_OF_RANGE);
  ASSERT_TRUE(flush(stream, 2).ok());
  EXPECT_EQ(visible_names(), (std::vector<std::string>{"a", "b", "c"}));
}

// FinalizeWriteStream reference: a finalized stream accepts no more appends (STREAM_FINALIZED);
// ../shared/spec/bigquery.md: FlushRows on a finalized buffered stream is refused (measured).
TEST_F(BigQueryFakeTest, AFinalizedStreamRefusesAppendsAndFlushes) {
  const auto stream = create_stream(storage::WriteStream::BUFFERED);
  {
    Connection c(*stub_, stream, rows_);
    ASSERT_TRUE(c.append({rows_.named("a")}, 0).has_value());
  }
  grpc::ClientContext fc;
  storage::FinalizeWriteStreamRequest fr;
  fr.set_name(stream);
  storage::FinalizeWriteStreamResponse fout;
  ASSERT_TRUE(stub_->FinalizeWriteStream(&fc, fr, &fout).ok());
  EXPECT_EQ(fout.row_count(), 1);
  Connection c(*stub_, stream, rows_);
  auto refused = c.append({rows_.named("b")}, 1);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(StorageErrorOf(refused->error()).code(), storage::StorageError::STREAM_FINALIZED);
  grpc::Status f = flush(stream, 0);
  EXPECT_EQ(StorageErrorOf(f).code(), storage::StorageError::STREAM_FINALIZED);
  EXPECT_TRUE(visible_names().empty());
}

// Pending type and BatchCommitWriteStreams reference: rows appear only when the finalized
// streams are committed, atomically; an unfinalized stream is reported in stream_errors and
// nothing is committed (commit_time unset).
TEST_F(BigQueryFakeTest, PendingStreamsCommitAtomicallyOnceFinalized) {
  const auto a = create_stream(storage::WriteStream::PENDING);
  const auto b = create_stream(storage::WriteStream::PENDING);
  {
    Connection ca(*stub_, a, rows_);
    ASSERT_TRUE(ca.append({rows_.named("a")}, 0).has_value());
    Connection cb(*stub_, b, rows_);
    ASSERT_TRUE(cb.append({rows_.named("b")}, 0).has_value());
  }
  auto commit = [&](storage::BatchCommitWriteStreamsResponse* out) {
    grpc::ClientContext c;
    storage::BatchCommitWriteStreamsRequest r;
    r.set_parent(kTable);
    r.add_write_streams(a);
    r.add_write_streams(b);
    return stub_->BatchCommitWriteStreams(&c, r, out);
  };
  auto finalize = [&](const std::string& s) {
    grpc::ClientContext c;
    storage::FinalizeWriteStreamRequest r;
    r.set_name(s);
    storage::FinalizeWriteStreamResponse out;
    return stub_->FinalizeWriteStream(&c, r, &out);
  };
  ASSERT_TRUE(finalize(a).ok());
  storage::BatchCommitWriteStreamsResponse refused;
  ASSERT_TRUE(commit(&refused).ok());
  EXPECT_FALSE(refused.has_commit_time());
  ASSERT_EQ(refused.stream_errors_size(), 1);
  EXPECT_EQ(refused.stream_errors(0).entity(), b);
  EXPECT_EQ(refused.stream_errors(0).code(), storage::StorageError::INVALID_STREAM_STATE);
  EXPECT_TRUE(visible_names().empty());
  ASSERT_TRUE(finalize(b).ok());
  storage::BatchCommitWriteStreamsResponse done;
  ASSERT_TRUE(commit(&done).ok());
  EXPECT_TRUE(done.has_commit_time());
  EXPECT_EQ(visible_names(), (std::vector<std::string>{"a", "b"}));
  storage::BatchCommitWriteStreamsResponse twice;
  ASSERT_TRUE(commit(&twice).ok());
  EXPECT_EQ(twice.stream_errors(0).code(), storage::StorageError::STREAM_ALREADY_COMMITTED);
}

// AppendRowsResponse.row_errors: the indexes of the rows refused (RowError FIELDS_ERROR) with
// INVALID_ARGUMENT; the request is refused whole. REQUIRED columns must be set; a JSON column
// takes JSON text ("Supported protocol buffer data types").
TEST_F(BigQueryFakeTest, RowErrorsNameTheRefusedRowsAndNothingLands) {
  const auto stream = create_stream(storage::WriteStream::BUFFERED);
  Connection c(*stub_, stream, rows_);
  auto r = c.append({rows_.named("ok"), rows_.row({{"count", "1"}}),
                     rows_.row({{"name", "x"}, {"doc", "{not json"}})},
                    0);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_EQ(r->row_errors_size(), 2);
  EXPECT_EQ(r->row_errors(0).index(), 1);
  EXPECT_EQ(r->row_errors(0).code(), storage::RowError::FIELDS_ERROR);
  EXPECT_THAT(r->row_errors(0).message(), HasSubstr("name"));
  EXPECT_EQ(r->row_errors(1).index(), 2);
  // Nothing was appended: the same offset takes the corrected batch.
  auto again = c.append({rows_.named("ok")}, 0);
  ASSERT_TRUE(again.has_value());
  EXPECT_FALSE(again->has_error()) << again->error().message();
}

// StorageError SCHEMA_MISMATCH_EXTRA_FIELDS: the writer schema has a field the table lacks.
TEST_F(BigQueryFakeTest, AWriterFieldTheTableLacksIsRefused) {
  Rows extra({{"name", FieldDescriptorProto::TYPE_STRING},
              {"surprise", FieldDescriptorProto::TYPE_STRING}});
  Connection c(*stub_, std::string(kTable) + "/streams/_default", extra);
  auto r = c.append({extra.named("a")});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(StorageErrorOf(r->error()).code(), storage::StorageError::SCHEMA_MISMATCH_EXTRA_FIELDS);
  EXPECT_THAT(r->error().message(), HasSubstr("surprise"));
}

// Storage Write API quotas: an AppendRows request is at most 10 MB.
TEST_F(BigQueryFakeTest, ARequestOverTenMegabytesIsRefused) {
  Connection c(*stub_, std::string(kTable) + "/streams/_default", rows_);
  auto r = c.append({rows_.named(std::string(10 * 1000 * 1000 + 1, 'x'))});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(r->error().message(), HasSubstr("too large"));
  EXPECT_TRUE(visible_names().empty());
}

// AppendRowsResponse.updated_schema: set when the table's schema changed after the connection
// started; GetWriteStream with the FULL view carries the table schema (WriteStreamView).
TEST_F(BigQueryFakeTest, ASchemaChangeIsAnnouncedOnTheNextAppendAndInGetWriteStream) {
  const auto stream = create_stream(storage::WriteStream::BUFFERED);
  Connection c(*stub_, stream, rows_);
  auto first = c.append({rows_.named("a")}, 0);
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(first->has_updated_schema());
  auto resource = TableResource();
  resource["schema"]["fields"].push_back({{"name", "added"}, {"type", "STRING"}});
  ASSERT_TRUE(fake_->patch_table("p", "d", "t", {{"schema", resource["schema"]}}).ok());
  auto second = c.append({rows_.named("b")}, 1);
  ASSERT_TRUE(second.has_value());
  ASSERT_TRUE(second->has_updated_schema());
  EXPECT_EQ(second->updated_schema().fields_size(), 9);
  EXPECT_EQ(second->updated_schema().fields(8).name(), "added");
  auto third = c.append({rows_.named("c")}, 2);
  ASSERT_TRUE(third.has_value());
  EXPECT_FALSE(third->has_updated_schema());

  grpc::ClientContext gc;
  storage::GetWriteStreamRequest g;
  g.set_name(stream);
  g.set_view(storage::WriteStreamView::FULL);
  storage::WriteStream ws;
  ASSERT_TRUE(stub_->GetWriteStream(&gc, g, &ws).ok());
  EXPECT_EQ(ws.type(), storage::WriteStream::BUFFERED);
  EXPECT_EQ(ws.table_schema().fields_size(), 9);
  EXPECT_EQ(ws.table_schema().fields(0).mode(), storage::TableFieldSchema::REQUIRED);
}

// ../shared/spec/bigquery.md, "A missing table does not say NOT_FOUND" (measured against the
// service): a missing table answers PERMISSION_DENIED to the default stream and to
// CreateWriteStream, and so does a table still propagating after its creation.
TEST_F(BigQueryFakeTest, AMissingOrPropagatingTableAnswersTheMaskedPermissionDenied) {
  {
    Connection c(*stub_, "projects/p/datasets/d/tables/missing/streams/_default", rows_);
    auto r = c.append({rows_.named("a")});
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->error().code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_THAT(r->error().message(), HasSubstr("or it may not exist"));
  }
  FakeOptions slow = options();
  slow.table_propagation = absl::Seconds(5);
  fake_->set_options(slow);
  ASSERT_TRUE(fake_->add_table("p", "d", TableResource("fresh")).ok());
  grpc::ClientContext c;
  storage::CreateWriteStreamRequest r;
  r.set_parent("projects/p/datasets/d/tables/fresh");
  r.mutable_write_stream()->set_type(storage::WriteStream::BUFFERED);
  storage::WriteStream out;
  EXPECT_EQ(stub_->CreateWriteStream(&c, r, &out).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  advance(absl::Seconds(6));
  EXPECT_FALSE(
      create_stream(storage::WriteStream::BUFFERED, "projects/p/datasets/d/tables/fresh").empty());
}

// AppendRowsRequest.ProtoData reference: writer_schema needs to be sent only on the first
// request of a connection. That the connection keeps it when the service refused that request
// (here: the table did not exist yet) is the fake's choice, as the reference does not say; the
// library's appender sends it again after a refusal either way.
TEST_F(BigQueryFakeTest, AConnectionKeepsTheWriterSchemaOfARefusedFirstRequest) {
  Connection c(*stub_, "projects/p/datasets/d/tables/later/streams/_default", rows_);
  auto refused = c.append({rows_.named("a")});
  ASSERT_TRUE(refused.has_value()) << c.ended.error_message();
  EXPECT_EQ(refused->error().code(), grpc::StatusCode::PERMISSION_DENIED);
  ASSERT_TRUE(fake_->add_table("p", "d", TableResource("later")).ok());
  auto accepted = c.append({rows_.named("b")});  // no writer schema on this one
  ASSERT_TRUE(accepted.has_value()) << c.ended.error_message();
  EXPECT_FALSE(accepted->has_error()) << accepted->error().message();
  EXPECT_EQ(visible_names("projects/p/datasets/d/tables/later"), std::vector<std::string>{"b"});
}

// "Use the Storage Write API": application-created streams expire when unused (the buffered
// TTL is 7 days without traffic); the fake answers NOT_FOUND with STREAM_NOT_FOUND after it.
TEST_F(BigQueryFakeTest, AnUnusedStreamExpiresOnTheFakesClock) {
  const auto stream = create_stream(storage::WriteStream::BUFFERED);
  {
    Connection c(*stub_, stream, rows_);
    ASSERT_TRUE(c.append({rows_.named("a")}, 0).has_value());
  }
  advance(absl::Hours(24 * 7) - absl::Seconds(1));
  ASSERT_TRUE(flush(stream, 0).ok());  // traffic: the TTL restarts
  advance(absl::Hours(24 * 7));
  grpc::Status gone = flush(stream, 0);
  EXPECT_EQ(gone.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(StorageErrorOf(gone).code(), storage::StorageError::STREAM_NOT_FOUND);
}

// The fake's faults: UNAVAILABLE on the Nth append (not applied), a lost response (applied, so
// the retry at the same offset answers ALREADY_EXISTS).
TEST_F(BigQueryFakeTest, InjectedFaultsEndTheConnectionWithOrWithoutApplying) {
  FakeOptions faulty = options();
  faulty.unavailable_on_append = 1;
  faulty.lose_response_on_append = 2;
  fake_->set_options(faulty);
  const auto stream = create_stream(storage::WriteStream::COMMITTED);
  {
    Connection c(*stub_, stream, rows_);
    EXPECT_FALSE(c.append({rows_.named("a")}, 0).has_value());
    EXPECT_EQ(c.ended.error_code(), grpc::StatusCode::UNAVAILABLE);
  }
  EXPECT_TRUE(visible_names().empty());
  {
    Connection c(*stub_, stream, rows_);
    EXPECT_FALSE(c.append({rows_.named("a")}, 0).has_value());
    EXPECT_EQ(c.ended.error_code(), grpc::StatusCode::UNAVAILABLE);
  }
  EXPECT_EQ(visible_names(), (std::vector<std::string>{"a"}));
  Connection c(*stub_, stream, rows_);
  auto retry = c.append({rows_.named("a")}, 0);
  ASSERT_TRUE(retry.has_value());
  EXPECT_EQ(StorageErrorOf(retry->error()).code(), storage::StorageError::OFFSET_ALREADY_EXISTS);
}

// Quotas and limits, "Storage Write API": a request over the AppendRows throughput quota is
// refused with RESOURCE_EXHAUSTED; the fake refuses a configured run of them, none applied.
TEST_F(BigQueryFakeTest, AQuotaRunRefusesAppendsWithResourceExhaustedAndAppliesNone) {
  FakeOptions quota = options();
  quota.resource_exhausted_from = 1;
  quota.resource_exhausted_count = 2;
  fake_->set_options(quota);
  const auto stream = create_stream(storage::WriteStream::COMMITTED);
  for (int i = 0; i < 2; ++i) {
    Connection c(*stub_, stream, rows_);
    EXPECT_FALSE(c.append({rows_.named("a")}, 0).has_value());
    EXPECT_EQ(c.ended.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  EXPECT_TRUE(visible_names().empty());
  Connection c(*stub_, stream, rows_);
  auto third = c.append({rows_.named("a")}, 0);
  ASSERT_TRUE(third.has_value());
  EXPECT_FALSE(third->has_error());
  EXPECT_EQ(visible_names(), (std::vector<std::string>{"a"}));
}

// "Supported protocol buffer data types": DATE as int32 days since the epoch, TIMESTAMP as int64
// microseconds, NUMERIC as the little-endian two's-complement bytes of value x 10^9, DATETIME as
// the packed civil-time int64, REPEATED as a repeated field.
TEST_F(BigQueryFakeTest, DocumentedWireEncodingsDecodeToTheirValues) {
  // 123.5 x 10^9 = 123500000000 = 0x1CC12C7300, little-endian.
  const std::string numeric("\x00\x73\x2C\xC1\x1C", 5);
  // -1.5 x 10^9 = -1500000000: two's complement of 0x59682F00.
  const std::string negative("\x00\xD1\x97\xA6", 4);
  // 2024-02-29T13:45:30.000123: year<<46 | month<<42 | day<<37 | hour<<32 | min<<26 | sec<<20
  // | micros.
  const std::int64_t packed = (2024LL << 46) | (2LL << 42) | (29LL << 37) | (13LL << 32) |
                              (45LL << 26) | (30LL << 20) | 123;
  Connection c(*stub_, std::string(kTable) + "/streams/_default", rows_);
  auto r = c.append({rows_.row({{"name", "a"},
                                {"day", "19782"},
                                {"at", "1700000000123456"},
                                {"amount", numeric},
                                {"when", std::to_string(packed)},
                                {"tags", "x"}}),
                     rows_.row({{"name", "b"}, {"amount", negative}, {"doc", "{\"k\": [1]}"}})});
  ASSERT_TRUE(r.has_value());
  ASSERT_FALSE(r->has_error()) << r->error().message();
  auto rows = fake_->rows(kTable);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  const auto& a = (*rows)[0];
  EXPECT_EQ(a["day"], "2024-02-29");
  EXPECT_EQ(a["at"], "1700000000123456");
  EXPECT_EQ(a["amount"], "123.5");
  EXPECT_EQ(a["when"], "2024-02-29T13:45:30.000123");
  EXPECT_EQ(a["tags"], nlohmann::json::array({"x"}));
  EXPECT_TRUE(a["count"].is_null());
  EXPECT_EQ((*rows)[1]["amount"], "-1.5");
  EXPECT_EQ((*rows)[1]["doc"], "{\"k\": [1]}");
  EXPECT_EQ((*rows)[1]["tags"], nlohmann::json::array());
}

// REST v2: tables.insert answers 409 for an existing table (the "duplicate" reason) and 404 in a
// missing dataset; tables.get 404 for a missing table; tabledata.list pages with maxResults and
// pageToken and shows rows as {"f": [{"v": ...}]}.
TEST_F(BigQueryFakeTest, RestTablesAndTabledataFollowTheV2Reference) {
  auto dup = http_->Post("/bigquery/v2/projects/p/datasets/d/tables", TableResource().dump(),
                         "application/json");
  ASSERT_TRUE(dup);
  EXPECT_EQ(dup->status, 409);
  EXPECT_EQ(nlohmann::json::parse(dup->body)["error"]["errors"][0]["reason"], "duplicate");
  auto no_dataset = http_->Post("/bigquery/v2/projects/p/datasets/nope/tables",
                                TableResource("x").dump(), "application/json");
  ASSERT_TRUE(no_dataset);
  EXPECT_EQ(no_dataset->status, 404);
  auto missing = http_->Get("/bigquery/v2/projects/p/datasets/d/tables/missing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);

  Connection c(*stub_, std::string(kTable) + "/streams/_default", rows_);
  ASSERT_TRUE(
      c.append({rows_.named("a"), rows_.row({{"name", "b"}, {"count", "7"}}), rows_.named("c")})
          .has_value());
  auto page = http_->Get("/bigquery/v2/projects/p/datasets/d/tables/t/data?maxResults=2");
  ASSERT_TRUE(page);
  ASSERT_EQ(page->status, 200) << page->body;
  auto body = nlohmann::json::parse(page->body);
  EXPECT_EQ(body["totalRows"], "3");
  ASSERT_EQ(body["rows"].size(), 2u);
  EXPECT_EQ(body["rows"][1]["f"][0]["v"], "b");
  EXPECT_EQ(body["rows"][1]["f"][1]["v"], "7");
  EXPECT_TRUE(body["rows"][0]["f"][1]["v"].is_null());
  auto rest =
      http_->Get("/bigquery/v2/projects/p/datasets/d/tables/t/data?maxResults=2&pageToken=" +
                 body["pageToken"].get<std::string>());
  ASSERT_TRUE(rest);
  auto last = nlohmann::json::parse(rest->body);
  ASSERT_EQ(last["rows"].size(), 1u);
  EXPECT_EQ(last["rows"][0]["f"][0]["v"], "c");
  EXPECT_FALSE(last.contains("pageToken"));
  // A page stops near 10 MB of rows whatever maxResults says (the reference's response-size
  // bound), and the token continues after it.
  const std::string wide(100 * 1000, 'w');
  for (int batch = 0; batch < 12; ++batch) {
    std::vector<std::string> rows;
    for (int i = 0; i < 10; ++i) rows.push_back(rows_.named(wide));
    ASSERT_TRUE(c.append(rows).has_value());
  }
  auto capped = http_->Get("/bigquery/v2/projects/p/datasets/d/tables/t/data?maxResults=1000");
  ASSERT_TRUE(capped);
  auto capped_body = nlohmann::json::parse(capped->body);
  EXPECT_LT(capped_body["rows"].size(), 123u);
  EXPECT_GE(capped_body["rows"].size(), 100u);
  EXPECT_EQ(capped_body["pageToken"], std::to_string(capped_body["rows"].size()));
  // Past the end, whatever the numbers: no rows and no token (no arithmetic overflow).
  auto far = http_->Get(
      "/bigquery/v2/projects/p/datasets/d/tables/t/data?startIndex=9223372036854775807"
      "&maxResults=9223372036854775807");
  ASSERT_TRUE(far);
  auto none = nlohmann::json::parse(far->body);
  EXPECT_TRUE(none["rows"].empty());
  EXPECT_FALSE(none.contains("pageToken"));
  // A field of the wrong JSON type is the caller's mistake (400), never a server error.
  auto typed = http_->Post("/bigquery/v2/projects/p/datasets/d/tables",
                           R"({"tableReference": {"tableId": 5}, "schema": {"fields": 7}})",
                           "application/json");
  ASSERT_TRUE(typed);
  EXPECT_EQ(typed->status, 400);
}

// "Modifying table schemas": columns can be added (NULLABLE or REPEATED, also inside RECORDs) and
// REQUIRED relaxed to NULLABLE; dropping, re-typing or adding a REQUIRED column is refused.
// tables.patch with If-Match: a stale etag answers 412.
TEST_F(BigQueryFakeTest, TablePatchAllowsOnlyWideningAndHonoursTheEtag) {
  auto get = http_->Get("/bigquery/v2/projects/p/datasets/d/tables/t");
  ASSERT_TRUE(get);
  auto table = nlohmann::json::parse(get->body);
  const std::string etag = table["etag"];
  auto patch = [&](const nlohmann::json& fields, const std::string& if_match = "") {
    httplib::Headers h;
    if (!if_match.empty()) h.emplace("If-Match", if_match);
    return http_->Patch("/bigquery/v2/projects/p/datasets/d/tables/t", h,
                        nlohmann::json{{"schema", {{"fields", fields}}}}.dump(),
                        "application/json");
  };
  auto fields = table["schema"]["fields"];
  auto dropped = fields;
  dropped.erase(dropped.begin() + 1);
  EXPECT_EQ(patch(dropped)->status, 400);
  auto retyped = fields;
  retyped[1]["type"] = "STRING";
  EXPECT_EQ(patch(retyped)->status, 400);
  auto required = fields;
  required.push_back({{"name", "must"}, {"type", "STRING"}, {"mode", "REQUIRED"}});
  EXPECT_EQ(patch(required)->status, 400);
  auto widened = fields;
  widened[0]["mode"] = "NULLABLE";
  widened.push_back({{"name", "more"}, {"type", "STRING"}});
  auto ok = patch(widened, etag);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  auto stale = patch(widened, etag);
  EXPECT_EQ(stale->status, 412);
}

// "Stream table updates with change data capture" (BigQuery docs): the _CHANGE_TYPE
// pseudocolumn takes UPSERT or DELETE, works on the default stream of a table with a declared
// primary key (at most 16 columns), and _CHANGE_SEQUENCE_NUMBER is 1-4 '/'-separated sections
// of up to 16 hex digits, the larger winning for one key.
class BigQueryFakeCdcTest : public BigQueryFakeTest {
 protected:
  void SetUp() override {
    BigQueryFakeTest::SetUp();
    nlohmann::json keyed = TableResource("k");
    keyed["tableConstraints"] = {{"primaryKey", {{"columns", {"name"}}}}};
    ASSERT_TRUE(fake_->add_table("p", "d", keyed).ok());
  }
  const std::string keyed_ = "projects/p/datasets/d/tables/k";
  Rows cdc_ = Rows({{"name", FieldDescriptorProto::TYPE_STRING},
                    {"count", FieldDescriptorProto::TYPE_INT64},
                    {"_CHANGE_TYPE", FieldDescriptorProto::TYPE_STRING},
                    {"_CHANGE_SEQUENCE_NUMBER", FieldDescriptorProto::TYPE_STRING}});
  std::string change(const std::string& name, const std::string& count, const std::string& type,
                     const std::string& sequence = "") {
    std::map<std::string, std::string> v = {
        {"name", name}, {"count", count}, {"_CHANGE_TYPE", type}};
    if (!sequence.empty()) v["_CHANGE_SEQUENCE_NUMBER"] = sequence;
    return cdc_.row(v);
  }
};

TEST_F(BigQueryFakeCdcTest, ChangesApplyByKeyInSequenceOrderAndThePseudocolumnsStayOut) {
  Connection c(*stub_, keyed_ + "/streams/_default", cdc_);
  ASSERT_TRUE(
      c.append({change("a", "1", "UPSERT", "2"), change("b", "1", "UPSERT")})->has_append_result());
  ASSERT_TRUE(c.append({change("a", "9", "UPSERT", "1"), change("b", "2", "UPSERT"),
                        change("c", "1", "UPSERT"), change("c", "0", "DELETE")})
                  ->has_append_result());
  auto rows = fake_->rows(keyed_);
  ASSERT_TRUE(rows.ok());
  std::map<std::string, std::string> got;
  for (const auto& r : *rows) {
    EXPECT_FALSE(r.contains("_CHANGE_TYPE")) << r.dump();
    got[r["name"].get<std::string>()] = r["count"].get<std::string>();
  }
  EXPECT_EQ(got, (std::map<std::string, std::string>{{"a", "1"}, {"b", "2"}}));
}

TEST_F(BigQueryFakeCdcTest, AnotherChangeTypeOrABadSequenceIsARowError) {
  Connection c(*stub_, keyed_ + "/streams/_default", cdc_);
  auto r = c.append({change("a", "1", "UPSERT"), change("b", "1", "INSERT"),
                     change("c", "1", "UPSERT", "1/2/3/4/5"), change("d", "1", "DELETE", "g")});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_EQ(r->row_errors_size(), 3);
  EXPECT_EQ(r->row_errors(0).index(), 1);
  EXPECT_THAT(r->row_errors(0).message(), HasSubstr("UPSERT or DELETE"));
  EXPECT_EQ(r->row_errors(1).index(), 2);
  EXPECT_EQ(r->row_errors(2).index(), 3);
  EXPECT_TRUE(fake_->rows(keyed_)->empty()) << "a refused request lands nothing";
}

TEST_F(BigQueryFakeCdcTest, CdcNeedsAPrimaryKeyAndTheDefaultStream) {
  {
    Connection c(*stub_, std::string(kTable) + "/streams/_default", cdc_);
    auto r = c.append({change("a", "1", "UPSERT")});
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->error().code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(r->error().message(), HasSubstr("primary key"));
  }
  {
    Connection c(*stub_, create_stream(storage::WriteStream::COMMITTED, keyed_), cdc_);
    auto r = c.append({change("a", "1", "UPSERT")}, 0);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->error().code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(r->error().message(), HasSubstr("default stream"));
  }
  EXPECT_TRUE(visible_names().empty());
  EXPECT_TRUE(fake_->rows(keyed_)->empty());
}

TEST_F(BigQueryFakeCdcTest, ARowErrorQuotesABadSequenceEscapedAndShort) {
  Connection c(*stub_, keyed_ + "/streams/_default", cdc_);
  auto r = c.append({change("a", "1", "UPSERT", "\xff\xfe" + std::string(100000, 'g'))});
  ASSERT_TRUE(r.has_value()) << "the answer must parse (valid UTF-8): " << c.ended.error_message();
  ASSERT_EQ(r->row_errors_size(), 1);
  EXPECT_THAT(r->row_errors(0).message(), HasSubstr("\\377\\376ggg"));
  EXPECT_LT(r->row_errors(0).message().size(), 300u);
}

TEST_F(BigQueryFakeCdcTest, APseudocolumnTwiceInAnyCaseIsAnInvalidWriterSchema) {
  Rows twice({{"name", FieldDescriptorProto::TYPE_STRING},
              {"_CHANGE_TYPE", FieldDescriptorProto::TYPE_STRING},
              {"_change_type", FieldDescriptorProto::TYPE_STRING}});
  Connection c(*stub_, keyed_ + "/streams/_default", twice);
  auto r = c.append({twice.row({{"name", "a"}, {"_CHANGE_TYPE", "UPSERT"}})});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(r->error().message(), HasSubstr("twice"));
}

// tables.delete: the table, its rows and its write streams are gone; a table created again
// under the name is new to every connection (its schema is checked afresh).
TEST_F(BigQueryFakeCdcTest, ADroppedTableTakesItsStreamsAndOldSchemaWithIt) {
  const std::string pending = create_stream(storage::WriteStream::PENDING, keyed_);
  {
    Connection c(*stub_, pending, rows_);
    ASSERT_TRUE(c.append({rows_.named("ghost")}, 0)->has_append_result());
  }
  Connection stale(*stub_, keyed_ + "/streams/_default", rows_);
  ASSERT_TRUE(stale.append({rows_.row({{"name", "a"}, {"count", "1"}})})->has_append_result());
  ASSERT_TRUE(fake_->delete_table("p", "d", "k").ok());
  EXPECT_EQ(fake_->delete_table("p", "d", "k").code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(fake_
                  ->add_table("p", "d",
                              {{"tableReference", {{"tableId", "k"}}},
                               {"schema", {{"fields", {{{"name", "name"}, {"type", "STRING"}}}}}}})
                  .ok());
  grpc::ClientContext ctx;
  storage::FinalizeWriteStreamRequest finalize;
  finalize.set_name(pending);
  storage::FinalizeWriteStreamResponse finalized;
  EXPECT_EQ(stub_->FinalizeWriteStream(&ctx, finalize, &finalized).error_code(),
            grpc::StatusCode::NOT_FOUND);
  auto refused = stale.append({rows_.row({{"name", "b"}, {"count", "2"}})});
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->error().code(), grpc::StatusCode::INVALID_ARGUMENT)
      << "the new table has no column count";
  EXPECT_TRUE(fake_->rows(keyed_)->empty());
}

TEST_F(BigQueryFakeCdcTest, ADeclaredPrimaryKeyMustNameAtMostSixteenScalarColumns) {
  nlohmann::json not_object = TableResource("o");
  not_object["tableConstraints"] = 5;
  EXPECT_EQ(fake_->add_table("p", "d", not_object).code(), absl::StatusCode::kInvalidArgument);
  nlohmann::json missing = TableResource("m");
  missing["tableConstraints"] = {{"primaryKey", {{"columns", {"nope"}}}}};
  EXPECT_EQ(fake_->add_table("p", "d", missing).code(), absl::StatusCode::kInvalidArgument);
  nlohmann::json repeated = TableResource("r");
  repeated["tableConstraints"] = {{"primaryKey", {{"columns", {"tags"}}}}};
  EXPECT_EQ(fake_->add_table("p", "d", repeated).code(), absl::StatusCode::kInvalidArgument);
  nlohmann::json many = TableResource("n");
  many["tableConstraints"]["primaryKey"]["columns"] = nlohmann::json::array();
  for (int i = 0; i < 17; ++i) many["tableConstraints"]["primaryKey"]["columns"].push_back("name");
  EXPECT_EQ(fake_->add_table("p", "d", many).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gcpstream::testing
