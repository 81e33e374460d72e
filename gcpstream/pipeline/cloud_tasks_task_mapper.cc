#include "gcpstream/pipeline/cloud_tasks_task_mapper.h"

#include <fmt/format.h>

#include "gcpstream/api/status_macros.h"
#include "gcpstream/tasks/sink/task_fields.h"

namespace gcpstream::pipeline {

namespace v2 = google::cloud::tasks::v2;

absl::StatusOr<CloudTasksTaskMapper> CloudTasksTaskMapper::make(const CloudTasksMappingSpec& spec) {
  CloudTasksTaskMapper m;
  m.spec_ = spec;
  if (!v2::HttpMethod_Parse(spec.method, &m.method_)) {
    return absl::InvalidArgumentError(fmt::format("unknown HTTP method '{}'", spec.method));
  }
  const bool app_engine = spec.relative_uri.has_value();
  GCP_ASSIGN_OR_RETURN(
      m.target_, RecordTemplate::parse(app_engine ? *spec.relative_uri : spec.url.value_or("")));
  for (const auto& [name, text] : spec.headers) {
    if (app_engine) {
      GCP_RETURN_IF_ERROR(tasks::ValidateAppEngineHeader(name));
    }
    GCP_ASSIGN_OR_RETURN(RecordTemplate t, RecordTemplate::parse(text));
    m.headers_.emplace_back(name, std::move(t));
  }
  if (spec.task_id) {
    GCP_ASSIGN_OR_RETURN(m.task_id_, RecordTemplate::parse(*spec.task_id));
  }
  if (spec.dispatch_deadline) {
    GCP_RETURN_IF_ERROR(tasks::ValidateDispatchDeadline(*spec.dispatch_deadline, app_engine));
  }
  if (spec.oidc_token && spec.oauth_token) {
    return absl::InvalidArgumentError(
        "oidc_token and oauth_token cannot both be set: a task carries one token");
  }
  return m;
}

absl::StatusOr<v2::Task> CloudTasksTaskMapper::map(const PipelineRecord& record) const {
  v2::Task task;
  const bool app_engine = spec_.relative_uri.has_value();
  std::string body;
  if (tasks::HttpMethodCarriesBody(method_, app_engine)) {
    if (spec_.body_field) {
      auto it = record.fields.find(*spec_.body_field);
      if (it == record.fields.end()) {
        return absl::InvalidArgumentError(
            fmt::format("the record has no body field '{}'", *spec_.body_field));
      }
      body = FieldText(*it);
    } else {
      body = record.fields.dump();
    }
  }
  GCP_ASSIGN_OR_RETURN(std::string target, target_->render(record));
  google::protobuf::Map<std::string, std::string>* headers = nullptr;
  if (app_engine) {
    GCP_RETURN_IF_ERROR(tasks::ValidateRelativeUri(target));
    auto* a = task.mutable_app_engine_http_request();
    a->set_http_method(method_);
    a->set_relative_uri(std::move(target));
    a->set_body(std::move(body));
    headers = a->mutable_headers();
  } else {
    GCP_RETURN_IF_ERROR(tasks::ValidateHttpUrl(target));
    auto* h = task.mutable_http_request();
    h->set_http_method(method_);
    h->set_url(std::move(target));
    h->set_body(std::move(body));
    if (spec_.oidc_token) {
      h->mutable_oidc_token()->set_service_account_email(spec_.oidc_token->first);
      h->mutable_oidc_token()->set_audience(spec_.oidc_token->second);
    }
    if (spec_.oauth_token) {
      h->mutable_oauth_token()->set_service_account_email(spec_.oauth_token->first);
      h->mutable_oauth_token()->set_scope(spec_.oauth_token->second);
    }
    headers = h->mutable_headers();
  }
  for (const auto& [name, tmpl] : headers_) {
    GCP_ASSIGN_OR_RETURN((*headers)[name], tmpl.render(record));
  }
  if (spec_.dispatch_deadline) {
    tasks::SetDuration(*spec_.dispatch_deadline, *task.mutable_dispatch_deadline());
  }
  return task;
}

absl::StatusOr<std::optional<std::string>> CloudTasksTaskMapper::task_key(
    const PipelineRecord& record) const {
  if (!task_id_) return std::optional<std::string>();
  GCP_ASSIGN_OR_RETURN(std::string key, task_id_->render(record));
  return std::optional<std::string>(std::move(key));
}

}  // namespace gcpstream::pipeline
