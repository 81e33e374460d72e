#ifndef GCPSTREAM_RUNTIME_OPERATOR_STATE_H_
#define GCPSTREAM_RUNTIME_OPERATOR_STATE_H_

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gcpstream::runtime {

// One serialized element of an operator's list state, with the serializer version it was
// written with.
struct StateElement {
  int version = 0;
  std::string bytes;
};

// An operator's checkpointed state: named lists of elements ("splits", "writer-state",
// "committables", ...). List elements are the unit of redistribution on rescale: a restored
// subtask receives a share of the union of the lists of the same name (see docs/runtime.md).
// Bytes held by named state lists (the payloads; the list names and versions are not counted).
inline std::int64_t StateBytes(const std::map<std::string, std::vector<StateElement>>& lists) {
  std::int64_t bytes = 0;
  for (const auto& [name, elements] : lists) {
    for (const auto& e : elements) bytes += static_cast<std::int64_t>(e.bytes.size());
  }
  return bytes;
}

class OperatorStateWriter {
 public:
  void add(std::string_view list, int version, std::string bytes) {
    lists_[std::string(list)].push_back(StateElement{version, std::move(bytes)});
  }
  // Registers a list even when it is empty, so a restore can tell "empty" from "absent".
  void declare(std::string_view list) { lists_[std::string(list)]; }
  const std::map<std::string, std::vector<StateElement>>& lists() const { return lists_; }
  std::map<std::string, std::vector<StateElement>>& mutable_lists() { return lists_; }

 private:
  std::map<std::string, std::vector<StateElement>> lists_;
};

class OperatorStateReader {
 public:
  OperatorStateReader() = default;
  explicit OperatorStateReader(std::map<std::string, std::vector<StateElement>> lists)
      : lists_(std::move(lists)) {}
  // Empty when the list is absent.
  const std::vector<StateElement>& list(std::string_view name) const {
    static const std::vector<StateElement> kEmpty;
    auto it = lists_.find(std::string(name));
    return it == lists_.end() ? kEmpty : it->second;
  }
  bool empty() const { return lists_.empty(); }

 private:
  std::map<std::string, std::vector<StateElement>> lists_;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_OPERATOR_STATE_H_
