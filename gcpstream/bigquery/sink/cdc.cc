#include "gcpstream/bigquery/sink/cdc.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace gcpstream::bigquery {
namespace {

constexpr std::size_t kMaxSections = 4;
constexpr std::size_t kMaxSectionDigits = 16;

bool SameName(std::string_view a, std::string_view b) {
  return absl::EqualsIgnoreCase(absl::string_view(a.data(), a.size()),
                                absl::string_view(b.data(), b.size()));
}

std::string KeyText(const std::vector<std::string>& key) {
  return key.empty() ? "none" : "(" + absl::StrJoin(key, ", ") + ")";
}

}  // namespace

std::string_view ChangeTypeName(ChangeType type) {
  return type == ChangeType::kDelete ? "DELETE" : "UPSERT";
}

absl::StatusOr<std::string> CanonicalChangeSequenceNumber(std::string_view value) {
  if (value.empty()) {
    return absl::InvalidArgumentError("the change sequence number is empty");
  }
  std::vector<absl::string_view> sections =
      absl::StrSplit(absl::string_view(value.data(), value.size()), '/');
  if (sections.size() > kMaxSections) {
    return absl::InvalidArgumentError(
        fmt::format("the change sequence number has {} sections; BigQuery takes one to four "
                    "'/'-separated hexadecimal sections",
                    sections.size()));
  }
  std::string out;
  out.reserve(value.size());
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const absl::string_view s = sections[i];
    if (s.empty() || s.size() > kMaxSectionDigits) {
      return absl::InvalidArgumentError(fmt::format(
          "section {} of the change sequence number has {} digits; each section has 1 to 16 "
          "hexadecimal digits",
          i + 1, s.size()));
    }
    for (const char c : s) {
      if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) {
        return absl::InvalidArgumentError(
            fmt::format("section {} of the change sequence number holds a character that is not a "
                        "hexadecimal digit (0x{:02x})",
                        i + 1, static_cast<unsigned char>(c)));
      }
    }
    if (i > 0) out.push_back('/');
    out += absl::AsciiStrToUpper(s);
  }
  return out;
}

absl::StatusOr<std::string> FormatChangeSequenceNumber(std::span<const std::uint64_t> sections) {
  if (sections.empty() || sections.size() > kMaxSections) {
    return absl::InvalidArgumentError(
        fmt::format("a change sequence number has one to four sections, not {}", sections.size()));
  }
  std::string out;
  for (std::size_t i = 0; i < sections.size(); ++i) {
    if (i > 0) out.push_back('/');
    out += fmt::format("{:016X}", sections[i]);
  }
  return out;
}

