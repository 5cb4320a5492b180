// Reading Kubernetes objects from YAML or JSON files for the CLI.
#ifndef DEVSHARE_CLI_OBJECTS_FILE_HPP_
#define DEVSHARE_CLI_OBJECTS_FILE_HPP_

#include <string>
#include <vector>

#include "devshare/kube/cluster_read.hpp"
#include "devshare/status.hpp"

namespace devshare::cli {

// The objects of a file, as a read of a live cluster holds them
// (`undecodable` is not used: a file's object that does not decode is an
// error).
using ObjectsFile = kube::ClusterObjects;

// Reads every object in `path`: a YAML or JSON document, a multi-document
// YAML stream, a `kind: List` with `items`, or a typed list as the API
// server answers one (`NodeList`, `ResourceSliceList`, …: its items need no
// `kind`). Objects are dispatched by `kind` (Node, Pod, ResourceQuota,
// PodDisruptionBudget, ResourceSlice, DeviceClass, ResourceClaim); any
// other kind is an error naming it.
Result<ObjectsFile> ReadObjectsFile(const std::string& path);

}  // namespace devshare::cli

#endif  // DEVSHARE_CLI_OBJECTS_FILE_HPP_
