#ifndef GCPSTREAM_CONNECTOR_LINEAGE_H_
#define GCPSTREAM_CONNECTOR_LINEAGE_H_

#include <string>

#include "gcpstream/api/lineage.h"
#include "gcpstream/connector/destinations.h"

// Lineage datasets for each Google service, with the gcp physical-resource facet. Pure functions
// of configuration.
namespace gcpstream::connector {

// namespace bigtable://{project}/{instance}, name {table}.
LineageDataset BigtableDataset(const TableDestination& table);
// namespace spanner://{project}:{instance}, name {database}.{table}.
LineageDataset SpannerDataset(const DatabaseDestination& database, const std::string& table);
// The database as a whole: a sink whose serializer picks the table per record has no fixed
// table to name.
LineageDataset SpannerDatabaseDataset(const DatabaseDestination& database);
// {database}/changeStreams/{stream}, resource kind spanner-change-stream.
LineageDataset SpannerChangeStreamDataset(const DatabaseDestination& database,
                                          const std::string& stream);
// namespace pubsub://{project}, name topic:{topic} / subscription:{subscription}.
LineageDataset PubSubTopicDataset(const TopicDestination& topic);
LineageDataset PubSubSubscriptionDataset(const SubscriptionDestination& subscription);
// namespace bigquery://{project}, name {dataset}.{table}.
LineageDataset BigQueryDataset(const BigQueryTableDestination& table);
// namespace cloudtasks://{project}/{location}, name {queue}.
LineageDataset CloudTasksDataset(const QueueDestination& queue);

// A one-line rendering for `describe` output: "bigtable://p/i flights".
std::string DescribeDataset(const LineageDataset& dataset);

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_LINEAGE_H_
