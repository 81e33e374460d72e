#include "tests/fakes/fault_proxy.h"

#include <fmt/format.h>

#include <cstdio>
#include <random>
#include <thread>

namespace gcpstream::testing {
namespace {

std::string LastComponent(const std::string& method) {
  const auto slash = method.rfind('/');
  return slash == std::string::npos ? method : method.substr(slash + 1);
}

bool Matches(const std::string& rule_method, const std::string& method) {
  return rule_method == method || rule_method == LastComponent(method);
}

grpc::Status ToGrpc(absl::StatusCode code, const std::string& message) {
  return grpc::Status(static_cast<grpc::StatusCode>(code), message);
}

// One proxied call: the server-side reactor facing the client, plus an upstream reactor
// facing the real server. Messages are pumped one at a time in each direction (the callback
// API allows one outstanding read and one outstanding write per side).
class ProxyCall final : public grpc::ServerGenericBidiReactor {
 public:
  ProxyCall(FaultProxy* proxy, grpc::GenericCallbackServerContext* ctx)
      : proxy_(proxy), ctx_(ctx), decision_(proxy->decide(ctx->method())) {
    proxy_->call_began();
    using A = FaultRule::Action;
    const auto& rule = decision_.rule;
    if (decision_.faulted && rule.action == A::kReturnStatus) {
      finish(ToGrpc(rule.code, rule.message));
      return;
    }
    if (decision_.faulted && rule.action == A::kHang) return;  // until OnCancel
    if (decision_.faulted && rule.action == A::kDelay) {
      {
        std::lock_guard lock(mu_);
        ++pending_;  // the delay thread holds the call alive
      }
      std::thread([this, delay = rule.delay] {
        std::this_thread::sleep_for(delay);
        begin();
        release();
      }).detach();
      return;
    }
    begin();
  }

  // The client's next message (or its half-close), forwarded upstream. The write hold keeps the
  // upstream stream alive until this side is done writing to it.
  void OnReadDone(bool ok) override {
    {
      std::lock_guard lock(mu_);
      if (upstream_ended_ || upstream_reads_over_ || !write_hold_) {
        release_write_hold_locked();
        return;
      }
      if (ok) writing_ = true;
    }
    if (ok) {
      upstream_->StartWrite(&request_);
    } else {
      upstream_->StartWritesDone();
      std::lock_guard lock(mu_);
      release_write_hold_locked();
    }
  }

  // A response reached the client: read the next one. The read hold keeps the upstream stream
  // alive until the read flow ends.
  void OnWriteDone(bool ok) override {
    {
      std::lock_guard lock(mu_);
      if (!ok || upstream_ended_) {
        release_read_hold_locked();
        return;
      }
    }
    upstream_->StartRead(&response_);
  }

  void OnCancel() override {
    bool started, stalled;
    {
      std::lock_guard lock(mu_);
      cancelled_ = true;
      started = upstream_started_;
      stalled = stalled_;
    }
    if (started) client_ctx_.TryCancel();
    // Before the upstream call, and while a stalled stream holds the client, nothing else
    // would finish the client's call.
    if (!started || stalled) finish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
  }

  void OnDone() override {
    {
      // Nothing more will start from this side.
      std::lock_guard lock(mu_);
      release_write_hold_locked();
      release_read_hold_locked();
    }
    release();
  }

 private:
  class Upstream final : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
   public:
    explicit Upstream(ProxyCall* call) : call_(call) {}
    void OnWriteDone(bool ok) override {
      {
        std::lock_guard lock(call_->mu_);
        call_->writing_ = false;
        if (!ok || call_->finished_ || call_->upstream_reads_over_) {
          call_->release_write_hold_locked();
          return;
        }
      }
      call_->StartRead(&call_->request_);
    }
    void OnReadDone(bool ok) override {
      if (ok) return call_->on_upstream_message();
      // The upstream sends nothing more: its call is ending. Writes still in flight finish
      // first; then both holds go, so its OnDone (with the status) can come.
      std::lock_guard lock(call_->mu_);
      call_->upstream_reads_over_ = true;
      call_->release_read_hold_locked();
      if (!call_->writing_) call_->release_write_hold_locked();
    }
    void OnDone(const grpc::Status& status) override { call_->on_upstream_done(status); }

   private:
    ProxyCall* call_;
  };

