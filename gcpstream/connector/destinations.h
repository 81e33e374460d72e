#ifndef GCPSTREAM_CONNECTOR_DESTINATIONS_H_
#define GCPSTREAM_CONNECTOR_DESTINATIONS_H_

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/hash/hash.h"
#include "gcpstream/api/sink.h"

// Identities of the Google Cloud resources connectors read and write. Pure value types:
// equality and hashing over their fields, so they key per-destination maps; each renders the
// resource name the Google API expects.
namespace gcpstream::connector {

// A Pub/Sub topic: projects/<project>/topics/<topic>.
struct TopicDestination {
  std::string project;
  std::string topic;
  static TopicDestination of(std::string project, std::string topic) {
    return {std::move(project), std::move(topic)};
  }
  std::string resource_name() const { return "projects/" + project + "/topics/" + topic; }
  friend bool operator==(const TopicDestination&, const TopicDestination&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const TopicDestination& d) {
    return H::combine(std::move(h), d.project, d.topic);
  }
};

// A Pub/Sub subscription: projects/<project>/subscriptions/<subscription>.
struct SubscriptionDestination {
  std::string project;
  std::string subscription;
  static SubscriptionDestination of(std::string project, std::string subscription) {
    return {std::move(project), std::move(subscription)};
  }
  std::string resource_name() const {
    return "projects/" + project + "/subscriptions/" + subscription;
  }
  friend bool operator==(const SubscriptionDestination&, const SubscriptionDestination&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const SubscriptionDestination& d) {
    return H::combine(std::move(h), d.project, d.subscription);
  }
};

// A Bigtable table: projects/<project>/instances/<instance>/tables/<table>.
struct TableDestination {
  std::string project;
  std::string instance;
  std::string table;
  static TableDestination of(std::string project, std::string instance, std::string table) {
    return {std::move(project), std::move(instance), std::move(table)};
  }
  std::string instance_name() const { return "projects/" + project + "/instances/" + instance; }
  std::string resource_name() const { return instance_name() + "/tables/" + table; }
  friend bool operator==(const TableDestination&, const TableDestination&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const TableDestination& d) {
    return H::combine(std::move(h), d.project, d.instance, d.table);
  }
};

// A Spanner database: projects/<project>/instances/<instance>/databases/<database>.
struct DatabaseDestination {
  std::string project;
  std::string instance;
  std::string database;
  static DatabaseDestination of(std::string project, std::string instance, std::string database) {
    return {std::move(project), std::move(instance), std::move(database)};
  }
  std::string resource_name() const {
    return "projects/" + project + "/instances/" + instance + "/databases/" + database;
  }
  friend bool operator==(const DatabaseDestination&, const DatabaseDestination&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const DatabaseDestination& d) {
    return H::combine(std::move(h), d.project, d.instance, d.database);
  }
};

// A BigQuery table: projects/<project>/datasets/<dataset>/tables/<table>.
struct BigQueryTableDestination {
  std::string project;
  std::string dataset;
  std::string table;
  static BigQueryTableDestination of(std::string project, std::string dataset, std::string table) {
    return {std::move(project), std::move(dataset), std::move(table)};
  }
  std::string resource_name() const {
    return "projects/" + project + "/datasets/" + dataset + "/tables/" + table;
  }
  // The inverse of resource_name(): "projects/P/datasets/D/tables/T" split; nothing for any
  // other shape (a missing or empty part, an extra segment). The parts are not validated as ids.
  static std::optional<BigQueryTableDestination> parse(std::string_view name) {
    std::vector<std::string_view> parts;
    std::size_t at = 0;
    for (std::size_t slash; (slash = name.find('/', at)) != std::string_view::npos;
         at = slash + 1) {
      parts.push_back(name.substr(at, slash - at));
    }
    parts.push_back(name.substr(at));
    if (parts.size() != 6 || parts[0] != "projects" || parts[2] != "datasets" ||
        parts[4] != "tables" || parts[1].empty() || parts[3].empty() || parts[5].empty()) {
      return std::nullopt;
    }
    return of(std::string(parts[1]), std::string(parts[3]), std::string(parts[5]));
  }
  friend bool operator==(const BigQueryTableDestination&,
                         const BigQueryTableDestination&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const BigQueryTableDestination& d) {
    return H::combine(std::move(h), d.project, d.dataset, d.table);
  }
};

// A Cloud Tasks queue: projects/<project>/locations/<location>/queues/<queue>.
struct QueueDestination {
  std::string project;
  std::string location;
  std::string queue;
  static QueueDestination of(std::string project, std::string location, std::string queue) {
    return {std::move(project), std::move(location), std::move(queue)};
  }
  std::string resource_name() const {
    return "projects/" + project + "/locations/" + location + "/queues/" + queue;
  }
  friend bool operator==(const QueueDestination&, const QueueDestination&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const QueueDestination& d) {
    return H::combine(std::move(h), d.project, d.location, d.queue);
  }
};

// Names the destination of each record, on the writer's thread, with the writer context (event
// time, watermark). Called once per record before serialization: keep it cheap and
// deterministic. Returning nothing is a configuration error that fails the job — it is never
// treated as a bad record.
template <typename T, typename D>
using DestinationResolver = std::function<std::optional<D>(const T&, const SinkWriterContext&)>;

// A resolver that always answers `d` (what `table(...)`/`topic(...)` set).
template <typename T, typename D>
DestinationResolver<T, D> FixedDestination(D d) {
  return [d = std::move(d)](const T&, const SinkWriterContext&) { return std::optional<D>(d); };
}

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_DESTINATIONS_H_
