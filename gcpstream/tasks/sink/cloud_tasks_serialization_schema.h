#ifndef GCPSTREAM_TASKS_SINK_CLOUD_TASKS_SERIALIZATION_SCHEMA_H_
#define GCPSTREAM_TASKS_SINK_CLOUD_TASKS_SERIALIZATION_SCHEMA_H_

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/tasks/sink/task_fields.h"
#include "google/cloud/tasks/v2/task.pb.h"

namespace gcpstream::tasks {

// Turns a record into the Task to create, or into nothing to skip it (a skip is not a failure:
// it is counted by recordsSkipped and never reaches the failure handler). The task must carry
// no name — naming is the sink's (CloudTasksSink::Builder::task_id_extractor); a named task
// fails the job as a configuration error. Runs on the writer's thread; a throw or an error
// status is a serialization failure, routed to the failed-task handler. Copyable value.
template <typename T>
class CloudTasksSerializationSchema {
 public:
  using Task = google::cloud::tasks::v2::Task;
  using Fn = std::function<absl::StatusOr<std::optional<Task>>(const T&, const SinkWriterContext&)>;

  // A schema building the whole task (any target, schedule time, dispatch deadline).
  static CloudTasksSerializationSchema of(
      std::function<std::optional<Task>(const T&, const SinkWriterContext&)> fn) {
    return CloudTasksSerializationSchema(
        [fn = std::move(fn)](const T& v,
                             const SinkWriterContext& c) -> absl::StatusOr<std::optional<Task>> {
          return fn(v, c);
        });
  }
  // The same, for a function that reports its own errors.
  static CloudTasksSerializationSchema of_status(Fn fn) {
    return CloudTasksSerializationSchema(std::move(fn));
  }

  absl::StatusOr<std::optional<Task>> serialize(const T& value,
                                                const SinkWriterContext& context) const {
    return fn_(value, context);
  }
  bool valid() const { return static_cast<bool>(fn_); }

  CloudTasksSerializationSchema() = default;

 private:
  explicit CloudTasksSerializationSchema(Fn fn) : fn_(std::move(fn)) {}
  Fn fn_;
};

// What both target conveniences share: the body, headers, schedule time and dispatch deadline.
template <typename T>
struct TaskRecipe {
  std::function<std::string(const T&)> body;
  std::function<std::map<std::string, std::string>(const T&)> headers;
  std::function<std::optional<absl::Time>(const T&)> schedule_time;
  std::optional<std::chrono::milliseconds> dispatch_deadline;
};

// The schedule time and dispatch deadline of a recipe, onto `task`.
template <typename T>
absl::Status ApplyCommon(const TaskRecipe<T>& recipe, const T& v,
                         google::cloud::tasks::v2::Task& task) {
  if (recipe.schedule_time) {
    if (std::optional<absl::Time> when = recipe.schedule_time(v)) {
      SetTimestamp(*when, *task.mutable_schedule_time());
    }
  }
  if (recipe.dispatch_deadline) {
    SetDuration(*recipe.dispatch_deadline, *task.mutable_dispatch_deadline());
  }
  return absl::OkStatus();
}

// The HTTP-target convenience: http_target<T>(url).with_body(...)...build(). Every call returns
// an updated copy. The body is sent only under POST, PUT and PATCH (the methods whose
// HttpRequest carries one); with_body is required all the same, so GET tasks are expressible.
// It never skips a record.
template <typename T>
class HttpTargetBuilder {
 public:
  explicit HttpTargetBuilder(std::string url) : url_(std::move(url)) {}

  HttpTargetBuilder with_body(std::function<std::string(const T&)> body) const {
    auto b = *this;
    b.recipe_.body = std::move(body);
    return b;
  }
  // [POST]
  HttpTargetBuilder with_method(google::cloud::tasks::v2::HttpMethod method) const {
    auto b = *this;
    b.method_ = method;
    return b;
  }
  // The URL per record instead of the fixed one.
  HttpTargetBuilder with_url(std::function<std::string(const T&)> url) const {
    auto b = *this;
    b.url_of_ = std::move(url);
    return b;
  }
  HttpTargetBuilder with_headers(
      std::function<std::map<std::string, std::string>(const T&)> headers) const {
    auto b = *this;
    b.recipe_.headers = std::move(headers);
    return b;
  }
  // An OIDC token for Cloud Run, Cloud Run functions or a handler that validates it; `audience`
  // empty = the target URL. Rejected beside with_oauth_token (the proto holds one of them).
  HttpTargetBuilder with_oidc_token(std::string service_account, std::string audience = "") const {
    auto b = *this;
    b.oidc_ = std::make_pair(std::move(service_account), std::move(audience));
    return b;
  }
  // An OAuth access token, for Google APIs on *.googleapis.com; `scope` empty = the service's
  // default (cloud-platform).
  HttpTargetBuilder with_oauth_token(std::string service_account, std::string scope = "") const {
    auto b = *this;
    b.oauth_ = std::make_pair(std::move(service_account), std::move(scope));
    return b;
  }
  // When the task should run (at most 30 days ahead; nothing = now).
  HttpTargetBuilder with_schedule_time(
      std::function<std::optional<absl::Time>(const T&)> when) const {
    auto b = *this;
    b.recipe_.schedule_time = std::move(when);
    return b;
  }
  // How long Cloud Tasks waits for the handler (15 s to 30 min; the service's default 10 min).
  HttpTargetBuilder with_dispatch_deadline(std::chrono::milliseconds deadline) const {
    auto b = *this;
    b.recipe_.dispatch_deadline = deadline;
    return b;
  }

