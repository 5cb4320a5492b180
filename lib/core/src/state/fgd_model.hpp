// fgd_model.hpp — the fgd policy's workload as fit tables, the sums behind a
// node's fragmentation, and the classes a node's free CPU and memory can
// host. Types only; fragmentation.hpp computes with them. Private to the
// core.
#ifndef DEVSHARE_SRC_FGD_MODEL_HPP_
#define DEVSHARE_SRC_FGD_MODEL_HPP_

#include <cstdint>
#include <limits>
#include <vector>

namespace devshare::internal {

// The workload prepared for fgd. Classes are grouped by GPU shape (gpus,
// gpu_milli); what depends on a node's CPU and memory is only which classes
// fit there, so the weight of the fitting classes per shape is tabulated by
// free CPU: row r holds the classes whose CPU ask is at most cpu_steps[r - 1]
// (row 0: the classes asking no CPU). A row serves a node directly when its
// free memory covers the row's largest memory ask; otherwise the classes are
// summed one by one for the cell (row, memory step): tabulated in `cells`
// for a model many Filter calls share (TabulateCells), else kept in a
// FitMemo for one call.
struct FgdShape {
  std::int32_t gpus = 0;
  std::int32_t gpu_milli = 0;
  float need = 0;  // gpu_milli / 1000 (fractional shapes)
};

struct FgdClass {
  std::uint32_t shape = 0;
  std::int64_t cpu_milli = 0;     // 0: any node
  std::int64_t memory_bytes = 0;  // 0: any node
  double weight = 0;
};

struct FgdModel {
  std::vector<FgdShape> shapes;
  std::vector<FgdClass> classes;           // by CPU ask, ascending (stable)
  std::vector<std::int64_t> cpu_steps;     // ascending distinct CPU asks (> 0)
  std::vector<std::int64_t> memory_steps;  // ascending distinct memory asks (> 0)
  std::vector<double> rows;                // (cpu_steps + 1) rows x shapes: fitting weight
  std::vector<double> row_unfit;           // per row: weight of the classes that do not fit
  std::vector<std::int64_t> row_memory;    // per row: largest memory ask of a fitting class
  std::vector<double> cells;               // rows x (memory_steps + 1) cells x shapes, or empty
  std::vector<double> cell_unfit;          // per cell
  double total = 0;                        // Σ weight
  float max_need = 0;                      // the largest fractional shape's need
};

// A device at or above this free share counts as fully free.
constexpr float kWholeDevice = 0.999f;

// The sums fgd's fragmentation of one node is computed from, so that
// changing one device's free share costs O(shapes), not O(devices x classes).
struct FragState {
  std::vector<double> below;  // per fractional shape: Σ free of the devices below its need
  double all = 0;             // Σ free
  double partial = 0;         // Σ free of the devices not fully free
  std::int32_t whole = 0;     // fully free devices
};

// The classes that fit one node by CPU and memory: the weight per shape
// (`fit`, one per FgdModel shape) and the weight of the others. `cell`
// names the set of fitting classes: equal cells mean equal weights, to the
// bit (different cells may still hold the same set).
struct FitWeights {
  const double* fit = nullptr;
  double unfit = 0;
  std::uint32_t cell = 0;
};

// Free CPU (millicores) and memory (bytes) of a node; unknown capacity is
// unlimited.
struct Room {
  std::int64_t cpu = 0;
  std::int64_t memory = 0;
};
constexpr std::int64_t kUnlimited = std::numeric_limits<std::int64_t>::max();

// The weights of the cells of one model that its table rows do not serve,
// summed class by class once and kept (see FitFor).
struct FitMemo {
  std::vector<std::int32_t> slot;         // per cell: index into sums, -1 when not yet summed
  std::vector<std::vector<double>> sums;  // per summed cell: weight per shape
  std::vector<double> unfit;              // per summed cell
};

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_FGD_MODEL_HPP_
