#ifndef GCPSTREAM_PIPELINE_RECORD_TEMPLATE_H_
#define GCPSTREAM_PIPELINE_RECORD_TEMPLATE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gcpstream/pipeline/pipeline_record.h"

namespace gcpstream::pipeline {

// A text template over a record's fields and attributes: "{origin}#{date}#{seq}". Each {name}
// is replaced by PipelineRecord::lookup(name) (a field first, then an attribute); "{{" and "}}"
// stand for literal braces. There is no expression language: a placeholder is a name.
//
// Immutable after parse(); safe to share between threads.
class RecordTemplate {
 public:
  // INVALID_ARGUMENT for an unclosed '{', an empty or nested placeholder, or a stray '}'.
  static absl::StatusOr<RecordTemplate> parse(const std::string& text);
  // A template that is a single placeholder of `field`.
  static RecordTemplate of_field(const std::string& field);

  // The rendered text. INVALID_ARGUMENT naming the placeholder (and the template) when the
  // record has neither a field nor an attribute of that name.
  absl::StatusOr<std::string> render(const PipelineRecord& record) const;

  const std::string& text() const { return text_; }
  // The placeholder names, in order.
  std::vector<std::string> names() const;

 private:
  struct Part {
    bool placeholder = false;
    std::string text;  // literal text, or the placeholder's name
  };
  std::string text_;
  std::vector<Part> parts_;
};

}  // namespace gcpstream::pipeline

#endif  // GCPSTREAM_PIPELINE_RECORD_TEMPLATE_H_
