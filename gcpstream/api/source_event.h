#ifndef GCPSTREAM_API_SOURCE_EVENT_H_
#define GCPSTREAM_API_SOURCE_EVENT_H_

namespace gcpstream {

// A custom message between a source's enumerator and its readers. Everything runs in one
// process, so events are passed as shared immutable objects; receivers dynamic_cast to the
// concrete type they expect and ignore others.
class SourceEvent {
 public:
  virtual ~SourceEvent() = default;
};

}  // namespace gcpstream

#endif  // GCPSTREAM_API_SOURCE_EVENT_H_
