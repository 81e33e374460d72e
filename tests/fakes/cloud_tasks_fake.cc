#include "tests/fakes/cloud_tasks_fake.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "google/protobuf/util/time_util.h"

namespace gcpstream::testing {

namespace v2 = google::cloud::tasks::v2;
using google::protobuf::util::TimeUtil;

namespace {

// The documented limits (v2 reference: CreateTask, Task, HttpRequest, AppEngineHttpRequest).
constexpr std::size_t kMaxTaskBytes = 100 * 1024;
constexpr std::size_t kMaxUrlChars = 2083;
constexpr std::size_t kMaxTaskIdChars = 500;
constexpr std::size_t kMaxQueueIdChars = 100;

grpc::Status Error(grpc::StatusCode code, std::string message) {
  return grpc::Status(code, std::move(message));
}

bool IdChars(std::string_view s, std::string_view extra) {
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           extra.find(c) != std::string_view::npos;
  });
}

// "projects/P/locations/L/queues/Q" with valid ids.
bool IsQueueName(std::string_view name) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    const std::size_t slash = name.find('/', start);
    parts.push_back(name.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return parts.size() == 6 && parts[0] == "projects" && parts[2] == "locations" &&
         parts[4] == "queues" && !parts[1].empty() && IdChars(parts[1], "-:.") &&
         !parts[3].empty() && IdChars(parts[3], "-") && !parts[5].empty() &&
         parts[5].size() <= kMaxQueueIdChars && IdChars(parts[5], "-");
}

// HttpRequest.http_method / AppEngineHttpRequest.http_method: "defaults to POST" when unset.
bool CarriesBody(v2::HttpMethod m, bool app_engine) {
  return m == v2::HTTP_METHOD_UNSPECIFIED || m == v2::POST || m == v2::PUT ||
         (!app_engine && m == v2::PATCH);
}

absl::Time ToTime(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}
google::protobuf::Timestamp FromTime(absl::Time t) {
  return TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

// The task as the BASIC view shows it: no bodies, no headers.
v2::Task View(const v2::Task& full, v2::Task::View view) {
  if (view == v2::Task::FULL) return full;
  v2::Task t = full;
  t.set_view(v2::Task::BASIC);
  if (t.has_http_request()) {
    t.mutable_http_request()->clear_body();
    t.mutable_http_request()->clear_headers();
  }
  if (t.has_app_engine_http_request()) {
    t.mutable_app_engine_http_request()->clear_body();
    t.mutable_app_engine_http_request()->clear_headers();
  }
  return t;
}

grpc::Status CheckTarget(const v2::Task& t) {
  if (t.has_http_request()) {
    const auto& h = t.http_request();
    if (!(h.url().rfind("http://", 0) == 0 || h.url().rfind("https://", 0) == 0)) {
      return Error(grpc::INVALID_ARGUMENT, "HttpRequest.url must start with http:// or https://");
    }
    if (h.url().size() > kMaxUrlChars) {
      return Error(grpc::INVALID_ARGUMENT, "HttpRequest.url is longer than 2083 characters");
    }
    if (!h.body().empty() && !CarriesBody(h.http_method(), false)) {
      return Error(grpc::INVALID_ARGUMENT,
                   "a body is allowed only with the POST, PUT and PATCH methods");
    }
    if (t.has_dispatch_deadline()) {
      const double s = t.dispatch_deadline().seconds() + t.dispatch_deadline().nanos() / 1e9;
      if (s < 15 || s > 30 * 60) {
        return Error(grpc::INVALID_ARGUMENT,
                     "dispatch_deadline must be between 15 seconds and 30 minutes");
      }
    }
    return grpc::Status::OK;
  }
  if (t.has_app_engine_http_request()) {
    const auto& a = t.app_engine_http_request();
    const std::string& uri = a.relative_uri();
    if ((!uri.empty() && uri[0] != '/') || uri.size() > kMaxUrlChars ||
        uri.find_first_of(" #") != std::string::npos) {
      return Error(grpc::INVALID_ARGUMENT,
                   "AppEngineHttpRequest.relative_uri must start with '/' and hold a path and "
                   "query only, at most 2083 characters");
    }
    if (!a.body().empty() && !CarriesBody(a.http_method(), true)) {
      return Error(grpc::INVALID_ARGUMENT, "a body is allowed only with the POST and PUT methods");
    }
    for (const auto& [name, value] : a.headers()) {
      std::string lower = name;
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (lower == "host" || lower == "content-length" || lower.rfind("x-google-", 0) == 0 ||
          lower.rfind("x-appengine-", 0) == 0) {
        return Error(grpc::INVALID_ARGUMENT, "header " + name + " cannot be set");
      }
    }
    if (t.has_dispatch_deadline()) {
      const double s = t.dispatch_deadline().seconds() + t.dispatch_deadline().nanos() / 1e9;
      if (s < 15 || s > 24 * 3600) {
        return Error(grpc::INVALID_ARGUMENT,
                     "dispatch_deadline must be between 15 seconds and 24 hours");
      }
    }
    return grpc::Status::OK;
  }
  return Error(grpc::INVALID_ARGUMENT, "the task has no http_request or app_engine_http_request");
}

}  // namespace

