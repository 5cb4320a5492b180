// matchAttribute and distinctAttribute constraints (dra/constraint.hpp).
#include "dra/constraint.hpp"

#include <utility>

namespace devshare::dra::allocator {

namespace {

// The attribute a constraint names: by its full name, or by the name within
// the device's own driver domain.
const AttributeValue* LookupAttribute(const Device& device, const DeviceId& id,
                                      const std::string& name) {
  if (auto it = device.attributes.find(name); it != device.attributes.end()) return &it->second;
  const std::size_t slash = name.find('/');
  if (slash == std::string::npos || name.compare(0, slash, id.driver) != 0) return nullptr;
  auto it = device.attributes.find(name.substr(slash + 1));
  return it == device.attributes.end() ? nullptr : &it->second;
}

// Whether two attribute values are "the same" for a constraint: a scalar of
// the same kind and value. List values never are.
bool SameScalar(const AttributeValue& a, const AttributeValue& b) {
  if (a.index() != b.index() || a.index() > 3) return false;
  return a == b;
}

}  // namespace

bool Constraint::Add(const std::string& request, const std::string& sub, const Device& device,
                     const DeviceId& id) {
  if (!AppliesTo(request, sub)) return true;
  const AttributeValue* value = LookupAttribute(device, id, attribute_);
  if (value == nullptr) return false;
  if (distinct_) {
    if (value->index() > 3) return false;  // a list: no distinct scalar to compare
    for (const AttributeValue* seen : values_) {
      if (SameScalar(*value, *seen)) return false;
    }
    values_.push_back(value);
    return true;
  }
  if (matched_ == 0) {
    first_ = value;
    matched_ = 1;
    return true;
  }
  if (!SameScalar(*value, *first_)) return false;
  ++matched_;
  return true;
}

void Constraint::Remove(const std::string& request, const std::string& sub) {
  if (!AppliesTo(request, sub)) return;
  if (distinct_) {
    values_.pop_back();
  } else {
    --matched_;
  }
}

bool Constraint::AppliesTo(const std::string& request, const std::string& sub) const {
  if (requests_.empty()) return true;
  if (requests_.contains(request)) return true;
  return !sub.empty() && requests_.contains(request + "/" + sub);
}

}  // namespace devshare::dra::allocator
