// devshare/kube/metrics.hpp — what `devshare serve` exposes on /metrics, in
// the Prometheus text format (version 0.0.4).
//
//   devshare_filter_duration_seconds   histogram, by outcome (placed,
//                                      unschedulable, refused, error)
//   devshare_bind_duration_seconds     histogram, by outcome (bound, failed)
//   devshare_api_requests_total        counter, by verb and HTTP status code
//   devshare_leader                    gauge: 1 when leading and registered
//   devshare_nodes, devshare_devices   gauges: nodes and devices in the cache
//   devshare_pods                      gauge: pods holding devices
//
// Thread-safety: none; updated and rendered on the server's one thread.
#ifndef DEVSHARE_KUBE_METRICS_HPP_
#define DEVSHARE_KUBE_METRICS_HPP_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>

namespace devshare::kube {

class Metrics {
 public:
  // Upper bounds of the latency buckets, in seconds (+Inf is implied).
  static constexpr std::array<double, 12> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                      0.05,   0.1,   0.25,   0.5,   1,     5};

  void ObserveFilter(std::string_view outcome, double seconds) { filter_[std::string(outcome)].Observe(seconds); }
  void ObserveBind(std::string_view outcome, double seconds) { bind_[std::string(outcome)].Observe(seconds); }
  void CountApiRequest(std::string_view verb, int code) { ++api_[{std::string(verb), code}]; }
  void SetState(bool leader, std::uint64_t nodes, std::uint64_t devices, std::uint64_t pods) {
    leader_ = leader;
    nodes_ = nodes;
    devices_ = devices;
    pods_ = pods;
  }

  std::string Render() const;

 private:
  struct Histogram {
    std::array<std::uint64_t, kBuckets.size()> counts{};
    std::uint64_t count = 0;
    double sum = 0;
    void Observe(double seconds);
  };
  std::map<std::string, Histogram> filter_, bind_;
  std::map<std::pair<std::string, int>, std::uint64_t> api_;
  bool leader_ = false;
  std::uint64_t nodes_ = 0, devices_ = 0, pods_ = 0;
};

}  // namespace devshare::kube

#endif  // DEVSHARE_KUBE_METRICS_HPP_
