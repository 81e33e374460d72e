#ifndef GCPSTREAM_BIGTABLE_STAGED_BIGTABLE_STAGED_SINK_H_
#define GCPSTREAM_BIGTABLE_STAGED_BIGTABLE_STAGED_SINK_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gcpstream/api/lineage.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/api/status_macros.h"
#include "gcpstream/bigtable/admin/resource_names.h"
#include "gcpstream/bigtable/sink/bigtable_serialization_schema.h"
#include "gcpstream/bigtable/sink/bigtable_sink.h"
#include "gcpstream/bigtable/staged/staged_committer.h"
#include "gcpstream/bigtable/staged/staged_envelope.h"
#include "gcpstream/connector/client_options_builder.h"
#include "gcpstream/connector/destinations.h"
#include "gcpstream/connector/lineage.h"
#include "gcpstream/connector/serialization.h"

namespace gcpstream::bigtable {

// The experimental checkpoint-owned (exactly-once) Bigtable sink, the spec's
// BigtableDeliveryGuarantee::EXACTLY_ONCE: every write reaches the table once even when its
// effect is not idempotent (an AddToCell aggregate), at the price of visibility one checkpoint
// interval later and one CheckAndMutateRow per entry.
//
//   auto sink = BigtableStagedSink<Order>::builder()
//       .table(connector::TableDestination::of("p", "i", "orders"))
//       .app_profile_id("transactional")   // single-cluster routing, transactional writes
//       .staged_options({.marker_family = "flink_commit"})
//       .serializer(BigtableSerializationSchema<Order>::of(to_entry))
//       .build();
//
// The writer turns each record into an envelope: its entry, a random 128-bit identity, and the
// exact CheckAndMutateRow request that applies the entry together with a marker cell
// (marker_family:identity) if and only if that marker is absent. Envelopes stay in the writer
// until the checkpoint barrier, then travel as that checkpoint's committable; once the
// checkpoint completes the committer sends them (BigtableStagedCommitter). A restore re-sends
// the committables of the restored checkpoint byte for byte, and a retained marker turns an
// envelope that was already applied into a no-op. Checkpoint completion authorizes rows one by
// one: no cross-row atomicity, ordering between envelopes, or rollback.
//
// Requirements: checkpointing enabled (without it nothing is written before the end of input);
// the table and a raw marker family without a GC rule provisioned beforehand (the connector
// never creates the family or deletes markers, which accumulate one per envelope); an app
// profile with single-cluster routing and transactional writes. Both are checked before the
// first write to a target, restored work included. Restore the latest completed checkpoint or
// a finished stop-with-savepoint with all sink state: discarding it loses writes, and restoring
// an older one replays inputs under new identities.
//
// Caps per writer and interval (BigtableStagedOptions): beyond them the write fails at once
// (RESOURCE_EXHAUSTED). No failure handler: a record whose entry cannot be staged (a whole-row
// delete, a mutation of the marker family, more than 99,999 mutations, an invalid entry) fails
// the job. Metrics: stagedEntries, stagedBytes (gauges of the writer's open interval),
// recordsSkipped; the committer's requestsCompleted, requestsDeduplicated, requestsFailed.
// docs/bigtable.md, "Checkpoint-owned writes". Immutable once built; thread-safe.
template <typename T>
class BigtableStagedSink final : public Sink<T>,
                                 public SupportsCommitter<StagedBatch>,
                                 public LineageVertexProvider {
 public:
  class Builder : public connector::ClientOptionsBuilder<Builder> {
   public:
    Builder& table(connector::TableDestination table) {
      table_ = std::move(table);
      return *this;
    }
    // Required: single-cluster routing with transactional writes.
    Builder& app_profile_id(std::string id) {
      app_profile_ = std::move(id);
      return *this;
    }
    Builder& serializer(BigtableSerializationSchema<T> schema) {
      serializer_ = std::move(schema);
      return *this;
    }
    Builder& staged_options(BigtableStagedOptions options) {
      options_ = std::move(options);
      return *this;
    }
    // Tests: the data stub the committer sends through, and the target check.
    Builder& data_stub(std::shared_ptr<BigtableDataStub> stub) {
      stub_ = std::move(stub);
      return *this;
    }
    Builder& target_validator(StagedTargetValidator validator) {
      validator_ = std::move(validator);
      return *this;
    }
    // INVALID_ARGUMENT naming what is missing or out of range.
    absl::StatusOr<std::shared_ptr<BigtableStagedSink>> build() const {
      constexpr char kWho[] = "BigtableStagedSink";
      GCP_RETURN_IF_ERROR(this->builder_error());
      GCP_RETURN_IF_ERROR(ValidateTableDestination(kWho, table_));
      if (app_profile_.empty()) {
        return absl::InvalidArgumentError(
            std::string(kWho) +
            " needs app_profile_id(...): a profile with single-cluster routing and "
            "transactional writes");
      }
      GCP_RETURN_IF_ERROR(ValidateAppProfileId(kWho, app_profile_));
      if (!serializer_.valid()) {
        return absl::InvalidArgumentError(std::string(kWho) + " needs serializer(...)");
      }
      absl::Status options = options_.validate();
      if (!options.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(kWho, ": ", options.message()));
      }
      return std::shared_ptr<BigtableStagedSink>(new BigtableStagedSink(*this));
    }

   private:
    friend class BigtableStagedSink;
    std::optional<connector::TableDestination> table_;
    std::string app_profile_;
    BigtableSerializationSchema<T> serializer_;
    BigtableStagedOptions options_;
    std::shared_ptr<BigtableDataStub> stub_;
    StagedTargetValidator validator_;
  };

  static Builder builder() { return Builder(); }