  void begin() {
    {
      std::lock_guard lock(mu_);
      if (!cancelled_) {
        ++pending_;  // the upstream call
        upstream_started_ = true;
      }
    }
    if (!upstream_started_) {
      finish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled during the delay"));
      return;
    }
    for (const auto& [key, value] : ctx_->client_metadata()) {
      std::string k(key.data(), key.size());
      if (k.empty() || k[0] == ':' || k.rfind("grpc-", 0) == 0 || k == "content-type" ||
          k == "te" || k == "user-agent") {
        continue;
      }
      client_ctx_.AddMetadata(k, std::string(value.data(), value.size()));
    }
    client_ctx_.set_deadline(ctx_->deadline());
    upstream_ = std::make_unique<Upstream>(this);
    proxy_->stub(ctx_->method())
        .PrepareBidiStreamingCall(&client_ctx_, ctx_->method(), grpc::StubOptions(),
                                  upstream_.get());
    // Writes (from this side's OnReadDone) and reads after the first (from its OnWriteDone) are
    // started outside the upstream's own reactions, so each flow holds the upstream stream:
    // without a hold, gRPC may finish and destroy it between a check and the call.
    {
      std::lock_guard lock(mu_);
      write_hold_ = read_hold_ = true;
    }
    upstream_->AddMultipleHolds(2);
    upstream_->StartRead(&response_);
    upstream_->StartCall();
    StartRead(&request_);
  }

  void on_upstream_message() {
    using A = FaultRule::Action;
    ++responses_;
    if (decision_.faulted && decision_.rule.action == A::kForwardThenFail) {
      upstream_->StartRead(&response_);  // the server applied it; its answer is dropped
      return;
    }
    if (decision_.faulted && decision_.rule.action == A::kCutStream &&
        responses_ > decision_.rule.cut_after) {
      {
        std::lock_guard lock(mu_);
        upstream_ended_ = true;
      }
      client_ctx_.TryCancel();
      {
        std::lock_guard lock(mu_);
        release_read_hold_locked();  // no more reads: the stream was cut
      }
      finish(ToGrpc(decision_.rule.code, decision_.rule.message));
      return;
    }
    if (decision_.faulted && decision_.rule.action == A::kStallStream &&
        responses_ > decision_.rule.cut_after) {
      bool cancelled;
      {
        std::lock_guard lock(mu_);
        upstream_ended_ = true;
        stalled_ = true;
        cancelled = cancelled_;
        release_read_hold_locked();  // no more reads: the stream stalls
      }
      client_ctx_.TryCancel();
      if (cancelled) finish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
      return;  // the client's call is finished by OnCancel
    }
    StartWrite(&response_);
  }

  void on_upstream_done(const grpc::Status& status) {
    {
      std::lock_guard lock(mu_);
      upstream_ended_ = true;
    }
    bool stalled;
    {
      std::lock_guard lock(mu_);
      stalled = stalled_;
    }
    if (stalled) {
      // OnCancel finishes the client's call.
    } else if (decision_.faulted && decision_.rule.action == FaultRule::Action::kForwardThenFail) {
      finish(ToGrpc(decision_.rule.code, decision_.rule.message));
    } else {
      finish(status);
    }
    release();
  }

  // Finishes the client's call once; a reference is held across Finish() so that an OnDone
  // running meanwhile cannot delete the call under us.
  void finish(const grpc::Status& status) {
    {
      std::lock_guard lock(mu_);
      if (finished_) return;
      finished_ = true;
      ++pending_;
    }
    Finish(status);
    release();
  }

  // Each hold goes once; RemoveHold never runs OnDone inline, so holding mu_ here is safe.
  void release_write_hold_locked() {
    if (!write_hold_) return;
    write_hold_ = false;
    upstream_->RemoveHold();
  }
  void release_read_hold_locked() {
    if (!read_hold_) return;
    read_hold_ = false;
    upstream_->RemoveHold();
  }

  // The call is deleted when the server side and (if started) the upstream side are both done.
  void release() {
    bool last;
    {
      std::lock_guard lock(mu_);
      last = --pending_ == 0;
    }
    if (!last) return;
    // Counted as freed only once its members (the upstream call and its context) are gone.
    FaultProxy* proxy = proxy_;
    delete this;
    proxy->call_freed();
  }

  FaultProxy* proxy_;
  grpc::GenericCallbackServerContext* ctx_;
  FaultProxy::Decision decision_;
  grpc::ClientContext client_ctx_;
  std::unique_ptr<Upstream> upstream_;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
  int responses_ = 0;
  std::mutex mu_;
  int pending_ = 1;  // the server side
  bool finished_ = false;
  bool cancelled_ = false;
  bool upstream_started_ = false;
  bool upstream_ended_ = false;
  bool stalled_ = false;
  bool write_hold_ = false;  // the upstream's holds, taken in begin()
  bool read_hold_ = false;
  bool writing_ = false;              // a client message is being written upstream
  bool upstream_reads_over_ = false;  // the upstream's read flow ended
};

}  // namespace

