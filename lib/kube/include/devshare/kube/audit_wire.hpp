// devshare/kube/audit_wire.hpp — the drift auditor's wire: the pages of
// the metadata-only LIST it reads (PartialObjectMetadataList, as the API
// server answers `Accept: application/json;as=PartialObjectMetadataList;
// g=meta.k8s.io;v=v1`) and the JSON `/debug/audit` answers.
//
// Thread-safety: pure functions.
#ifndef DEVSHARE_KUBE_AUDIT_WIRE_HPP_
#define DEVSHARE_KUBE_AUDIT_WIRE_HPP_

#include <string>
#include <string_view>
#include <vector>

#include "devshare/engine/audit.hpp"
#include "devshare/kube/metrics.hpp"
#include "devshare/status.hpp"

namespace devshare::kube {

struct MetadataPage {
  std::vector<engine::ListedObject> objects;
  std::string continue_token;  // metadata.continue: empty on the last page
};

// One page of a list. Only each item's metadata is read (name, namespace,
// uid, annotations), so a full object list decodes too. Errors: kMalformed
// naming the JSON path (for example `items[3].metadata.annotations`): not
// JSON, items that are not an array, an item without a name, an
// annotation that is not a string. An empty list's items may be null or
// left out.
Result<MetadataPage> DecodeMetadataPage(std::string_view json);

// The answer of `/debug/audit`:
//   {"at_ms", "duration_ms",
//    "list": {"pages", "nodes", "pods", "bytes", "seconds"},
//    "differences": [{"kind", "object", "uid", "detail", "first_seen_ms",
//                     "confirmed", "healed"}],
//    "suspected": N, "totals": {"<kind>": confirmed since start, ...},
//    "healed": {"<kind>": ...}, "audits": N}
std::string EncodeAuditReport(const engine::AuditReport& report, const engine::AuditTotals& totals,
                              const AuditListCost& cost, double duration_ms);

}  // namespace devshare::kube

#endif  // DEVSHARE_KUBE_AUDIT_WIRE_HPP_
