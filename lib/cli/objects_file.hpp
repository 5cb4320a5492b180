// Reading Kubernetes objects from YAML or JSON files for the CLI.
#ifndef DEVSHARE_CLI_OBJECTS_FILE_HPP_
#define DEVSHARE_CLI_OBJECTS_FILE_HPP_

#include <string>
#include <vector>

#include "devshare/objects.hpp"
#include "devshare/status.hpp"

namespace devshare::cli {

struct ObjectsFile {
  std::vector<Node> nodes;
  std::vector<Pod> pods;
};

// Reads every object in `path`: a YAML or JSON document, a multi-document
// YAML stream, or a `kind: List` with `items`. Objects are dispatched by
// `kind` (Node or Pod); any other kind is an error naming it.
Result<ObjectsFile> ReadObjectsFile(const std::string& path);

}  // namespace devshare::cli

#endif  // DEVSHARE_CLI_OBJECTS_FILE_HPP_
