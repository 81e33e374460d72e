#include "gcpstream/api/metrics.h"

#include <algorithm>

namespace gcpstream {

void Histogram::update(std::int64_t value) {
  std::lock_guard lock(mu_);
  ++count_;
  if (values_.size() < window_) {
    values_.push_back(value);
    return;
  }
  values_[next_] = value;
  next_ = (next_ + 1) % window_;
}

Histogram::Snapshot Histogram::snapshot() const {
  std::vector<std::int64_t> sorted;
  Snapshot s;
  {
    std::lock_guard lock(mu_);
    sorted = values_;
    s.count = count_;
  }
  if (sorted.empty()) return s;
  std::sort(sorted.begin(), sorted.end());
  auto at = [&](double q) {
    const auto idx = static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
    return static_cast<double>(sorted[std::min(idx, sorted.size() - 1)]);
  };
  double sum = 0;
  for (auto v : sorted) sum += static_cast<double>(v);
  s.min = static_cast<double>(sorted.front());
  s.max = static_cast<double>(sorted.back());
  s.mean = sum / static_cast<double>(sorted.size());
  s.p50 = at(0.50);
  s.p95 = at(0.95);
  s.p99 = at(0.99);
  return s;
}

}  // namespace gcpstream
