#ifndef GCPSTREAM_API_COLLECTOR_H_
#define GCPSTREAM_API_COLLECTOR_H_

#include <utility>
#include <vector>

namespace gcpstream {

// Receives zero or more values from a flat_map function or a deserialization schema.
//
// Contract: call collect() only synchronously, from inside the call that was handed this
// collector, on that call's thread; never keep the reference. Values are moved in.
template <typename T>
class Collector {
 public:
  virtual ~Collector() = default;
  virtual void collect(T value) = 0;
};

// Keeps what is collected in a vector the caller owns (typically reused: clear() it before each
// call). Sources use it to hold a deserializer's records until the deserializer returned, so a
// failure downstream is never taken for the deserializer's.
template <typename T>
class VectorCollector final : public Collector<T> {
 public:
  explicit VectorCollector(std::vector<T>& values) : values_(values) {}
  void collect(T value) override { values_.push_back(std::move(value)); }

 private:
  std::vector<T>& values_;
};

}  // namespace gcpstream

#endif  // GCPSTREAM_API_COLLECTOR_H_
