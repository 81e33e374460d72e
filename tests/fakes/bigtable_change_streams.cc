#include "tests/fakes/bigtable_change_streams.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/time_util.h"

namespace gcpstream::testing {

namespace v2 = google::bigtable::v2;
using google::protobuf::util::TimeUtil;
using Response = v2::ReadChangeStreamResponse;

namespace {

constexpr std::int64_t kNoSeq = std::numeric_limits<std::int64_t>::max();
constexpr char kCluster[] = "fake-c1";

// [start, end) over row keys; an empty end is the end of the key space.
struct Range {
  std::string start;
  std::string end;
  bool operator==(const Range&) const = default;
  bool contains(const std::string& key) const { return key >= start && (end.empty() || key < end); }
};

bool EndBefore(const std::string& a, const std::string& b) {  // a < b, "" = infinity
  if (a.empty()) return false;
  return b.empty() || a < b;
}

std::optional<Range> Overlap(const Range& a, const Range& b) {
  Range o{std::max(a.start, b.start), EndBefore(a.end, b.end) ? a.end : b.end};
  if (!o.end.empty() && o.start >= o.end) return std::nullopt;
  return o;
}

std::vector<Range> Partitions(const std::vector<std::string>& boundaries) {
  std::vector<Range> out;
  std::string start;
  for (const auto& b : boundaries) {
    out.push_back({start, b});
    start = b;
  }
  out.push_back({start, ""});
  return out;
}

v2::StreamPartition ToProto(const Range& r) {
  v2::StreamPartition p;
  p.mutable_row_range();  // an unbounded range is still a range
  if (!r.start.empty()) p.mutable_row_range()->set_start_key_closed(r.start);
  if (!r.end.empty()) p.mutable_row_range()->set_end_key_open(r.end);
  return p;
}

// The partition a request names: only [start, end) bounds are partitions.
std::optional<Range> FromProto(const v2::StreamPartition& p) {
  const v2::RowRange& r = p.row_range();
  if (r.start_key_case() == v2::RowRange::kStartKeyOpen ||
      r.end_key_case() == v2::RowRange::kEndKeyClosed) {
    return std::nullopt;
  }
  Range out{r.start_key_closed(), r.end_key_open()};
  if (!out.end.empty() && out.start >= out.end) return std::nullopt;
  return out;
}

// A read position: pieces of a partition, each read up to a log sequence number. A piece ends
// where the next begins (the last at the partition's end).
struct Piece {
  std::string start;
  std::int64_t seq = 0;
};

// "fk1@<µs>|<hex start>:<seq>|…": the pieces and when the position was current.
std::string EncodeToken(const std::vector<Piece>& pieces, absl::Time at) {
  std::string out = fmt::format("fk1@{}", absl::ToUnixMicros(at));
  for (const auto& p : pieces) out += fmt::format("|{}:{}", absl::BytesToHexString(p.start), p.seq);
  return out;
}

std::optional<std::vector<Piece>> DecodeToken(const std::string& token, const Range& range,
                                              absl::Time& at) {
  std::vector<std::string> parts = absl::StrSplit(token, '|');
  std::int64_t at_us = 0;
  if (parts.size() < 2 || parts[0].rfind("fk1@", 0) != 0 ||
      !absl::SimpleAtoi(parts[0].substr(4), &at_us)) {
    return std::nullopt;
  }
  at = absl::FromUnixMicros(at_us);
  std::vector<Piece> out;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::size_t colon = parts[i].find(':');
    if (colon == std::string::npos) return std::nullopt;
    Piece p;
    const std::string hex = parts[i].substr(0, colon);
    if (hex.size() % 2 != 0 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) {
      return std::nullopt;
    }
    p.start = absl::HexStringToBytes(hex);
    if (!absl::SimpleAtoi(parts[i].substr(colon + 1), &p.seq) || p.seq < 0) return std::nullopt;
    if (!out.empty() && p.start <= out.back().start) return std::nullopt;
    out.push_back(std::move(p));
  }
  if (out.front().start != range.start) return std::nullopt;
  if (!range.end.empty() && out.back().start >= range.end) return std::nullopt;
  return out;
}

// The pieces of `pieces` (over some range) that fall inside `within`.
std::vector<Piece> Clip(const std::vector<Piece>& pieces, const Range& within) {
  std::vector<Piece> out;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const Range r{pieces[i].start, i + 1 < pieces.size() ? pieces[i + 1].start : std::string()};
    if (auto o = Overlap(r, within)) out.push_back({o->start, pieces[i].seq});
  }
  return out;
}

