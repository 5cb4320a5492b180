// The API client's callback contract (devshare/kube/api_client.hpp).
#include "devshare/kube/api_client.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kube/fake_api.hpp"

using namespace devshare;
using namespace devshare::kube;
using devshare::kube::fakes::FakeApi;
using devshare::kube::fakes::Unthrottled;

TEST_CASE("kube api client: a credential that cannot be had fails the call later, not within it") {
  char dir_template[] = "/tmp/devshare-exec-fail-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  // Run 1 gives a credential that has expired; every later run fails.
  std::ofstream(dir + "/plugin")
      << "#!/bin/sh\n"
         "n=$(($(cat \"$0.runs\" 2>/dev/null || echo 0) + 1)); echo $n >\"$0.runs\"\n"
         "[ $n = 1 ] || exit 1\n"
         "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
         "\"status\":{\"token\":\"t\",\"expirationTimestamp\":\"2000-01-01T00:00:00Z\"}}'\n";
  chmod((dir + "/plugin").c_str(), 0755);
  boost::asio::io_context io;
  FakeApi api(io, [](const HttpRequest&) { return HttpResponse{}; });
  ClusterAccess access = api.Access();
  access.exec = ExecConfig{"client.authentication.k8s.io/v1", dir + "/plugin", {}, {}, "", false};
  ApiClient client(io, access, Unthrottled(), nullptr);
  REQUIRE(client.Start().ok());
  bool returned = false;
  int calls = 0;
  ApiResponse answer;
  client.Call("get", "GET", "/a", "", "", [&](ApiResponse r) {
    CHECK(returned);  // not from within Call
    ++calls;
    answer = std::move(r);
    client.Stop();
    api.Stop();
  });
  returned = true;
  io.run();
  std::filesystem::remove_all(dir);
  CHECK(calls == 1);
  CHECK(answer.status == 0);
  CHECK_FALSE(answer.error.empty());
  CHECK(api.requests.empty());
}

TEST_CASE("kube api client: after Stop, queued requests are dropped and watches say nothing") {
  boost::asio::io_context io;
  FakeApi api(io, [](const HttpRequest&) -> std::optional<HttpResponse> {
    return HttpResponse{
        200, "application/json", R"({"metadata":{"resourceVersion":"1"},"items":[]})", {}};
  });
  ApiClientOptions slow = Unthrottled();
  slow.qps = 0.001;  // one token: the second request waits for the next
  slow.burst = 1;
  ApiClient client(io, api.Access(), slow, nullptr);
  REQUIRE(client.Start().ok());
  std::vector<int> done;
  client.Call("first", "GET", "/a", "", "", [&](const ApiResponse& r) {
    done.push_back(r.status);
    client.Stop();
    api.Stop();
  });
  client.Call("queued", "GET", "/b", "", "",
              [&](const ApiResponse& r) { done.push_back(r.status); });
  int events = 0;
  client.Watch(
      "/api/v1/nodes", "", [&](const WatchEvent&) { ++events; }, [&] { ++events; });
  io.run();
  CHECK(done == std::vector<int>{200});
  CHECK(events == 0);
  CHECK(api.requests.size() == 1);
}
