#ifndef GCPSTREAM_TESTS_SUPPORT_BIGTABLE_SINK_HARNESS_H_
#define GCPSTREAM_TESTS_SUPPORT_BIGTABLE_SINK_HARNESS_H_

#include <fmt/format.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gcpstream/bigtable/sink/bigtable_sink.h"
#include "tests/support/fake_bigtable.h"
#include "tests/support/fake_contexts.h"
#include "tests/support/sink_harness.h"

namespace gcpstream::testing {

// The Bigtable sink over FakeMutationBatchers, for the sink conformance suite. Destination "dN"
// is table "dN" of instance "i-dN" (a client group of its own); a record's key is its row key
// and it writes one cell in family "f".
struct BigtableSinkRecord {
  std::string table;
  std::string key;
};

class BigtableSinkHarness final : public SinkHarnessBase<BigtableSinkRecord> {
 public:
  using Record = BigtableSinkRecord;

  std::string name() const override { return "bigtable"; }
  std::string connector() const override { return "Bigtable"; }
  std::string in_flight_gauge() const override { return "inFlightEntries"; }

  absl::Status open(const SinkHarnessOptions& o) override {
    bigtable::BigtableWriterOptions options;
    options.max_in_flight_entries = o.max_in_flight_count;
    options.max_in_flight_bytes = o.max_in_flight_bytes;
    options.max_consecutive_rejections = o.max_consecutive_rejections;
    options.stall_warning_interval = o.stall_warning_interval;
    options.recovery.initial_backoff = std::chrono::milliseconds(1);
    options.recovery.max_backoff = std::chrono::milliseconds(5);
    auto b = bigtable::BigtableSink<Record>::builder();
    b.destination_resolver([](const Record& r, const SinkWriterContext&) {
       return std::optional<connector::TableDestination>(
           connector::TableDestination::of("p", "i-" + r.table, r.table));
     })
        .serializer(bigtable::BigtableSerializationSchema<Record>::of(
            [](const Record& r,
               const SinkWriterContext&) -> std::optional<bigtable::RowMutationEntry> {
              if (r.key == "<skip>") return std::nullopt;
              if (r.key == "<throw>") throw std::runtime_error("cannot encode");
              bigtable::RowMutationEntry e(r.key);
              e.set_cell("f", "q", 1000, "v");
              return e;
            }))
        .writer_options(options)
        .clients(factory_);
    if (o.create_if_needed) {
      b.create_disposition(bigtable::CreateDisposition::kCreateIfNeeded)
          .table_create_options(bigtable::TableCreateOptions().column_family("f"));
    }
    if (o.handler) b.failed_mutation_handler(o.handler);
    auto sink = b.build();
    if (!sink.ok()) return sink.status();
    return open_writer(std::shared_ptr<Sink<Record>>(*sink));
  }

  std::size_t submitted(const std::string& d) override {
    auto b = factory_->latest(d);
    return b ? b->size() : 0;
  }
  std::string key(const std::string& d, std::size_t i) override {
    return factory_->latest(d)->call(i).entry.row_key();
  }
  bool solo(const std::string& d, std::size_t i) override {
    return factory_->latest(d)->call(i).solo;
  }
  void complete(const std::string& d, std::size_t i, absl::Status status) override {
    auto b = factory_->latest(d);
    if (b) b->complete(i, std::move(status));
  }
  void respond(SinkResponder responder) override {
    auto attempts = std::make_shared<std::map<std::string, int>>();
    factory_->configure = [responder, attempts](const std::string&, FakeMutationBatcher& b) {
      b.on_add = [responder, attempts, &b](std::size_t i, const FakeMutationBatcher::Call& c) {
        const std::string key = c.entry.row_key();
        auto answer = responder(key, c.solo, (*attempts)[key]++);
        if (answer) b.complete(i, *answer);
      };
    };
  }
  int client_flushes(const std::string& d) override {
    auto b = factory_->latest(d);
    return b ? b->flushes() : 0;
  }
  int client_shutdowns(const std::string& d) override {
    auto b = factory_->latest(d);
    return b ? b->shutdowns() : 0;
  }
  std::vector<std::string> created() override {
    std::lock_guard lock(factory_->admin->mu_);
    return factory_->admin->creates;
  }
  std::string fail_everything_pending(absl::Status status) override {
    std::string seen;
    for (auto& [table, batchers] : factory_->all()) {
      for (auto& b : batchers) {
        seen += fmt::format(" {}: {} adds, {} pending;", table, b->size(), b->pending());
        b->complete_all(status);
      }
    }
    return seen;
  }

 protected:
  Record make(const std::string& destination, const std::string& key) const override {
    return {destination, key};
  }

 private:
  std::shared_ptr<FakeInstanceClientFactory> factory_ =
      std::make_shared<FakeInstanceClientFactory>();
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_SUPPORT_BIGTABLE_SINK_HARNESS_H_