void Collapse(std::vector<Piece>& pieces) {
  std::vector<Piece> out;
  for (auto& p : pieces) {
    if (!out.empty() && out.back().seq == p.seq) continue;
    out.push_back(std::move(p));
  }
  pieces = std::move(out);
}

google::protobuf::Timestamp ToProto(absl::Time t) {
  return TimeUtil::MicrosecondsToTimestamp(absl::ToUnixMicros(t));
}

}  // namespace

struct BigtableChangeStreamsFake::State {
  struct Change {
    std::int64_t seq = 0;
    std::string table;
    std::string row_key;
    absl::Time commit;
    bool gc = false;
    std::vector<Mutation> mutations;
  };
  struct Epoch {
    std::int64_t from_seq = 0;  // changes after this sequence number are in this topology
    std::vector<std::string> boundaries;
  };

  mutable std::mutex mu;
  std::condition_variable cv;
  BigtableChangeStreamsFakeOptions options;
  std::set<std::string> tables;
  std::map<std::string, std::set<std::string>> families;  // written so far, by table
  std::vector<Change> log;                                // seq = index + 1
  std::vector<Epoch> epochs{Epoch{}};
  absl::Time created = absl::Now();
  absl::Time last_commit = absl::UnixEpoch();
  std::int64_t abort_generation = 0;
  grpc::Status abort_status;
  int open = 0;
  std::int64_t started = 0;
  bool stopping = false;

  absl::Time now() const { return options.clock ? options.clock() : absl::Now(); }

  std::vector<Range> current() const { return Partitions(epochs.back().boundaries); }

  absl::Status set_boundaries(std::vector<std::string> b) {
    std::sort(b.begin(), b.end());
    if (std::adjacent_find(b.begin(), b.end()) != b.end() ||
        std::find(b.begin(), b.end(), std::string()) != b.end()) {
      return absl::InvalidArgumentError("partition boundaries must be unique, non-empty keys");
    }
    epochs.push_back(Epoch{static_cast<std::int64_t>(log.size()), std::move(b)});
    cv.notify_all();
    return absl::OkStatus();
  }

  // What the service refuses in a written row (v2 MutateRow/MutateRows reference): an empty
  // row key, one over 4 KiB, a cell mutation without a family.
  static std::optional<std::string> Refused(const std::string& row,
                                            const std::vector<Mutation>& mutations) {
    if (row.empty()) return "Row keys must be non-empty";
    if (row.size() > 4096) return "Row keys must be at most 4096 bytes";
    if (mutations.empty()) return "No mutations provided";
    for (const auto& m : mutations) {
      const std::string* family = nullptr;
      if (m.has_set_cell()) family = &m.set_cell().family_name();
      if (m.has_delete_from_column()) family = &m.delete_from_column().family_name();
      if (m.has_delete_from_family()) family = &m.delete_from_family().family_name();
      if (family != nullptr && family->empty()) return "A family name must be non-empty";
    }
    return std::nullopt;
  }

  // Under mu.
  void append(const std::string& table, const std::string& row, std::vector<Mutation> mutations,
              bool gc) {
    // A change stream reports a DeleteFromRow as a DeleteFromFamily per column family.
    std::vector<Mutation> expanded;
    for (auto& m : mutations) {
      if (m.has_set_cell()) families[table].insert(m.set_cell().family_name());
      if (!m.has_delete_from_row()) {
        expanded.push_back(std::move(m));
        continue;
      }
      for (const auto& f : families[table]) {
        Mutation d;
        d.mutable_delete_from_family()->set_family_name(f);
        expanded.push_back(std::move(d));
      }
    }
    mutations = std::move(expanded);
    absl::Time commit = std::max(now(), last_commit + absl::Microseconds(1));
    commit = absl::FromUnixMicros(absl::ToUnixMicros(commit));
    last_commit = commit;
    const std::int64_t server_ts = absl::ToUnixMicros(commit) / 1000 * 1000;
    for (auto& m : mutations) {
      if (m.has_set_cell() && m.set_cell().timestamp_micros() == -1) {
        m.mutable_set_cell()->set_timestamp_micros(server_ts);
      }
    }
    log.push_back(Change{static_cast<std::int64_t>(log.size()) + 1, table, row, commit, gc,
                         std::move(mutations)});
    cv.notify_all();
  }
};

