#include "gcpstream/connector/lineage.h"

namespace gcpstream::connector {

LineageDataset BigtableDataset(const TableDestination& t) {
  return {"bigtable://" + t.project + "/" + t.instance,
          t.table,
          {{"gcp.kind", "bigtable-table"},
           {"gcp.project", t.project},
           {"gcp.instance", t.instance},
           {"gcp.table", t.table}}};
}

LineageDataset SpannerDatabaseDataset(const DatabaseDestination& d) {
  return {"spanner://" + d.project + ":" + d.instance,
          d.database,
          {{"gcp.kind", "spanner-database"},
           {"gcp.project", d.project},
           {"gcp.instance", d.instance},
           {"gcp.database", d.database}}};
}

LineageDataset SpannerChangeStreamDataset(const DatabaseDestination& d, const std::string& stream) {
  LineageDataset dataset = SpannerDatabaseDataset(d);
  dataset.name = d.database + "/changeStreams/" + stream;
  dataset.facets["gcp.kind"] = "spanner-change-stream";
  dataset.facets["gcp.changeStream"] = stream;
  return dataset;
}

LineageDataset SpannerDataset(const DatabaseDestination& d, const std::string& table) {
  return {"spanner://" + d.project + ":" + d.instance,
          d.database + "." + table,
          {{"gcp.kind", "spanner-table"},
           {"gcp.project", d.project},
           {"gcp.instance", d.instance},
           {"gcp.database", d.database},
           {"gcp.table", table}}};
}

LineageDataset PubSubTopicDataset(const TopicDestination& t) {
  return {"pubsub://" + t.project,
          "topic:" + t.topic,
          {{"gcp.kind", "pubsub-topic"}, {"gcp.project", t.project}, {"gcp.topic", t.topic}}};
}

LineageDataset PubSubSubscriptionDataset(const SubscriptionDestination& s) {
  return {"pubsub://" + s.project,
          "subscription:" + s.subscription,
          {{"gcp.kind", "pubsub-subscription"},
           {"gcp.project", s.project},
           {"gcp.subscription", s.subscription}}};
}

LineageDataset BigQueryDataset(const BigQueryTableDestination& t) {
  return {"bigquery://" + t.project,
          t.dataset + "." + t.table,
          {{"gcp.kind", "bigquery-table"},
           {"gcp.project", t.project},
           {"gcp.dataset", t.dataset},
           {"gcp.table", t.table}}};
}

LineageDataset CloudTasksDataset(const QueueDestination& q) {
  return {"cloudtasks://" + q.project + "/" + q.location,
          q.queue,
          {{"gcp.kind", "cloudtasks-queue"},
           {"gcp.project", q.project},
           {"gcp.location", q.location},
           {"gcp.queue", q.queue}}};
}

std::string DescribeDataset(const LineageDataset& d) { return d.name_space + " " + d.name; }

}  // namespace gcpstream::connector