struct CloudTasksFake::State {
  mutable std::mutex mu;
  CloudTasksFakeOptions options;
  struct QueueState {
    v2::Queue queue;
    std::vector<std::string> order;  // task names in creation order
    std::map<std::string, v2::Task> tasks;
  };
  std::map<std::string, QueueState> queues;
  std::map<std::string, absl::Time> released;  // task name -> when it was deleted or executed
  std::int64_t calls = 0;
  std::int64_t refused = 0;
  std::int64_t created = 0;
  int serving = 0;
  int peak = 0;
  double tokens = 0;
  std::chrono::steady_clock::time_point refill = std::chrono::steady_clock::now();
  std::mt19937_64 random{std::random_device{}()};

  absl::Time now() const { return options.clock ? options.clock() : absl::Now(); }

  // Under mu: whether `name` is held by a task or by its retention window.
  bool name_taken(const std::string& name, absl::Time at) {
    auto r = released.find(name);
    if (r != released.end()) {
      if (at - r->second < options.name_retention) return true;
      released.erase(r);
    }
    return false;
  }
  void release(const std::string& name) { released[name] = now(); }
};

namespace {

class Service final : public v2::CloudTasks::Service {
 public:
  explicit Service(std::shared_ptr<CloudTasksFake::State> s) : s_(std::move(s)) {}

  grpc::Status CreateQueue(grpc::ServerContext*, const v2::CreateQueueRequest* r,
                           v2::Queue* out) override {
    const std::string& name = r->queue().name();
    if (!IsQueueName(name) || name.rfind(r->parent() + "/queues/", 0) != 0) {
      return Error(grpc::INVALID_ARGUMENT,
                   "queue.name must be projects/P/locations/L/queues/Q under the parent");
    }
    std::lock_guard lock(s_->mu);
    if (s_->queues.count(name) != 0) return Error(grpc::ALREADY_EXISTS, "Queue already exists.");
    auto& q = s_->queues[name];
    q.queue = r->queue();
    q.queue.set_state(v2::Queue::RUNNING);
    *out = q.queue;
    return grpc::Status::OK;
  }
  grpc::Status GetQueue(grpc::ServerContext*, const v2::GetQueueRequest* r,
                        v2::Queue* out) override {
    return WithQueue(r->name(), [&](CloudTasksFake::State::QueueState& q) {
      *out = q.queue;
      return grpc::Status::OK;
    });
  }
  grpc::Status ListQueues(grpc::ServerContext*, const v2::ListQueuesRequest* r,
                          v2::ListQueuesResponse* out) override {
    std::lock_guard lock(s_->mu);
    for (const auto& [name, q] : s_->queues) {
      if (name.rfind(r->parent() + "/queues/", 0) == 0) *out->add_queues() = q.queue;
    }
    return grpc::Status::OK;
  }
  grpc::Status DeleteQueue(grpc::ServerContext*, const v2::DeleteQueueRequest* r,
                           google::protobuf::Empty*) override {
    std::lock_guard lock(s_->mu);
    auto it = s_->queues.find(r->name());
    if (it == s_->queues.end()) return Error(grpc::NOT_FOUND, "Queue does not exist.");
    for (const auto& [task, unused] : it->second.tasks) s_->release(task);
    s_->queues.erase(it);
    return grpc::Status::OK;
  }
  grpc::Status PurgeQueue(grpc::ServerContext*, const v2::PurgeQueueRequest* r,
                          v2::Queue* out) override {
    return WithQueue(r->name(), [&](CloudTasksFake::State::QueueState& q) {
      for (const auto& [task, unused] : q.tasks) s_->release(task);
      q.tasks.clear();
      q.order.clear();
      *q.queue.mutable_purge_time() = FromTime(s_->now());
      *out = q.queue;
      return grpc::Status::OK;
    });
  }
  grpc::Status PauseQueue(grpc::ServerContext*, const v2::PauseQueueRequest* r,
                          v2::Queue* out) override {
    return SetState(r->name(), v2::Queue::PAUSED, out);
  }
  grpc::Status ResumeQueue(grpc::ServerContext*, const v2::ResumeQueueRequest* r,
                           v2::Queue* out) override {
    return SetState(r->name(), v2::Queue::RUNNING, out);
  }