namespace {

class Service final : public v2::Bigtable::Service {
 public:
  explicit Service(std::shared_ptr<BigtableChangeStreamsFake::State> state)
      : state_(std::move(state)) {}

  grpc::Status MutateRow(grpc::ServerContext*, const v2::MutateRowRequest* request,
                         v2::MutateRowResponse*) override {
    std::lock_guard lock(state_->mu);
    if (grpc::Status s = check_table(request->table_name()); !s.ok()) return s;
    std::vector<v2::Mutation> mutations(request->mutations().begin(), request->mutations().end());
    if (auto refused = BigtableChangeStreamsFake::State::Refused(request->row_key(), mutations)) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, *refused);
    }
    state_->append(request->table_name(), request->row_key(), std::move(mutations), false);
    return grpc::Status::OK;
  }

  grpc::Status MutateRows(grpc::ServerContext*, const v2::MutateRowsRequest* request,
                          grpc::ServerWriter<v2::MutateRowsResponse>* writer) override {
    v2::MutateRowsResponse response;
    {
      std::lock_guard lock(state_->mu);
      if (grpc::Status s = check_table(request->table_name()); !s.ok()) return s;
      for (int i = 0; i < request->entries_size(); ++i) {
        const auto& entry = request->entries(i);
        auto* out = response.add_entries();
        out->set_index(i);
        std::vector<v2::Mutation> mutations(entry.mutations().begin(), entry.mutations().end());
        if (auto refused = BigtableChangeStreamsFake::State::Refused(entry.row_key(), mutations)) {
          out->mutable_status()->set_code(grpc::StatusCode::INVALID_ARGUMENT);
          out->mutable_status()->set_message(*refused);
          continue;
        }
        out->mutable_status()->set_code(grpc::StatusCode::OK);  // every entry has a status
        state_->append(request->table_name(), entry.row_key(), std::move(mutations), false);
      }
    }
    writer->Write(response);
    return grpc::Status::OK;
  }

  grpc::Status GenerateInitialChangeStreamPartitions(
      grpc::ServerContext*, const v2::GenerateInitialChangeStreamPartitionsRequest* request,
      grpc::ServerWriter<v2::GenerateInitialChangeStreamPartitionsResponse>* writer) override {
    std::vector<Range> partitions;
    {
      std::lock_guard lock(state_->mu);
      if (grpc::Status s = check_table(request->table_name()); !s.ok()) return s;
      partitions = state_->current();
    }
    for (const auto& p : partitions) {
      v2::GenerateInitialChangeStreamPartitionsResponse r;
      *r.mutable_partition() = ToProto(p);
      if (!writer->Write(r)) break;
    }
    return grpc::Status::OK;
  }

  grpc::Status ReadChangeStream(grpc::ServerContext* context,
                                const v2::ReadChangeStreamRequest* request,
                                grpc::ServerWriter<Response>* writer) override {
    {
      std::lock_guard lock(state_->mu);
      ++state_->open;
      ++state_->started;
    }
    grpc::Status status = read(context, *request, writer);
    std::lock_guard lock(state_->mu);
    --state_->open;
    return status;
  }

 private:
  grpc::Status check_table(const std::string& table) const {
    if (state_->tables.count(table) == 0) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "Table not found: " + table);
    }
    return grpc::Status::OK;
  }

  // The read position over `range` a request starts from. Under mu.
  grpc::Status start_position(const v2::ReadChangeStreamRequest& request, const Range& range,
                              std::vector<Piece>& pieces, absl::Time& position_at) const {
    position_at = state_->now();
    if (request.has_continuation_tokens()) {
      std::vector<std::pair<Range, std::vector<Piece>>> tokens;
      for (const auto& t : request.continuation_tokens().tokens()) {
        auto r = FromProto(t.partition());
        absl::Time at_time;
        auto p = r ? DecodeToken(t.token(), *r, at_time) : std::nullopt;
        if (!p) {
          return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "invalid continuation token");
        }
        // A position older than the retention cannot be read from any more.
        if (at_time < state_->now() - state_->options.retention) {
          return grpc::Status(grpc::StatusCode::OUT_OF_RANGE,
                              "the continuation token's position is older than the change "
                              "stream retention period");
        }
        position_at = std::min(position_at, at_time);
        tokens.emplace_back(*r, *std::move(p));
      }
      std::sort(tokens.begin(), tokens.end(),
                [](const auto& a, const auto& b) { return a.first.start < b.first.start; });
      // The union of the tokens' partitions must be exactly the requested partition.
      const grpc::Status gap(grpc::StatusCode::INVALID_ARGUMENT,
                             "continuation tokens do not cover the requested partition");
      std::string at = range.start;
      bool at_end = false;  // the last token ran to the end of the key space
      for (const auto& [r, p] : tokens) {
        if (at_end || r.start != at) return gap;
        for (const auto& piece : p) {
          // A token from another incarnation of the fake (restarted, its log empty again).
          if (piece.seq > static_cast<std::int64_t>(state_->log.size())) {
            return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                "continuation token beyond this change stream's log");
          }
          pieces.push_back(piece);
        }
        at = r.end;
        at_end = r.end.empty();
      }
      if (tokens.empty() || at_end != range.end.empty() || (!at_end && at != range.end)) {
        return gap;
      }
      return grpc::Status::OK;
    }
    std::int64_t seq = static_cast<std::int64_t>(state_->log.size());
    if (request.has_start_time()) {
      const absl::Time start =
          absl::FromUnixMicros(TimeUtil::TimestampToMicroseconds(request.start_time()));
      const absl::Time now = state_->now();
      if (start < now - state_->options.retention) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "start_time is older than the change stream retention period");
      }
      if (start > now) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "start_time is in the future");
      }
      position_at = start;
      // Inclusive: every change committed at or after `start`.
      auto it = std::lower_bound(state_->log.begin(), state_->log.end(), start,
                                 [](const auto& c, absl::Time t) { return c.commit < t; });
      seq = it - state_->log.begin();
    }
    pieces.push_back(Piece{range.start, seq});
    return grpc::Status::OK;
  }

  static void add_token(Response::CloseStream& close, const Range& r,
                        const std::vector<Piece>& pieces, absl::Time at) {
    auto* t = close.add_continuation_tokens();
    *t->mutable_partition() = ToProto(r);
    std::vector<Piece> clipped = Clip(pieces, r);
    Collapse(clipped);
    t->set_token(EncodeToken(clipped, at));
  }

  // The CloseStream handing `range` (read up to `pieces`) over to `partitions`.
  static Response Handover(const Range& range, const std::vector<Piece>& pieces,
                           const std::vector<Range>& partitions, grpc::StatusCode code,
                           absl::Time at) {
    Response r;
    auto* close = r.mutable_close_stream();
    close->mutable_status()->set_code(code);
    if (code == grpc::StatusCode::OUT_OF_RANGE) {
      close->mutable_status()->set_message("the requested partition no longer exists");
    }
    for (const auto& q : partitions) {
      auto o = Overlap(range, q);
      if (!o) continue;
      add_token(*close, *o, pieces, at);
      *close->add_new_partitions() = ToProto(q);
    }
    return r;
  }

  std::vector<Response> messages(const BigtableChangeStreamsFake::State::Change& c,
                                 std::size_t chunk_bytes, int per_message) const {
    std::vector<std::vector<Response::MutationChunk>> groups(1);
    auto push = [&](Response::MutationChunk chunk, bool ends_message) {
      if (per_message > 0 && static_cast<int>(groups.back().size()) >= per_message) {
        groups.emplace_back();
      }
      groups.back().push_back(std::move(chunk));
      if (ends_message) groups.emplace_back();
    };
    for (const auto& m : c.mutations) {
      const std::string& value = m.set_cell().value();
      if (!m.has_set_cell() || value.size() <= chunk_bytes || chunk_bytes == 0) {
        Response::MutationChunk chunk;
        *chunk.mutable_mutation() = m;
        push(std::move(chunk), false);
        continue;
      }
      if (!groups.back().empty()) groups.emplace_back();
      for (std::size_t off = 0; off < value.size(); off += chunk_bytes) {
        // The cell's coordinates and this piece of its value (never a copy of the whole value
        // per chunk: that made a 50 MB value in 1,000-byte chunks quadratic).
        Response::MutationChunk chunk;
        auto* cell = chunk.mutable_mutation()->mutable_set_cell();
        cell->set_family_name(m.set_cell().family_name());
        cell->set_column_qualifier(m.set_cell().column_qualifier());
        cell->set_timestamp_micros(m.set_cell().timestamp_micros());
        cell->set_value(value.substr(off, chunk_bytes));
        auto* info = chunk.mutable_chunk_info();
        info->set_chunked_value_size(static_cast<int>(value.size()));
        info->set_chunked_value_offset(static_cast<int>(off));
        info->set_last_chunk(off + chunk_bytes >= value.size());
        push(std::move(chunk), true);
      }
    }
    if (groups.size() > 1 && groups.back().empty()) groups.pop_back();
    std::vector<Response> out;
    for (std::size_t i = 0; i < groups.size(); ++i) {
      Response r;
      auto* d = r.mutable_data_change();
      if (i == 0) {
        d->set_type(c.gc ? Response::DataChange::GARBAGE_COLLECTION : Response::DataChange::USER);
        if (!c.gc) d->set_source_cluster_id(kCluster);
        d->set_row_key(c.row_key);
        *d->mutable_commit_timestamp() = ToProto(c.commit);
        d->set_tiebreaker(0);
      } else {
        d->set_type(Response::DataChange::CONTINUATION);
      }
      for (auto& chunk : groups[i]) *d->add_chunks() = std::move(chunk);
      out.push_back(std::move(r));
    }
    return out;
  }

  grpc::Status read(grpc::ServerContext* context, const v2::ReadChangeStreamRequest& request,
                    grpc::ServerWriter<Response>* writer) {
    auto range = FromProto(request.partition());
    if (!range) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "partition must be a [start_key_closed, end_key_open) row range");
    }
    const std::string table = request.table_name();
    const absl::Duration heartbeat =
        request.has_heartbeat_duration() &&
                TimeUtil::DurationToMilliseconds(request.heartbeat_duration()) > 0
            ? absl::Milliseconds(TimeUtil::DurationToMilliseconds(request.heartbeat_duration()))
            : absl::Seconds(5);
    std::optional<absl::Time> end_time;
    if (request.has_end_time()) {
      end_time = absl::FromUnixMicros(TimeUtil::TimestampToMicroseconds(request.end_time()));
    }
    std::vector<Piece> pieces;
    std::size_t epoch = 0;
    std::int64_t abort_generation = 0;
    absl::Time low_watermark;
    {
      std::lock_guard lock(state_->mu);
      if (grpc::Status s = check_table(table); !s.ok()) return s;
      absl::Time position_at;
      if (grpc::Status s = start_position(request, *range, pieces, position_at); !s.ok()) {
        return s;
      }
      const auto current = state_->current();
      if (std::find(current.begin(), current.end(), *range) == current.end()) {
        Response r = Handover(*range, pieces, current, grpc::StatusCode::OUT_OF_RANGE, position_at);
        writer->Write(r);
        return grpc::Status::OK;
      }
      epoch = state_->epochs.size() - 1;
      abort_generation = state_->abort_generation;
      low_watermark = state_->now();
    }
    absl::Time next_heartbeat = absl::Now() + heartbeat;
    while (true) {
      std::vector<BigtableChangeStreamsFake::State::Change> batch;
      std::optional<Response> close;
      bool send_heartbeat = false;
      std::size_t chunk_bytes = 0;
      int per_message = 0;
      bool cut = false;
      {
        std::unique_lock lock(state_->mu);
        auto& s = *state_;
        if (s.stopping || context->IsCancelled()) return grpc::Status::CANCELLED;
        if (s.abort_generation != abort_generation) return s.abort_status;
        // The first later topology without this partition retires it at its start.
        std::int64_t limit = static_cast<std::int64_t>(s.log.size());
        std::optional<std::size_t> retired;
        for (std::size_t e = epoch + 1; e < s.epochs.size(); ++e) {
          const auto parts = Partitions(s.epochs[e].boundaries);
          if (std::find(parts.begin(), parts.end(), *range) == parts.end()) {
            retired = e;
            limit = std::min(limit, s.epochs[e].from_seq);
            break;
          }
        }
        // A heartbeat is due whether or not changes are waiting (a busy stream gets them too).
        if (absl::Now() >= next_heartbeat && !s.options.pause_heartbeats && !retired) {
          next_heartbeat = absl::Now() + heartbeat;
          send_heartbeat = true;
        }
        std::int64_t from = kNoSeq;
        for (const auto& p : pieces) from = std::min(from, p.seq);
        for (std::int64_t seq = from + 1; seq <= limit && batch.size() < 64; ++seq) {
          const auto& c = s.log[static_cast<std::size_t>(seq - 1)];
          if (c.table != table || !range->contains(c.row_key)) continue;
          std::int64_t piece_seq = pieces.front().seq;
          for (const auto& p : pieces) {
            if (p.start <= c.row_key) piece_seq = p.seq;
          }
          if (c.seq <= piece_seq) continue;
          batch.push_back(c);
        }
        chunk_bytes = s.options.max_value_chunk_bytes;
        per_message = s.options.max_chunks_per_message;
        if (send_heartbeat) {
          batch.clear();  // the heartbeat first; the changes on the next turn
        } else if (batch.empty()) {
          for (auto& p : pieces) p.seq = std::max(p.seq, limit);
          Collapse(pieces);
          // Caught up: every later change commits after both of these.
          if (!retired) low_watermark = std::max({low_watermark, s.now(), s.last_commit});
          if (retired) {
            close = Handover(*range, pieces, Partitions(s.epochs[*retired].boundaries),
                             grpc::StatusCode::OK, s.now());
          } else if (end_time && s.now() > *end_time) {
            close = Response();
            close->mutable_close_stream()->mutable_status()->set_code(grpc::StatusCode::OK);
          } else {
            s.cv.wait_for(lock, std::chrono::milliseconds(50));
            continue;
          }
        } else {
          cut = s.options.cut_next_chunked_change;
        }
      }
      if (close) {
        writer->Write(*close);
        return grpc::Status::OK;
      }
      if (send_heartbeat) {
        Response r;
        auto* beat = r.mutable_heartbeat();
        *beat->mutable_continuation_token()->mutable_partition() = ToProto(*range);
        beat->mutable_continuation_token()->set_token(EncodeToken(pieces, low_watermark));
        *beat->mutable_estimated_low_watermark() = ToProto(low_watermark);
        if (!writer->Write(r)) return grpc::Status::CANCELLED;
        continue;
      }
      for (const auto& c : batch) {
        if (end_time && c.commit > *end_time) {
          Response r;
          r.mutable_close_stream()->mutable_status()->set_code(grpc::StatusCode::OK);
          writer->Write(r);
          return grpc::Status::OK;
        }
        std::vector<Response> msgs = messages(c, chunk_bytes, per_message);
        if (cut && msgs.size() > 1) {
          {
            std::lock_guard lock(state_->mu);
            state_->options.cut_next_chunked_change = false;
          }
          writer->Write(msgs.front());
          return grpc::Status(grpc::StatusCode::UNAVAILABLE, "stream cut mid-change (fault)");
        }
        for (auto& p : pieces) p.seq = std::max(p.seq, c.seq);
        Collapse(pieces);
        low_watermark = std::max(low_watermark, c.commit);
        auto* last = msgs.back().mutable_data_change();
        last->set_done(true);
        last->set_token(EncodeToken(pieces, c.commit));
        *last->mutable_estimated_low_watermark() = ToProto(low_watermark);
        for (const auto& m : msgs) {
          if (!writer->Write(m)) return grpc::Status::CANCELLED;
        }
      }
    }
  }

  std::shared_ptr<BigtableChangeStreamsFake::State> state_;
};

