#ifndef GCPSTREAM_PIPELINE_INTERNAL_SPEC_SECTIONS_H_
#define GCPSTREAM_PIPELINE_INTERNAL_SPEC_SECTIONS_H_

#include "gcpstream/pipeline/pipeline_spec.h"
#include "gcpstream/pipeline/yaml_fields.h"

// The section readers of the pipeline parser, one per top-level key. Each reads its mapping,
// reports problems to the mapping's context and calls finish().
namespace gcpstream::pipeline::internal {

SourceSpec ParseSource(YamlMap section);
PubSubSourceSpec ParsePubSubSource(YamlMap& section);
SpannerSourceSpec ParseSpannerSource(YamlMap& section);
SpannerChangeStreamSourceSpec ParseSpannerChangeStreamSource(YamlMap& section);
BigtableChangeStreamSourceSpec ParseBigtableChangeStreamSource(YamlMap& section);
BigtableSourceSpec ParseBigtableSource(YamlMap& section);
// The keys of a `type: bigquery` source (parse_bigquery_source.cc).
BigQuerySourceSpec ParseBigQuerySource(YamlMap& section);
// project, instance and database of a Spanner source or sink, each id checked at its own key.
connector::DatabaseDestination ParseSpannerDatabase(YamlMap& section);
TransformSpec ParseTransform(YamlMap section);
SinkSpec ParseSink(YamlMap section);
// recovery_initial_backoff, recovery_max_backoff, recovery_max_attempts of a writer's options
// (the shared writer core's repair budget), in `m`.
void ParseRecovery(YamlMap& m, connector::RecoveryOptions& r);
// project and dataset of a BigQuery source or sink, each id checked at its own key.
void ParseBigQueryDataset(YamlMap& section, std::string& project, std::string& dataset);
// project alone (a query source, which names no dataset).
void ParseBigQueryProject(YamlMap& section, std::string& project);
// The keys of a `type: bigquery` sink (parse_bigquery_sink.cc).
BigQuerySinkSpec ParseBigQuerySink(YamlMap& section);
FailureHandlerSpec ParseFailureHandler(YamlContext& ctx, const YAML::Node& node);

// Ranges shared by many options. The spec's limits where it gives one (the option's own
// validation may be stricter); otherwise a bound past any sensible setting, so that a typo or an
// overflow is reported instead of running with a wrapped value.
inline constexpr IntRange kCount{1, 1'000'000'000};  // elements, messages, entries
inline constexpr IntRange kBytes{1, 1LL << 40};      // byte sizes (up to 1 TiB)
inline constexpr DurationRange kShortDelay{std::chrono::milliseconds(1),
                                           std::chrono::hours(1)};  // backoffs, batch delays
inline constexpr DurationRange kTimeout{std::chrono::milliseconds(1),
                                        std::chrono::hours(24 * 7)};  // timeouts
inline constexpr DurationRange kLongSpan{std::chrono::milliseconds(1),
                                         std::chrono::hours(24 * 3650)};  // ages, idle times
// Pub/Sub message retention, topic or subscription: 10 minutes to 31 days.
inline constexpr DurationRange kPubSubRetention{std::chrono::minutes(10),
                                                std::chrono::hours(24 * 31)};

// A YAML scalar as a JSON value: plain scalars that read as numbers or booleans become those;
// quoted scalars stay text.
nlohmann::json ScalarJson(const YAML::Node& node, const std::string& text);

}  // namespace gcpstream::pipeline::internal

#endif  // GCPSTREAM_PIPELINE_INTERNAL_SPEC_SECTIONS_H_