  grpc::Status CreateTask(grpc::ServerContext*, const v2::CreateTaskRequest* r,
                          v2::Task* out) override {
    CloudTasksFakeOptions o;
    std::int64_t call = 0;
    {
      std::lock_guard lock(s_->mu);
      o = s_->options;
      call = ++s_->calls;
      ++s_->serving;
      s_->peak = std::max(s_->peak, s_->serving);
      if (o.max_concurrent_creates > 0 && s_->serving > o.max_concurrent_creates) {
        --s_->serving;
        ++s_->refused;
        return Error(grpc::RESOURCE_EXHAUSTED, "too many concurrent requests (fake limit)");
      }
      if (o.max_creates_per_second > 0) {
        const auto now = std::chrono::steady_clock::now();
        const double elapsed = std::chrono::duration<double>(now - s_->refill).count();
        s_->refill = now;
        // The bucket holds one second's worth, and at least one call (so rates below 1/s pass).
        s_->tokens = std::min(std::max(1.0, o.max_creates_per_second),
                              s_->tokens + elapsed * o.max_creates_per_second);
        if (s_->tokens < 1) {
          --s_->serving;
          ++s_->refused;
          return Error(grpc::RESOURCE_EXHAUSTED, "quota exceeded (fake rate limit)");
        }
        s_->tokens -= 1;
      }
    }
    if (o.create_latency.count() > 0) std::this_thread::sleep_for(o.create_latency);
    grpc::Status status;
    if (o.unavailable_on_call > 0 && call == o.unavailable_on_call) {
      status = Error(grpc::UNAVAILABLE, "the service is unavailable (fake fault)");
    } else {
      status = Apply(*r, out);
      if (status.ok() && o.lose_answer_every > 0 && call % o.lose_answer_every == 0) {
        status = Error(grpc::DEADLINE_EXCEEDED, "the answer was lost (fake fault)");
      }
    }
    std::lock_guard lock(s_->mu);
    --s_->serving;
    return status;
  }

  grpc::Status GetTask(grpc::ServerContext*, const v2::GetTaskRequest* r, v2::Task* out) override {
    std::lock_guard lock(s_->mu);
    const v2::Task* t = Find(r->name());
    if (t == nullptr) return Error(grpc::NOT_FOUND, "Task does not exist.");
    *out = View(*t, r->response_view());
    return grpc::Status::OK;
  }
  grpc::Status ListTasks(grpc::ServerContext*, const v2::ListTasksRequest* r,
                         v2::ListTasksResponse* out) override {
    return WithQueue(r->parent(), [&](CloudTasksFake::State::QueueState& q) {
      if (r->page_size() < 0 || r->page_size() > 1000) {
        return Error(grpc::INVALID_ARGUMENT, "page_size must be between 0 and 1000");
      }
      const std::size_t size = r->page_size() == 0 ? 1000 : r->page_size();
      std::size_t start = 0;
      if (!r->page_token().empty()) {
        try {
          start = std::stoul(r->page_token());
        } catch (...) {
          return Error(grpc::INVALID_ARGUMENT, "invalid page_token");
        }
      }
      for (std::size_t i = start; i < q.order.size() && i < start + size; ++i) {
        *out->add_tasks() = View(q.tasks.at(q.order[i]), r->response_view());
      }
      if (start + size < q.order.size()) out->set_next_page_token(std::to_string(start + size));
      return grpc::Status::OK;
    });
  }
  grpc::Status DeleteTask(grpc::ServerContext*, const v2::DeleteTaskRequest* r,
                          google::protobuf::Empty*) override {
    std::lock_guard lock(s_->mu);
    return Remove(r->name(), nullptr);
  }
  grpc::Status RunTask(grpc::ServerContext*, const v2::RunTaskRequest* r, v2::Task* out) override {
    std::lock_guard lock(s_->mu);
    v2::Task ran;
    grpc::Status s = Remove(r->name(), &ran);
    if (!s.ok()) return s;
    ran.set_dispatch_count(ran.dispatch_count() + 1);
    *out = View(ran, r->response_view());
    return grpc::Status::OK;
  }

