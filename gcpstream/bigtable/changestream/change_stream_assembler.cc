#include "gcpstream/bigtable/changestream/change_stream_assembler.h"

#include "absl/strings/str_cat.h"
#include "gcpstream/api/status_macros.h"

namespace gcpstream::bigtable {

namespace v2 = google::bigtable::v2;
using DataChange = v2::ReadChangeStreamResponse::DataChange;

namespace {

absl::Time FromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

absl::Status Protocol(std::string_view what) {
  return absl::InternalError(
      absl::StrCat("ReadChangeStream broke its protocol: ", std::string(what)));
}

}  // namespace

ChangeStreamValue ValueFromProto(const v2::Value& v) {
  ChangeStreamValue out;
  switch (v.kind_case()) {
    case v2::Value::kIntValue:
      out.type = ChangeStreamValue::Type::kInt64;
      out.int_value = v.int_value();
      break;
    case v2::Value::kRawValue:
      out.type = ChangeStreamValue::Type::kRawValue;
      out.bytes = v.raw_value();
      break;
    case v2::Value::kRawTimestampMicros:
      out.type = ChangeStreamValue::Type::kRawTimestampMicros;
      out.int_value = v.raw_timestamp_micros();
      break;
    case v2::Value::kBytesValue:
      out.type = ChangeStreamValue::Type::kBytes;
      out.bytes = v.bytes_value();
      break;
    default:
      out.type = ChangeStreamValue::Type::kOther;
      out.bytes = v.SerializeAsString();
      break;
  }
  return out;
}

absl::StatusOr<ChangeStreamEntry> EntryFromProto(const v2::Mutation& m) {
  switch (m.mutation_case()) {
    case v2::Mutation::kSetCell:
      return SetCellEntry{m.set_cell().family_name(), m.set_cell().column_qualifier(),
                          m.set_cell().timestamp_micros(), m.set_cell().value()};
    case v2::Mutation::kDeleteFromColumn: {
      const auto& d = m.delete_from_column();
      return DeleteCellsEntry{d.family_name(), d.column_qualifier(),
                              d.time_range().start_timestamp_micros(),
                              d.time_range().end_timestamp_micros()};
    }
    case v2::Mutation::kDeleteFromFamily:
      return DeleteFamilyEntry{m.delete_from_family().family_name()};
    case v2::Mutation::kAddToCell: {
      const auto& a = m.add_to_cell();
      return AddToCellEntry{a.family_name(), a.column_qualifier().raw_value(),
                            a.timestamp().raw_timestamp_micros(), ValueFromProto(a.input())};
    }
    case v2::Mutation::kMergeToCell: {
      const auto& a = m.merge_to_cell();
      return MergeToCellEntry{a.family_name(), a.column_qualifier().raw_value(),
                              a.timestamp().raw_timestamp_micros(), ValueFromProto(a.input())};
    }
    default: {
      const auto* field = v2::Mutation::descriptor()->FindFieldByNumber(m.mutation_case());
      return absl::InvalidArgumentError(absl::StrCat(
          "a change stream carried a ", field != nullptr ? field->name() : "mutation",
          " mutation, which change streams do not report (the reference lists SetCell, "
          "DeleteFromColumn, DeleteFromFamily, AddToCell and MergeToCell)"));
    }
  }
}

void ChangeStreamAssembler::reset() {
  open_ = false;
  bytes_ = 0;
  entries_.clear();
  chunked_size_.reset();
}

absl::Status ChangeStreamAssembler::add_chunk(
    const v2::ReadChangeStreamResponse::MutationChunk& c) {
  if (c.has_chunk_info()) {
    const auto& info = c.chunk_info();
    if (!c.mutation().has_set_cell()) return Protocol("a chunked mutation that is not a SetCell");
    if (info.chunked_value_offset() == 0) {
      if (chunked_size_) return Protocol("a new chunked value before the last one ended");
      if (info.chunked_value_size() < 0 ||
          static_cast<std::size_t>(info.chunked_value_size()) > kMaxChangeBytes) {
        return Protocol("a chunked value announced larger than a change can be");
      }
      GCP_ASSIGN_OR_RETURN(ChangeStreamEntry e, EntryFromProto(c.mutation()));
      entries_.push_back(std::move(e));
      chunked_size_ = info.chunked_value_size();
    } else {
      auto* cell = entries_.empty() ? nullptr : std::get_if<SetCellEntry>(&entries_.back());
      if (!chunked_size_ || cell == nullptr ||
          static_cast<std::int64_t>(cell->value.size()) != info.chunked_value_offset()) {
        return Protocol("a value chunk at an offset that does not follow the previous chunk");
      }
      cell->value += c.mutation().set_cell().value();
    }
    auto& cell = std::get<SetCellEntry>(entries_.back());
    if (static_cast<std::int64_t>(cell.value.size()) > *chunked_size_) {
      return Protocol("value chunks longer than their announced size");
    }
    if (info.last_chunk()) {
      if (static_cast<std::int64_t>(cell.value.size()) != *chunked_size_) {
        return Protocol("a chunked value shorter than its announced size");
      }
      chunked_size_.reset();
    }
    return absl::OkStatus();
  }
  if (chunked_size_) return Protocol("a mutation inside an unfinished chunked value");
  GCP_ASSIGN_OR_RETURN(ChangeStreamEntry e, EntryFromProto(c.mutation()));
  entries_.push_back(std::move(e));
  return absl::OkStatus();
}

absl::StatusOr<std::optional<BigtableChangeStreamMutation>> ChangeStreamAssembler::add(
    const DataChange& message) {
  if (message.type() == DataChange::CONTINUATION) {
    if (!open_) return Protocol("a CONTINUATION message with no change open");
  } else {
    if (open_) return Protocol("a new change before the previous one was done");
    if (message.type() != DataChange::USER && message.type() != DataChange::GARBAGE_COLLECTION) {
      return Protocol("a change of unspecified type");
    }
    open_ = true;
    row_key_ = message.row_key();
    type_ = message.type() == DataChange::USER ? ChangeStreamMutationType::kUser
                                               : ChangeStreamMutationType::kGarbageCollection;
    cluster_ = message.source_cluster_id();
    commit_ = FromProto(message.commit_timestamp());
    tiebreaker_ = message.tiebreaker();
  }
  for (const auto& chunk : message.chunks()) {
    bytes_ += chunk.ByteSizeLong();
    absl::Status s = bytes_ > kMaxChangeBytes ? Protocol("a change larger than a change can be")
                                              : add_chunk(chunk);
    if (!s.ok()) {
      reset();
      return s;
    }
  }
  if (!message.done()) return std::optional<BigtableChangeStreamMutation>();
  if (chunked_size_) {
    reset();
    return Protocol("a change marked done inside a chunked value");
  }
  BigtableChangeStreamMutation out(
      std::move(row_key_), type_, std::move(cluster_), commit_, tiebreaker_, message.token(),
      FromProto(message.estimated_low_watermark()), std::move(entries_));
  reset();
  return std::optional<BigtableChangeStreamMutation>(std::move(out));
}

}  // namespace gcpstream::bigtable