// The table admin's GetTable: the change stream's retention (Table.change_stream_config).
class AdminService final : public google::bigtable::admin::v2::BigtableTableAdmin::Service {
 public:
  explicit AdminService(std::shared_ptr<BigtableChangeStreamsFake::State> state)
      : state_(std::move(state)) {}

  grpc::Status GetTable(grpc::ServerContext*,
                        const google::bigtable::admin::v2::GetTableRequest* request,
                        google::bigtable::admin::v2::Table* table) override {
    std::lock_guard lock(state_->mu);
    if (state_->tables.count(request->name()) == 0) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "Table not found: " + request->name());
    }
    table->set_name(request->name());
    *table->mutable_change_stream_config()->mutable_retention_period() =
        TimeUtil::MicrosecondsToDuration(absl::ToInt64Microseconds(state_->options.retention));
    return grpc::Status::OK;
  }

 private:
  std::shared_ptr<BigtableChangeStreamsFake::State> state_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BigtableChangeStreamsFake>> BigtableChangeStreamsFake::Start(
    BigtableChangeStreamsFakeOptions options, int port, const std::string& host) {
  std::unique_ptr<BigtableChangeStreamsFake> fake(new BigtableChangeStreamsFake());
  fake->state_ = std::make_shared<State>();
  fake->state_->options = std::move(options);
  fake->state_->created = fake->state_->now();
  fake->service_ = std::make_unique<Service>(fake->state_);
  fake->admin_ = std::make_unique<AdminService>(fake->state_);
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort(fmt::format("{}:{}", host, port), grpc::InsecureServerCredentials(),
                           &bound);
  builder.RegisterService(fake->service_.get());
  builder.RegisterService(fake->admin_.get());
  builder.SetMaxReceiveMessageSize(256 << 20);
  fake->server_ = builder.BuildAndStart();
  if (!fake->server_ || bound == 0) {
    return absl::UnavailableError(
        fmt::format("bigtable change streams fake: cannot listen on {}:{}", host, port));
  }
  fake->endpoint_ = fmt::format("{}:{}", host, bound);
  return fake;
}

