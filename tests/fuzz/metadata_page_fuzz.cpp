// Fuzzes DecodeMetadataPage (a page of a PartialObjectMetadataList, the drift
// auditor's LIST).
//
// Properties: no crash; every object decoded has a name, and its
// annotations are unique keys in order (a StringMap).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "devshare/kube/audit_wire.hpp"
#include "fuzz_fail.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto page = devshare::kube::DecodeMetadataPage(input);
  if (!page.ok()) return 0;
  for (const devshare::engine::ListedObject& o : page->objects) {
    if (o.name.empty()) devshare::fuzz::Fail("metadata_page", "an object without a name", input);
    const auto& entries = o.annotations.entries();
    for (std::size_t i = 1; i < entries.size(); ++i) {
      if (!(entries[i - 1].first < entries[i].first))
        devshare::fuzz::Fail("metadata_page", "annotations out of order", input);
    }
  }
  return 0;
}