 private:
  template <typename F>
  grpc::Status WithQueue(const std::string& name, F&& f) {
    std::lock_guard lock(s_->mu);
    auto it = s_->queues.find(name);
    if (it == s_->queues.end()) return Error(grpc::NOT_FOUND, "Queue does not exist.");
    return f(it->second);
  }
  grpc::Status SetState(const std::string& name, v2::Queue::State state, v2::Queue* out) {
    return WithQueue(name, [&](CloudTasksFake::State::QueueState& q) {
      q.queue.set_state(state);
      *out = q.queue;
      return grpc::Status::OK;
    });
  }
  // Under mu.
  const v2::Task* Find(const std::string& name) {
    const std::size_t at = name.rfind("/tasks/");
    if (at == std::string::npos) return nullptr;
    auto q = s_->queues.find(name.substr(0, at));
    if (q == s_->queues.end()) return nullptr;
    auto t = q->second.tasks.find(name);
    return t == q->second.tasks.end() ? nullptr : &t->second;
  }
  // Under mu: removes a task, reserving its name.
  grpc::Status Remove(const std::string& name, v2::Task* removed) {
    const std::size_t at = name.rfind("/tasks/");
    auto q = at == std::string::npos ? s_->queues.end() : s_->queues.find(name.substr(0, at));
    if (q == s_->queues.end() || q->second.tasks.count(name) == 0) {
      return Error(grpc::NOT_FOUND, "Task does not exist.");
    }
    if (removed != nullptr) *removed = q->second.tasks[name];
    q->second.tasks.erase(name);
    auto& order = q->second.order;
    order.erase(std::find(order.begin(), order.end(), name));
    s_->release(name);
    return grpc::Status::OK;
  }

  grpc::Status Apply(const v2::CreateTaskRequest& r, v2::Task* out) {
    v2::Task t = r.task();
    std::lock_guard lock(s_->mu);
    auto q = s_->queues.find(r.parent());
    if (q == s_->queues.end()) {
      if (!IsQueueName(r.parent())) {
        return Error(grpc::INVALID_ARGUMENT,
                     "parent must be projects/PROJECT_ID/locations/LOCATION_ID/queues/QUEUE_ID");
      }
      return Error(grpc::NOT_FOUND, "Queue does not exist.");
    }
    if (t.ByteSizeLong() > kMaxTaskBytes) {
      return Error(
          grpc::INVALID_ARGUMENT,
          fmt::format("Task size too large: {} bytes (the maximum is 100KB)", t.ByteSizeLong()));
    }
    if (grpc::Status s = CheckTarget(t); !s.ok()) return s;
    const absl::Time now = s_->now();
    if (t.has_schedule_time() && ToTime(t.schedule_time()) > now + absl::Hours(24 * 30)) {
      return Error(grpc::INVALID_ARGUMENT, "schedule_time is more than 30 days in the future");
    }
    if (t.name().empty()) {
      do {
        t.set_name(r.parent() + "/tasks/" +
                   std::to_string(s_->random() % 9'000'000'000'000'000'000ULL +
                                  1'000'000'000'000'000'000ULL));
      } while (q->second.tasks.count(t.name()) != 0);
    } else {
      const std::string prefix = r.parent() + "/tasks/";
      const std::string id =
          t.name().rfind(prefix, 0) == 0 ? t.name().substr(prefix.size()) : std::string();
      if (id.empty() || id.size() > kMaxTaskIdChars || !IdChars(id, "-_")) {
        return Error(grpc::INVALID_ARGUMENT,
                     "task name must be PARENT/tasks/TASK_ID with TASK_ID of at most 500 "
                     "letters, digits, hyphens or underscores");
      }
      if (q->second.tasks.count(t.name()) != 0 || s_->name_taken(t.name(), now)) {
        return Error(grpc::ALREADY_EXISTS, "Requested entity already exists");
      }
    }
    // AppEngineRouting.host is output only: the service ignores what a caller sends and fills
    // in the host it dispatches to.
    if (t.has_app_engine_http_request()) {
      auto* routing = t.mutable_app_engine_http_request()->mutable_app_engine_routing();
      std::string host = routing->instance();
      for (const std::string* part : {&routing->version(), &routing->service()}) {
        if (!part->empty()) host += (host.empty() ? "" : ".") + *part;
      }
      const std::string project = r.parent().substr(9, r.parent().find('/', 9) - 9);
      routing->set_host((host.empty() ? "" : host + ".") + project + ".appspot.com");
    }
    *t.mutable_create_time() = FromTime(now);
    if (!t.has_schedule_time() || ToTime(t.schedule_time()) < now) {
      *t.mutable_schedule_time() = FromTime(now);
    }
    if (!t.has_dispatch_deadline() && t.has_http_request()) {
      t.mutable_dispatch_deadline()->set_seconds(600);
    }
    t.set_view(v2::Task::FULL);
    q->second.order.push_back(t.name());
    *out = View(t, r.response_view());
    q->second.tasks.emplace(t.name(), std::move(t));
    ++s_->created;
    return grpc::Status::OK;
  }

