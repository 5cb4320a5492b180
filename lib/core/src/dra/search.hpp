// Private: the allocator's depth-first search (allocateOne and
// allocateDevice of upstream's structured allocator) over (claim, request,
// subrequest, device): the first device that fits is taken, and given back
// when what follows fails.
#ifndef DEVSHARE_SRC_DRA_SEARCH_HPP_
#define DEVSHARE_SRC_DRA_SEARCH_HPP_

#include <cstddef>
#include <string>
#include <vector>

#include "devshare/dra.hpp"
#include "devshare/status.hpp"
#include "dra/allocation_result.hpp"
#include "dra/candidates.hpp"
#include "dra/capacity.hpp"
#include "dra/device_match.hpp"
#include "dra/device_usage.hpp"
#include "dra/requests.hpp"

namespace devshare::dra::allocator {

// How a search ends: every claim allocated, no way found, or a claim would
// need more than kAllocationResultsMaxSize results (which firstAvailable
// skips to its next alternative).
enum class Outcome { kFailed, kDone, kOverLimit };

// One search over `claims` as PrepareClaims gave them (`prepared`, whose
// constraints it updates as it goes), trying `candidates` in order. Every
// argument must outlive the search; `matcher` and `usage` may be shared
// with nothing else while it runs.
class Search {
 public:
  Search(const std::vector<ResourceClaim>& claims, PreparedClaims& prepared,
         const std::vector<CandidateDevice>& candidates, DeviceMatcher& matcher, DeviceUsage& usage)
      : claims_(claims),
        prepared_(prepared),
        candidates_(candidates),
        matcher_(matcher),
        usage_(usage),
        results_(claims.size()) {}

  // Runs the search once. kDone leaves each claim's devices in results();
  // errors are upstream's (a selector's error, a capacity that cannot be
  // computed, an All request whose device breaks a constraint).
  Result<Outcome> Run();

  // Per claim, the devices taken (complete after Run gave kDone).
  const std::vector<std::vector<DeviceResult>>& results() const { return results_; }

 private:
  // What AllocateDevice changed, for Rollback.
  struct Undo {
    bool counters_reserved = false;
    std::size_t constraints_added = 0;
    bool device_marked = false;
    bool capacity_inserted = false;
    bool capacity_entry_existed = false;
    Capacities consumed_capacity;
    bool result_added = false;
    std::size_t previous_results = 0;
  };

  Result<Outcome> AllocateOne(RequestKey key, std::size_t device, bool in_subrequest,
                              std::size_t from);
  Result<bool> AllocateDevice(const RequestKey& key, const CandidateDevice& candidate, bool must,
                              Undo& undo);
  void Rollback(const RequestKey& key, const CandidateDevice& candidate, const std::string& base,
                const std::string& sub, const Undo& undo);

  const std::vector<ResourceClaim>& claims_;
  PreparedClaims& prepared_;
  const std::vector<CandidateDevice>& candidates_;
  DeviceMatcher& matcher_;
  DeviceUsage& usage_;
  std::vector<std::vector<DeviceResult>> results_;
};

}  // namespace devshare::dra::allocator

#endif  // DEVSHARE_SRC_DRA_SEARCH_HPP_
