#include "gcpstream/bigquery/schema/writer_descriptor.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include "google/cloud/bigquery/storage/v1/annotations.pb.h"

namespace gcpstream::bigquery {
namespace {

using google::protobuf::DescriptorProto;
using google::protobuf::FieldDescriptorProto;

FieldDescriptorProto::Type WireType(FieldType type) {
  switch (type) {
    case FieldType::kString:
    case FieldType::kJson:
    case FieldType::kGeography:
    case FieldType::kInterval:
      return FieldDescriptorProto::TYPE_STRING;
    case FieldType::kBytes:
    case FieldType::kNumeric:
    case FieldType::kBigNumeric:
      return FieldDescriptorProto::TYPE_BYTES;
    case FieldType::kInt64:
    case FieldType::kDatetime:
    case FieldType::kTime:
    case FieldType::kTimestamp:
      return FieldDescriptorProto::TYPE_INT64;
    case FieldType::kDate:
      return FieldDescriptorProto::TYPE_INT32;
    case FieldType::kFloat64:
      return FieldDescriptorProto::TYPE_DOUBLE;
    case FieldType::kBool:
      return FieldDescriptorProto::TYPE_BOOL;
    case FieldType::kRecord:
      return FieldDescriptorProto::TYPE_MESSAGE;
  }
  return FieldDescriptorProto::TYPE_STRING;
}

void AddFields(const std::vector<TableFieldSchema>& columns, DescriptorProto& message,
               int& nested_count) {
  static const RE2 kIdentifier(R"([A-Za-z_][A-Za-z0-9_]*)");
  int number = 1;
  for (const auto& column : columns) {
    FieldDescriptorProto* f = message.add_field();
    const int n = number++;
    f->set_number(n);
    if (RE2::FullMatch(column.name, kIdentifier)) {
      f->set_name(column.name);
    } else {
      f->set_name(fmt::format("_col{}", n));
      f->mutable_options()->SetExtension(google::cloud::bigquery::storage::v1::column_name,
                                         column.name);
    }
    f->set_label(column.mode == FieldMode::kRepeated ? FieldDescriptorProto::LABEL_REPEATED
                                                     : FieldDescriptorProto::LABEL_OPTIONAL);
    f->set_type(WireType(column.type));
    if (column.type == FieldType::kRecord) {
      DescriptorProto* nested = message.add_nested_type();
      nested->set_name(fmt::format("Record{}", nested_count++));
      f->set_type_name(nested->name());
      AddFields(column.fields, *nested, nested_count);
    }
  }
}

}  // namespace

absl::StatusOr<DescriptorProto> WriterDescriptorFor(const TableSchema& schema) {
  if (absl::Status s = ValidateTableSchema(schema); !s.ok()) return s;
  DescriptorProto row;
  row.set_name("Row");
  int nested = 0;
  AddFields(schema.fields, row, nested);
  return row;
}

absl::StatusOr<std::unique_ptr<WriterRowType>> WriterRowType::Create(const TableSchema& schema) {
  auto proto = WriterDescriptorFor(schema);
  if (!proto.ok()) return proto.status();
  std::unique_ptr<WriterRowType> t(new WriterRowType());
  t->schema_ = schema;
  t->proto_ = std::move(*proto);
  google::protobuf::FileDescriptorProto file;
  file.set_name("gcpstream_bigquery_row.proto");
  *file.add_message_type() = t->proto_;
  const auto* built = t->pool_.BuildFile(file);
  if (built == nullptr) {
    return absl::InternalError(
        "the writer descriptor derived from the table schema does not build");
  }
  t->descriptor_ = built->message_type(0);
  return t;
}

std::unique_ptr<google::protobuf::Message> WriterRowType::NewRow() const {
  return std::unique_ptr<google::protobuf::Message>(factory_.GetPrototype(descriptor_)->New());
}

}  // namespace gcpstream::bigquery
