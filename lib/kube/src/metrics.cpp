#include "devshare/kube/metrics.hpp"

#include <fmt/format.h>

namespace devshare::kube {

void Metrics::Histogram::Observe(double seconds) {
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++counts[i];
  }
  ++count;
  sum += seconds;
}

namespace {

template <typename Histogram>
void RenderHistograms(std::string& out, std::string_view name, std::string_view help,
                      const std::map<std::string, Histogram>& by_outcome) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  for (const auto& [outcome, h] : by_outcome) {
    for (std::size_t i = 0; i < Metrics::kBuckets.size(); ++i) {
      fmt::format_to(std::back_inserter(out), "{}_bucket{{outcome=\"{}\",le=\"{}\"}} {}\n", name, outcome,
                     Metrics::kBuckets[i], h.counts[i]);
    }
    fmt::format_to(std::back_inserter(out), "{}_bucket{{outcome=\"{}\",le=\"+Inf\"}} {}\n", name, outcome, h.count);
    fmt::format_to(std::back_inserter(out), "{}_sum{{outcome=\"{}\"}} {}\n", name, outcome, h.sum);
    fmt::format_to(std::back_inserter(out), "{}_count{{outcome=\"{}\"}} {}\n", name, outcome, h.count);
  }
}

void RenderGauge(std::string& out, std::string_view name, std::string_view help, std::uint64_t value) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} gauge\n{} {}\n", name, help, name, name, value);
}

}  // namespace

std::string Metrics::Render() const {
  std::string out;
  RenderHistograms(out, "devshare_filter_duration_seconds", "Time to answer a Filter, by outcome.", filter_);
  RenderHistograms(out, "devshare_bind_duration_seconds", "Time to answer a Bind, by outcome.", bind_);
  out += "# HELP devshare_api_requests_total Requests to the API server, by verb and status code.\n"
         "# TYPE devshare_api_requests_total counter\n";
  for (const auto& [key, n] : api_) {
    fmt::format_to(std::back_inserter(out), "devshare_api_requests_total{{verb=\"{}\",code=\"{}\"}} {}\n", key.first,
                   key.second, n);
  }
  RenderGauge(out, "devshare_leader", "1 when this replica leads and has registered the nodes.", leader_ ? 1 : 0);
  RenderGauge(out, "devshare_nodes", "Nodes whose devices are in the cache.", nodes_);
  RenderGauge(out, "devshare_devices", "Devices in the cache.", devices_);
  RenderGauge(out, "devshare_pods", "Pods holding devices.", pods_);
  return out;
}

}  // namespace devshare::kube
