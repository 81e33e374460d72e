#ifndef GCPSTREAM_RUNTIME_KEYED_REDUCE_OPERATOR_H_
#define GCPSTREAM_RUNTIME_KEYED_REDUCE_OPERATOR_H_

#include <functional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "gcpstream/runtime/basic_operators.h"

namespace gcpstream::runtime {

// A rolling reduce per key: for each record, state[key] = reduce(state[key], record) and the
// new value is emitted. Keys are partitioned to this subtask by the hash exchange in front of
// it. State lives in memory in the subtask.
template <typename T, typename K>
class KeyedReduceOperator final : public OneInputOperator<T, T> {
 public:
  KeyedReduceOperator(std::function<K(const T&)> key, std::function<T(const T&, const T&)> fn,
                      Output<T>* out, OperatorContext& ctx)
      : OneInputOperator<T, T>(out, ctx), key_(std::move(key)), fn_(std::move(fn)) {}

  absl::Status collect(StreamRecord<T>&& record) override {
    this->records_in_.inc_single_writer();
    K key = key_(record.value);
    auto it = state_.find(key);
    if (it == state_.end()) {
      it = state_.emplace(std::move(key), std::move(record.value)).first;
    } else {
      it->second = fn_(it->second, record.value);
    }
    return this->forward(StreamRecord<T>{it->second, record.timestamp_ms});
  }

  const absl::flat_hash_map<K, T>& state() const { return state_; }

 private:
  std::function<K(const T&)> key_;
  std::function<T(const T&, const T&)> fn_;
  absl::flat_hash_map<K, T> state_;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_KEYED_REDUCE_OPERATOR_H_
