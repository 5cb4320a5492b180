#include "state/fgd_measure.hpp"

#include <algorithm>
#include <bit>
#include <boost/container_hash/hash.hpp>
#include <limits>

namespace devshare::internal {

namespace {

constexpr std::int64_t kMaxClassMemoryMib = std::int64_t{1} << 40;  // bytes stay within int64

}  // namespace

void Measure(std::span<const float> free, const FgdModel& m, FragState& s) {
  s.below.assign(m.shapes.size(), 0.0);
  s.all = s.partial = 0;
  s.whole = 0;
  for (float f : free) AddDevice(s, f, m, +1);
}

namespace {

// The weights of the classes that fit `room`, summed class by class: the
// fitting ones in ascending CPU order, the others in descending order.
void SumFitting(const FgdModel& m, Room room, double* sums, double& unfit) {
  auto fits = [&](const FgdClass& c) {
    return (c.cpu_milli == 0 || c.cpu_milli <= room.cpu) &&
           (c.memory_bytes == 0 || c.memory_bytes <= room.memory);
  };
  std::fill(sums, sums + m.shapes.size(), 0.0);
  for (const FgdClass& c : m.classes) {
    if (fits(c)) sums[c.shape] += c.weight;
  }
  unfit = 0;
  // NOLINTNEXTLINE(modernize-loop-convert): descending, as said above
  for (auto c = m.classes.rbegin(); c != m.classes.rend(); ++c) {
    if (!fits(*c)) unfit += c->weight;
  }
}

// Cells: a CPU row of the table, and a column per memory step a room
// reaches (the last one: every class's).
std::size_t Columns(const FgdModel& m) { return m.memory_steps.size() + 1; }

}  // namespace

void TabulateCells(FgdModel& m) {
  const std::size_t n = m.shapes.size();
  const std::size_t rows = m.cpu_steps.size() + 1;
  const std::size_t columns = Columns(m);
  if (rows * columns * (n + 1) > kMaxTabulated) return;
  m.cells.assign(rows * columns * n, 0.0);
  m.cell_unfit.assign(rows * columns, 0.0);
  constexpr std::int64_t kBelowAll = std::numeric_limits<std::int64_t>::min();
  for (std::size_t row = 0; row < rows; ++row) {
    for (std::size_t column = 0; column < columns; ++column) {
      // A room in the cell: its CPU and memory steps.
      const Room room{row == 0 ? kBelowAll : m.cpu_steps[row - 1],
                      column == 0 ? kBelowAll : m.memory_steps[column - 1]};
      const std::size_t cell = row * columns + column;
      SumFitting(m, room, m.cells.data() + cell * n, m.cell_unfit[cell]);
    }
  }
}

// The weights of the classes that fit `room`: a table row when the row's
// memory asks fit too, else the cell (CPU row, memory step), tabulated or
// summed once. Row and cell sum the same classes in the same order, so that
// equal sets of classes give equal sums to the last bit (and no class left
// out gives exactly 0).
FitWeights FitFor(const FgdModel& m, Room room, FitMemo& memo) {
  const auto row = static_cast<std::size_t>(
      std::upper_bound(m.cpu_steps.begin(), m.cpu_steps.end(), room.cpu) - m.cpu_steps.begin());
  const std::size_t n = m.shapes.size();
  const std::size_t columns = Columns(m);
  if (m.row_memory[row] <= room.memory) {
    return FitWeights{m.rows.data() + row * n, m.row_unfit[row],
                      static_cast<std::uint32_t>(row * columns + columns - 1)};
  }
  // Below the row's largest memory ask, so before the last column.
  const auto column = static_cast<std::size_t>(
      std::upper_bound(m.memory_steps.begin(), m.memory_steps.end(), room.memory) -
      m.memory_steps.begin());
  const std::size_t cell = row * columns + column;
  if (!m.cells.empty()) {
    return FitWeights{m.cells.data() + cell * n, m.cell_unfit[cell],
                      static_cast<std::uint32_t>(cell)};
  }
  if (memo.slot.empty()) memo.slot.assign((m.cpu_steps.size() + 1) * columns, -1);
  if (memo.slot[cell] < 0) {
    memo.slot[cell] = static_cast<std::int32_t>(memo.sums.size());
    memo.sums.emplace_back(n);
    memo.unfit.emplace_back();
    SumFitting(m, room, memo.sums.back().data(), memo.unfit.back());
  }
  const auto slot = static_cast<std::size_t>(memo.slot[cell]);
  return FitWeights{memo.sums[slot].data(), memo.unfit[slot], static_cast<std::uint32_t>(cell)};
}

Room FreeRoom(const NodeState& node) {
  return Room{node.cpu_capacity < 0 ? kUnlimited : node.cpu_capacity - node.cpu_requested,
              node.memory_capacity < 0 ? kUnlimited : node.memory_capacity - node.memory_requested};
}

void MeasureNode(const SnapshotState& s, const NodeState& node, const FgdModel& m, FitMemo& fits,
                 NodeMeasure& out) {
  const HotDevice* hot = s.Hot(node);
  out.free.resize(node.devices.size());
  for (std::size_t i = 0; i < node.devices.size(); ++i) out.free[i] = FreeShare(hot[i]);
  Measure(out.free, m, out.sums);
  const FitWeights w = FitFor(m, FreeRoom(node), fits);
  out.cell = w.cell;
  out.fragmentation = Fragmentation(out.sums, m, w);
  out.signature.clear();
  for (std::size_t i = 0; i < node.devices.size(); ++i) {
    out.signature.insert(out.signature.end(), {std::bit_cast<std::uint32_t>(out.free[i]),
                                               static_cast<std::uint32_t>(hot[i].devcore),
                                               static_cast<std::uint32_t>(hot[i].devmem)});
  }
  out.fingerprint = boost::hash_range(out.signature.begin(), out.signature.end());
}

void RemeasureNode(SnapshotState& s, const NodeState& node) {
  if (!s.fragmentation || !node.present) return;
  FragmentationCache& cache = *s.fragmentation;
  if (cache.nodes.size() < s.nodes.size()) cache.nodes.resize(s.nodes.size());
  const auto index = static_cast<std::size_t>(&node - s.nodes.data());
  MeasureNode(s, node, cache.model, cache.fits, cache.nodes[index]);
}

Status ValidateWorkload(std::span<const WorkloadClass> workload) {
  for (const WorkloadClass& c : workload) {
    if (!(c.weight >= 0) || c.gpus < 0 || c.gpu_milli < 0 || c.gpu_milli >= 1000 ||
        (c.gpus == 0) == (c.gpu_milli == 0)) {
      return Status::InvalidArgument(
          "workload class: want weight >= 0 and either gpus > 0 or gpu_milli in 1..999");
    }
    if (c.cpu_milli < 0 || c.memory_mib < 0 || c.memory_mib > kMaxClassMemoryMib) {
      return Status::InvalidArgument(
          "workload class: want cpu_milli >= 0 and memory_mib in 0..2^40");
    }
  }
  return Status();
}

const std::vector<WorkloadClass>& DefaultWorkload() {
  // A mix shaped like production GPU clusters (openb): many fractional pods,
  // most of the rest one whole GPU, a tail of multi-GPU pods.
  static const std::vector<WorkloadClass> kWorkload = {
      {0.10, 0, 250}, {0.30, 0, 500}, {0.40, 1, 0}, {0.10, 2, 0}, {0.05, 4, 0}, {0.05, 8, 0},
  };
  return kWorkload;
}

// The fit tables: O(classes log classes + CPU steps x shapes).
FgdModel MakeFgdModel(std::span<const WorkloadClass> workload) {
  FgdModel m;
  for (const WorkloadClass& c : workload.empty() ? std::span(DefaultWorkload()) : workload) {
    const std::int32_t gpus = c.gpu_milli > 0 ? 0 : c.gpus;
    auto shape = std::find_if(m.shapes.begin(), m.shapes.end(), [&](const FgdShape& s) {
      return s.gpus == gpus && s.gpu_milli == c.gpu_milli;
    });
    if (shape == m.shapes.end()) {
      shape = m.shapes.insert(
          m.shapes.end(), FgdShape{gpus, c.gpu_milli, static_cast<float>(c.gpu_milli) / 1000.0f});
      if (c.gpu_milli > 0) m.max_need = std::max(m.max_need, shape->need);
    }
    m.classes.push_back(FgdClass{static_cast<std::uint32_t>(shape - m.shapes.begin()), c.cpu_milli,
                                 c.memory_mib * 1024 * 1024, c.weight});
    m.total += c.weight;
    if (c.cpu_milli > 0) m.cpu_steps.push_back(c.cpu_milli);
    if (c.memory_mib > 0) m.memory_steps.push_back(m.classes.back().memory_bytes);
  }
  std::stable_sort(m.classes.begin(), m.classes.end(),
                   [](const FgdClass& a, const FgdClass& b) { return a.cpu_milli < b.cpu_milli; });
  std::sort(m.cpu_steps.begin(), m.cpu_steps.end());
  m.cpu_steps.erase(std::unique(m.cpu_steps.begin(), m.cpu_steps.end()), m.cpu_steps.end());
  std::sort(m.memory_steps.begin(), m.memory_steps.end());
  m.memory_steps.erase(std::unique(m.memory_steps.begin(), m.memory_steps.end()),
                       m.memory_steps.end());
  const std::size_t n = m.shapes.size();
  const std::size_t rows = m.cpu_steps.size() + 1;
  m.rows.assign(rows * n, 0.0);
  m.row_unfit.assign(rows, 0.0);
  m.row_memory.assign(rows, 0);
  // unfit_from[i]: the weight of classes i.. (summed from the last one).
  std::vector<double> unfit_from(m.classes.size() + 1, 0.0);
  for (std::size_t i = m.classes.size(); i > 0; --i)
    unfit_from[i - 1] = unfit_from[i] + m.classes[i - 1].weight;
  // Row r extends row r - 1 by the classes asking exactly cpu_steps[r - 1].
  std::size_t next = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    double* row = m.rows.data() + r * n;
    if (r > 0) {
      std::copy(row - n, row, row);
      m.row_memory[r] = m.row_memory[r - 1];
    }
    const std::int64_t cpu = r == 0 ? 0 : m.cpu_steps[r - 1];
    for (; next < m.classes.size() && m.classes[next].cpu_milli <= cpu; ++next) {
      const FgdClass& c = m.classes[next];
      row[c.shape] += c.weight;
      m.row_memory[r] = std::max(m.row_memory[r], c.memory_bytes);
    }
    m.row_unfit[r] = unfit_from[next];
  }
  return m;
}

}  // namespace devshare::internal