absl::Status CdcTableOptions::validate(const TableSchema& schema) const {
  if (primary_key_columns.size() > kMaxPrimaryKeyColumns) {
    return absl::InvalidArgumentError(
        fmt::format("cdc_table_options: a primary key has at most {} columns, not {}",
                    kMaxPrimaryKeyColumns, primary_key_columns.size()));
  }
  std::set<std::string> seen;
  for (const std::string& column : primary_key_columns) {
    if (!seen.insert(absl::AsciiStrToLower(column)).second) {
      return absl::InvalidArgumentError(
          fmt::format("cdc_table_options: primary-key column '{}' is named twice", column));
    }
    auto found = std::find_if(schema.fields.begin(), schema.fields.end(),
                              [&](const TableFieldSchema& f) { return SameName(f.name, column); });
    if (found == schema.fields.end()) {
      return absl::InvalidArgumentError(
          fmt::format("cdc_table_options: primary-key column '{}' is not a top-level column of the "
                      "serializer's schema",
                      column));
    }
    if (found->mode == FieldMode::kRepeated || found->type == FieldType::kRecord) {
      return absl::InvalidArgumentError(fmt::format(
          "cdc_table_options: primary-key column '{}' is {}; a key column is a single scalar",
          column, found->mode == FieldMode::kRepeated ? "REPEATED" : "a RECORD"));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> PrimaryKeyOf(const nlohmann::json& table) {
  std::vector<std::string> key;
  if (!table.is_object()) return key;
  auto constraints = table.find("tableConstraints");
  if (constraints == table.end() || !constraints->is_object()) return key;
  auto pk = constraints->find("primaryKey");
  if (pk == constraints->end() || !pk->is_object()) return key;
  auto columns = pk->find("columns");
  if (columns == pk->end() || !columns->is_array()) return key;
  for (const auto& c : *columns) {
    if (c.is_string()) key.push_back(c.get<std::string>());
  }
  return key;
}

absl::Status VerifyCdcTable(const std::string& table_name, const nlohmann::json& table,
                            const CdcTableOptions& declared, const TableSchema& schema) {
  const std::vector<std::string> live = PrimaryKeyOf(table);
  if (live.empty()) {
    return absl::FailedPreconditionError(fmt::format(
        "BigQuery table {} has no primary key; CDC writes (cdc_options) need one: declare it "
        "(ALTER TABLE ... ADD PRIMARY KEY ({}) NOT ENFORCED) or write to a new table the sink "
        "creates with cdc_table_options",
        table_name,
        declared.primary_key_columns.empty() ? "..."
                                             : absl::StrJoin(declared.primary_key_columns, ", ")));
  }
  const auto& want = declared.primary_key_columns;
  const bool same =
      want.empty() ||
      (want.size() == live.size() &&
       std::equal(want.begin(), want.end(), live.begin(),
                  [](const std::string& a, const std::string& b) { return SameName(a, b); }));
  if (!same) {
    return absl::FailedPreconditionError(fmt::format(
        "the primary key of BigQuery table {} is {} but cdc_table_options declares {}; the sink "
        "never changes a primary key: fix the declaration or the table",
        table_name, KeyText(live), KeyText(want)));
  }
  for (const std::string& column : live) {
    const bool carried =
        std::any_of(schema.fields.begin(), schema.fields.end(),
                    [&](const TableFieldSchema& f) { return SameName(f.name, column); });
    if (!carried) {
      return absl::FailedPreconditionError(fmt::format(
          "primary-key column '{}' of BigQuery table {} is not a column of the serializer's "
          "schema, so no row could name the record it changes",
          column, table_name));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<CdcWriterDescriptor> MakeCdcWriterDescriptor(
    const google::protobuf::DescriptorProto& base, const TableSchema& schema, bool with_sequence) {
  for (const auto& column : schema.fields) {
    for (const char* pseudo : {kChangeTypeColumn, kChangeSequenceNumberColumn}) {
      if (SameName(column.name, pseudo)) {
        return absl::InvalidArgumentError(fmt::format(
            "the serializer's schema has a column '{}', which is BigQuery's {} pseudocolumn; "
            "rename it (CDC adds the pseudocolumns itself)",
            column.name, pseudo));
      }
    }
  }
  CdcWriterDescriptor out;
  out.descriptor = base;
  int highest = 0;
  for (const auto& f : base.field()) {
    for (const char* pseudo : {kChangeTypeColumn, kChangeSequenceNumberColumn}) {
      if (SameName(f.name(), pseudo)) {
        return absl::InvalidArgumentError(fmt::format(
            "the serializer's schema has a field '{}', which is BigQuery's {} pseudocolumn; "
            "rename it (CDC adds the pseudocolumns itself)",
            f.name(), pseudo));
      }
    }
    highest = std::max(highest, f.number());
  }
  // Field numbers stop at 2^29 - 1, and 19000..19999 are protobuf's own (reserved).
  int next = highest + 1;
  auto take = [&next]() {
    if (next >= google::protobuf::FieldDescriptor::kFirstReservedNumber &&
        next <= google::protobuf::FieldDescriptor::kLastReservedNumber) {
      next = google::protobuf::FieldDescriptor::kLastReservedNumber + 1;
    }
    return next++;
  };
  auto add = [&](const char* name, int number) {
    auto* f = out.descriptor.add_field();
    f->set_name(name);
    f->set_number(number);
    f->set_label(google::protobuf::FieldDescriptorProto::LABEL_OPTIONAL);
    f->set_type(google::protobuf::FieldDescriptorProto::TYPE_STRING);
  };
  out.change_type_field = take();
  if (with_sequence) out.sequence_number_field = take();
  if (next - 1 > google::protobuf::FieldDescriptor::kMaxNumber) {
    return absl::InvalidArgumentError("the serializer's descriptor has no field number left");
  }
  add(kChangeTypeColumn, out.change_type_field);
  if (with_sequence) add(kChangeSequenceNumberColumn, out.sequence_number_field);
  return out;
}

absl::Status AppendCdcPseudocolumns(const CdcWriterDescriptor& d, ChangeType type,
                                    const std::optional<std::string>& sequence_number,
                                    std::string* row) {
  using google::protobuf::internal::WireFormatLite;
  if (type != ChangeType::kUpsert && type != ChangeType::kDelete) {
    return absl::InvalidArgumentError(
        fmt::format("the CDC change type {} is neither UPSERT nor DELETE", static_cast<int>(type)));
  }
  std::optional<std::string> canonical;
  if (d.sequence_number_field != 0) {
    if (!sequence_number.has_value()) {
      return absl::InvalidArgumentError(
          "the CDC sequence number provider is set, so every row needs a sequence number");
    }
    auto valid = CanonicalChangeSequenceNumber(*sequence_number);
    if (!valid.ok()) return valid.status();
    canonical = std::move(*valid);
  } else if (sequence_number.has_value()) {
    return absl::InvalidArgumentError(
        "a CDC sequence number was given to a sink configured without a sequence number "
        "provider");
  }
  google::protobuf::io::StringOutputStream stream(row);  // appends after the row's bytes
  google::protobuf::io::CodedOutputStream out(&stream);
  WireFormatLite::WriteString(d.change_type_field, std::string(ChangeTypeName(type)), &out);
  if (canonical) WireFormatLite::WriteString(d.sequence_number_field, *canonical, &out);
  return absl::OkStatus();
}

}  // namespace gcpstream::bigquery
