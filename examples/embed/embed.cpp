// A C++ program embedding devshare through its installed package: it decodes
// a node's register annotation and a pod's device assignment.
//
// Built against an installed devshare by examples/embed/check.sh, once with
// meson (`dependency('devshare')`) and once with CMake
// (`find_package(devshare)`).
#include <cstdio>
#include <devshare/node_codec.hpp>
#include <devshare/pod_codec.hpp>
#include <devshare/version.hpp>

int main() {
  const char* node =
      R"([{"id":"GPU-a","count":10,"devmem":32768,"devcore":100,"type":"NVIDIA-Tesla V100-PCIE-32GB","mode":"hami-core","health":true}])";
  devshare::Result<std::vector<devshare::Device>> devices = devshare::DecodeNodeDevices(node);
  if (!devices.ok()) {
    std::fprintf(stderr, "%s\n", devices.status().ToString().c_str());
    return 1;
  }
  devshare::Result<devshare::PodSingleDevice> pod =
      devshare::DecodePodDevices("GPU-a,NVIDIA,1000,30:;");
  if (!pod.ok()) return 1;
  // A malformed value is an error, not a crash.
  if (devshare::DecodePodDevices("GPU-a,NVIDIA,lots,30:;").ok()) return 1;
  std::printf("devshare %s: %zu device(s), %s has %d MiB; pod uses %d MiB of it\n",
              DEVSHARE_VERSION, devices->size(), (*devices)[0].id.c_str(), (*devices)[0].devmem,
              (*pod)[0][0].usedmem);
  return 0;
}
