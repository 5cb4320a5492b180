// The openb traces (the FGD paper's workload, ../shared/data/openb) read
// into scenarios (OpenbScenario, OpenbChurn, OpenbReplay), and a self-contained scenario
// shaped like them (SyntheticScenario). How a trace row becomes a HAMi
// request, and the GPU memory assumed per model, are in lib/sim/README.md.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "devshare/objects.hpp"
#include "devshare/sim/simulator.hpp"
#include "scenario_objects.hpp"

namespace devshare::sim {

using internal::GpusOf;

namespace {

// Rows of a CSV file with a header: column name -> value, per row.
Result<std::vector<std::map<std::string, std::string>>> ReadCsv(std::string_view text,
                                                                std::string_view what) {
  std::vector<std::map<std::string, std::string>> rows;
  std::vector<std::string> header;
  std::size_t line = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view row = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++line;
    if (!row.empty() && row.back() == '\r') row.remove_suffix(1);
    if (row.empty()) continue;
    std::vector<std::string> fields;
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = row.find(',', start);
      fields.emplace_back(row.substr(
          start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (header.empty()) {
      header = std::move(fields);
      continue;
    }
    if (fields.size() != header.size()) {
      return Status::Malformed(fmt::format("{}: line {}: {} fields, the header has {}", what, line,
                                           fields.size(), header.size()));
    }
    std::map<std::string, std::string> values;
    for (std::size_t i = 0; i < header.size(); ++i) values[header[i]] = fields[i];
    rows.push_back(std::move(values));
  }
  return rows;
}

Result<std::int64_t> IntField(const std::map<std::string, std::string>& row, const std::string& key,
                              std::string_view what, std::size_t index, std::int64_t fallback) {
  auto it = row.find(key);
  if (it == row.end() || it->second.empty()) return fallback;
  std::optional<std::int64_t> v = QuantityAsInt64(it->second);
  if (!v || *v < 0) {
    return Status::Malformed(fmt::format("{}: row {}: {} is not a non-negative integer: {}", what,
                                         index + 1, key, it->second));
  }
  return *v;
}

// One row of a pod list as a pod (its name, requests and GPU models).
Result<PodSpec> PodRow(const std::map<std::string, std::string>& row, std::size_t i) {
  PodSpec p;
  p.name = row.contains("name") ? row.at("name") : fmt::format("row-{}", i + 1);
  Result<std::int64_t> gpus = IntField(row, "num_gpu", "pod list", i, 0);
  Result<std::int64_t> milli = IntField(row, "gpu_milli", "pod list", i, 1000);
  Result<std::int64_t> cpu = IntField(row, "cpu_milli", "pod list", i, 0);
  Result<std::int64_t> mem = IntField(row, "memory_mib", "pod list", i, 0);
  for (const auto* r : {&gpus, &milli, &cpu, &mem}) {
    if (!r->ok()) return r->status();
  }
  if (*gpus > 8 || (*gpus == 1 && (*milli == 0 || *milli > 1000))) {
    return Status::Malformed(fmt::format(
        "pod list: row {}: num_gpu {} with gpu_milli {} cannot be mapped", i + 1, *gpus, *milli));
  }
  p.gpus = static_cast<std::int32_t>(*gpus);
  p.gpu_milli = p.gpus == 1 ? static_cast<std::int32_t>(*milli) : 1000;
  p.gpu_spec = row.contains("gpu_spec") ? row.at("gpu_spec") : "";
  p.cpu_milli = *cpu;
  p.memory_mib = *mem;
  return p;
}

// GPU memory per model; the traces do not give it (V100M16/V100M32 by name;
// the undisclosed G1/G2 assumed 16 GiB and G3 32 GiB). lib/sim/README.md
// states the table. nullopt: a model not in it.
std::optional<std::int32_t> ModelMemory(const std::string& model) {
  static const std::map<std::string, std::int32_t> kMemory = {
      {"V100M16", 16384}, {"V100M32", 32768}, {"P100", 16384}, {"T4", 16384},
      {"A10", 24576},     {"G1", 16384},      {"G2", 16384},   {"G3", 32768}};
  auto it = kMemory.find(model);
  if (it == kMemory.end()) return std::nullopt;
  return it->second;
}

// The nodes of a node list (their GPUs summed in `capacity`) and the pods of
// a pod list, row by row; a pod list without pods is an error.
struct OpenbTables {
  Scenario nodes;
  double capacity = 0;
  std::vector<std::map<std::string, std::string>> rows;
  std::vector<PodSpec> pool;
};

Result<OpenbTables> ReadTables(std::string_view nodes_csv, std::string_view pods_csv) {
  Result<std::vector<std::map<std::string, std::string>>> node_rows =
      ReadCsv(nodes_csv, "node list");
  if (!node_rows.ok()) return node_rows.status();
  Result<std::vector<std::map<std::string, std::string>>> pod_rows = ReadCsv(pods_csv, "pod list");
  if (!pod_rows.ok()) return pod_rows.status();
  OpenbTables t;
  for (std::size_t i = 0; i < node_rows->size(); ++i) {
    const auto& row = (*node_rows)[i];
    NodeSpec n;
    n.name = row.contains("sn") ? row.at("sn") : "";
    if (n.name.empty()) return Status::Malformed(fmt::format("node list: row {}: no sn", i + 1));
    n.model = row.contains("model") ? row.at("model") : "";
    Result<std::int64_t> gpus = IntField(row, "gpu", "node list", i, 0);
    Result<std::int64_t> cpu = IntField(row, "cpu_milli", "node list", i, 0);
    Result<std::int64_t> mem = IntField(row, "memory_mib", "node list", i, 0);
    if (!gpus.ok()) return gpus.status();
    if (!cpu.ok()) return cpu.status();
    if (!mem.ok()) return mem.status();
    const std::optional<std::int32_t> model_memory = ModelMemory(n.model);
    if (*gpus > 0 && !model_memory) {
      return Status::Malformed(
          fmt::format("node list: row {}: GPU model '{}' has no known memory (V100M16, V100M32, "
                      "P100, T4, A10, G1, G2, G3)",
                      i + 1, n.model));
    }
    n.gpu_memory_mib = model_memory.value_or(0);
    n.gpus = static_cast<std::int32_t>(*gpus);
    n.cpu_milli = *cpu;
    n.memory_mib = *mem;
    t.capacity += n.gpus;
    t.nodes.nodes.push_back(std::move(n));
  }
  for (std::size_t i = 0; i < pod_rows->size(); ++i) {
    Result<PodSpec> p = PodRow((*pod_rows)[i], i);
    if (!p.ok()) return p.status();
    t.pool.push_back(std::move(*p));
  }
  if (t.pool.empty()) return Status::InvalidArgument("pod list: no pods");
  t.rows = std::move(*pod_rows);
  return t;
}

// The rows the inflate experiment draws with replacement under `seed`, in
// order, until their GPUs reach `gpus`.
std::vector<std::size_t> Draw(const std::vector<PodSpec>& pool, double gpus, std::uint64_t seed) {
  std::vector<std::size_t> drawn;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, pool.size() - 1);
  for (double requested = 0; requested < gpus;) {
    drawn.push_back(pick(rng));
    requested += GpusOf(pool[drawn.back()]);
  }
  return drawn;
}

// A row's creation time and how long it ran (ms; 0: never deleted).
struct RowTimes {
  std::int64_t created_ms = 0;
  std::int64_t duration_ms = 0;
};

Result<RowTimes> TimesOf(const std::map<std::string, std::string>& row, std::size_t i) {
  if (!row.contains("creation_time") || row.at("creation_time").empty()) {
    return Status::Malformed(fmt::format("pod list: row {}: no creation_time", i + 1));
  }
  Result<std::int64_t> created = IntField(row, "creation_time", "pod list", i, 0);
  Result<std::int64_t> deleted = IntField(row, "deletion_time", "pod list", i, 0);
  if (!created.ok()) return created.status();
  if (!deleted.ok()) return deleted.status();
  if (*deleted != 0 && *deleted < *created) {
    return Status::Malformed(fmt::format("pod list: row {}: deleted ({}) before created ({})",
                                         i + 1, *deleted, *created));
  }
  // A pod deleted the second it was created still runs for a moment.
  return RowTimes{*created * 1000,
                  *deleted != 0 ? std::max<std::int64_t>(1, (*deleted - *created) * 1000) : 0};
}

}  // namespace

Result<Scenario> OpenbScenario(std::string_view nodes_csv, std::string_view pods_csv, double demand,
                               std::uint64_t seed, std::int64_t interval_ms) {
  Result<OpenbTables> t = ReadTables(nodes_csv, pods_csv);
  if (!t.ok()) return t.status();
  Scenario scenario = std::move(t->nodes);
  const std::vector<std::size_t> drawn = Draw(t->pool, demand * t->capacity, seed);
  for (std::size_t i = 0; i < drawn.size(); ++i) {
    PodSpec p = t->pool[drawn[i]];
    p.name = fmt::format("{}-{}", p.name, i);
    p.arrive_ms = static_cast<std::int64_t>(i) * interval_ms;
    scenario.pods.push_back(std::move(p));
  }
  return scenario;
}

Result<Scenario> OpenbChurn(std::string_view nodes_csv, std::string_view pods_csv, double demand,
                            double turnover, std::uint64_t seed) {
  Result<OpenbTables> t = ReadTables(nodes_csv, pods_csv);
  if (!t.ok()) return t.status();
  if (!(demand > 0) || !(turnover > 0)) {
    return Status::InvalidArgument(
        fmt::format("churn: demand ({}) and turnover ({}) must be positive", demand, turnover));
  }
  Scenario scenario = std::move(t->nodes);
  const std::vector<std::size_t> drawn = Draw(t->pool, turnover * t->capacity, seed);
  for (std::size_t i = 0; i < drawn.size(); ++i) {
    Result<RowTimes> times = TimesOf(t->rows[drawn[i]], drawn[i]);
    if (!times.ok()) return times.status();
    PodSpec p = t->pool[drawn[i]];
    p.name = fmt::format("{}-{}", p.name, i);
    p.duration_ms = times->duration_ms;
    scenario.pods.push_back(std::move(p));
  }
  // One arrival a second, as OpenbScenario's, and every lifetime stretched
  // by one factor: the GPUs the pods alive ask, averaged over the arrivals'
  // span, as multiples of the cluster's, grow with it; bisection finds the
  // factor that offers `demand`.
  const double span = 1000.0 * static_cast<double>(scenario.pods.size());
  auto offered = [&](double stretch) {
    double gpu_ms = 0;
    for (std::size_t i = 0; i < scenario.pods.size(); ++i) {
      const double left = span - 1000.0 * static_cast<double>(i);
      const PodSpec& p = scenario.pods[i];
      gpu_ms += GpusOf(p) * (p.duration_ms == 0
                                 ? left
                                 : std::min(left, stretch * static_cast<double>(p.duration_ms)));
    }
    return gpu_ms / span / t->capacity;
  };
  if (offered(1e12) < demand) {
    return Status::InvalidArgument(fmt::format(
        "churn: pods asking {} clusters' GPUs in all cannot keep {} of the cluster's asked; "
        "raise the turnover",
        turnover, demand));
  }
  double low = 0, high = 1;
  while (offered(high) < demand) high *= 2;
  for (int step = 0; step < 60; ++step) {
    const double mid = (low + high) / 2;
    (offered(mid) < demand ? low : high) = mid;
  }
  for (std::size_t i = 0; i < scenario.pods.size(); ++i) {
    PodSpec& p = scenario.pods[i];
    p.arrive_ms = static_cast<std::int64_t>(i) * 1000;
    // Living past the last arrival is living to the end of the run: at most
    // the span, so the product stays an integer.
    if (p.duration_ms != 0)
      p.duration_ms = std::max<std::int64_t>(
          1, std::llround(std::min(span, high * static_cast<double>(p.duration_ms))));
  }
  return scenario;
}

Result<Scenario> OpenbReplay(std::string_view nodes_csv, std::string_view pods_csv) {
  Result<OpenbTables> t = ReadTables(nodes_csv, pods_csv);
  if (!t.ok()) return t.status();
  Scenario scenario = std::move(t->nodes);
  std::optional<std::int64_t> first;
  for (std::size_t i = 0; i < t->rows.size(); ++i) {
    Result<RowTimes> times = TimesOf(t->rows[i], i);
    if (!times.ok()) return times.status();
    PodSpec p = t->pool[i];
    p.arrive_ms = times->created_ms;
    p.duration_ms = times->duration_ms;
    first = first ? std::min(*first, p.arrive_ms) : p.arrive_ms;
    scenario.pods.push_back(std::move(p));
  }
  for (PodSpec& p : scenario.pods) p.arrive_ms -= first.value_or(0);
  return scenario;
}

Scenario SyntheticScenario(std::uint64_t seed, std::int32_t nodes, double demand) {
  static const char* const kModels[] = {"T4", "V100M16", "V100M32", "A10"};
  Scenario s;
  std::mt19937_64 rng(seed);
  for (std::int32_t n = 0; n < nodes; ++n) {
    const std::string model = kModels[static_cast<std::size_t>(n) % 4];
    s.nodes.push_back(
        NodeSpec{fmt::format("node-{:04}", n), 8, *ModelMemory(model), model, 96000, 786432});
  }
  // (weight, gpus, milli, cpu_milli, memory_mib): a mix like openb's.
  struct Shape {
    double weight;
    std::int32_t gpus, milli;
    std::int64_t cpu, memory;
  };
  static constexpr Shape kShapes[] = {
      {0.25, 1, 250, 4000, 8192},    {0.30, 1, 500, 8000, 16384},    {0.30, 1, 1000, 12000, 32768},
      {0.08, 2, 1000, 24000, 65536}, {0.04, 4, 1000, 48000, 131072}, {0.03, 8, 1000, 88000, 262144},
  };
  std::vector<double> weights;
  for (const Shape& shape : kShapes) weights.push_back(shape.weight);
  std::discrete_distribution<std::size_t> pick(weights.begin(), weights.end());
  const double capacity = 8.0 * nodes;
  double requested = 0;
  for (std::size_t i = 0; requested < demand * capacity; ++i) {
    const Shape& shape = kShapes[pick(rng)];
    PodSpec p{fmt::format("pod-{}", i),
              shape.gpus,
              shape.milli,
              "",
              shape.cpu,
              shape.memory,
              static_cast<std::int64_t>(i) * 1000,
              0};
    requested += GpusOf(p);
    s.pods.push_back(std::move(p));
  }
  return s;
}

}  // namespace devshare::sim