  absl::StatusOr<std::unique_ptr<SinkWriter<T>>> create_writer(
      WriterInitContext& context) const override {
    GCP_RETURN_IF_ERROR(b_.serializer_.open());
    return std::unique_ptr<SinkWriter<T>>(std::make_unique<Writer>(*this, context));
  }

  absl::StatusOr<std::unique_ptr<Committer<StagedBatch>>> create_committer(
      CommitterInitContext& context) const override {
    std::shared_ptr<BigtableDataStub> stub = b_.stub_;
    if (!stub) {
      GCP_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                           connector::CreateChannel(b_.client(), kBigtableTarget));
      stub = MakeGrpcBigtableDataStub(std::move(channel));
    }
    StagedTargetValidator validator = b_.validator_;
    if (!validator) {
      GCP_ASSIGN_OR_RETURN(
          std::shared_ptr<grpc::Channel> admin,
          connector::CreateChannel(b_.client(), kBigtableAdminTarget, grpc::ChannelArguments(),
                                   connector::CallApi::kBlockingOnly));
      validator = MakeStagedTargetValidator(
          google::bigtable::admin::v2::BigtableTableAdmin::NewStub(admin),
          google::bigtable::admin::v2::BigtableInstanceAdmin::NewStub(admin),
          b_.options_.marker_family, b_.client().emulator_endpoint().has_value());
    }
    return std::unique_ptr<Committer<StagedBatch>>(std::make_unique<BigtableStagedCommitter>(
        std::move(stub), std::move(validator), b_.options_.request_options,
        context.metric_group()));
  }
  const VersionedSerializer<StagedBatch>& committable_serializer() const override {
    return serializer_;
  }

  LineageVertex lineage_vertex() const override {
    LineageVertex v;
    v.role = LineageVertex::Role::kSink;
    v.connector = "bigtable";
    v.datasets.push_back(connector::BigtableDataset(*b_.table_));
    return v;
  }

 private:
  class Writer final : public CommittingSinkWriter<T, StagedBatch> {
   public:
    Writer(const BigtableStagedSink& sink, WriterInitContext& context)
        : sink_(sink),
          table_name_(sink.b_.table_->resource_name()),
          staged_(std::make_shared<std::atomic<std::int64_t>>(0)),
          staged_bytes_(std::make_shared<std::atomic<std::int64_t>>(0)),
          skipped_(context.metric_group().counter(metric_names::kRecordsSkipped)) {
      context.metric_group().gauge("stagedEntries", [s = staged_] { return s->load(); });
      context.metric_group().gauge("stagedBytes", [s = staged_bytes_] { return s->load(); });
    }

    absl::Status write(const T& element, const SinkWriterContext& context) override {
      const auto& b = sink_.b_;
      GCP_ASSIGN_OR_RETURN(auto entry, connector::CallSerializer<RowMutationEntry>([&] {
                             return b.serializer_.serialize(element, context);
                           }));
      if (!entry) {
        skipped_.inc_single_writer();
        return absl::OkStatus();
      }
      const auto& options = b.options_;
      if (entries_ + 1 > options.max_entries_per_interval) {
        return absl::ResourceExhaustedError(
            absl::StrCat("BigtableStagedSink: ", entries_ + 1,
                         " entries staged in one checkpoint interval, "
                         "above max_entries_per_interval (",
                         options.max_entries_per_interval,
                         "); shorten the checkpoint interval or raise the cap"));
      }
      GCP_ASSIGN_OR_RETURN(
          std::string request,
          BuildStagedRequest(table_name_, b.app_profile_, options.marker_family, *entry,
                             ids_.next(), absl::ToUnixMicros(absl::Now())));
      const std::int64_t charge = static_cast<std::int64_t>(request.size()) + kStagedEntryAllowance;
      if (bytes_ + charge > options.max_bytes_per_interval) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "BigtableStagedSink: ", bytes_ + charge,
            " bytes staged in one checkpoint interval (requests plus ", kStagedEntryAllowance,
            " per entry), above max_bytes_per_interval (", options.max_bytes_per_interval,
            "); shorten the checkpoint interval or raise the cap"));
      }
      batch_.requests.push_back(std::move(request));
      ++entries_;
      bytes_ += charge;
      staged_->store(entries_, std::memory_order_relaxed);
      staged_bytes_->store(bytes_, std::memory_order_relaxed);
      return absl::OkStatus();
    }
    absl::Status flush(bool) override { return absl::OkStatus(); }
    absl::StatusOr<std::vector<StagedBatch>> prepare_commit() override {
      std::vector<StagedBatch> out;
      if (!batch_.requests.empty()) out.push_back(std::move(batch_));
      batch_ = StagedBatch();
      entries_ = 0;
      bytes_ = 0;
      staged_->store(0, std::memory_order_relaxed);
      staged_bytes_->store(0, std::memory_order_relaxed);
      return out;
    }
    absl::Status close() override { return absl::OkStatus(); }

   private:
    const BigtableStagedSink& sink_;
    const std::string table_name_;
    EnvelopeIdentities ids_;
    StagedBatch batch_;
    std::int64_t entries_ = 0;
    std::int64_t bytes_ = 0;
    std::shared_ptr<std::atomic<std::int64_t>> staged_;
    std::shared_ptr<std::atomic<std::int64_t>> staged_bytes_;
    Counter& skipped_;
  };

  explicit BigtableStagedSink(Builder b) : b_(std::move(b)) {}
  Builder b_;
  StagedBatchSerializer serializer_;
};

}  // namespace gcpstream::bigtable

#endif  // GCPSTREAM_BIGTABLE_STAGED_BIGTABLE_STAGED_SINK_H_
