#include "gcpstream/bigtable/changestream/change_stream_stream_reader.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "gcpstream/bigtable/changestream/change_stream_assembler.h"
#include "gcpstream/bigtable/client/bigtable_stub.h"
#include "google/protobuf/util/time_util.h"

namespace gcpstream::bigtable {

namespace v2 = google::bigtable::v2;
using google::protobuf::util::TimeUtil;

namespace {

constexpr std::chrono::milliseconds kFirstBackoff{100};
constexpr std::chrono::milliseconds kMaxBackoff{5000};

// What an element holds, roughly: the handover budget's unit.
std::size_t ElementBytes(const ChangeStreamElement& e) {
  std::size_t n = 64;
  if (e.mutation) {
    n += e.mutation->row_key().size();
    for (const auto& entry : e.mutation->entries()) {
      n += 32 + FamilyOf(entry).size();
      if (const std::string* q = QualifierOf(entry)) n += q->size();
      if (const auto* set = std::get_if<SetCellEntry>(&entry)) n += set->value.size();
    }
  }
  for (const auto& t : e.tokens) n += t.token.size() + t.range.start.size() + t.range.end.size();
  return n;
}

bool Transient(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kInternal:
      return true;
    default:
      return false;
  }
}

absl::Time FromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

google::protobuf::Timestamp ToProto(absl::Time t) {
  return TimeUtil::MicrosecondsToTimestamp(absl::ToUnixMicros(t));
}

PartitionToken TokenFromProto(const v2::StreamContinuationToken& t) {
  return PartitionToken{PartitionFromProto(t.partition()), t.token()};
}

}  // namespace

v2::StreamPartition PartitionToProto(const RowKeyRange& range) {
  v2::StreamPartition p;
  p.mutable_row_range();  // an unbounded range is still a range
  if (!range.start.empty()) p.mutable_row_range()->set_start_key_closed(range.start);
  if (!range.end.empty()) p.mutable_row_range()->set_end_key_open(range.end);
  return p;
}

RowKeyRange PartitionFromProto(const v2::StreamPartition& partition) {
  const auto& r = partition.row_range();
  return RowKeyRange{r.start_key_closed(), r.end_key_open()};
}

v2::ReadChangeStreamRequest BuildReadChangeStreamRequest(const ChangeStreamRequestBase& base,
                                                         const BigtableChangeStreamSplit& split) {
  v2::ReadChangeStreamRequest request;
  request.set_table_name(base.table_name);
  request.set_app_profile_id(base.app_profile_id);
  *request.mutable_partition() = PartitionToProto(split.partition);
  if (split.tokens.empty()) {
    *request.mutable_start_time() = ToProto(split.start_time);
  } else {
    for (const auto& t : split.tokens) {
      auto* token = request.mutable_continuation_tokens()->add_tokens();
      *token->mutable_partition() = PartitionToProto(t.range);
      token->set_token(t.token);
    }
  }
  if (base.end_time) *request.mutable_end_time() = ToProto(*base.end_time);
  *request.mutable_heartbeat_duration() = TimeUtil::MillisecondsToDuration(base.heartbeat.count());
  return request;
}

ChangeStreamStreamReader::ChangeStreamStreamReader(BigtableStubFactory stubs,
                                                   ChangeStreamRequestBase request,
                                                   Counter& reads_started,
                                                   std::shared_ptr<Liveness> liveness)
    : stubs_(std::move(stubs)),
      request_(std::move(request)),
      reads_started_(reads_started),
      liveness_(std::move(liveness)) {}

ChangeStreamStreamReader::~ChangeStreamStreamReader() { stop_all(); }

absl::Status ChangeStreamStreamReader::handle_splits_addition(
    SplitsAddition<BigtableChangeStreamSplit> addition) {
  if (!stub_) {
    auto stub = stubs_();
    if (!stub.ok()) return stub.status();
    stub_ = *std::move(stub);
  }
  for (auto& split : addition.splits) {
    const std::string id = split.id;
    if (streams_.count(id) > 0) continue;
    auto s = std::make_unique<Stream>();
    s->split = std::move(split);
    {
      std::lock_guard lock(mu_);
      last_message_[id] = std::chrono::steady_clock::now();
    }
    Stream* raw = s.get();
    streams_.emplace(id, std::move(s));
    raw->thread = std::thread([this, raw] { run(*raw); });
  }
  return absl::OkStatus();
}

