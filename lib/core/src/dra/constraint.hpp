// Private: a claim's matchAttribute and distinctAttribute constraints as
// the allocator's search applies them, device by device.
#ifndef DEVSHARE_SRC_DRA_CONSTRAINT_HPP_
#define DEVSHARE_SRC_DRA_CONSTRAINT_HPP_

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "devshare/dra.hpp"
#include "devshare/dra_allocate.hpp"

namespace devshare::dra::allocator {

// One constraint of a claim over `requests` (empty: every request; a name
// is "request" or "request/subrequest"): the devices they take all have
// the same scalar value of `attribute` (matchAttribute), or all different
// ones (distinct). The values are the devices' own: a Constraint points
// into the Devices added, which must outlive it (or their Remove).
class Constraint {
 public:
  Constraint(std::vector<std::string> requests, std::string attribute, bool distinct)
      : requests_(requests.begin(), requests.end()),
        attribute_(std::move(attribute)),
        distinct_(distinct) {}

  // Adds `device` (`id`) taken by `request` (`sub`: its subrequest, or
  // empty): true when the constraint does not apply to it or still holds
  // with it (then it is counted), false when it would break it (nothing
  // counted). A device without the attribute breaks it.
  bool Add(const std::string& request, const std::string& sub, const Device& device,
           const DeviceId& id);
  // Takes back the last device Add counted for `request`/`sub`.
  void Remove(const std::string& request, const std::string& sub);

 private:
  bool AppliesTo(const std::string& request, const std::string& sub) const;

  std::set<std::string> requests_;  // empty: every request
  std::string attribute_;
  bool distinct_;
  const AttributeValue* first_ = nullptr;  // matchAttribute
  int matched_ = 0;
  std::vector<const AttributeValue*> values_;  // distinctAttribute
};

}  // namespace devshare::dra::allocator

#endif  // DEVSHARE_SRC_DRA_CONSTRAINT_HPP_
