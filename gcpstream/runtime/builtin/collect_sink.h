#ifndef GCPSTREAM_RUNTIME_BUILTIN_COLLECT_SINK_H_
#define GCPSTREAM_RUNTIME_BUILTIN_COLLECT_SINK_H_

#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "gcpstream/api/sink.h"

namespace gcpstream {

// Collects every element of a (bounded) job in memory, from every subtask, for examples and
// tests. The collection is shared: keep the pointer, run the job, then read it. Thread-safe.
template <typename T>
class CollectSink final : public Sink<T> {
 public:
  struct Collected {
    mutable std::mutex mu;
    std::vector<T> values;
    std::vector<T> snapshot() const {
      std::lock_guard lock(mu);
      return values;
    }
    std::size_t size() const {
      std::lock_guard lock(mu);
      return values.size();
    }
  };

  CollectSink() : collected_(std::make_shared<Collected>()) {}
  std::shared_ptr<Collected> collected() const { return collected_; }

  absl::StatusOr<std::unique_ptr<SinkWriter<T>>> create_writer(
      WriterInitContext&) const override {
    return std::unique_ptr<SinkWriter<T>>(new Writer(collected_));
  }

 private:
  class Writer final : public SinkWriter<T> {
   public:
    explicit Writer(std::shared_ptr<Collected> c) : collected_(std::move(c)) {}
    absl::Status write(const T& element, const SinkWriterContext&) override {
      buffer_.push_back(element);
      if (buffer_.size() >= 1024) return flush(false);
      return absl::OkStatus();
    }
    absl::Status flush(bool) override {
      std::lock_guard lock(collected_->mu);
      for (auto& v : buffer_) collected_->values.push_back(std::move(v));
      buffer_.clear();
      return absl::OkStatus();
    }
    absl::Status close() override { return absl::OkStatus(); }

   private:
    std::shared_ptr<Collected> collected_;
    std::vector<T> buffer_;
  };

  std::shared_ptr<Collected> collected_;
};

// Calls `fn` for every element, from the subtask threads (so `fn` must be thread-safe when the
// sink's parallelism is above 1). Useful to print results.
template <typename T>
class ForEachSink final : public Sink<T> {
 public:
  explicit ForEachSink(std::function<void(const T&)> fn) : fn_(std::move(fn)) {}
  absl::StatusOr<std::unique_ptr<SinkWriter<T>>> create_writer(
      WriterInitContext&) const override {
    return std::unique_ptr<SinkWriter<T>>(new Writer(fn_));
  }

 private:
  class Writer final : public SinkWriter<T> {
   public:
    explicit Writer(std::function<void(const T&)> fn) : fn_(std::move(fn)) {}
    absl::Status write(const T& element, const SinkWriterContext&) override {
      fn_(element);
      return absl::OkStatus();
    }
    absl::Status flush(bool) override { return absl::OkStatus(); }
    absl::Status close() override { return absl::OkStatus(); }

   private:
    std::function<void(const T&)> fn_;
  };
  std::function<void(const T&)> fn_;
};

}  // namespace gcpstream

#endif  // GCPSTREAM_RUNTIME_BUILTIN_COLLECT_SINK_H_
