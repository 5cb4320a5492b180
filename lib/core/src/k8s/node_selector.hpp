// Private: decoding a core/v1 NodeSelector (a pod's required node affinity,
// a ResourceSlice's or device's node selection, an allocation's result) and
// a metav1 LabelSelector (a PodDisruptionBudget's).
#ifndef DEVSHARE_SRC_K8S_NODE_SELECTOR_HPP_
#define DEVSHARE_SRC_K8S_NODE_SELECTOR_HPP_

#include <boost/json.hpp>
#include <string>

#include "base/json_reader.hpp"
#include "devshare/objects.hpp"

namespace devshare::internal {

// Appends the terms of `selector` (nodeSelectorTerms, each with its
// matchExpressions and matchFields: key, operator, values) to `out.terms`.
// `path` names `selector` in errors, which `r` records: a member of the
// wrong kind, e.g. "<what>: <path>.nodeSelectorTerms[0].matchFields[1].key:
// expected a string, got an integer". Operators are kept as written
// (NodeSelectorMatches matches none it does not know).
void ReadNodeSelector(JsonReader& r, const boost::json::object& selector, const std::string& path,
                      NodeSelector& out);

// Reads `selector`'s matchLabels (strings) and matchExpressions (key,
// operator, values) into `out`; errors as ReadNodeSelector's.
void ReadLabelSelector(JsonReader& r, const boost::json::object& selector, const std::string& path,
                       LabelSelector& out);

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_K8S_NODE_SELECTOR_HPP_
