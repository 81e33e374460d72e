#ifndef GCPSTREAM_RUNTIME_KEYED_REDUCE_OPERATOR_H_
#define GCPSTREAM_RUNTIME_KEYED_REDUCE_OPERATOR_H_

#include <functional>
#include <typeinfo>
#include <utility>

#include <fmt/format.h>

#include "absl/container/flat_hash_map.h"
#include "gcpstream/api/value_codec.h"
#include "gcpstream/runtime/basic_operators.h"
#include "gcpstream/runtime/exchange.h"
#include "gcpstream/runtime/state_redistribution.h"

namespace gcpstream::runtime {

inline constexpr char kKeyedStateList[] = "broadcast:keyed-state";

// A rolling reduce per key: for each record, state[key] = reduce(state[key], record), and the
// new value is emitted. Keys reach this subtask through the hash exchange in front of it.
//
// The state is checkpointed when K and T are Encodable (see gcpstream/api/value_codec.h): one
// element per key, tagged with its key group, in a broadcast list; on restore (at any
// parallelism) each subtask keeps the keys whose key group it owns.
template <typename T, typename K>
class KeyedReduceOperator final : public OneInputOperator<T, T> {
 public:
  KeyedReduceOperator(std::function<K(const T&)> key, std::function<T(const T&, const T&)> fn,
                      Output<T>* out, OperatorContext& ctx)
      : OneInputOperator<T, T>(out, ctx), key_(std::move(key)), fn_(std::move(fn)), ctx_(ctx) {}

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

  absl::Status snapshot_state(std::int64_t, OperatorStateWriter& out) override {
    if constexpr (Encodable<K> && Encodable<T>) {
      out.declare(kKeyedStateList);
      for (const auto& [key, value] : state_) {
        util::ByteWriter w;
        w.put_u32(static_cast<std::uint32_t>(
            KeyGroupFor(std::hash<K>{}(key), ctx_.max_parallelism)));
        ValueCodec<K>::encode(key, w);
        ValueCodec<T>::encode(value, w);
        out.add(kKeyedStateList, 1, w.take());
      }
      return absl::OkStatus();
    } else {
      if (state_.empty()) return absl::OkStatus();
      return absl::FailedPreconditionError(fmt::format(
          "'{}' keeps reduce state of a type with no ValueCodec ({} / {}); specialize "
          "gcpstream::ValueCodec to make it checkpointable",
          ctx_.operator_name, typeid(K).name(), typeid(T).name()));
    }
  }

  absl::Status initialize_state(const OperatorStateReader& restored) override {
    const auto& elements = restored.list(kKeyedStateList);
    if constexpr (Encodable<K> && Encodable<T>) {
      for (const auto& e : elements) {
        if (e.version != 1) return util::UnknownVersion("keyed reduce state", e.version, 1);
        util::ByteReader r(e.bytes);
        GCP_ASSIGN_OR_RETURN(std::uint32_t key_group, r.u32());
        if (OperatorIndexForKeyGroup(static_cast<int>(key_group), ctx_.max_parallelism,
                                     ctx_.parallelism) != ctx_.subtask_index) {
          continue;  // another subtask owns this key now
        }
        GCP_ASSIGN_OR_RETURN(K key, ValueCodec<K>::decode(r));
        GCP_ASSIGN_OR_RETURN(T value, ValueCodec<T>::decode(r));
        state_.insert_or_assign(std::move(key), std::move(value));
      }
      return absl::OkStatus();
    } else {
      if (elements.empty()) return absl::OkStatus();
      return absl::FailedPreconditionError("restored keyed state of a type with no ValueCodec");
    }
  }

  const absl::flat_hash_map<K, T>& state() const { return state_; }

 private:
  std::function<K(const T&)> key_;
  std::function<T(const T&, const T&)> fn_;
  OperatorContext& ctx_;
  absl::flat_hash_map<K, T> state_;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_KEYED_REDUCE_OPERATOR_H_
