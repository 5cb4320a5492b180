// Private: whether a request may take a device by selection alone — the
// DeviceClass's and the request's CEL selectors, and per-device node
// selection — remembered per device and request.
#ifndef DEVSHARE_SRC_DRA_DEVICE_MATCH_HPP_
#define DEVSHARE_SRC_DRA_DEVICE_MATCH_HPP_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "devshare/dra.hpp"
#include "devshare/dra_allocate.hpp"
#include "devshare/objects.hpp"
#include "devshare/status.hpp"
#include "dra/candidates.hpp"
#include "dra/requests.hpp"

namespace devshare::dra::allocator {

// Matches devices against the requests of `claims` for `node`, compiling
// selectors through `selectors`. All three must outlive it.
class DeviceMatcher {
 public:
  DeviceMatcher(const std::vector<ResourceClaim>& claims, const Node& node,
                SelectorCache& selectors)
      : claims_(claims), node_(node), selectors_(selectors) {}

  // Whether request `key` (`data`) selects `candidate`: the class's
  // selectors, the request's, and with per-device node selection the
  // device's node scope for the node. Errors (kInvalidArgument, or
  // kUnsupported for what devshare does not evaluate): a selector that does
  // not compile or errs on the device, naming the class or the claim.
  Result<bool> Selectable(const RequestKey& key, const RequestData& data,
                          const CandidateDevice& candidate);

 private:
  Result<bool> SelectorsMatch(const RequestKey& key, const CandidateDevice& candidate,
                              const DeviceClass* device_class,
                              const std::vector<std::string>& selectors);

  const std::vector<ResourceClaim>& claims_;
  const Node& node_;
  SelectorCache& selectors_;
  std::map<std::pair<DeviceId, RequestKey>, bool> matches_;
};

}  // namespace devshare::dra::allocator

#endif  // DEVSHARE_SRC_DRA_DEVICE_MATCH_HPP_