  // INVALID_ARGUMENT naming the setting: no body, a fixed URL that is not http(s), both
  // tokens, an empty service account, a dispatch deadline out of range. A per-record URL that
  // is not http(s) fails that record (a serialization failure).
  absl::StatusOr<CloudTasksSerializationSchema<T>> build() const {
    if (!recipe_.body) {
      return absl::InvalidArgumentError("http_target needs with_body(...) (it binds the record)");
    }
    if (!url_of_) {
      if (absl::Status s = ValidateHttpUrl(url_); !s.ok()) return s;
    }
    if (oidc_ && oauth_) {
      return absl::InvalidArgumentError(
          "with_oidc_token and with_oauth_token cannot both be set: a task carries one token "
          "(OIDC for Cloud Run and IAM-protected handlers, OAuth for *.googleapis.com)");
    }
    if ((oidc_ && oidc_->first.empty()) || (oauth_ && oauth_->first.empty())) {
      return absl::InvalidArgumentError("the token's service account email must not be empty");
    }
    if (recipe_.dispatch_deadline) {
      if (absl::Status s = ValidateDispatchDeadline(*recipe_.dispatch_deadline, false); !s.ok()) {
        return s;
      }
    }
    auto self = *this;
    return CloudTasksSerializationSchema<T>::of_status(
        [self](const T& v, const SinkWriterContext&) -> absl::StatusOr<std::optional<Task>> {
          std::optional<Task> task(std::in_place);
          auto* http = task->mutable_http_request();
          http->set_http_method(self.method_);
          if (self.url_of_) {
            std::string url = self.url_of_(v);
            if (absl::Status s = ValidateHttpUrl(url); !s.ok()) return s;
            http->set_url(std::move(url));
          } else {
            http->set_url(self.url_);
          }
          if (HttpMethodCarriesBody(self.method_, false)) http->set_body(self.recipe_.body(v));
          if (self.recipe_.headers) {
            for (auto& [k, value] : self.recipe_.headers(v)) (*http->mutable_headers())[k] = value;
          }
          if (self.oidc_) {
            http->mutable_oidc_token()->set_service_account_email(self.oidc_->first);
            http->mutable_oidc_token()->set_audience(self.oidc_->second);
          }
          if (self.oauth_) {
            http->mutable_oauth_token()->set_service_account_email(self.oauth_->first);
            http->mutable_oauth_token()->set_scope(self.oauth_->second);
          }
          if (absl::Status s = ApplyCommon(self.recipe_, v, *task); !s.ok()) return s;
          return task;
        });
  }

 private:
  using Task = google::cloud::tasks::v2::Task;
  std::string url_;
  std::function<std::string(const T&)> url_of_;
  google::cloud::tasks::v2::HttpMethod method_ = google::cloud::tasks::v2::POST;
  std::optional<std::pair<std::string, std::string>> oidc_;
  std::optional<std::pair<std::string, std::string>> oauth_;
  TaskRecipe<T> recipe_;
};

template <typename T>
HttpTargetBuilder<T> http_target(std::string url) {
  return HttpTargetBuilder<T>(std::move(url));
}

// Service, version and instance of an App Engine task; empty parts are App Engine's choice. A
// queue's appEngineRoutingOverride wins over it.
struct AppEngineRoute {
  std::string service;
  std::string version;
  std::string instance;
};

// The App Engine convenience: app_engine_target<T>("/path").with_body(...)...build(). The task
// goes to the App Engine application of the queue's own project. The body is sent under POST and
// PUT only. Host, Content-Length, X-Google-* and X-AppEngine-* headers belong to Cloud Tasks and
// are refused. It never skips a record.
template <typename T>
class AppEngineTargetBuilder {
 public:
  explicit AppEngineTargetBuilder(std::string relative_uri) : uri_(std::move(relative_uri)) {}

