#include "gcpstream/spanner/client/partial_result_set.h"

#include "absl/strings/str_cat.h"

namespace gcpstream::spanner {
namespace {

using google::protobuf::Value;

bool Chunkable(const Value& v) {
  return v.kind_case() == Value::kStringValue || v.kind_case() == Value::kListValue;
}

// Merges `next` (the continuation) into `into` (the chunk), as the reference describes.
absl::Status Merge(Value& into, Value next, int depth) {
  if (depth > 64) return absl::InternalError("PartialResultSet chunks nest too deeply");
  if (into.kind_case() != next.kind_case() || !Chunkable(into)) {
    return absl::InternalError(
        absl::StrCat("a chunked PartialResultSet value cannot be merged (kinds ", into.kind_case(),
                     " and ", next.kind_case(), "; only strings and lists are chunked)"));
  }
  if (into.kind_case() == Value::kStringValue) {
    into.mutable_string_value()->append(next.string_value());
    return absl::OkStatus();
  }
  auto* list = into.mutable_list_value()->mutable_values();
  auto* rest = next.mutable_list_value()->mutable_values();
  int start = 0;
  if (!list->empty() && !rest->empty() && Chunkable(*list->rbegin()) &&
      list->rbegin()->kind_case() == rest->begin()->kind_case()) {
    if (auto s = Merge(*list->rbegin(), std::move(*rest->begin()), depth + 1); !s.ok()) return s;
    start = 1;
  }
  for (int i = start; i < rest->size(); ++i) *list->Add() = std::move((*rest)[i]);
  return absl::OkStatus();
}

}  // namespace

PartialResultSetMerger::PartialResultSetMerger(std::size_t max_unconfirmed_bytes)
    : max_unconfirmed_bytes_(max_unconfirmed_bytes) {}

absl::Status PartialResultSetMerger::add(const google::spanner::v1::PartialResultSet& part) {
  if (finished_) return absl::FailedPreconditionError("the result set was finished");
  if (!has_metadata_) {
    if (!part.has_metadata()) {
      return absl::InternalError("the first PartialResultSet carries no metadata");
    }
    metadata_ = part.metadata();
    width_ = metadata_.row_type().fields_size();
    has_metadata_ = true;
  }
  if (width_ == 0 && part.values_size() > 0) {
    return absl::InternalError("PartialResultSet values for a row type with no field");
  }
  if (part.has_stats()) stats_ = part.stats();
  const int n = part.values_size();
  for (int i = 0; i < n; ++i) {
    Value v = part.values(i);
    if (has_chunk_) {
      if (auto s = Merge(chunk_, std::move(v), 0); !s.ok()) return s;
      has_chunk_ = false;
      v = std::move(chunk_);
      chunk_.Clear();
    }
    if (i == n - 1 && part.chunked_value()) {
      if (!Chunkable(v)) {
        return absl::InternalError(
            "a PartialResultSet chunked a value that is not a string or list");
      }
      chunk_ = std::move(v);
      has_chunk_ = true;
    } else {
      unconfirmed_bytes_ += v.ByteSizeLong();
      values_.push_back(std::move(v));
    }
  }
  if (!part.resume_token().empty()) {
    // Everything up to here (the pending chunk included) is confirmed.
    resume_token_ = part.resume_token();
    resumable_ = true;
    confirmed_ = values_.size();
    confirmed_has_chunk_ = has_chunk_;
    confirmed_chunk_ = chunk_;
    unconfirmed_bytes_ = 0;
    release_rows(confirmed_);
  } else if (unconfirmed_bytes_ > max_unconfirmed_bytes_ &&
             values_.size() >= static_cast<std::size_t>(width_)) {
    // At least one whole row waits: it goes out unconfirmed (a single row larger than the
    // bound just waits for its token, and the stream stays resumable).
    resumable_ = false;
    confirmed_ = values_.size();
    unconfirmed_bytes_ = 0;
    release_rows(confirmed_);
  }
  return absl::OkStatus();
}

void PartialResultSetMerger::release_rows(std::size_t upto) {
  if (width_ == 0) return;
  const std::size_t rows = upto / static_cast<std::size_t>(width_);
  const std::size_t take = rows * static_cast<std::size_t>(width_);
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<Value> row;
    row.reserve(static_cast<std::size_t>(width_));
    for (int c = 0; c < width_; ++c) {
      row.push_back(std::move(values_[r * static_cast<std::size_t>(width_) + c]));
    }
    ready_.push_back(std::move(row));
  }
  values_.erase(values_.begin(), values_.begin() + static_cast<std::ptrdiff_t>(take));
  confirmed_ -= take;
}

std::vector<std::vector<Value>> PartialResultSetMerger::take_rows() {
  std::vector<std::vector<Value>> out;
  out.swap(ready_);
  return out;
}

absl::Status PartialResultSetMerger::finish() {
  if (has_chunk_) return absl::InternalError("the stream ended inside a chunked value");
  confirmed_ = values_.size();
  release_rows(confirmed_);
  finished_ = true;
  if (!values_.empty()) {
    return absl::InternalError(absl::StrCat("the stream ended inside a row (", values_.size(),
                                            " of ", width_, " values)"));
  }
  return absl::OkStatus();
}

absl::Status PartialResultSetMerger::rewind() {
  if (!resumable_) {
    return absl::FailedPreconditionError(
        "rows beyond the last resume token were already released; the stream cannot be resumed");
  }
  values_.resize(confirmed_);
  unconfirmed_bytes_ = 0;
  // A chunk the token confirmed continues in the resumed stream.
  has_chunk_ = confirmed_has_chunk_;
  chunk_ = confirmed_chunk_;
  return absl::OkStatus();
}

}  // namespace gcpstream::spanner
