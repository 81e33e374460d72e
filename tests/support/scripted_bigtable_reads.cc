#include "tests/support/scripted_bigtable_reads.h"

#include <deque>
#include <thread>

namespace gcpstream::testing {

namespace v2 = google::bigtable::v2;

struct ScriptedBigtableReads::State {
  mutable std::mutex mu;
  std::map<std::string, std::vector<Cell>> rows;
  std::vector<std::string> samples;
  std::deque<Failure> failures;
  std::size_t value_chunk_bytes = 0;
  bool reset_every_row = false;
  std::vector<v2::ReadRowsRequest> requests;
  int sample_calls = 0;
};

namespace {

bool InRange(const v2::RowRange& r, const std::string& key) {
  switch (r.start_key_case()) {
    case v2::RowRange::kStartKeyClosed:
      if (key < r.start_key_closed()) return false;
      break;
    case v2::RowRange::kStartKeyOpen:
      if (key <= r.start_key_open()) return false;
      break;
    default:
      break;
  }
  switch (r.end_key_case()) {
    case v2::RowRange::kEndKeyOpen:
      if (key >= r.end_key_open()) return false;
      break;
    case v2::RowRange::kEndKeyClosed:
      if (key > r.end_key_closed()) return false;
      break;
    default:
      break;
  }
  return true;
}

bool Selected(const v2::RowSet& set, const std::string& key) {
  if (set.row_keys_size() == 0 && set.row_ranges_size() == 0) return true;  // the whole table
  for (const auto& k : set.row_keys()) {
    if (k == key) return true;
  }
  for (const auto& r : set.row_ranges()) {
    if (InRange(r, key)) return true;
  }
  return false;
}

// The chunks of one row: the first names the key, a family only when it changes, the qualifier
// of every cell; values cut into pieces; the last chunk commits.
std::vector<v2::ReadRowsResponse::CellChunk> Chunks(
    const std::string& key, const std::vector<ScriptedBigtableReads::Cell>& cells,
    std::size_t piece) {
  std::vector<v2::ReadRowsResponse::CellChunk> out;
  std::string family;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const auto& cell = cells[i];
    const std::string& value = cell.value;
    std::size_t at = 0;
    do {
      v2::ReadRowsResponse::CellChunk c;
      const std::size_t n = piece == 0 ? value.size() : std::min(piece, value.size() - at);
      if (at == 0) {
        if (i == 0) c.set_row_key(key);
        if (i == 0 || cell.family != family) c.mutable_family_name()->set_value(cell.family);
        family = cell.family;
        c.mutable_qualifier()->set_value(cell.qualifier);
        c.set_timestamp_micros(cell.timestamp_micros);
      }
      c.set_value(value.substr(at, n));
      at += n;
      if (at < value.size()) c.set_value_size(static_cast<std::int32_t>(value.size()));
      out.push_back(std::move(c));
    } while (at < value.size());
  }
  out.back().set_commit_row(true);
  return out;
}

class Service final : public v2::Bigtable::Service {
 public:
  explicit Service(std::shared_ptr<ScriptedBigtableReads::State> state)
      : state_(std::move(state)) {}

  grpc::Status ReadRows(grpc::ServerContext* context, const v2::ReadRowsRequest* request,
                        grpc::ServerWriter<v2::ReadRowsResponse>* writer) override {
    std::vector<std::pair<std::string, std::vector<ScriptedBigtableReads::Cell>>> rows;
    std::optional<ScriptedBigtableReads::Failure> failure;
    std::size_t piece = 0;
    bool reset = false;
    {
      std::lock_guard lock(state_->mu);
      state_->requests.push_back(*request);
      for (const auto& [key, cells] : state_->rows) {
        if (Selected(request->rows(), key)) rows.emplace_back(key, cells);
      }
      if (!state_->failures.empty()) {
        failure = state_->failures.front();
        state_->failures.pop_front();
      }
      piece = state_->value_chunk_bytes;
      reset = state_->reset_every_row;
    }
    int sent = 0;
    for (const auto& [key, cells] : rows) {
      if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
      auto chunks = Chunks(key, cells, piece);
      if (failure && sent == failure->after_rows) {
        if (failure->mid_row) {
          v2::ReadRowsResponse part;
          *part.add_chunks() = chunks.front();
          part.mutable_chunks(0)->clear_commit_row();
          writer->Write(part);
        }
        if (failure->stall) {
          while (!context->IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
          return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled while stalled");
        }
        return failure->status;
      }
      v2::ReadRowsResponse response;
      if (reset) {
        *response.add_chunks() = chunks.front();
        response.mutable_chunks(0)->clear_commit_row();
        response.mutable_chunks(0)->clear_value_size();
        response.add_chunks()->set_reset_row(true);
      }
      for (auto& c : chunks) *response.add_chunks() = std::move(c);
      if (!writer->Write(response)) return grpc::Status(grpc::StatusCode::CANCELLED, "gone");
      ++sent;
    }
    if (failure && sent == failure->after_rows) return failure->status;
    return grpc::Status::OK;
  }

  grpc::Status SampleRowKeys(grpc::ServerContext*, const v2::SampleRowKeysRequest*,
                             grpc::ServerWriter<v2::SampleRowKeysResponse>* writer) override {
    std::vector<std::string> keys;
    {
      std::lock_guard lock(state_->mu);
      ++state_->sample_calls;
      keys = state_->samples;
    }
    std::int64_t offset = 0;
    for (const auto& key : keys) {
      v2::SampleRowKeysResponse r;
      r.set_row_key(key);
      r.set_offset_bytes(offset += 1000);
      writer->Write(r);
    }
    return grpc::Status::OK;
  }

 private:
  std::shared_ptr<ScriptedBigtableReads::State> state_;
};

}  // namespace

ScriptedBigtableReads::ScriptedBigtableReads() : state_(std::make_shared<State>()) {
  service_ = std::make_unique<Service>(state_);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  channel_ =
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
}

ScriptedBigtableReads::~ScriptedBigtableReads() {
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
}

void ScriptedBigtableReads::put(const std::string& key, Cell cell) {
  std::lock_guard lock(state_->mu);
  state_->rows[key].push_back(std::move(cell));
}
void ScriptedBigtableReads::set_samples(std::vector<std::string> keys) {
  std::lock_guard lock(state_->mu);
  state_->samples = std::move(keys);
}
void ScriptedBigtableReads::fail_next_streams(std::vector<Failure> failures) {
  std::lock_guard lock(state_->mu);
  state_->failures.assign(failures.begin(), failures.end());
}
void ScriptedBigtableReads::set_value_chunk_bytes(std::size_t bytes) {
  std::lock_guard lock(state_->mu);
  state_->value_chunk_bytes = bytes;
}
void ScriptedBigtableReads::set_reset_every_row(bool reset) {
  std::lock_guard lock(state_->mu);
  state_->reset_every_row = reset;
}
std::vector<v2::ReadRowsRequest> ScriptedBigtableReads::read_requests() const {
  std::lock_guard lock(state_->mu);
  return state_->requests;
}
int ScriptedBigtableReads::sample_calls() const {
  std::lock_guard lock(state_->mu);
  return state_->sample_calls;
}
bigtable::BigtableStubFactory ScriptedBigtableReads::stubs() const {
  return [channel = channel_]() -> absl::StatusOr<std::shared_ptr<v2::Bigtable::StubInterface>> {
    return std::shared_ptr<v2::Bigtable::StubInterface>(v2::Bigtable::NewStub(channel));
  };
}

}  // namespace gcpstream::testing
