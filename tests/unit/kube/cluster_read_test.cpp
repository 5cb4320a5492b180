// Reading the cluster over the API (devshare/kube/cluster_read.hpp), from a
// loopback server.
#include "devshare/kube/cluster_read.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <boost/asio/post.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "devshare/kube/http_server.hpp"
#include "kube/fake_api.hpp"

using namespace devshare;
using namespace devshare::kube;
using devshare::kube::fakes::Loopback;

TEST_CASE("kube: a live read lists every page, says how far it came, and keeps what decodes") {
  boost::asio::io_context server_io;
  std::vector<std::string> targets;
  auto nodes = [](int from, int to) {
    std::string items;
    for (int i = from; i < to; ++i)
      items += fmt::format("{}{{\"metadata\":{{\"name\":\"n{}\"}}}}", i == from ? "" : ",", i);
    return items;
  };
  HttpServer server(server_io, Loopback(), [&](HttpRequest r, Responder respond) {
    targets.push_back(r.target);
    std::string body;
    // A cluster serving DRA's classes and claims but, say, no slices yet: a
    // 404 for a DRA list is an empty list.
    if (r.target.starts_with("/api/v1/namespaces/") ||
        r.target.starts_with("/apis/resource.k8s.io/v1/resourceslices")) {
      respond(HttpResponse{404, "application/json", "{}", {}});
      return;
    }
    // A reader without the right to list the budgets: the read goes on without them.
    if (r.target.starts_with("/apis/policy/v1/poddisruptionbudgets")) {
      respond(HttpResponse{403, "application/json", "{}", {}});
      return;
    }
    if (r.target.starts_with("/apis/resource.k8s.io/v1/deviceclasses")) {
      respond(HttpResponse{200,
                           "application/json",
                           R"({"metadata":{},"items":[{"metadata":{"name":"gpu"},"spec":{}}]})",
                           {}});
      return;
    }
    if (r.target.starts_with("/apis/resource.k8s.io/v1/resourceclaims")) {
      respond(HttpResponse{
          200,
          "application/json",
          R"({"metadata":{},"items":[{"metadata":{"name":"c","namespace":"d"},"spec":{}},)"
          R"({"metadata":{"name":"bad","namespace":"d"},"spec":{"devices":7}}]})",
          {}});
      return;
    }
    if (r.target.starts_with("/api/v1/nodes") && r.target.find("continue=") == std::string::npos) {
      body = R"({"metadata":{"continue":"tok/1="},"items":[)" + nodes(0, 500) + "]}";
    } else if (r.target.starts_with("/api/v1/nodes")) {
      body = R"({"metadata":{},"items":[)" + nodes(500, 600) + "]}";
    } else if (r.target.starts_with("/api/v1/pods")) {
      body = R"({"metadata":{},"items":[{"metadata":{"name":"p","namespace":"d","uid":"u"},)"
             R"("spec":{"containers":[]}},{"metadata":{"name":"bad","namespace":"d"},)"
             R"("spec":{"containers":"x"}}]})";
    } else {
      body = R"({"metadata":{},"items":[{"metadata":{"name":"q","namespace":"d"},)"
             R"("spec":{"hard":{"limits.nvidia.com/gpumem":"1000"}}}]})";
    }
    respond(HttpResponse{200, "application/json", body, {}});
  });
  REQUIRE(server.Start().ok());
  std::thread serving([&] { server_io.run(); });
  ClusterAccess access;
  access.server = "http://127.0.0.1:" + std::to_string(server.port());
  access.host = "127.0.0.1";
  access.port = std::to_string(server.port());
  access.https = false;
  std::vector<std::pair<std::string, std::size_t>> progress;
  ClusterReader reader(access);
  REQUIRE(reader.Start().ok());
  Result<ClusterObjects> read = reader.ReadCluster(
      [&](std::string_view what, std::size_t n) { progress.emplace_back(std::string(what), n); });
  Result<Pod> missing = reader.ReadPod("d", "gone");  // the same client, a second read
  REQUIRE_FALSE(missing.ok());
  boost::asio::post(server_io, [&] { server.Stop(); });
  serving.join();
  REQUIRE(read.ok());
  CHECK(read->nodes.size() == 600);
  CHECK(read->nodes.back().name == "n599");
  REQUIRE(read->pods.size() == 1);
  CHECK(read->pods[0].name == "p");
  REQUIRE(read->undecodable.size() == 2);
  CHECK(read->undecodable[0].starts_with("pod d/bad: "));
  CHECK(read->undecodable[1].starts_with("resourceclaim d/bad: "));
  REQUIRE(read->quotas.size() == 1);
  CHECK(*read->quotas[0].hard.Find("limits.nvidia.com/gpumem") == "1000");
  CHECK(read->slices.empty());
  REQUIRE(read->device_classes.size() == 1);
  CHECK(read->device_classes[0].name == "gpu");
  REQUIRE(read->claims.size() == 1);
  CHECK(read->claims[0].name == "c");
  CHECK(progress == std::vector<std::pair<std::string, std::size_t>>{{"nodes", 500},
                                                                     {"nodes", 600},
                                                                     {"pods", 2},
                                                                     {"resourcequotas", 1},
                                                                     {"deviceclasses", 1},
                                                                     {"resourceclaims", 2}});
  CHECK(read->budgets.empty());
  REQUIRE(targets.size() == 9);
  CHECK(targets[4] == "/apis/policy/v1/poddisruptionbudgets?limit=500");
  CHECK(targets[5] == "/apis/resource.k8s.io/v1/resourceslices?limit=500");
  CHECK(targets[8] == "/api/v1/namespaces/d/pods/gone");
  CHECK_MESSAGE(missing.status().code() == StatusCode::kNotFound, missing.status().message());
  CHECK(targets[1] == "/api/v1/nodes?limit=500&continue=tok%2F1%3D");
  CHECK(targets[2].starts_with("/api/v1/pods?limit=500&fieldSelector=status.phase%21%3DSucceeded"));

  // A server that is not there: the error names it.
  access.port = "1";
  access.server = "http://127.0.0.1:1";
  ClusterReader nobody(access);
  REQUIRE(nobody.Start().ok());
  Result<ClusterObjects> none = nobody.ReadCluster({});
  REQUIRE_FALSE(none.ok());
  CHECK(std::string(none.status().message()).starts_with("listing nodes at http://127.0.0.1:1: "));
}
