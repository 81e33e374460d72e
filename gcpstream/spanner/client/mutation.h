#ifndef GCPSTREAM_SPANNER_CLIENT_MUTATION_H_
#define GCPSTREAM_SPANNER_CLIENT_MUTATION_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcpstream/spanner/client/value.h"
#include "google/spanner/v1/mutation.pb.h"

namespace gcpstream::spanner {

// A primary key: one value per key column, in the table's key order.
using Key = std::vector<Value>;

// A range of keys. A bound may be a prefix of the key (fewer values than key columns); an open
// bound excludes the keys it names. Semantics as in the Spanner API reference ("KeyRange").
struct KeyRange {
  Key start;
  bool start_closed = true;
  Key end;
  bool end_closed = true;
  static KeyRange ClosedClosed(Key start, Key end) {
    return {std::move(start), true, std::move(end), true};
  }
  static KeyRange ClosedOpen(Key start, Key end) {
    return {std::move(start), true, std::move(end), false};
  }
  static KeyRange OpenClosed(Key start, Key end) {
    return {std::move(start), false, std::move(end), true};
  }
  static KeyRange OpenOpen(Key start, Key end) {
    return {std::move(start), false, std::move(end), false};
  }
};

// The rows a delete (or a read) addresses: single keys, ranges, or the whole table.
class KeySet {
 public:
  static KeySet All();
  KeySet& AddKey(Key key);
  KeySet& AddRange(KeyRange range);
  bool empty() const {
    return proto_.keys_size() == 0 && proto_.ranges_size() == 0 && !proto_.all();
  }
  const google::spanner::v1::KeySet& proto() const { return proto_; }

 private:
  google::spanner::v1::KeySet proto_;
};

// One Spanner mutation, already in its wire form. The table is the mutation's own: a sink
// writes to whichever tables its serializer names.
//
// Build writes through the builder:
//   auto m = Mutation::InsertOrUpdate("Orders").Set("OrderId", Value::Int64(7))
//                .Set("Note", Value::String(note)).Build();
// A builder keeps the first error it meets (a bad value passed as a StatusOr, an empty or
// repeated column name, a STRUCT value, which no column can hold) and Build() returns it as
// INVALID_ARGUMENT naming the column. A write without columns and a delete of an empty key set
// are refused the same way: both would be a mapping mistake, not a wish.
//
// Immutable once built; thread-compatible.
class Mutation {
 public:
  enum class Op { kInsert, kUpdate, kInsertOrUpdate, kReplace, kDelete };

  class Builder {
   public:
    Builder(Op op, std::string table);
    Builder& Set(std::string column, Value value) &;
    Builder& Set(std::string column, absl::StatusOr<Value> value) &;
    Builder&& Set(std::string column, Value value) && {
      return std::move(Set(std::move(column), std::move(value)));
    }
    Builder&& Set(std::string column, absl::StatusOr<Value> value) && {
      return std::move(Set(std::move(column), std::move(value)));
    }
    absl::StatusOr<Mutation> Build() &&;

   private:
    Op op_;
    std::string table_;
    std::vector<std::string> columns_;
    google::protobuf::ListValue row_;
    absl::Status error_;
  };

  static Builder Insert(std::string table) { return Builder(Op::kInsert, std::move(table)); }
  static Builder Update(std::string table) { return Builder(Op::kUpdate, std::move(table)); }
  static Builder InsertOrUpdate(std::string table) {
    return Builder(Op::kInsertOrUpdate, std::move(table));
  }
  static Builder Replace(std::string table) { return Builder(Op::kReplace, std::move(table)); }
  static absl::StatusOr<Mutation> Delete(std::string table, KeySet keys);

  Op op() const { return op_; }
  const std::string& table() const;
  // The written columns, in order (empty for a delete).
  const google::protobuf::RepeatedPtrField<std::string>& columns() const;
  // Keys plus ranges of a delete; 0 for a write.
  std::size_t delete_entries() const;
  const google::spanner::v1::Mutation& proto() const { return proto_; }
  google::spanner::v1::Mutation&& release_proto() && { return std::move(proto_); }
  // The size of the mutation as serialized on the wire: exact, values, names and framing
  // included (a BYTES value is therefore counted at its base64 length, which is what travels).
  std::size_t wire_bytes() const { return wire_bytes_; }

 private:
  Mutation(Op op, google::spanner::v1::Mutation proto);
  Op op_;
  google::spanner::v1::Mutation proto_;
  std::size_t wire_bytes_ = 0;
};

std::string_view OpName(Mutation::Op op);

// The write of an insert, update, insert_or_update or replace mutation; null for a delete.
const google::spanner::v1::Mutation::Write* WriteOf(
    const google::spanner::v1::Mutation& m);  // "insert", "update", "insert_or_update", …

}  // namespace gcpstream::spanner

#endif  // GCPSTREAM_SPANNER_CLIENT_MUTATION_H_