  AppEngineTargetBuilder with_body(std::function<std::string(const T&)> body) const {
    auto b = *this;
    b.recipe_.body = std::move(body);
    return b;
  }
  // [POST]
  AppEngineTargetBuilder with_method(google::cloud::tasks::v2::HttpMethod method) const {
    auto b = *this;
    b.method_ = method;
    return b;
  }
  AppEngineTargetBuilder with_relative_uri(std::function<std::string(const T&)> uri) const {
    auto b = *this;
    b.uri_of_ = std::move(uri);
    return b;
  }
  AppEngineTargetBuilder with_headers(
      std::function<std::map<std::string, std::string>(const T&)> headers) const {
    auto b = *this;
    b.recipe_.headers = std::move(headers);
    return b;
  }
  AppEngineTargetBuilder with_routing(AppEngineRoute route) const {
    auto b = *this;
    b.route_ = std::move(route);
    b.route_of_ = nullptr;
    return b;
  }
  // Routing per record; nothing = App Engine's default.
  AppEngineTargetBuilder with_routing(
      std::function<std::optional<AppEngineRoute>(const T&)> route) const {
    auto b = *this;
    b.route_of_ = std::move(route);
    b.route_.reset();
    return b;
  }
  AppEngineTargetBuilder with_schedule_time(
      std::function<std::optional<absl::Time>(const T&)> when) const {
    auto b = *this;
    b.recipe_.schedule_time = std::move(when);
    return b;
  }
  // 15 s to 24 h for App Engine targets.
  AppEngineTargetBuilder with_dispatch_deadline(std::chrono::milliseconds deadline) const {
    auto b = *this;
    b.recipe_.dispatch_deadline = deadline;
    return b;
  }

  absl::StatusOr<CloudTasksSerializationSchema<T>> build() const {
    if (!recipe_.body) {
      return absl::InvalidArgumentError(
          "app_engine_target needs with_body(...) (it binds the record)");
    }
    if (!uri_of_) {
      if (absl::Status s = ValidateRelativeUri(uri_); !s.ok()) return s;
    }
    if (recipe_.dispatch_deadline) {
      if (absl::Status s = ValidateDispatchDeadline(*recipe_.dispatch_deadline, true); !s.ok()) {
        return s;
      }
    }
    auto self = *this;
    return CloudTasksSerializationSchema<T>::of_status(
        [self](const T& v, const SinkWriterContext&) -> absl::StatusOr<std::optional<Task>> {
          std::optional<Task> task(std::in_place);
          auto* app = task->mutable_app_engine_http_request();
          app->set_http_method(self.method_);
          if (self.uri_of_) {
            std::string uri = self.uri_of_(v);
            if (absl::Status s = ValidateRelativeUri(uri); !s.ok()) return s;
            app->set_relative_uri(std::move(uri));
          } else {
            app->set_relative_uri(self.uri_);
          }
          if (HttpMethodCarriesBody(self.method_, true)) app->set_body(self.recipe_.body(v));
          if (self.recipe_.headers) {
            for (auto& [k, value] : self.recipe_.headers(v)) {
              if (absl::Status s = ValidateAppEngineHeader(k); !s.ok()) return s;
              (*app->mutable_headers())[k] = value;
            }
          }
          std::optional<AppEngineRoute> route = self.route_of_ ? self.route_of_(v) : self.route_;
          if (route) {
            auto* r = app->mutable_app_engine_routing();
            r->set_service(route->service);
            r->set_version(route->version);
            r->set_instance(route->instance);
          }
          if (absl::Status s = ApplyCommon(self.recipe_, v, *task); !s.ok()) return s;
          return task;
        });
  }

 private:
  using Task = google::cloud::tasks::v2::Task;
  std::string uri_;
  std::function<std::string(const T&)> uri_of_;
  google::cloud::tasks::v2::HttpMethod method_ = google::cloud::tasks::v2::POST;
  std::optional<AppEngineRoute> route_;
  std::function<std::optional<AppEngineRoute>(const T&)> route_of_;
  TaskRecipe<T> recipe_;
};

template <typename T>
AppEngineTargetBuilder<T> app_engine_target(std::string relative_uri) {
  return AppEngineTargetBuilder<T>(std::move(relative_uri));
}

}  // namespace gcpstream::tasks

#endif  // GCPSTREAM_TASKS_SINK_CLOUD_TASKS_SERIALIZATION_SCHEMA_H_