void ChangeStreamStreamReader::run(Stream& s) {
  std::chrono::milliseconds backoff = kFirstBackoff;
  while (true) {
    bool finished = false;
    bool progressed = false;
    absl::Status status;
    try {
      status = read_once(s, finished, progressed);
    } catch (const std::exception& e) {
      // Never std::terminate the process from a stream thread: fail the reader instead.
      status = absl::InternalError(e.what());
      finished = true;
    }
    std::unique_lock lock(mu_);
    if (closing_) break;
    if (s.stalled) {
      s.stalled = false;
      finished = false;
      status = absl::UnavailableError("the call received nothing for four heartbeat intervals");
    }
    if (!status.ok() && (finished || !Transient(status.code()))) {
      s.status = absl::Status(
          status.code(),
          fmt::format("BigtableChangeStreamSource: ReadChangeStream of partition "
                      "{} failed: {}",
                      FormatRowRange(s.split.partition), std::string(status.message())));
      break;
    }
    if (finished) break;
    if (progressed) backoff = kFirstBackoff;
    spdlog::warn(
        "BigtableChangeStreamSource: ReadChangeStream of partition {} ended without a "
        "CloseStream ({}); opening it again from its last token in {} ms",
        FormatRowRange(s.split.partition), status.ok() ? "OK" : status.ToString(), backoff.count());
    cv_.wait_for(lock, backoff, [&] { return closing_; });
    if (closing_) break;
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
  std::lock_guard lock(mu_);
  s.done = true;
  cv_.notify_all();
}

absl::Status ChangeStreamStreamReader::read_once(Stream& s, bool& finished, bool& progressed) {
  auto context = std::make_unique<grpc::ClientContext>();
  v2::ReadChangeStreamRequest request;
  {
    std::lock_guard lock(mu_);
    if (closing_) return absl::CancelledError("closing");
    s.context = context.get();
    ++open_calls_;
    last_message_[s.split.id] = std::chrono::steady_clock::now();
    request = BuildReadChangeStreamRequest(request_, s.split);
  }
  // The context dies with this call, however it ends (an exception included): nobody may cancel
  // it afterwards.
  struct Forget {
    ChangeStreamStreamReader* self;
    Stream& s;
    ~Forget() {
      std::lock_guard lock(self->mu_);
      s.context = nullptr;
      --self->open_calls_;
    }
  } forget{this, s};
  const auto opened = std::chrono::steady_clock::now();
  const auto slice = 2 * request_.heartbeat;
  reads_started_.inc();
  auto reader = stub_->ReadChangeStream(context.get(), request);
  ChangeStreamAssembler assembler;
  v2::ReadChangeStreamResponse response;
  bool rotated = false;
  absl::Status broken;
  auto hand_over = [&](ChangeStreamElement element) {
    const std::size_t bytes = ElementBytes(element);
    element.handover_bytes = bytes;  // counted once, released by fetch()
    std::unique_lock lock(mu_);
    s.handing_over = true;
    cv_.wait(lock, [&] {
      return closing_ || (s.elements.size() < kHandover &&
                          (buffered_bytes_ == 0 || buffered_bytes_ + bytes <= kHandoverBytes));
    });
    s.handing_over = false;
    last_message_[s.split.id] = std::chrono::steady_clock::now();  // waiting was not silence
    buffered_bytes_ += bytes;
    if (element.kind != ChangeStreamElement::Kind::kClose) {
      s.split.tokens = element.tokens;
      s.split.low_watermark = std::max(s.split.low_watermark, element.low_watermark);
    }
    s.elements.push_back(std::move(element));
    cv_.notify_all();
  };
  while (reader->Read(&response)) {
    {
      std::lock_guard lock(mu_);
      last_message_[s.split.id] = std::chrono::steady_clock::now();
    }
    if (response.has_data_change()) {
      auto mutation = assembler.add(response.data_change());
      if (!mutation.ok()) {
        broken = absl::DataLossError(mutation.status().message());
        context->TryCancel();
        break;
      }
      if (!*mutation) continue;
      ChangeStreamElement e;
      e.kind = ChangeStreamElement::Kind::kMutation;
      e.tokens.push_back(PartitionToken{s.split.partition, (*mutation)->token()});
      e.low_watermark = (*mutation)->estimated_low_watermark();
      e.mutation = **std::move(mutation);
      hand_over(std::move(e));
      progressed = true;
      if (std::chrono::steady_clock::now() - opened >= slice && take_rotation()) {
        rotated = true;
        context->TryCancel();
        break;
      }
    } else if (response.has_heartbeat()) {
      const auto& beat = response.heartbeat();
      ChangeStreamElement e;
      e.kind = ChangeStreamElement::Kind::kHeartbeat;
      e.tokens.push_back(TokenFromProto(beat.continuation_token()));
      if (e.tokens.front().range != s.split.partition) {
        broken = absl::DataLossError(
            "ReadChangeStream broke its protocol: a heartbeat's token is for " +
            FormatRowRange(e.tokens.front().range) + ", not for the partition read");
        context->TryCancel();
        break;
      }
      e.low_watermark = FromProto(beat.estimated_low_watermark());
      hand_over(std::move(e));
      progressed = true;
      if (take_rotation()) {
        rotated = true;
        context->TryCancel();
        break;
      }
    } else if (response.has_close_stream()) {
      const auto& close = response.close_stream();
      ChangeStreamElement e;
      e.kind = ChangeStreamElement::Kind::kClose;
      e.close_status =
          FromRpcStatus(close.status());  // OK, or OUT_OF_RANGE for a partition that is gone
      for (const auto& t : close.continuation_tokens()) e.tokens.push_back(TokenFromProto(t));
      for (const auto& p : close.new_partitions()) {
        e.new_partitions.push_back(PartitionFromProto(p));
      }
      e.low_watermark = s.split.low_watermark;
      hand_over(std::move(e));
      finished = true;
      context->TryCancel();  // nothing may follow a CloseStream: never wait for the server's end
      break;
    }
  }
  grpc::Status status = reader->Finish();
  if (!broken.ok()) {
    finished = true;  // a protocol violation is not retried
    return broken;
  }
  if (finished || rotated) {
    if (rotated) {
      std::lock_guard lock(mu_);
      s.rotated = true;
    }
    finished = true;
    return absl::OkStatus();
  }
  return FromGrpc(status);
}

bool ChangeStreamStreamReader::take_rotation() {
  std::lock_guard lock(mu_);
  if (rotations_ <= 0) return false;
  --rotations_;
  ++rotating_;
  return true;
}

void ChangeStreamStreamReader::request_rotation(int n) {
  std::lock_guard lock(mu_);
  rotations_ = std::max(0, n - rotating_);
}

int ChangeStreamStreamReader::open_calls() const {
  std::lock_guard lock(mu_);
  return open_calls_;
}

void ChangeStreamStreamReader::check_liveness() {
  const auto now = std::chrono::steady_clock::now();
  const auto limit =
      std::max<std::chrono::milliseconds>(4 * request_.heartbeat, std::chrono::seconds(2));
  std::chrono::milliseconds longest{0};
  for (auto& [id, s] : streams_) {
    auto last = last_message_.find(id);
    if (s->done || s->context == nullptr || s->handing_over || last == last_message_.end()) {
      continue;
    }
    const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - last->second);
    longest = std::max(longest, silent);
    if (silent >= limit && !s->stalled) {
      spdlog::warn(
          "BigtableChangeStreamSource: ReadChangeStream of partition {} received nothing for {} "
          "ms (heartbeats are due every {} ms); cancelling it to open it again",
          FormatRowRange(s->split.partition), silent.count(), request_.heartbeat.count());
      s->stalled = true;
      s->context->TryCancel();
    }
  }
  liveness_->open_calls.store(open_calls_);
  liveness_->missed_heartbeat_intervals.store(
      static_cast<int>(longest / std::max<std::chrono::milliseconds>(
                                     request_.heartbeat, std::chrono::milliseconds(1))));
}

