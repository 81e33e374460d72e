// Flights from a Pub/Sub subscription into a Bigtable table, one row per flight: the job of
// examples/pipelines/flights-pubsub-to-bigtable.yaml written against the C++ API instead of
// YAML. It is meant to be read as the model of a streaming job built with the library:
//
//   1. a record type (Flight) and a deserializer turning a Pub/Sub message into it,
//   2. a PubSubSource that creates its subscription when it is missing,
//   3. a BigtableSink whose serializer turns a Flight into one row mutation,
//   4. an environment with periodic checkpoints, optionally restored from the latest one,
//   5. signal handling: SIGTERM stops with a savepoint, SIGINT cancels.
//
// Every message is a JSON flight such as
//   {"date":"2001/01/14 21:55","delay":-3,"distance":480,"origin":"SAN","destination":"SMF"}
// with an attribute `seq` (its position in the input file, as pipeline 1 of scripts/demo.sh
// publishes it). The row key is origin#date#seq; family f holds delay, distance and destination,
// each cell stamped with the flight time, so a replay after a restore rewrites the same cell
// versions instead of adding new ones. Messages are acknowledged when the checkpoint taken after
// them completes, and the sink flushes at every checkpoint: delivery is at-least-once, and the
// stable row keys and timestamps make the replays invisible.
//
//   eval "$(scripts/emulators.sh env)"
//   build/examples/flights_to_bigtable --checkpoint-dir checkpoints/flights-cpp
//   build/examples/flights_to_bigtable --checkpoint-dir checkpoints/flights-cpp --restore
//
// The library never reads *_EMULATOR_HOST; this program only uses those variables as the
// defaults of --pubsub-emulator and --bigtable-emulator. Without an emulator endpoint the
// connectors talk to Google Cloud with application-default credentials.
#include <pthread.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gcpstream/bigtable/sink/bigtable_sink.h"
#include "gcpstream/pubsub/source/pubsub_source.h"
#include "gcpstream/runtime/checkpoint_storage.h"
#include "gcpstream/runtime/stream_execution_environment.h"

