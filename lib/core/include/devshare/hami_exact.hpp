// devshare/hami_exact.hpp — HAMi's decisions where devshare decides otherwise.
//
// Where devshare decides differently from HAMi v2.10 on purpose (a row of
// docs/compatibility.md), the row can be switched back to HAMi's behaviour,
// for a user replacing HAMi who must get HAMi's decisions exactly. Safety
// fixes (crashes, lost data, a lock that blocks a node forever) have no
// switch, and neither has what HAMi leaves to chance (goroutine and map
// order, W10: ties between nodes still go to the first name).
//
// Thread-safety: a value type and a pure function.
#ifndef DEVSHARE_HAMI_EXACT_HPP_
#define DEVSHARE_HAMI_EXACT_HPP_

#include <string_view>

#include "devshare/export.hpp"
#include "devshare/status.hpp"

namespace devshare {

struct HamiExact {
  // W1 (Filter): a container that asks nothing of a vendor gets an (empty)
  // entry in that vendor's device annotations only when the node has a
  // device whose registered type is the vendor's type word ("NVIDIA"); on
  // nodes of model-named devices the entries of the containers that ask are
  // written alone, and positions shift.
  bool container_padding_by_type = false;
  // W2 (Filter): a request counts in a device's score only when the device's
  // registered type is exactly the request's type ("NVIDIA"), so never on
  // model-named devices ("NVIDIA-Tesla T4"), whose score is then their usage
  // alone.
  bool device_score_type_match = false;
  // W4 (HAMi's registration): a node cleaned up because its plugin stopped
  // answering is stamped again on the next pass and comes back while its
  // register annotation stays, to be dropped again once the stamp expires.
  bool cleanup_restamps = false;
  // W10 (Filter), the part HAMi decides deterministically: devices with equal
  // keys in the order Go's sort.Sort leaves them, which above 12 devices on a
  // node is not stable. Ties between nodes stay devshare's (the first name):
  // HAMi breaks them in goroutine order.
  bool go_device_sort = false;

  // Every row: what `--hami-exact all` selects.
  static HamiExact All() { return HamiExact{true, true, true, true}; }
  friend bool operator==(const HamiExact&, const HamiExact&) = default;
};

// Parses "all", "none" or a comma list of row names ("W1,W2,W4,W10"), as the
// command line, Python and scenario files write it. Errors (kInvalidArgument)
// name the unknown row and list the known ones.
DEVSHARE_EXPORT Result<HamiExact> ParseHamiExact(std::string_view rows);

}  // namespace devshare

#endif  // DEVSHARE_HAMI_EXACT_HPP_
