#include "gcpstream/spanner/client/mutation.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "gcpstream/util/utf8.h"

namespace gcpstream::spanner {
namespace {

namespace sp = google::spanner::v1;

absl::string_view AV(std::string_view s) { return absl::string_view(s.data(), s.size()); }

void AppendKey(Key key, google::protobuf::ListValue* out) {
  for (auto& part : key) *out->add_values() = std::move(part).release_proto();
}

absl::Status CheckName(std::string_view what, const std::string& name) {
  if (name.empty())
    return absl::InvalidArgumentError(absl::StrCat("the ", AV(what), " name is empty"));
  if (auto at = util::InvalidUtf8At(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the ", AV(what), " name is not UTF-8 at byte ", *at));
  }
  return absl::OkStatus();
}

sp::Mutation::Write* WriteOf(Mutation::Op op, sp::Mutation* m) {
  switch (op) {
    case Mutation::Op::kInsert:
      return m->mutable_insert();
    case Mutation::Op::kUpdate:
      return m->mutable_update();
    case Mutation::Op::kInsertOrUpdate:
      return m->mutable_insert_or_update();
    case Mutation::Op::kReplace:
      return m->mutable_replace();
    case Mutation::Op::kDelete:
      break;
  }
  return nullptr;
}

}  // namespace

const sp::Mutation::Write* WriteOf(const sp::Mutation& m) {
  switch (m.operation_case()) {
    case sp::Mutation::kInsert:
      return &m.insert();
    case sp::Mutation::kUpdate:
      return &m.update();
    case sp::Mutation::kInsertOrUpdate:
      return &m.insert_or_update();
    case sp::Mutation::kReplace:
      return &m.replace();
    default:
      return nullptr;
  }
}

KeySet KeySet::All() {
  KeySet s;
  s.proto_.set_all(true);
  return s;
}

KeySet& KeySet::AddKey(Key key) {
  AppendKey(std::move(key), proto_.add_keys());
  return *this;
}

KeySet& KeySet::AddRange(KeyRange range) {
  auto* r = proto_.add_ranges();
  AppendKey(std::move(range.start),
            range.start_closed ? r->mutable_start_closed() : r->mutable_start_open());
  AppendKey(std::move(range.end),
            range.end_closed ? r->mutable_end_closed() : r->mutable_end_open());
  return *this;
}

Mutation::Builder::Builder(Op op, std::string table) : op_(op), table_(std::move(table)) {}

Mutation::Builder& Mutation::Builder::Set(std::string column, Value value) & {
  if (!error_.ok()) return *this;
  if (auto s = CheckName("column", column); !s.ok()) {
    error_ = s;
    return *this;
  }
  if (value.type().code() == sp::STRUCT) {
    error_ = absl::InvalidArgumentError(
        absl::StrCat("column ", column, ": a STRUCT value cannot be written to a column"));
    return *this;
  }
  columns_.push_back(std::move(column));
  *row_.add_values() = std::move(value).release_proto();
  return *this;
}

Mutation::Builder& Mutation::Builder::Set(std::string column, absl::StatusOr<Value> value) & {
  if (!error_.ok()) return *this;
  if (!value.ok()) {
    error_ = absl::Status(value.status().code(),
                          absl::StrCat("column ", column, ": ", value.status().message()));
    return *this;
  }
  return Set(std::move(column), *std::move(value));
}

absl::StatusOr<Mutation> Mutation::Builder::Build() && {
  const std::string_view op_name = OpName(op_);
  auto located = [&](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat(AV(op_name), " into ", table_, ": ", s.message()));
  };
  if (auto s = CheckName("table", table_); !s.ok()) return located(s);
  if (!error_.ok()) return located(error_);
  if (columns_.empty()) return located(absl::InvalidArgumentError("no column is set"));
  absl::flat_hash_set<std::string> seen;
  for (const auto& c : columns_) {
    if (!seen.insert(c).second) {
      return located(absl::InvalidArgumentError(absl::StrCat("column ", c, " is set twice")));
    }
  }
  sp::Mutation m;
  auto* write = WriteOf(op_, &m);
  write->set_table(std::move(table_));
  for (auto& c : columns_) write->add_columns(std::move(c));
  *write->add_values() = std::move(row_);
  return Mutation(op_, std::move(m));
}

absl::StatusOr<Mutation> Mutation::Delete(std::string table, KeySet keys) {
  if (auto s = CheckName("table", table); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("delete from ", table, ": ", s.message()));
  }
  if (keys.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "delete from ", table, ": the key set is empty (KeySet::All() deletes every row)"));
  }
  sp::Mutation m;
  m.mutable_delete_()->set_table(std::move(table));
  *m.mutable_delete_()->mutable_key_set() = keys.proto();
  return Mutation(Op::kDelete, std::move(m));
}

Mutation::Mutation(Op op, sp::Mutation proto)
    : op_(op), proto_(std::move(proto)), wire_bytes_(proto_.ByteSizeLong()) {}

const std::string& Mutation::table() const {
  if (const auto* w = WriteOf(proto_)) return w->table();
  return proto_.delete_().table();
}

const google::protobuf::RepeatedPtrField<std::string>& Mutation::columns() const {
  if (const auto* w = WriteOf(proto_)) return w->columns();
  static const google::protobuf::RepeatedPtrField<std::string> kNone;
  return kNone;
}

std::size_t Mutation::delete_entries() const {
  if (op_ != Op::kDelete) return 0;
  const auto& ks = proto_.delete_().key_set();
  if (ks.all()) return 1;
  return static_cast<std::size_t>(ks.keys_size() + ks.ranges_size());
}

std::string_view OpName(Mutation::Op op) {
  switch (op) {
    case Mutation::Op::kInsert:
      return "insert";
    case Mutation::Op::kUpdate:
      return "update";
    case Mutation::Op::kInsertOrUpdate:
      return "insert_or_update";
    case Mutation::Op::kReplace:
      return "replace";
    case Mutation::Op::kDelete:
      return "delete";
  }
  return "unknown";
}

}  // namespace gcpstream::spanner