void ChangeStreamStreamReader::wake_up() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

absl::StatusOr<RecordsWithSplitIds<ChangeStreamElement>> ChangeStreamStreamReader::fetch() {
  RecordsWithSplitIds<ChangeStreamElement> batch;
  std::vector<Stream*> ended;
  {
    std::unique_lock lock(mu_);
    const auto ready = [&] {
      if (woken_ || closing_) return true;
      for (const auto& [id, s] : streams_) {
        if (!s->elements.empty() || s->done) return true;
      }
      return false;
    };
    while (!ready()) {
      cv_.wait_for(lock, std::chrono::seconds(1));
      check_liveness();
    }
    check_liveness();
    woken_ = false;
    for (auto& [id, s] : streams_) {
      while (!s->elements.empty()) {
        buffered_bytes_ -= std::min(buffered_bytes_, s->elements.front().handover_bytes);
        batch.add(id, std::move(s->elements.front()));
        s->elements.pop_front();
      }
      if (s->done) {
        ended.push_back(s.get());
        last_message_.erase(id);
        if (s->rotated) --rotating_;
      }
    }
  }
  cv_.notify_all();
  for (Stream* s : ended) {
    s->thread.join();
    if (!s->status.ok()) return s->status;
    const std::string id = s->split.id;
    batch.finish_split(id);
    streams_.erase(id);
  }
  return batch;
}

void ChangeStreamStreamReader::stop_all() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
    for (auto& [id, s] : streams_) {
      if (s->context != nullptr) s->context->TryCancel();
    }
  }
  cv_.notify_all();
  for (auto& [id, s] : streams_) {
    if (s->thread.joinable()) s->thread.join();
  }
  streams_.clear();
  std::lock_guard lock(mu_);
  last_message_.clear();
}

absl::Status ChangeStreamStreamReader::close() {
  stop_all();
  stub_.reset();
  return absl::OkStatus();
}

}  // namespace gcpstream::bigtable
