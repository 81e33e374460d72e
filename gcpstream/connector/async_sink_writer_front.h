#ifndef GCPSTREAM_CONNECTOR_ASYNC_SINK_WRITER_FRONT_H_
#define GCPSTREAM_CONNECTOR_ASYNC_SINK_WRITER_FRONT_H_

#include <fmt/format.h>

#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/connector/async_sink_writer.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/serialization.h"

namespace gcpstream::connector {

// The typed SinkWriter<T> in front of an AsyncSinkWriter: per record it resolves the
// destination, serializes, and hands the element on. The destination is resolved before
// serialization, so a record the serializer skips still needs a resolvable destination and a
// serializer failure is reported against it. A resolver returning nothing is a configuration
// error that fails the job (FAILED_PRECONDITION), never a record failure.
template <typename T, typename D, typename E>
class AsyncSinkWriterFront final : public SinkWriter<T> {
 public:
  // The record as an element: nothing = skip (counted by recordsSkipped); an error = a
  // serializer failure (routed to the failure handler, never counted as a rejection). Wrap the
  // user's serializer with CallSerializer so that an exception becomes such an error. An error
  // marked by ConfigurationError() (serialization.h) fails the job instead of being routed.
  using Serialize =
      std::function<absl::StatusOr<std::optional<E>>(const T&, const SinkWriterContext&)>;

  AsyncSinkWriterFront(DestinationResolver<T, D> resolver, Serialize serialize,
                       std::unique_ptr<AsyncSinkWriter<D, E>> core)
      : resolver_(std::move(resolver)), serialize_(std::move(serialize)), core_(std::move(core)) {}

  // Opens the core (its failure handler); call once before the first write.
  absl::Status open() { return core_->open(); }

  absl::Status write(const T& element, const SinkWriterContext& context) override {
    GCP_RETURN_IF_ERROR(core_->before_record());
    std::optional<D> destination = resolver_(element, context);
    if (!destination) {
      const SinkVocabulary& w = core_->settings().words;
      return absl::FailedPreconditionError(fmt::format(
          "the {} sink's destination resolver returned no {} for a record (a configuration "
          "error, never routed to the failure handler)",
          w.connector, w.destination));
    }
    absl::StatusOr<std::optional<E>> out = serialize_(element, context);
    if (!out.ok()) {
      // A serializer that marks its error as a configuration error fails the job instead.
      if (IsConfigurationError(out.status())) {
        return absl::Status(out.status().code(), out.status().message());  // without the mark
      }
      return core_->route_serialization_failure(*destination, out.status());
    }
    if (!out->has_value()) {
      core_->record_skipped();
      return absl::OkStatus();
    }
    return core_->write(*destination, std::move(**out));
  }
  absl::Status flush(bool end_of_input) override { return core_->flush(end_of_input); }
  absl::Status close() override { return core_->close(); }

  AsyncSinkWriter<D, E>& core() { return *core_; }

 private:
  DestinationResolver<T, D> resolver_;
  Serialize serialize_;
  std::unique_ptr<AsyncSinkWriter<D, E>> core_;
};

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_ASYNC_SINK_WRITER_FRONT_H_
