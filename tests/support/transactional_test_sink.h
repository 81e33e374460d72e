#ifndef GCPSTREAM_TESTS_SUPPORT_TRANSACTIONAL_TEST_SINK_H_
#define GCPSTREAM_TESTS_SUPPORT_TRANSACTIONAL_TEST_SINK_H_

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gcpstream/api/sink.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/util/bytes.h"

namespace gcpstream::testing {

// A two-phase-commit sink over an in-memory "destination": the writer collects values into a
// transaction; prepare_commit() hands the transaction over as a committable; the committer makes
// it visible, idempotently (a transaction id is applied at most once, like a rename). So the
// visible output is exactly-once across restores as long as checkpoints are honoured.
struct TestTransaction {
  std::string id;
  std::vector<std::int64_t> values;
};

class TransactionalTestSink final : public Sink<std::int64_t>,
                                    public SupportsCommitter<TestTransaction> {
 public:
  struct Destination {
    mutable std::mutex mu;
    std::vector<std::int64_t> visible;
    std::set<std::string> applied;
    std::atomic<int> commits{0};
    std::vector<std::int64_t> snapshot() const {
      std::lock_guard lock(mu);
      return visible;
    }
  };

  TransactionalTestSink() : destination_(std::make_shared<Destination>()) {}
  std::shared_ptr<Destination> destination() const { return destination_; }

  absl::StatusOr<std::unique_ptr<SinkWriter<std::int64_t>>> create_writer(
      WriterInitContext& context) const override {
    return std::unique_ptr<SinkWriter<std::int64_t>>(new Writer(context));
  }
  absl::StatusOr<std::unique_ptr<Committer<TestTransaction>>> create_committer(
      CommitterInitContext&) const override {
    return std::unique_ptr<Committer<TestTransaction>>(new TxCommitter(destination_));
  }
  const VersionedSerializer<TestTransaction>& committable_serializer() const override {
    static const Serializer serializer;
    return serializer;
  }

 private:
  class Writer final : public CommittingSinkWriter<std::int64_t, TestTransaction> {
   public:
    explicit Writer(WriterInitContext& ctx)
        : prefix_(fmt::format("{}-{}-{}", ctx.task_name(), ctx.attempt_number(),
                              reinterpret_cast<std::uintptr_t>(this))) {}
    absl::Status write(const std::int64_t& v, const SinkWriterContext&) override {
      open_.push_back(v);
      return absl::OkStatus();
    }
    absl::Status flush(bool) override { return absl::OkStatus(); }
    absl::StatusOr<std::vector<TestTransaction>> prepare_commit() override {
      std::vector<TestTransaction> out;
      if (!open_.empty()) out.push_back({fmt::format("{}-{}", prefix_, next_++), std::move(open_)});
      open_.clear();
      return out;
    }
    absl::Status close() override { return absl::OkStatus(); }

   private:
    std::string prefix_;
    int next_ = 0;
    std::vector<std::int64_t> open_;
  };

  class TxCommitter final : public Committer<TestTransaction> {
   public:
    explicit TxCommitter(std::shared_ptr<Destination> d) : d_(std::move(d)) {}
    absl::Status commit(std::vector<CommitRequest<TestTransaction>>& requests) override {
      std::lock_guard lock(d_->mu);
      for (auto& r : requests) {
        if (!d_->applied.insert(r.committable().id).second) {
          r.signal_already_committed();
          continue;
        }
        d_->visible.insert(d_->visible.end(), r.committable().values.begin(),
                           r.committable().values.end());
        d_->commits++;
      }
      return absl::OkStatus();
    }

   private:
    std::shared_ptr<Destination> d_;
  };

  class Serializer final : public VersionedSerializer<TestTransaction> {
   public:
    int version() const override { return 1; }
    absl::StatusOr<std::string> serialize(const TestTransaction& t) const override {
      util::ByteWriter w;
      w.put_string(t.id);
      w.put_u32(static_cast<std::uint32_t>(t.values.size()));
      for (auto v : t.values) w.put_i64(v);
      return w.take();
    }
    absl::StatusOr<TestTransaction> deserialize(int version,
                                                std::string_view bytes) const override {
      if (version != 1) return util::UnknownVersion("a test transaction", version, 1);
      util::ByteReader r(bytes);
      TestTransaction t;
      GCP_ASSIGN_OR_RETURN(t.id, r.string());
      GCP_ASSIGN_OR_RETURN(std::uint32_t n, r.u32());
      for (std::uint32_t i = 0; i < n; ++i) {
        GCP_ASSIGN_OR_RETURN(std::int64_t v, r.i64());
        t.values.push_back(v);
      }
      return t;
    }
  };

  std::shared_ptr<Destination> destination_;
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_SUPPORT_TRANSACTIONAL_TEST_SINK_H_
