#ifndef GCPSTREAM_TESTS_SUPPORT_FAKE_BIGTABLE_H_
#define GCPSTREAM_TESTS_SUPPORT_FAKE_BIGTABLE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gcpstream/bigtable/admin/table_admin.h"
#include "gcpstream/bigtable/client/bigtable_stub.h"
#include "gcpstream/bigtable/client/mutation_batcher.h"
#include "gcpstream/bigtable/sink/bigtable_sink_adapter.h"

namespace gcpstream::testing {

// A batcher that completes nothing on its own: the test decides when and how every entry ends
// (from any thread). A failure hands the entry back, as the real batcher does. Thread-safe.
class FakeMutationBatcher final : public bigtable::MutationBatcher {
 public:
  struct Call {
    bigtable::Entry entry;
    std::uint64_t token = 0;
    bool solo = false;
    bool completed = false;
  };
  explicit FakeMutationBatcher(std::shared_ptr<bigtable::MutationListener> listener)
      : listener_(std::move(listener)) {}

  void add(bigtable::Entry&& entry, std::uint64_t token) override {
    record(std::move(entry), token, false);
  }
  void add_solo(bigtable::Entry&& entry, std::uint64_t token) override {
    record(std::move(entry), token, true);
  }
  void flush() override {
    flushes_++;
    if (on_flush) on_flush();
  }
  absl::Status shutdown() override {
    shutdowns_++;
    return absl::OkStatus();
  }

  // Completes call `i` (in add order).
  void complete(std::size_t i, absl::Status status = absl::OkStatus()) {
    std::vector<bigtable::MutationOutcome> outcomes;
    {
      std::lock_guard lock(mu_);
      if (i >= calls_.size() || calls_[i].completed) return;
      calls_[i].completed = true;
      bigtable::MutationOutcome o;
      o.token = calls_[i].token;
      o.status = status;
      if (!status.ok()) o.element = calls_[i].entry;
      outcomes.push_back(std::move(o));
    }
    listener_->on_outcomes(std::move(outcomes), nullptr);
  }
  // Completes every pending call with `status`.
  void complete_all(absl::Status status = absl::OkStatus()) {
    for (std::size_t i = 0; i < size(); ++i) complete(i, status);
  }
  std::size_t size() const {
    std::lock_guard lock(mu_);
    return calls_.size();
  }
  std::size_t pending() const {
    std::lock_guard lock(mu_);
    std::size_t n = 0;
    for (const auto& c : calls_) n += c.completed ? 0 : 1;
    return n;
  }
  Call call(std::size_t i) const {
    std::lock_guard lock(mu_);
    return calls_.at(i);
  }
  int flushes() const { return flushes_.load(); }
  int shutdowns() const { return shutdowns_.load(); }
  // Runs on every add (after recording it), on the caller's thread; lets a test answer at once.
  std::function<void(std::size_t index, const Call&)> on_add;
  std::function<void()> on_flush;

 private:
  void record(bigtable::Entry&& entry, std::uint64_t token, bool solo) {
    std::size_t index;
    Call copy;
    {
      std::lock_guard lock(mu_);
      calls_.push_back({std::move(entry), token, solo, false});
      index = calls_.size() - 1;
      copy = calls_.back();
    }
    if (on_add) on_add(index, copy);
  }
  std::shared_ptr<bigtable::MutationListener> listener_;
  mutable std::mutex mu_;
  std::vector<Call> calls_;
  std::atomic<int> flushes_{0};
  std::atomic<int> shutdowns_{0};
};

// Table admin whose answers the test sets; records every call. Answers at once, inline.
class FakeTableAdmin final : public bigtable::TableAdmin {
 public:
  void async_create_table(const connector::TableDestination& table,
                          const bigtable::TableCreateOptions& options,
                          std::function<void(absl::Status)> done) override {
    absl::Status answer;
    {
      std::lock_guard lock(mu_);
      creates.push_back(table.table);
      if (!create_answers.empty()) {
        answer = create_answers.front();
        create_answers.erase(create_answers.begin());
      }
      if (answer.ok()) {
        auto& t = tables[table.table];
        for (const auto& [name, f] : options.families()) {
          (*t.mutable_column_families())[name] = options.family_proto(name);
        }
      }
    }
    done(answer);
  }
  void async_get_table(
      const connector::TableDestination& table,
      std::function<void(absl::StatusOr<google::bigtable::admin::v2::Table>)> done) override {
    absl::StatusOr<google::bigtable::admin::v2::Table> answer;
    {
      std::lock_guard lock(mu_);
      gets++;
      auto it = tables.find(table.table);
      if (it == tables.end()) {
        answer = absl::NotFoundError("table " + table.table + " not found");
      } else {
        answer = it->second;
      }
    }
    done(std::move(answer));
  }
  void async_add_families(const connector::TableDestination& table,
                          const std::vector<std::string>& families,
                          const bigtable::TableCreateOptions& options,
                          std::function<void(absl::Status)> done) override {
    {
      std::lock_guard lock(mu_);
      added.push_back(families);
      auto& t = tables[table.table];
      for (const auto& f : families) (*t.mutable_column_families())[f] = options.family_proto(f);
    }
    done(absl::OkStatus());
  }

