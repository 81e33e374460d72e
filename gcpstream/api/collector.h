#ifndef GCPSTREAM_API_COLLECTOR_H_
#define GCPSTREAM_API_COLLECTOR_H_

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

}  // namespace gcpstream

#endif  // GCPSTREAM_API_COLLECTOR_H_
