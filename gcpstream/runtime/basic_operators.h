#ifndef GCPSTREAM_RUNTIME_BASIC_OPERATORS_H_
#define GCPSTREAM_RUNTIME_BASIC_OPERATORS_H_

#include <functional>
#include <utility>

#include "gcpstream/api/collector.h"
#include "gcpstream/api/metrics.h"
#include "gcpstream/runtime/output.h"
#include "gcpstream/runtime/stream_operator.h"

namespace gcpstream::runtime {

// Base for one-input operators: forwards events, counts records in and out.
template <typename In, typename Out>
class OneInputOperator : public StreamOperator, public Output<In> {
 public:
  OneInputOperator(Output<Out>* out, OperatorContext& ctx)
      : out_(out),
        records_in_(ctx.metric_group->counter(metric_names::kNumRecordsIn)),
        records_out_(ctx.metric_group->counter(metric_names::kNumRecordsOut)) {}

  absl::Status emit_watermark(std::int64_t watermark_ms) override {
    return out_->emit_watermark(watermark_ms);
  }
  absl::Status emit_watermark_status(bool idle) override {
    return out_->emit_watermark_status(idle);
  }

 protected:
  absl::Status forward(StreamRecord<Out>&& record) {
    records_out_.inc_single_writer();
    return out_->collect(std::move(record));
  }
  Output<Out>* out_;
  Counter& records_in_;
  Counter& records_out_;
};

template <typename In, typename Out>
class MapOperator final : public OneInputOperator<In, Out> {
 public:
  MapOperator(std::function<Out(In)> fn, Output<Out>* out, OperatorContext& ctx)
      : OneInputOperator<In, Out>(out, ctx), fn_(std::move(fn)) {}
  absl::Status collect(StreamRecord<In>&& record) override {
    this->records_in_.inc_single_writer();
    return this->forward(StreamRecord<Out>{fn_(std::move(record.value)), record.timestamp_ms});
  }

 private:
  std::function<Out(In)> fn_;
};

template <typename T>
class FilterOperator final : public OneInputOperator<T, T> {
 public:
  FilterOperator(std::function<bool(const T&)> fn, Output<T>* out, OperatorContext& ctx)
      : OneInputOperator<T, T>(out, ctx), fn_(std::move(fn)) {}
  absl::Status collect(StreamRecord<T>&& record) override {
    this->records_in_.inc_single_writer();
    if (!fn_(record.value)) return absl::OkStatus();
    return this->forward(std::move(record));
  }

 private:
  std::function<bool(const T&)> fn_;
};

// flat_map: the function emits any number of values; each keeps the input's timestamp.
template <typename In, typename Out>
class FlatMapOperator final : public OneInputOperator<In, Out>, private Collector<Out> {
 public:
  FlatMapOperator(std::function<void(In, Collector<Out>&)> fn, Output<Out>* out,
                  OperatorContext& ctx)
      : OneInputOperator<In, Out>(out, ctx), fn_(std::move(fn)) {}
  absl::Status collect(StreamRecord<In>&& record) override {
    this->records_in_.inc_single_writer();
    timestamp_ = record.timestamp_ms;
    status_ = absl::OkStatus();
    fn_(std::move(record.value), *this);
    return status_;
  }

 private:
  void collect(Out value) override {
    if (!status_.ok()) return;  // downstream already failed: drop the rest of this input
    status_ = this->forward(StreamRecord<Out>{std::move(value), timestamp_});
  }
  std::function<void(In, Collector<Out>&)> fn_;
  std::int64_t timestamp_ = kNoTimestamp;
  absl::Status status_;
};

}  // namespace gcpstream::runtime

#endif  // GCPSTREAM_RUNTIME_BASIC_OPERATORS_H_
