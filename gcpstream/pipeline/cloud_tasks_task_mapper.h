#ifndef GCPSTREAM_PIPELINE_CLOUD_TASKS_TASK_MAPPER_H_
#define GCPSTREAM_PIPELINE_CLOUD_TASKS_TASK_MAPPER_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/pipeline/pipeline_record.h"
#include "gcpstream/pipeline/pipeline_spec.h"
#include "gcpstream/pipeline/record_template.h"
#include "google/cloud/tasks/v2/task.pb.h"

namespace gcpstream::pipeline {

// Turns a record into one Cloud Tasks task as `transform.to_cloud_tasks` says: an HTTP target
// (url template, method, headers, OIDC/OAuth token) or an App Engine target (relative_uri
// template, method, headers), the body = the record's fields as compact JSON (or one field's
// text) under a method that carries one, and the dispatch deadline. The task id template, when
// set, is rendered by task_key(): the sink names the task by its SHA-256.
//
// Immutable; thread-safe.
class CloudTasksTaskMapper {
 public:
  // INVALID_ARGUMENT for a template that does not parse or a target that breaks the documented
  // rules (checked when the URL has no placeholders).
  static absl::StatusOr<CloudTasksTaskMapper> make(const CloudTasksMappingSpec& spec);
  // INVALID_ARGUMENT naming a missing field, or a rendered URL the service would refuse.
  absl::StatusOr<google::cloud::tasks::v2::Task> map(const PipelineRecord& record) const;
  // The rendered task id template; nullopt when there is none.
  absl::StatusOr<std::optional<std::string>> task_key(const PipelineRecord& record) const;

 private:
  CloudTasksMappingSpec spec_;
  google::cloud::tasks::v2::HttpMethod method_ = google::cloud::tasks::v2::POST;
  std::optional<RecordTemplate> target_;
  std::vector<std::pair<std::string, RecordTemplate>> headers_;
  std::optional<RecordTemplate> task_id_;
};

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_CLOUD_TASKS_TASK_MAPPER_H_