BigtableChangeStreamsFake::~BigtableChangeStreamsFake() { shutdown(); }

std::string BigtableChangeStreamsFake::endpoint() const { return endpoint_; }

void BigtableChangeStreamsFake::set_options(BigtableChangeStreamsFakeOptions options) {
  std::lock_guard lock(state_->mu);
  state_->options = std::move(options);
  state_->cv.notify_all();
}

void BigtableChangeStreamsFake::add_table(const std::string& table_name) {
  std::lock_guard lock(state_->mu);
  state_->tables.insert(table_name);
}

absl::Status BigtableChangeStreamsFake::repartition(std::vector<std::string> boundaries) {
  std::lock_guard lock(state_->mu);
  return state_->set_boundaries(std::move(boundaries));
}

absl::Status BigtableChangeStreamsFake::split_at(const std::string& key) {
  std::lock_guard lock(state_->mu);
  std::vector<std::string> b = state_->epochs.back().boundaries;
  if (key.empty() || std::find(b.begin(), b.end(), key) != b.end()) {
    return absl::InvalidArgumentError("split_at: the key is already a partition boundary");
  }
  b.push_back(key);
  return state_->set_boundaries(std::move(b));
}

absl::Status BigtableChangeStreamsFake::merge_at(const std::string& key) {
  std::lock_guard lock(state_->mu);
  std::vector<std::string> b = state_->epochs.back().boundaries;
  auto it = std::find(b.begin(), b.end(), key);
  if (it == b.end()) return absl::InvalidArgumentError("merge_at: not a partition boundary");
  b.erase(it);
  return state_->set_boundaries(std::move(b));
}

