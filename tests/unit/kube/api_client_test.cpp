// The API client's callback contract and its exec plugin's credentials
// (devshare/kube/api_client.hpp).
#include "devshare/kube/api_client.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "devshare/kube/http_server.hpp"
#include "kube/fake_api.hpp"
#include "kube/kube_fixtures.hpp"

using namespace devshare;
using namespace devshare::kube;
using devshare::kube::fakes::FakeApi;
using devshare::kube::fakes::Loopback;
using devshare::kube::fakes::Unthrottled;
using devshare::kube::fixtures::WriteFile;

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

TEST_CASE("kube: an exec plugin's token is used, fetched again after a 401 and once expired") {
  char dir_template[] = "/tmp/devshare-exec-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  // Run n prints token tn; t2 has already expired, t3 expires in 2099.
  WriteFile(
      dir + "/plugin",
      "#!/bin/sh\n"
      "n=$(($(cat \"$0.runs\" 2>/dev/null || echo 0) + 1)); echo $n >\"$0.runs\"\n"
      "case $n in 2) at=2000;; *) at=2099;; esac\n"
      "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
      "\"status\":{\"token\":\"t%s\",\"expirationTimestamp\":\"%s-01-01T00:00:00Z\"}}' $n $at\n");
  chmod((dir + "/plugin").c_str(), 0755);
  boost::asio::io_context io;
  // The server takes t1 once, then only t3 (the credential was rotated).
  std::vector<std::string> seen;
  HttpServer server(io, Loopback(), [&](HttpRequest r, Responder respond) {
    seen.push_back(r.authorization);
    const bool good = r.authorization == (seen.size() == 1 ? "Bearer t1" : "Bearer t3");
    respond(HttpResponse{good ? 200 : 401, "application/json", "{}", {}});
  });
  REQUIRE(server.Start().ok());
  ClusterAccess access;
  access.host = "127.0.0.1";
  access.port = std::to_string(server.port());
  access.https = false;
  access.exec = ExecConfig{"client.authentication.k8s.io/v1", dir + "/plugin", {}, {}, "", false};
  ApiClient client(io, access, ApiClientOptions{1e6, 1000}, nullptr);
  REQUIRE(client.Start().ok());  // run 1: t1
  std::vector<int> statuses;
  client.Call("get", "GET", "/a", "", "", [&](const ApiResponse& first) {
    statuses.push_back(first.status);
    // Refused with t1: run 2 gives t2, already expired, so run 3 gives t3.
    client.Call("get", "GET", "/b", "", "", [&](const ApiResponse& second) {
      statuses.push_back(second.status);
      client.Stop();
      server.Stop();
    });
  });
  io.run();
  CHECK(statuses == std::vector<int>{200, 200});
  CHECK(seen == std::vector<std::string>{"Bearer t1", "Bearer t1", "Bearer t3"});
  std::ifstream runs(dir + "/plugin.runs");
  int count = 0;
  runs >> count;
  CHECK(count == 3);
  std::filesystem::remove_all(dir);
}
