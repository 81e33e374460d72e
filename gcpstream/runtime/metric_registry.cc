#include "gcpstream/runtime/metric_registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <nlohmann/json.hpp>
#include <set>

#include "gcpstream/util/absl_fmt.h"

namespace gcpstream::runtime {

class MetricGroupImpl final : public MetricGroup {
 public:
  MetricGroupImpl(std::map<std::string, std::string> labels, std::string prefix)
      : labels_(std::move(labels)), prefix_(std::move(prefix)) {}

  Counter& counter(std::string_view name) override {
    std::lock_guard lock(mu_);
    auto& slot = counters_[std::string(name)];
    if (!slot) slot = std::make_unique<Counter>();
    return *slot;
  }
  Histogram& histogram(std::string_view name) override {
    std::lock_guard lock(mu_);
    auto& slot = histograms_[std::string(name)];
    if (!slot) slot = std::make_unique<Histogram>();
    return *slot;
  }
  void gauge(std::string_view name, GaugeFunction read) override {
    std::lock_guard lock(mu_);
    // The first live registration wins; one frozen when its subtask closed gives way to the
    // next attempt's (after a restart the registry, and so this group, is the same).
    auto [it, inserted] = gauges_.try_emplace(std::string(name), std::move(read));
    if (!inserted && frozen_gauges_.erase(it->first) > 0) it->second = std::move(read);
  }
  MetricGroup& add_group(std::string_view name) override {
    std::lock_guard lock(mu_);
    auto& slot = children_[std::string(name)];
    if (!slot) {
      slot = std::make_unique<MetricGroupImpl>(labels_, prefix_ + std::string(name) + ".");
    }
    return *slot;
  }
  std::string scope() const override {
    std::string out;
    for (const auto& [k, v] : labels_) out += fmt::format("{}{}={}", out.empty() ? "" : ",", k, v);
    return prefix_.empty() ? out : fmt::format("{} {}", out, prefix_);
  }

  const std::map<std::string, std::string>& labels() const { return labels_; }

  void collect(std::vector<MetricSample>& out) const {
    std::lock_guard lock(mu_);
    for (const auto& [name, c] : counters_) {
      out.push_back({labels_, prefix_ + name, MetricSample::Kind::kCounter, double(c->get()), {}});
    }
    for (const auto& [name, g] : gauges_) {
      out.push_back({labels_, prefix_ + name, MetricSample::Kind::kGauge, g(), {}});
    }
    for (const auto& [name, h] : histograms_) {
      out.push_back({labels_, prefix_ + name, MetricSample::Kind::kHistogram, 0, h->snapshot()});
    }
    for (const auto& [name, child] : children_) child->collect(out);
  }

  void freeze() {
    std::lock_guard lock(mu_);
    for (auto& [name, g] : gauges_) {
      const double value = g();
      g = [value] { return value; };
      frozen_gauges_.insert(name);
    }
    for (auto& [name, child] : children_) child->freeze();
  }

 private:
  const std::map<std::string, std::string> labels_;
  const std::string prefix_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Counter>> counters_;
  std::map<std::string, std::unique_ptr<Histogram>> histograms_;
  std::map<std::string, GaugeFunction> gauges_;
  std::set<std::string> frozen_gauges_;  // replaced by their last value at freeze()
  std::map<std::string, std::unique_ptr<MetricGroupImpl>> children_;
};

MetricRegistry::MetricRegistry() = default;
MetricRegistry::~MetricRegistry() = default;

MetricGroup& MetricRegistry::group(std::map<std::string, std::string> labels) {
  std::lock_guard lock(mu_);
  for (auto& root : roots_) {
    if (root->labels() == labels) return *root;
  }
  roots_.push_back(std::make_unique<MetricGroupImpl>(std::move(labels), ""));
  return *roots_.back();
}

std::vector<MetricSample> MetricRegistry::snapshot() const {
  std::vector<MetricSample> out;
  std::lock_guard lock(mu_);
  for (const auto& root : roots_) root->collect(out);
  return out;
}

void MetricRegistry::freeze(const std::map<std::string, std::string>& labels) {
  std::lock_guard lock(mu_);
  for (auto& root : roots_) {
    const bool match = std::all_of(labels.begin(), labels.end(), [&](const auto& kv) {
      auto it = root->labels().find(kv.first);
      return it != root->labels().end() && it->second == kv.second;
    });
    if (match) root->freeze();
  }
}

void MetricRegistry::freeze(MetricGroup& group) {
  if (auto* impl = dynamic_cast<MetricGroupImpl*>(&group)) impl->freeze();
}

namespace {

std::string PrometheusName(const std::string& name) {
  std::string out = "gcpstream_";
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == ':';
    out.push_back(ok ? c : '_');
  }
  return out;
}

std::string EscapeLabel(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

std::string Labels(const std::map<std::string, std::string>& labels,
                   const std::string& extra = "") {
  std::string out;
  for (const auto& [k, v] : labels) {
    out += fmt::format("{}{}=\"{}\"", out.empty() ? "" : ",", k, EscapeLabel(v));
  }
  if (!extra.empty()) out += (out.empty() ? "" : ",") + extra;
  return out.empty() ? "" : "{" + out + "}";
}

std::string Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

}  // namespace

std::string ToPrometheusText(const std::vector<MetricSample>& samples) {
  // Group by metric name so each family gets one TYPE line.
  std::map<std::string, std::vector<const MetricSample*>> families;
  for (const auto& s : samples) families[PrometheusName(s.name)].push_back(&s);
  std::string out;
  for (const auto& [name, members] : families) {
    const auto kind = members.front()->kind;
    const char* type = kind == MetricSample::Kind::kCounter ? "counter"
                       : kind == MetricSample::Kind::kGauge ? "gauge"
                                                            : "summary";
    out += fmt::format("# TYPE {} {}\n", name, type);
    for (const auto* s : members) {
      if (s->kind != MetricSample::Kind::kHistogram) {
        out += fmt::format("{}{} {}\n", name, Labels(s->labels), Number(s->value));
        continue;
      }
      const auto& h = s->histogram;
      for (auto [q, v] : {std::pair{"0.5", h.p50}, {"0.95", h.p95}, {"0.99", h.p99}}) {
        out += fmt::format("{}{} {}\n", name, Labels(s->labels, fmt::format("quantile=\"{}\"", q)),
                           Number(v));
      }
      out += fmt::format("{}_count{} {}\n", name, Labels(s->labels), h.count);
    }
  }
  return out;
}

std::string ToJson(const std::vector<MetricSample>& samples) {
  nlohmann::json metrics = nlohmann::json::array();
  for (const auto& s : samples) {
    nlohmann::json m;
    m["name"] = s.name;
    m["labels"] = s.labels;
    switch (s.kind) {
      case MetricSample::Kind::kCounter:
        m["type"] = "counter";
        m["value"] = s.value;
        break;
      case MetricSample::Kind::kGauge:
        m["type"] = "gauge";
        m["value"] = std::isfinite(s.value) ? nlohmann::json(s.value) : nlohmann::json(nullptr);
        break;
      case MetricSample::Kind::kHistogram:
        m["type"] = "histogram";
        m["count"] = s.histogram.count;
        m["min"] = s.histogram.min;
        m["max"] = s.histogram.max;
        m["mean"] = s.histogram.mean;
        m["p50"] = s.histogram.p50;
        m["p95"] = s.histogram.p95;
        m["p99"] = s.histogram.p99;
        break;
    }
    metrics.push_back(std::move(m));
  }
  return nlohmann::json{{"metrics", metrics}}.dump(2);
}

}  // namespace gcpstream::runtime
