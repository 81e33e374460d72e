#include "gcpstream/tasks/admin/queue_admin.h"

#include "gcpstream/connector/grpc_status.h"

namespace gcpstream::tasks {

namespace v2 = google::cloud::tasks::v2;

namespace {
template <typename Response>
absl::StatusOr<Response> Answer(const grpc::Status& status, Response response) {
  if (!status.ok()) return connector::FromGrpcStatus(status);
  return response;
}
}  // namespace

QueueAdmin::QueueAdmin(std::shared_ptr<grpc::Channel> channel, std::chrono::milliseconds timeout)
    : stub_(v2::CloudTasks::NewStub(std::move(channel))), timeout_(timeout) {}

void QueueAdmin::prepare(grpc::ClientContext& context) const {
  context.set_deadline(std::chrono::system_clock::now() + timeout_);
}

absl::StatusOr<QueueAdmin::Queue> QueueAdmin::create_queue(const connector::QueueDestination& q) {
  grpc::ClientContext context;
  prepare(context);
  v2::CreateQueueRequest request;
  request.set_parent("projects/" + q.project + "/locations/" + q.location);
  request.mutable_queue()->set_name(q.resource_name());
  Queue response;
  grpc::Status s = stub_->CreateQueue(&context, request, &response);
  return Answer(s, std::move(response));
}

namespace {
template <typename Request, typename Response, typename Call>
absl::StatusOr<Response> ByName(const std::string& name, Call call) {
  Request request;
  request.set_name(name);
  Response response;
  grpc::Status s = call(request, response);
  return Answer(s, std::move(response));
}
}  // namespace

absl::StatusOr<QueueAdmin::Queue> QueueAdmin::get_queue(const connector::QueueDestination& q) {
  grpc::ClientContext c;
  prepare(c);
  return ByName<v2::GetQueueRequest, Queue>(
      q.resource_name(), [&](auto& rq, auto& rs) { return stub_->GetQueue(&c, rq, &rs); });
}
absl::StatusOr<QueueAdmin::Queue> QueueAdmin::pause_queue(const connector::QueueDestination& q) {
  grpc::ClientContext c;
  prepare(c);
  return ByName<v2::PauseQueueRequest, Queue>(
      q.resource_name(), [&](auto& rq, auto& rs) { return stub_->PauseQueue(&c, rq, &rs); });
}
absl::StatusOr<QueueAdmin::Queue> QueueAdmin::resume_queue(const connector::QueueDestination& q) {
  grpc::ClientContext c;
  prepare(c);
  return ByName<v2::ResumeQueueRequest, Queue>(
      q.resource_name(), [&](auto& rq, auto& rs) { return stub_->ResumeQueue(&c, rq, &rs); });
}
absl::StatusOr<QueueAdmin::Queue> QueueAdmin::purge_queue(const connector::QueueDestination& q) {
  grpc::ClientContext c;
  prepare(c);
  return ByName<v2::PurgeQueueRequest, Queue>(
      q.resource_name(), [&](auto& rq, auto& rs) { return stub_->PurgeQueue(&c, rq, &rs); });
}
absl::Status QueueAdmin::delete_queue(const connector::QueueDestination& q) {
  grpc::ClientContext c;
  prepare(c);
  return ByName<v2::DeleteQueueRequest, google::protobuf::Empty>(
             q.resource_name(), [&](auto& rq, auto& rs) { return stub_->DeleteQueue(&c, rq, &rs); })
      .status();
}

absl::StatusOr<std::vector<QueueAdmin::Task>> QueueAdmin::list_tasks(
    const connector::QueueDestination& q) {
  std::vector<Task> out;
  std::string token;
  do {
    grpc::ClientContext c;
    prepare(c);
    v2::ListTasksRequest request;
    request.set_parent(q.resource_name());
    request.set_response_view(v2::Task::FULL);
    request.set_page_size(1000);
    request.set_page_token(token);
    v2::ListTasksResponse response;
    grpc::Status s = stub_->ListTasks(&c, request, &response);
    if (!s.ok()) return connector::FromGrpcStatus(s);
    for (auto& t : *response.mutable_tasks()) out.push_back(std::move(t));
    token = response.next_page_token();
  } while (!token.empty());
  return out;
}

absl::StatusOr<QueueAdmin::Task> QueueAdmin::get_task(const std::string& name) {
  grpc::ClientContext c;
  prepare(c);
  v2::GetTaskRequest request;
  request.set_name(name);
  request.set_response_view(v2::Task::FULL);
  Task response;
  grpc::Status s = stub_->GetTask(&c, request, &response);
  return Answer(s, std::move(response));
}

absl::Status QueueAdmin::delete_task(const std::string& name) {
  grpc::ClientContext c;
  prepare(c);
  return ByName<v2::DeleteTaskRequest, google::protobuf::Empty>(
             name, [&](auto& rq, auto& rs) { return stub_->DeleteTask(&c, rq, &rs); })
      .status();
}

absl::StatusOr<QueueAdmin::Task> QueueAdmin::run_task(const std::string& name) {
  grpc::ClientContext c;
  prepare(c);
  return ByName<v2::RunTaskRequest, Task>(
      name, [&](auto& rq, auto& rs) { return stub_->RunTask(&c, rq, &rs); });
}

}  // namespace gcpstream::tasks
