#ifndef GCPSTREAM_TESTS_SUPPORT_SINK_HARNESS_H_
#define GCPSTREAM_TESTS_SUPPORT_SINK_HARNESS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gcpstream/api/sink.h"
#include "gcpstream/connector/failure_handler.h"
#include "tests/support/fake_contexts.h"

namespace gcpstream::testing {

// What the shared sink conformance suite (tests/unit/connector/sink_conformance_test.cc) asks
// of a sink. Every sink built on connector::AsyncSinkWriter provides one harness over its fake
// clients and is instantiated in that suite, so the behaviours every sink owes its users are
// pinned once, for all of them.
struct SinkHarnessOptions {
  std::int64_t max_in_flight_count = 1000;
  std::int64_t max_in_flight_bytes = 64LL * 1024 * 1024;
  // Null: the default handler (fail the job).
  std::shared_ptr<connector::FailureHandler> handler;
  // A create disposition that repairs a missing destination (CREATE_IF_NEEDED).
  bool create_if_needed = false;
  int max_consecutive_rejections = 100;
  // The first WARN of a stalled wait, and then at most one per interval.
  std::chrono::milliseconds stall_warning_interval{std::chrono::minutes(1)};
};

// Answers a submission inline, on the writer's thread (as a client failing at once does):
// `key` is the record's key, `solo` whether it travels alone (the isolation pass), `attempt`
// how many times this key was submitted before. Returning nullopt leaves it pending.
using SinkResponder =
    std::function<std::optional<absl::Status>(const std::string& key, bool solo, int attempt)>;

class SinkHarness {
 public:
  virtual ~SinkHarness() = default;
  // "pubsub", "bigtable", ...: names the instantiation.
  virtual std::string name() const = 0;

  // Builds the sink over fakes and opens a writer. Destinations are named "d1", "d2", ...; each
  // is in a client group (channel) of its own.
  virtual absl::Status open(const SinkHarnessOptions& options) = 0;
  // A record with key `key` for `destination`.
  virtual absl::Status write(const std::string& destination, const std::string& key) = 0;
  // A record the serializer throws on, and one it skips.
  virtual absl::Status write_unserializable(const std::string& destination) = 0;
  virtual absl::Status write_skipped(const std::string& destination) = 0;
  virtual absl::Status flush(bool end_of_input) = 0;
  virtual absl::Status close() = 0;
  // Runs the mails queued on the writer's thread (completions) without blocking.
  virtual absl::Status run_pending_mails() = 0;

  // The latest fake client of a destination: what it was handed, in order.
  virtual std::size_t submitted(const std::string& destination) = 0;
  virtual std::string key(const std::string& destination, std::size_t i) = 0;
  virtual bool solo(const std::string& destination, std::size_t i) = 0;
  // Completes submission `i` (any thread); a failure hands the element back.
  virtual void complete(const std::string& destination, std::size_t i, absl::Status status) = 0;
  // Installs an inline responder on every client opened from now on.
  virtual void respond(SinkResponder responder) = 0;
  virtual int client_flushes(const std::string& destination) = 0;
  virtual int client_shutdowns(const std::string& destination) = 0;
  // The destinations a repair created (in order).
  virtual std::vector<std::string> created() = 0;
  // Fails every pending submission of every destination with `status` (the watchdog's way to
  // end a broken wait) and says what had arrived.
  virtual std::string fail_everything_pending(absl::Status status) = 0;

  virtual double metric(const std::string& name) = 0;
  // The sink's in-flight count gauge (inFlightMessages, inFlightEntries, ...).
  virtual std::string in_flight_gauge() const = 0;
  // The connector's name as its messages say it ("Pub/Sub", "Bigtable").
  virtual std::string connector() const = 0;

  // Whether requests carry several elements (false: one element per request, so a refusal
  // concerns that element alone and needs no isolation pass, and there is no batch to flush).
  virtual bool batches() const { return true; }
  // Whether the sink has a create disposition that creates a missing destination.
  virtual bool creates_destinations() const { return true; }
  // What the failure of a missing destination says about creation ("CREATE_NEVER").
  virtual std::string missing_destination_words() const { return "CREATE_NEVER"; }
};

using SinkHarnessFactory = std::function<std::unique_ptr<SinkHarness>()>;

// The writer half every harness shares: a writer of `Record` over a test mailbox. A harness
// says how a (destination, key) pair becomes a record; the keys "<throw>" and "<skip>" must make
// its serializer throw and skip.
template <typename Record>
class SinkHarnessBase : public SinkHarness {
 public:
  absl::Status write(const std::string& destination, const std::string& key) override {
    return writer_->write(make(destination, key), ctx_);
  }
  absl::Status write_unserializable(const std::string& destination) override {
    return writer_->write(make(destination, "<throw>"), ctx_);
  }
  absl::Status write_skipped(const std::string& destination) override {
    return writer_->write(make(destination, "<skip>"), ctx_);
  }
  absl::Status flush(bool end_of_input) override { return writer_->flush(end_of_input); }
  absl::Status close() override { return writer_->close(); }
  absl::Status run_pending_mails() override { return mailbox_.drain(); }
  double metric(const std::string& name) override { return context_.metric(name); }

 protected:
  virtual Record make(const std::string& destination, const std::string& key) const = 0;
  // Opens the writer of a built sink.
  absl::Status open_writer(const absl::StatusOr<std::shared_ptr<Sink<Record>>>& sink) {
    if (!sink.ok()) return sink.status();
    auto writer = (*sink)->create_writer(context_);
    if (!writer.ok()) return writer.status();
    writer_ = std::move(*writer);
    return absl::OkStatus();
  }

  TestMailbox mailbox_;
  FakeWriterInitContext context_{mailbox_};
  SinkWriterContext ctx_;
  std::unique_ptr<SinkWriter<Record>> writer_;
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_SUPPORT_SINK_HARNESS_H_
