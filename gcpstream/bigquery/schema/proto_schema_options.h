#ifndef GCPSTREAM_BIGQUERY_SCHEMA_PROTO_SCHEMA_OPTIONS_H_
#define GCPSTREAM_BIGQUERY_SCHEMA_PROTO_SCHEMA_OPTIONS_H_

#include <google/protobuf/descriptor.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace gcpstream::bigquery {

// How ProtoRowConverter derives a table schema from a protobuf message descriptor
// (reference: ProtoSchemaOptions). Everything configured is unioned: a field marked by a path or
// by a field option becomes a JSON (or GEOGRAPHY) column either way. A value type; not
// thread-safe while being configured, immutable afterwards.
//
// Defaults: every non-repeated column NULLABLE, no JSON and no GEOGRAPHY columns.
class ProtoSchemaOptions {
 public:
  // A marker option: a `bool` extension of google.protobuf.FieldOptions, by number and, when
  // known, by its fully-qualified name ("my.pkg.json"). With a name, a declaration of the same
  // number under another name is an unrelated option and the field is left alone.
  struct FieldOption {
    int number = 0;
    std::string full_name;  // empty: the number is all there is
  };

  // REQUIRED where the field has no presence (a plain proto3 scalar or enum, a proto3 map
  // entry's scalar key or value) and for a proto2 `required` field; NULLABLE elsewhere. A JSON
  // or GEOGRAPHY column is NULLABLE regardless.
  ProtoSchemaOptions& derive_required_columns(bool on = true) {
    derive_required_columns_ = on;
    return *this;
  }
  // The message or string field at this dotted path of declared field names (snake_case, from
  // the root message) is a JSON column. A path that matches no field fails derivation.
  ProtoSchemaOptions& json_field_path(std::string path) {
    json_paths_.insert(std::move(path));
    return *this;
  }
  // Every field carrying this extension set to true is a JSON column, wherever it appears. The
  // extension's type is checked by validate(); an option number matching no field is not an
  // error (one configuration serves many message types). A generated extension's descriptor is
  // DescriptorPool::generated_pool()->FindExtensionByName("my.pkg.json").
  ProtoSchemaOptions& json_field_option(const google::protobuf::FieldDescriptor* extension) {
    AddOption(json_options_, extension);
    return *this;
  }
  // The same by number alone, when the extension's generated code is not linked.
  ProtoSchemaOptions& json_field_option_number(int number) {
    AddOption(json_options_, FieldOption{number, ""});
    return *this;
  }
  // The string field at this dotted path is a GEOGRAPHY column (WKT, WKB hex or GeoJSON text).
  ProtoSchemaOptions& geography_field_path(std::string path) {
    geography_paths_.insert(std::move(path));
    return *this;
  }
  ProtoSchemaOptions& geography_field_option(const google::protobuf::FieldDescriptor* extension) {
    AddOption(geography_options_, extension);
    return *this;
  }
  ProtoSchemaOptions& geography_field_option_number(int number) {
    AddOption(geography_options_, FieldOption{number, ""});
    return *this;
  }

  // INVALID_ARGUMENT for: an extension that is not a singular bool extension of
  // google.protobuf.FieldOptions, an option number outside 1..536870911, an empty path or a
  // path with an empty segment, and one option number registered as both a JSON and a
  // GEOGRAPHY marker (broken for every message, not just some).
  absl::Status validate() const;

  bool derives_required_columns() const { return derive_required_columns_; }
  const std::set<std::string>& json_field_paths() const { return json_paths_; }
  const std::set<std::string>& geography_field_paths() const { return geography_paths_; }
  // By option number. Registering one number twice keeps the named entry (an unnamed one would
  // match any declaration at that number); two names for one number: the last one wins.
  const std::map<int, FieldOption>& json_field_options() const { return json_options_; }
  const std::map<int, FieldOption>& geography_field_options() const { return geography_options_; }

 private:
  static void AddOption(std::map<int, FieldOption>& to, FieldOption option);
  void AddOption(std::map<int, FieldOption>& to, const google::protobuf::FieldDescriptor* ext);

  bool derive_required_columns_ = false;
  std::set<std::string> json_paths_;
  std::set<std::string> geography_paths_;
  std::map<int, FieldOption> json_options_;
  std::map<int, FieldOption> geography_options_;
  std::vector<std::string> extension_errors_;  // reported by validate()
};

}  // namespace gcpstream::bigquery

#endif  // GCPSTREAM_BIGQUERY_SCHEMA_PROTO_SCHEMA_OPTIONS_H_