class FaultProxy::Service final : public grpc::CallbackGenericService {
 public:
  explicit Service(FaultProxy* proxy) : proxy_(proxy) {}
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    return new ProxyCall(proxy_, ctx);
  }

 private:
  FaultProxy* proxy_;
};

absl::StatusOr<std::unique_ptr<FaultProxy>> FaultProxy::start(const std::string& upstream,
                                                              int port) {
  std::unique_ptr<FaultProxy> proxy(new FaultProxy());
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  proxy->upstream_ = grpc::CreateCustomChannel(upstream, grpc::InsecureChannelCredentials(), args);
  proxy->stub_ = std::make_unique<grpc::GenericStub>(proxy->upstream_);
  proxy->service_ = std::make_unique<Service>(proxy.get());
  grpc::ServerBuilder builder;
  // gRPC listens with SO_REUSEPORT by default, so a second copy started on a port in use
  // would share it silently and take some of the calls: refuse the port instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(fmt::format("127.0.0.1:{}", port), grpc::InsecureServerCredentials(),
                           &proxy->port_);
  builder.SetMaxReceiveMessageSize(-1);
  builder.RegisterCallbackGenericService(proxy->service_.get());
  proxy->server_ = builder.BuildAndStart();
  if (!proxy->server_ || proxy->port_ == 0) {
    return absl::UnavailableError(
        fmt::format("fault proxy could not listen on port {} (is it in use?)", port));
  }
  return proxy;
}

FaultProxy::~FaultProxy() {
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  // Shutdown cancels the calls still open, and each cancels its upstream half; wait for both
  // halves, whose last callbacks may still be queued on gRPC's threads.
  // Never returns before they are: a call (or a delay rule's thread) would use the freed proxy.
  std::unique_lock lock(calls_mu_);
  while (!calls_cv_.wait_for(lock, std::chrono::seconds(30), [this] { return live_calls_ == 0; })) {
    std::fprintf(stderr, "fault proxy: %d proxied call(s) still open after shutdown; waiting\n",
                 live_calls_);
  }
}

std::string FaultProxy::endpoint() const { return fmt::format("127.0.0.1:{}", port_); }

void FaultProxy::route(const std::string& method, const std::string& upstream) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  auto channel = grpc::CreateCustomChannel(upstream, grpc::InsecureChannelCredentials(), args);
  std::lock_guard lock(mu_);
  routes_[method] = std::make_unique<grpc::GenericStub>(std::move(channel));
}

grpc::GenericStub& FaultProxy::stub(const std::string& method) {
  std::lock_guard lock(mu_);
  if (auto it = routes_.find(method); it != routes_.end()) return *it->second;
  return *stub_;
}

void FaultProxy::call_began() {
  std::lock_guard lock(calls_mu_);
  ++live_calls_;
}

void FaultProxy::call_freed() {
  // Notified under the lock: once the count reads zero the destructor may free calls_cv_.
  std::lock_guard lock(calls_mu_);
  if (--live_calls_ == 0) calls_cv_.notify_all();
}

void FaultProxy::add_rule(FaultRule rule) {
  std::lock_guard lock(mu_);
  rules_.push_back({std::move(rule), 0, 0});
}

void FaultProxy::clear_rules() {
  std::lock_guard lock(mu_);
  rules_.clear();
}

int FaultProxy::calls(const std::string& method) const {
  std::lock_guard lock(mu_);
  int n = 0;
  for (const auto& [m, count] : calls_) {
    if (Matches(method, m)) n += count;
  }
  return n;
}

FaultProxy::Decision FaultProxy::decide(const std::string& method) {
  static thread_local std::mt19937 random(std::random_device{}());
  std::lock_guard lock(mu_);
  calls_[method]++;
  // Every matching rule counts the call (so `nth` is the method's call number for each rule);
  // the first rule that hits decides.
  Decision decision;
  for (auto& active : rules_) {
    if (!Matches(active.rule.method, method)) continue;
    ++active.matched;
    if (decision.faulted) continue;
    if (active.rule.times >= 0 && active.applied >= active.rule.times) continue;
    const bool hit = active.rule.nth > 0 ? active.matched == active.rule.nth
                                         : std::uniform_real_distribution<double>(0, 1)(random) <
                                               active.rule.fraction;
    if (!hit) continue;
    ++active.applied;
    faults_++;
    decision = {true, active.rule};
  }
  return decision;
}

}  // namespace gcpstream::testing