std::vector<std::string> BigtableChangeStreamsFake::boundaries() const {
  std::lock_guard lock(state_->mu);
  return state_->epochs.back().boundaries;
}

absl::Status BigtableChangeStreamsFake::append(const std::string& table_name,
                                               const std::string& row_key,
                                               std::vector<Mutation> mutations,
                                               bool garbage_collection) {
  std::lock_guard lock(state_->mu);
  if (state_->tables.count(table_name) == 0) return absl::NotFoundError("no such table");
  state_->append(table_name, row_key, std::move(mutations), garbage_collection);
  return absl::OkStatus();
}

void BigtableChangeStreamsFake::abort_streams(grpc::Status status) {
  std::lock_guard lock(state_->mu);
  ++state_->abort_generation;
  state_->abort_status = std::move(status);
  state_->cv.notify_all();
}

int BigtableChangeStreamsFake::open_streams() const {
  std::lock_guard lock(state_->mu);
  return state_->open;
}

std::int64_t BigtableChangeStreamsFake::streams_started() const {
  std::lock_guard lock(state_->mu);
  return state_->started;
}

std::int64_t BigtableChangeStreamsFake::changes() const {
  std::lock_guard lock(state_->mu);
  return static_cast<std::int64_t>(state_->log.size());
}

void BigtableChangeStreamsFake::shutdown() {
  if (!state_) return;
  {
    std::lock_guard lock(state_->mu);
    state_->stopping = true;
    state_->cv.notify_all();
  }
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_->Wait();
    server_.reset();
  }
}

}  // namespace gcpstream::testing
