#include "tests/fakes/spanner_standin.h"

#include <fmt/format.h>

#include <thread>

#include "gcpstream/spanner/client/mutation.h"

namespace gcpstream::testing {
namespace {

namespace sp = google::spanner::v1;

constexpr int kMaxAbortedRetries = 50;

std::size_t WriteCells(const sp::Mutation::Write& w) {
  return static_cast<std::size_t>(w.columns_size()) * static_cast<std::size_t>(w.values_size());
}

grpc::Status Refuse(grpc::StatusCode code, std::string message) {
  return grpc::Status(code, std::move(message));
}

}  // namespace

std::size_t StandInCells(const sp::BatchWriteRequest::MutationGroup& group) {
  std::size_t cells = 0;
  for (const auto& m : group.mutations()) {
    if (const auto* w = spanner::WriteOf(m)) {
      cells += WriteCells(*w);
    } else if (m.has_delete_()) {
      const auto& ks = m.delete_().key_set();
      cells += ks.all() ? 1 : static_cast<std::size_t>(ks.keys_size() + ks.ranges_size());
    }
  }
  return cells;
}

class SpannerStandIn::Service final : public sp::Spanner::Service {
 public:
  explicit Service(SpannerStandIn* owner) : owner_(owner) {}
  grpc::Status BatchWrite(grpc::ServerContext* context, const sp::BatchWriteRequest* request,
                          grpc::ServerWriter<sp::BatchWriteResponse>* writer) override {
    return owner_->batch_write(context, *request, writer);
  }

 private:
  SpannerStandIn* owner_;
};

absl::StatusOr<std::unique_ptr<SpannerStandIn>> SpannerStandIn::start(const std::string& emulator,
                                                                      int port) {
  std::unique_ptr<SpannerStandIn> standin(new SpannerStandIn());
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  standin->emulator_ = sp::Spanner::NewStub(
      grpc::CreateCustomChannel(emulator, grpc::InsecureChannelCredentials(), args));
  standin->service_ = std::make_unique<Service>(standin.get());
  grpc::ServerBuilder builder;
  int batch_write_port = 0;
  // gRPC listens with SO_REUSEPORT by default, so a second copy started on a port in use
  // would share it silently and take some of the calls: refuse the port instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &batch_write_port);
  // Large enough to receive, and then refuse as the service does, a request over 100 MiB.
  builder.SetMaxReceiveMessageSize(-1);
  builder.RegisterService(standin->service_.get());
  standin->server_ = builder.BuildAndStart();
  if (!standin->server_ || batch_write_port == 0) {
    return absl::UnavailableError("the BatchWrite stand-in could not listen");
  }
  auto proxy = FaultProxy::start(emulator, port);
  if (!proxy.ok()) return proxy.status();
  standin->proxy_ = *std::move(proxy);
  standin->proxy_->route("/google.spanner.v1.Spanner/BatchWrite",
                         fmt::format("127.0.0.1:{}", batch_write_port));
  return standin;
}

SpannerStandIn::~SpannerStandIn() {
  proxy_.reset();
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
}

void SpannerStandIn::set_group_hook(GroupHook hook) {
  std::lock_guard lock(mu_);
  hook_ = std::move(hook);
}

grpc::Status SpannerStandIn::batch_write(grpc::ServerContext* context,
                                         const sp::BatchWriteRequest& request,
                                         grpc::ServerWriter<sp::BatchWriteResponse>* writer) {
  batch_write_calls_++;
  const std::size_t bytes = request.ByteSizeLong();
  if (bytes > kMaxRequestBytes) {
    return Refuse(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        fmt::format("Received message larger than max ({} vs. {})", bytes, kMaxRequestBytes));
  }
  if (request.mutation_groups_size() == 0) {
    return Refuse(grpc::StatusCode::INVALID_ARGUMENT, "No mutation groups in the request.");
  }
  std::size_t cells = 0;
  for (int i = 0; i < request.mutation_groups_size(); ++i) {
    if (request.mutation_groups(i).mutations_size() == 0) {
      return Refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    fmt::format("Mutation group {} has no mutations.", i));
    }
    cells += StandInCells(request.mutation_groups(i));
  }
  if (cells > kMaxMutationCells) {
    return Refuse(grpc::StatusCode::INVALID_ARGUMENT,
                  fmt::format("The transaction contains too many mutations: {} cells, at most {}",
                              cells, kMaxMutationCells));
  }
  {
    sp::GetSessionRequest get;
    get.set_name(request.session());
    grpc::ClientContext ctx;
    ctx.set_deadline(context->deadline());
    sp::Session session;
    if (auto s = emulator_->GetSession(&ctx, get, &session); !s.ok()) return s;
  }
  GroupHook hook;
  {
    std::lock_guard lock(mu_);
    hook = hook_;
  }
  for (int i = 0; i < request.mutation_groups_size(); ++i) {
    if (context->IsCancelled()) return grpc::Status::CANCELLED;
    const auto& group = request.mutation_groups(i);
    groups_received_++;
    sp::BatchWriteResponse response;
    response.add_indexes(i);
    std::optional<absl::Status> injected = hook ? hook(group, i) : std::nullopt;
    if (injected) {
      response.mutable_status()->set_code(static_cast<int>(injected->code()));
      response.mutable_status()->set_message(std::string(injected->message()));
    } else if (!apply_groups_.load()) {
      const auto now = std::chrono::system_clock::now().time_since_epoch();
      response.mutable_commit_timestamp()->set_seconds(
          std::chrono::duration_cast<std::chrono::seconds>(now).count());
      response.mutable_commit_timestamp()->set_nanos(static_cast<int>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now).count() % 1000000000));
    } else {
      sp::CommitRequest commit;
      commit.set_session(request.session());
      auto* options = commit.mutable_single_use_transaction();
      options->mutable_read_write();
      if (request.exclude_txn_from_change_streams()) {
        options->set_exclude_txn_from_change_streams(true);
      }
      *commit.mutable_request_options() = request.request_options();
      *commit.mutable_mutations() = group.mutations();
      grpc::Status status;
      sp::CommitResponse committed;
      for (int attempt = 0;; ++attempt) {
        grpc::ClientContext ctx;
        ctx.set_deadline(context->deadline());
        committed.Clear();
        {
          // The emulator runs one read-write transaction at a time and answers another ABORTED:
          // commits through the stand-in take turns instead of colliding.
          std::lock_guard lock(commit_mu_);
          status = emulator_->Commit(&ctx, commit, &committed);
        }
        if (status.error_code() != grpc::StatusCode::ABORTED || attempt >= kMaxAbortedRetries ||
            context->IsCancelled()) {
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2 + attempt));
      }
      response.mutable_status()->set_code(static_cast<int>(status.error_code()));
      response.mutable_status()->set_message(status.error_message());
      if (status.ok()) {
        groups_applied_++;
        *response.mutable_commit_timestamp() = committed.commit_timestamp();
      }
    }
    if (!writer->Write(response)) return grpc::Status::CANCELLED;
  }
  return grpc::Status::OK;
}

}  // namespace gcpstream::testing