  std::mutex mu_;
  // Existing tables (by table id) with their families.
  std::map<std::string, google::bigtable::admin::v2::Table> tables;
  // Answers to successive creates; OK (and the table appears) once exhausted.
  std::vector<absl::Status> create_answers;
  std::vector<std::string> creates;
  std::vector<std::vector<std::string>> added;
  int gets = 0;
};

// Instance clients handing out FakeMutationBatchers and one shared FakeTableAdmin.
class FakeInstanceClientFactory final : public bigtable::InstanceClientFactory {
 public:
  class Client final : public bigtable::InstanceClient {
   public:
    Client(FakeInstanceClientFactory* owner, std::string instance)
        : owner_(owner), instance_(std::move(instance)) {}
    absl::StatusOr<std::shared_ptr<bigtable::MutationBatcher>> batcher(
        const connector::TableDestination& table,
        std::shared_ptr<bigtable::MutationListener> listener) override {
      auto b = std::make_shared<FakeMutationBatcher>(std::move(listener));
      if (owner_->configure) owner_->configure(table.table, *b);
      std::lock_guard lock(owner_->mu_);
      owner_->batchers_[table.table].push_back(b);
      return std::shared_ptr<bigtable::MutationBatcher>(b);
    }
    absl::StatusOr<std::shared_ptr<bigtable::TableAdmin>> admin() override { return owner_->admin; }
    absl::Status close() override {
      std::lock_guard lock(owner_->mu_);
      owner_->closed_.push_back(instance_);
      return absl::OkStatus();
    }

   private:
    FakeInstanceClientFactory* owner_;
    std::string instance_;
  };

  absl::StatusOr<std::shared_ptr<bigtable::InstanceClient>> open(
      const std::string&, const std::string& instance) override {
    std::lock_guard lock(mu_);
    opened_.push_back(instance);
    return std::shared_ptr<bigtable::InstanceClient>(std::make_shared<Client>(this, instance));
  }
  // The latest batcher created for a table id (null if none).
  std::shared_ptr<FakeMutationBatcher> latest(const std::string& table) {
    std::lock_guard lock(mu_);
    auto it = batchers_.find(table);
    return it == batchers_.end() ? nullptr : it->second.back();
  }
  std::size_t batchers_created(const std::string& table) {
    std::lock_guard lock(mu_);
    auto it = batchers_.find(table);
    return it == batchers_.end() ? 0 : it->second.size();
  }
  std::vector<std::string> opened() {
    std::lock_guard lock(mu_);
    return opened_;
  }
  // Every table id a batcher was created for, with its batchers (latest last).
  std::map<std::string, std::vector<std::shared_ptr<FakeMutationBatcher>>> all() {
    std::lock_guard lock(mu_);
    return batchers_;
  }
  std::vector<std::string> closed() {
    std::lock_guard lock(mu_);
    return closed_;
  }

  std::shared_ptr<FakeTableAdmin> admin = std::make_shared<FakeTableAdmin>();
  // Called for every new batcher (e.g. to install on_add).
  std::function<void(const std::string& table, FakeMutationBatcher&)> configure;

 private:
  std::mutex mu_;
  std::map<std::string, std::vector<std::shared_ptr<FakeMutationBatcher>>> batchers_;
  std::vector<std::string> opened_;
  std::vector<std::string> closed_;
};

// A MutateRows stub whose calls the test answers. Thread-safe.
class FakeBigtableDataStub final : public bigtable::BigtableDataStub {
 public:
  struct Call {
    google::bigtable::v2::MutateRowsRequest request;
    std::function<void(bigtable::MutateRowsResult)> done;
    std::chrono::milliseconds timeout{0};
    bool answered = false;
  };
  std::function<void()> async_mutate_rows(
      std::shared_ptr<const google::bigtable::v2::MutateRowsRequest> request,
      std::chrono::milliseconds timeout,
      std::function<void(bigtable::MutateRowsResult)> done) override {
    std::size_t index;
    {
      std::lock_guard lock(mu_);
      calls_.push_back({*request, std::move(done), timeout});
      index = calls_.size() - 1;
    }
    cv_.notify_all();
    if (auto_answer) {
      bigtable::MutateRowsResult ok;
      for (int i = 0; i < request->entries_size(); ++i)
        ok.entries.emplace_back(i, absl::OkStatus());
      answer(index, std::move(ok));
    }
    return [this, index] {
      bigtable::MutateRowsResult cancelled;
      cancelled.rpc = absl::CancelledError("cancelled by the client");
      answer(index, std::move(cancelled));
    };
  }
  void answer(std::size_t i, bigtable::MutateRowsResult result) {
    std::function<void(bigtable::MutateRowsResult)> done;
    {
      std::lock_guard lock(mu_);
      if (i >= calls_.size() || calls_[i].answered) return;
      calls_[i].answered = true;
      done = std::move(calls_[i].done);  // the stub must not keep the caller alive
    }
    done(std::move(result));
  }
  // Answers call `i` with one status per entry, in order.
  void answer_entries(std::size_t i, const std::vector<absl::Status>& statuses) {
    bigtable::MutateRowsResult r;
    for (std::size_t k = 0; k < statuses.size(); ++k) {
      r.entries.emplace_back(static_cast<std::int64_t>(k), statuses[k]);
    }
    answer(i, std::move(r));
  }
  std::size_t wait_for_calls(std::size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return calls_.size() >= n; });
    return calls_.size();
  }
  Call call(std::size_t i) {
    std::lock_guard lock(mu_);
    return calls_.at(i);
  }
  std::size_t size() {
    std::lock_guard lock(mu_);
    return calls_.size();
  }
  std::atomic<bool> auto_answer{false};

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Call> calls_;
};

}  // namespace gcpstream::testing

#endif  // GCPSTREAM_TESTS_SUPPORT_FAKE_BIGTABLE_H_
