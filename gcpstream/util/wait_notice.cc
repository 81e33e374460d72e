#include "gcpstream/util/wait_notice.h"

#include <map>
#include <mutex>

namespace gcpstream::util {
namespace {

struct Notices {
  std::mutex mu;
  std::map<std::thread::id, std::string> by_thread;
};

Notices& Get() {
  static auto* notices = new Notices();  // never destroyed: threads may outlive statics
  return *notices;
}

}  // namespace

void WaitNotice::set(std::string description) {
  auto& n = Get();
  std::lock_guard lock(n.mu);
  n.by_thread[std::this_thread::get_id()] = std::move(description);
}

void WaitNotice::clear() {
  auto& n = Get();
  std::lock_guard lock(n.mu);
  n.by_thread.erase(std::this_thread::get_id());
}

std::string WaitNotice::of(std::thread::id thread) {
  auto& n = Get();
  std::lock_guard lock(n.mu);
  auto it = n.by_thread.find(thread);
  return it == n.by_thread.end() ? std::string() : it->second;
}

ScopedWaitNotice::~ScopedWaitNotice() {
  if (!active_) return;
  if (previous_.empty()) {
    WaitNotice::clear();
  } else {
    WaitNotice::set(std::move(previous_));
  }
}

void ScopedWaitNotice::update(std::string description) {
  if (!active_) {
    previous_ = WaitNotice::of(std::this_thread::get_id());
    active_ = true;
  }
  WaitNotice::set(std::move(description));
}

}  // namespace gcpstream::util