namespace {

namespace fs = std::filesystem;
using gcpstream::Collector;
using gcpstream::SinkWriterContext;
using gcpstream::WatermarkStrategy;
using gcpstream::bigtable::RowMutationEntry;
using google::pubsub::v1::PubsubMessage;

// One flight, as the job carries it between the source and the sink.
struct Flight {
  std::string date;  // "2001/01/14 21:55", local time of unknown zone: read as UTC
  std::int64_t delay = 0;
  std::int64_t distance = 0;
  std::string origin;
  std::string destination;
  std::string seq;  // the message's `seq` attribute: keeps flights sharing origin and date apart
  std::int64_t flight_time_micros = 0;  // `date` in µs since the epoch, whole milliseconds
};

// "2001/01/14 21:55" read as UTC, in microseconds truncated to whole milliseconds (Bigtable
// tables have millisecond granularity and reject other cell timestamps).
absl::StatusOr<std::int64_t> FlightTimeMicros(const std::string& date) {
  absl::Time t;
  std::string error;
  if (!absl::ParseTime("%Y/%m/%d %H:%M", date, absl::UTCTimeZone(), &t, &error)) {
    return absl::InvalidArgumentError("date \"" + date + "\": " + error);
  }
  const std::int64_t micros = absl::ToUnixMicros(t);
  std::int64_t millis = micros / 1000;
  if (micros % 1000 < 0) --millis;  // round toward the past for dates before 1970
  return millis * 1000;
}

// Message -> Flight. A non-OK status is a deserialization failure, which the source handles by
// its deserialization_failure_policy (here the default: fail the job). The message's publish
// time becomes the record's event timestamp without any code here.
absl::Status ParseFlight(const PubsubMessage& message, Collector<Flight>& out) {
  const auto json = nlohmann::json::parse(message.data(), nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) {
    return absl::InvalidArgumentError("message " + message.message_id() + " is not a JSON object");
  }
  const auto seq = message.attributes().find("seq");
  if (seq == message.attributes().end()) {
    return absl::InvalidArgumentError("message " + message.message_id() + " has no attribute seq");
  }
  Flight f;
  try {
    f.date = json.at("date").get<std::string>();
    f.delay = json.at("delay").get<std::int64_t>();
    f.distance = json.at("distance").get<std::int64_t>();
    f.origin = json.at("origin").get<std::string>();
    f.destination = json.at("destination").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError("message " + message.message_id() + ": " + e.what());
  }
  f.seq = seq->second;
  auto micros = FlightTimeMicros(f.date);
  if (!micros.ok()) return micros.status();
  f.flight_time_micros = *micros;
  out.collect(std::move(f));
  return absl::OkStatus();
}

// Flight -> one row. Returning std::nullopt would skip the record; throwing would be a
// serialization failure for the sink's failure handler.
std::optional<RowMutationEntry> ToRow(const Flight& f, const SinkWriterContext&) {
  RowMutationEntry row(f.origin + "#" + f.date + "#" + f.seq);
  row.set_cell("f", "delay", f.flight_time_micros, std::to_string(f.delay))
      .set_cell("f", "distance", f.flight_time_micros, std::to_string(f.distance))
      .set_cell("f", "destination", f.flight_time_micros, f.destination);
  return row;
}

std::string EnvOr(const char* name, std::string fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  // --- Flags -------------------------------------------------------------------------------
  std::string project = "gcpstream-demo";
  std::string topic = "flights";
  std::string subscription = "flights-to-bigtable";
  std::string instance = "demo";
  std::string table = "flights";
  std::string pubsub_emulator = EnvOr("PUBSUB_EMULATOR_HOST", "");
  std::string bigtable_emulator = EnvOr("BIGTABLE_EMULATOR_HOST", "");
  std::string checkpoint_dir = "checkpoints/flights-to-bigtable-cpp";
  bool restore = false;
  int parallelism = 2;

  CLI::App app{"Pub/Sub -> Bigtable flights job, built with the gcpstream C++ API"};
  app.add_option("--project", project, "Google Cloud project of every resource")
      ->capture_default_str();
  app.add_option("--topic", topic, "topic the subscription is created on when it is missing")
      ->capture_default_str();
  app.add_option("--subscription", subscription, "subscription to read")->capture_default_str();
  app.add_option("--instance", instance, "Bigtable instance")->capture_default_str();
  app.add_option("--table", table, "Bigtable table (created with family f when missing)")
      ->capture_default_str();
  app.add_option("--pubsub-emulator", pubsub_emulator,
                 "host:port of a Pub/Sub emulator (default: $PUBSUB_EMULATOR_HOST; empty: "
                 "Google Cloud)");
  app.add_option("--bigtable-emulator", bigtable_emulator,
                 "host:port of a Bigtable emulator (default: $BIGTABLE_EMULATOR_HOST; empty: "
                 "Google Cloud)");
  app.add_option("--checkpoint-dir", checkpoint_dir,
                 "where checkpoints (and, under savepoints/, savepoints) are written")
      ->capture_default_str();
  app.add_flag("--restore", restore,
               "continue from the latest checkpoint or savepoint under --checkpoint-dir");
  app.add_option("--parallelism", parallelism, "subtasks per operator")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  const std::string savepoint_dir = (fs::path(checkpoint_dir) / "savepoints").string();

  // --- Source: Pub/Sub -----------------------------------------------------------------------
  gcpstream::pubsub::SubscriptionCreateOptions create;
  create.topic = gcpstream::connector::TopicDestination::of(project, topic);
  create.ack_deadline = std::chrono::seconds(60);
  auto source_builder = gcpstream::pubsub::PubSubSource<Flight>::builder();
  source_builder
      .subscription(gcpstream::connector::SubscriptionDestination::of(project, subscription),
                    create)
      .deserializer(gcpstream::pubsub::PubSubDeserializationSchema<Flight>::of(ParseFlight));
  if (!pubsub_emulator.empty()) source_builder.emulator_endpoint(pubsub_emulator);
  auto source = source_builder.build();
  if (!source.ok()) {
    std::fprintf(stderr, "Pub/Sub source: %s\n", source.status().ToString().c_str());
    return 2;
  }

  // --- Sink: Bigtable ------------------------------------------------------------------------
  gcpstream::bigtable::TableCreateOptions table_schema;
  table_schema.column_family("f", gcpstream::bigtable::GcRule::max_versions(1));
  gcpstream::bigtable::BigtableWriterOptions writer_options;
  writer_options.batch_element_count = 500;
  auto sink_builder = gcpstream::bigtable::BigtableSink<Flight>::builder();
  sink_builder.table(gcpstream::connector::TableDestination::of(project, instance, table))
      .serializer(gcpstream::bigtable::BigtableSerializationSchema<Flight>::of(ToRow))
      .writer_options(writer_options)
      .create_disposition(gcpstream::bigtable::CreateDisposition::kCreateIfNeeded)
      .table_create_options(table_schema);
  if (!bigtable_emulator.empty()) sink_builder.emulator_endpoint(bigtable_emulator);
  auto sink = sink_builder.build();
  if (!sink.ok()) {
    std::fprintf(stderr, "Bigtable sink: %s\n", sink.status().ToString().c_str());
    return 2;
  }

  // --- The job -------------------------------------------------------------------------------
  gcpstream::runtime::ExecutionConfig config;
  config.parallelism = parallelism;
  config.checkpointing.interval = std::chrono::seconds(1);
  config.checkpointing.directory = checkpoint_dir;
  if (restore) {
    if (auto point = gcpstream::runtime::CheckpointStorage::find_restore_point(checkpoint_dir,
                                                                               savepoint_dir);
        point.ok()) {
      std::fprintf(stderr, "restoring from %s\n", point->c_str());
      config.restore_from = *point;
    } else {
      std::fprintf(stderr, "nothing to restore under %s: starting afresh\n",
                   checkpoint_dir.c_str());
    }
  }
  gcpstream::StreamExecutionEnvironment env(config);
  // The publish time is each record's event time; this job needs no watermarks.
  auto flights =
      env.from_source(*source, WatermarkStrategy<Flight>::no_watermarks(), "pubsub-flights");
  // A stable uid: a restore matches the source's checkpointed state by it.
  flights.uid("pubsub-flights");
  flights.sink_to(*sink, "bigtable-flights");

  // --- Signals -------------------------------------------------------------------------------
  // Block them before any job thread starts (threads inherit the mask) and take them on a
  // thread of our own with sigwait. SIGUSR1 is only our wake-up call once the job has ended.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto runner = env.create_runner("flights-to-bigtable");
  std::atomic<bool> finished{false};
  std::thread signal_thread([&] {
    int sig = 0;
    while (sigwait(&signals, &sig) == 0 && !finished) {
      if (sig == SIGINT) {
        std::fprintf(stderr, "SIGINT: cancelling\n");
        runner->cancel();
      } else if (sig == SIGTERM) {
        std::fprintf(stderr, "SIGTERM: stopping with a savepoint into %s\n", savepoint_dir.c_str());
        // Blocks until the savepoint completed; the job then ends with status OK.
        auto path = runner->stop_with_savepoint(savepoint_dir);
        if (path.ok()) {
          std::fprintf(stderr, "savepoint: %s\n", path->c_str());
        } else {
          std::fprintf(stderr, "stop with savepoint failed (%s): cancelling\n",
                       path.status().ToString().c_str());
          runner->cancel();
        }
      }
    }
  });

  const gcpstream::runtime::JobResult result = runner->run();  // until stopped or failed
  finished = true;
  pthread_kill(signal_thread.native_handle(), SIGUSR1);
  signal_thread.join();

  std::printf("%s after %lld ms: %.0f flights read, %.0f written, last checkpoint %s\n",
              result.status.ToString().c_str(), static_cast<long long>(result.duration.count()),
              result.metric("pubsub-flights", "numRecordsOut"),
              result.metric("bigtable-flights", "numRecordsSend"),
              result.last_checkpoint_path.empty() ? "none" : result.last_checkpoint_path.c_str());
  return result.status.ok() ? 0 : 1;
}