  std::shared_ptr<CloudTasksFake::State> s_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CloudTasksFake>> CloudTasksFake::Start(CloudTasksFakeOptions options,
                                                                      int port,
                                                                      const std::string& host) {
  std::unique_ptr<CloudTasksFake> fake(new CloudTasksFake());
  fake->state_ = std::make_shared<State>();
  fake->state_->options = std::move(options);
  fake->state_->tokens = fake->state_->options.max_creates_per_second;
  fake->service_ = std::make_unique<Service>(fake->state_);
  grpc::ServerBuilder builder;
  int bound = 0;
  // gRPC listens with SO_REUSEPORT by default, so a second copy started on a port in use
  // would share it silently and take some of the calls: refuse the port instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(fmt::format("{}:{}", host, port), grpc::InsecureServerCredentials(),
                           &bound);
  builder.RegisterService(fake->service_.get());
  // Any size reaches CreateTask, which answers an oversized task INVALID_ARGUMENT as the
  // service does (instead of the transport's RESOURCE_EXHAUSTED).
  builder.SetMaxReceiveMessageSize(-1);
  fake->server_ = builder.BuildAndStart();
  if (!fake->server_ || bound == 0) {
    return absl::UnavailableError(
        fmt::format("the Cloud Tasks fake could not listen on {}:{} (is it in use?)", host, port));
  }
  fake->endpoint_ = fmt::format("{}:{}", host, bound);
  return fake;
}

CloudTasksFake::~CloudTasksFake() { shutdown(); }

void CloudTasksFake::shutdown() {
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_->Wait();
    server_.reset();
  }
}

std::string CloudTasksFake::endpoint() const { return endpoint_; }

void CloudTasksFake::set_options(CloudTasksFakeOptions options) {
  std::lock_guard lock(state_->mu);
  state_->options = std::move(options);
}

absl::Status CloudTasksFake::add_queue(const std::string& queue_name) {
  if (!IsQueueName(queue_name)) {
    return absl::InvalidArgumentError("not a queue name: " + queue_name);
  }
  std::lock_guard lock(state_->mu);
  if (state_->queues.count(queue_name) != 0) {
    return absl::AlreadyExistsError("queue exists: " + queue_name);
  }
  auto& q = state_->queues[queue_name];
  q.queue.set_name(queue_name);
  q.queue.set_state(v2::Queue::RUNNING);
  return absl::OkStatus();
}

std::vector<CloudTasksFake::Task> CloudTasksFake::tasks(const std::string& queue_name) const {
  std::lock_guard lock(state_->mu);
  std::vector<Task> out;
  auto q = state_->queues.find(queue_name);
  if (q == state_->queues.end()) return out;
  for (const auto& name : q->second.order) out.push_back(q->second.tasks.at(name));
  return out;
}

std::int64_t CloudTasksFake::create_calls() const {
  std::lock_guard lock(state_->mu);
  return state_->calls;
}
int CloudTasksFake::peak_concurrent_creates() const {
  std::lock_guard lock(state_->mu);
  return state_->peak;
}
std::int64_t CloudTasksFake::refused_calls() const {
  std::lock_guard lock(state_->mu);
  return state_->refused;
}
std::int64_t CloudTasksFake::tasks_created() const {
  std::lock_guard lock(state_->mu);
  return state_->created;
}

}  // namespace gcpstream::testing
