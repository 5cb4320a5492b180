// The Kubernetes adapter's pure parts (extender wire format, kubeconfig) and
// its HTTP server on loopback.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "devshare/kube/api_client.hpp"
#include "devshare/kube/cluster_read.hpp"
#include "devshare/kube/extender.hpp"
#include "devshare/kube/http_server.hpp"
#include "devshare/kube/metrics.hpp"
#include "kube/fake_api.hpp"
#include "testutil.hpp"

using namespace devshare;
using namespace devshare::kube;
using devshare::kube::fakes::Loopback;

namespace {

constexpr std::string_view kPod =
    R"({"metadata":{"name":"p","namespace":"ns","uid":"u1"},"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}})";

}  // namespace

TEST_CASE("kube: ExtenderArgs with NodeNames, and the filter result lists every rejected node") {
  Result<ExtenderArgs> args = DecodeExtenderArgs(
      fmt::format(R"({{"Pod":{},"Nodes":null,"NodeNames":["a","b","c","d"]}})", kPod));
  REQUIRE(args.ok());
  CHECK(args->pod.uid == "u1");
  CHECK(args->node_names);
  CHECK(args->nodes == std::vector<std::string>{"a", "b", "c", "d"});
  engine::FilterReply reply{1, {"b"}, {NodeFailure{"a", "1/2 CardInsufficientMemory"}}, ""};
  CHECK(EncodeFilterResult(*args, reply) ==
        R"({"Nodes":null,"NodeNames":["b"],"FailedNodes":{"a":"1/2 CardInsufficientMemory"},)"
        R"("FailedAndUnresolvableNodes":{},"Error":""})");
  engine::FilterReply unschedulable{3, {}, {NodeFailure{"a", "1/2 CardInsufficientMemory"}}, ""};
  CHECK(EncodeFilterResult(*args, unschedulable) ==
        R"({"Nodes":null,"NodeNames":[],"FailedNodes":{"a":"1/2 CardInsufficientMemory",)"
        R"("b":"does not fit","c":"does not fit","d":"does not fit"},)"
        R"("FailedAndUnresolvableNodes":{},"Error":""})");
  engine::FilterReply refused{2, {}, {}, "not ready"};
  CHECK(
      EncodeFilterResult(*args, refused) ==
      R"({"Nodes":null,"NodeNames":[],"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":"not ready"})");
}

TEST_CASE("kube: ExtenderArgs with full Nodes (nodeCacheCapable false) echo the kept objects") {
  Result<ExtenderArgs> args = DecodeExtenderArgs(fmt::format(
      R"({{"Pod":{},"Nodes":{{"metadata":{{}},"items":[{{"metadata":{{"name":"a"}}}},{{"metadata":{{"name":"b"}},"spec":{{}}}}]}},"NodeNames":null}})",
      kPod));
  REQUIRE(args.ok());
  CHECK_FALSE(args->node_names);
  CHECK(args->nodes == std::vector<std::string>{"a", "b"});
  const std::string out = EncodeFilterResult(*args, engine::FilterReply{1, {"b"}, {}, ""});
  CHECK(out.starts_with(
      R"({"Nodes":{"metadata":{},"items":[{"metadata":{"name":"b"},"spec":{}}]},"NodeNames":null,)"));
}

namespace {

// The filter result as a JSON object keeps it (first insertion decides the
// position, the last value wins), serialised by Boost.JSON: what the
// extender's streaming encoder must write byte for byte.
std::string ReferenceFilterResult(const ExtenderArgs& args, const engine::FilterReply& reply) {
  namespace bj = boost::json;
  auto kept = [&](const std::string& node) {
    return std::find(reply.nodes.begin(), reply.nodes.end(), node) != reply.nodes.end();
  };
  bj::object failed;
  for (const NodeFailure& f : reply.failed)
    failed[f.node] = f.reason.empty() ? std::string("does not fit") : f.reason;
  if (reply.error.empty() && reply.nodes.empty()) {
    for (const std::string& node : args.nodes) {
      if (!failed.contains(node)) failed[node] = "does not fit";
    }
  }
  bj::object out;
  if (args.node_names) {
    out["Nodes"] = nullptr;
    bj::array names;
    for (const std::string& node : args.nodes) {
      if (kept(node)) names.emplace_back(node);
    }
    out["NodeNames"] = std::move(names);
  } else {
    bj::array items;
    for (std::size_t i = 0; i < args.nodes.size(); ++i) {
      if (kept(args.nodes[i])) items.push_back(bj::parse(args.node_items[i]));
    }
    out["Nodes"] = bj::object{{"metadata", bj::object{}}, {"items", std::move(items)}};
    out["NodeNames"] = nullptr;
  }
  out["FailedNodes"] = std::move(failed);
  out["FailedAndUnresolvableNodes"] = bj::object{};
  out["Error"] = reply.error;
  return bj::serialize(out);
}

}  // namespace

TEST_CASE("kube: the filter result is what a JSON object would serialise, for any reply") {
  // Names and reasons with characters to escape, duplicates in the request
  // and in the failures, empty reasons, errors, one or many kept nodes.
  const std::vector<std::string> names = {"n0",
                                          "n1",
                                          "n\"2",
                                          "n\\3",
                                          "n\t4",
                                          "n5",
                                          "n6",
                                          "n7",
                                          "node-with-a-long-name-8",
                                          "n\x01"
                                          "9"};
  const std::vector<std::string> reasons = {"", "1/2 CardInsufficientMemory", "say \"no\"",
                                            "line\nbreak", "node unregistered"};
  std::mt19937_64 rng(7);
  auto pick = [&](const std::vector<std::string>& from) { return from[rng() % from.size()]; };
  for (int round = 0; round < 2000; ++round) {
    CAPTURE(round);
    ExtenderArgs args;
    args.node_names = rng() % 4 != 0;
    const std::size_t n = rng() % 12;
    for (std::size_t i = 0; i < n; ++i) {
      args.nodes.push_back(pick(names));
      if (!args.node_names)
        args.node_items.push_back(
            fmt::format(R"({{"metadata":{{"name":{}}},"i":{}}})",
                        boost::json::serialize(boost::json::string_view(args.nodes.back())), i));
    }
    engine::FilterReply reply;
    const std::size_t kept = rng() % 3 == 0 ? rng() % 7 : rng() % 2;
    for (std::size_t i = 0; i < kept; ++i) reply.nodes.push_back(pick(names));
    const std::size_t failures = rng() % 2 == 0 ? 0 : rng() % 12;
    for (std::size_t i = 0; i < failures; ++i)
      reply.failed.push_back(NodeFailure{pick(names), pick(reasons)});
    if (rng() % 8 == 0) reply.error = pick(reasons) + " error";
    CHECK(EncodeFilterResult(args, reply) == ReferenceFilterResult(args, reply));
  }
}

TEST_CASE("kube: malformed extender requests are named") {
  auto error = [](std::string_view json) {
    Result<ExtenderArgs> r = DecodeExtenderArgs(json);
    CHECK(r.status().code() == StatusCode::kMalformed);
    return std::string(r.status().message());
  };
  CHECK(error("{").starts_with("extender request: not JSON"));
  CHECK(error("[]") == "extender request: not a JSON object");
  CHECK(error(R"({"NodeNames":[]})") == "extender request: Pod is missing or not an object");
  CHECK(error(fmt::format(R"({{"Pod":{}}})", kPod)) ==
        "extender request: neither NodeNames nor Nodes is given");
  CHECK(error(fmt::format(R"({{"Pod":{},"NodeNames":["a",1]}})", kPod)) ==
        "extender request: NodeNames[1] is not a string");
  CHECK(error(R"({"Pod":{"metadata":7},"NodeNames":[]})").starts_with("extender request: Pod: "));
}

TEST_CASE("kube: binding args and results, priorities on 0..10") {
  Result<BindArgs> b =
      DecodeBindArgs(R"({"PodName":"p","PodNamespace":"ns","PodUID":"u","Node":"n"})");
  REQUIRE(b.ok());
  CHECK(*b == BindArgs{"p", "ns", "u", "n"});
  CHECK(DecodeBindArgs(R"({"PodName":"p","PodNamespace":"ns","Node":"n"})").status().message() ==
        "extender request: PodUID is missing or not a string");
  CHECK(EncodeBindResult("") == R"({"Error":""})");
  // The normalized score (0..100) on the extender's 0..10, rounded; the raw score is not used.
  CHECK(
      EncodeHostPriorities({NodeScore{"a", 0.5, 100}, NodeScore{"b", 30, 46}, NodeScore{"c", 7, 0},
                            NodeScore{"d", 1, 44.9}}) ==
      R"([{"Host":"a","Score":10},{"Host":"b","Score":5},{"Host":"c","Score":0},{"Host":"d","Score":4}])");
}

TEST_CASE("kube: kubeconfig — current context, data fields, files and tokens") {
  constexpr std::string_view kConfig = R"(
apiVersion: v1
kind: Config
current-context: dev
contexts:
- name: dev
  context: {cluster: local, user: admin}
- name: other
  context: {cluster: remote, user: robot}
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: Q0EtUEVN}
- name: remote
  cluster: {server: "https://[::1]", insecure-skip-tls-verify: true, certificate-authority: ca.crt}
users:
- name: admin
  user: {client-certificate-data: Q0VSVA==, client-key-data: S0VZ}
- name: robot
  user: {tokenFile: token}
)";
  std::vector<std::string> read;
  ReadFileFn files = [&](const std::string& path) -> Result<std::string> {
    read.push_back(path);
    if (path == "/etc/kube/token") return std::string("secret\n");
    if (path == "/etc/kube/ca.crt") return std::string("CA-FILE");
    return Status::NotFound("cannot read " + path);
  };
  const KubeconfigFile one[] = {{"/etc/kube/config", std::string(kConfig)}};
  Result<ClusterAccess> dev = ParseKubeconfig(one, files);
  REQUIRE(dev.ok());
  CHECK(dev->host == "127.0.0.1");
  CHECK(dev->port == "6443");
  CHECK(dev->ca_pem == "CA-PEM");
  CHECK(dev->cert_pem == "CERT");
  CHECK(dev->key_pem == "KEY");
  Result<ClusterAccess> other = ParseKubeconfig(one, files, "other");
  REQUIRE(other.ok());
  CHECK(other->host == "::1");
  CHECK(other->port == "443");
  CHECK(other->insecure);
  CHECK(other->token == "secret");
  CHECK(other->ca_pem == "CA-FILE");
  CHECK(ParseKubeconfig(one, files, "missing").status().message() ==
        "kubeconfig: no context named 'missing'");
  const KubeconfigFile dangling[] = {
      {"k", "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"}};
  CHECK(ParseKubeconfig(dangling, files).status().message() ==
        "kubeconfig: context 'x' names the unknown cluster 'c'");
  const KubeconfigFile no_body[] = {{"k", "current-context: x\ncontexts: [{name: x}]\n"}};
  CHECK(ParseKubeconfig(no_body, files).status().message() ==
        "kubeconfig: context 'x' is not a mapping of cluster and user");
  const KubeconfigFile broken[] = {{"k", "clusters: ["}};
  CHECK(ParseKubeconfig(broken, files).status().code() == StatusCode::kInvalidConfig);
}

TEST_CASE("kube: kubeconfig files merge as kubectl merges them; exec users") {
  // The first file to set current-context, or to name an entry, wins; paths
  // resolve against the file that defines the entry.
  const KubeconfigFile files[] = {{"/home/u/.kube/a", R"(
current-context: team
contexts:
- {name: team, context: {cluster: shared, user: cloud}}
users:
- name: cloud
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./bin/get-token
      args: [--cluster, shared]
      env: [{name: REGION, value: eu-1}]
      provideClusterInfo: true
      installHint: install get-token
)"},
                                  {"/etc/kube/b", R"(
current-context: ignored
contexts:
- {name: team, context: {cluster: elsewhere, user: nobody}}
- {name: ops, context: {cluster: shared, user: admin}}
clusters:
- name: shared
  cluster: {server: "https://10.0.0.1:6443", certificate-authority: ca.crt}
users:
- {name: cloud, user: {token: not-this-one}}
- {name: admin, user: {token: admin-token}}
)"}};
  ReadFileFn read = [](const std::string& path) -> Result<std::string> {
    if (path == "/etc/kube/ca.crt") return std::string("CA");
    return Status::NotFound("cannot read " + path);
  };
  Result<ClusterAccess> team = ParseKubeconfig(files, read);
  REQUIRE(team.ok());
  CHECK(team->server == "https://10.0.0.1:6443");
  CHECK(team->ca_pem == "CA");  // b's relative path, resolved against /etc/kube
  CHECK(team->token.empty());
  REQUIRE(team->exec.has_value());
  CHECK(team->exec->command == "/home/u/.kube/./bin/get-token");  // a's directory
  CHECK(team->exec->args == std::vector<std::string>{"--cluster", "shared"});
  CHECK(team->exec->env == std::vector<std::pair<std::string, std::string>>{{"REGION", "eu-1"}});
  CHECK(team->exec->provide_cluster_info);
  CHECK(team->exec->install_hint == "install get-token");
  Result<ClusterAccess> ops = ParseKubeconfig(files, read, "ops");
  REQUIRE(ops.ok());
  CHECK(ops->token == "admin-token");
  CHECK_FALSE(ops->exec.has_value());

  const KubeconfigFile bad_exec[] = {{"k", R"(
current-context: x
contexts: [{name: x, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://h"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: x}}}]
)"}};
  CHECK(ParseKubeconfig(bad_exec, read).status().message() ==
        "kubeconfig: user 'u': exec: apiVersion 'client.authentication.k8s.io/v1alpha1' is not "
        "client.authentication.k8s.io/v1 or /v1beta1");
}

TEST_CASE("kube: FindClusterAccess looks where kubectl looks") {
  std::map<std::string, std::string> env;
  GetenvFn getenv = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  const std::string config =
      "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
      "clusters: [{name: k, cluster: {server: 'https://SERVER'}}]\n";
  std::map<std::string, std::string> disk{{"/a", ""},
                                          {"/b", "current-context: c\n"},
                                          {"/explicit", config},
                                          {"/home/me/.kube/config", config}};
  disk["/c"] = config;
  ReadFileFn read = [&](const std::string& path) -> Result<std::string> {
    auto it = disk.find(path);
    if (it == disk.end()) return Status::NotFound("cannot read " + path);
    return it->second;
  };
  auto host = [](const Result<ClusterAccess>& a) {
    return a.ok() ? a->host : std::string(a.status().message());
  };
  env["HOME"] = "/home/me";
  CHECK(host(FindClusterAccess("/explicit", "", getenv, read)) == "SERVER");
  CHECK(host(FindClusterAccess("/missing", "", getenv, read)) == "cannot read /missing");
  // $KUBECONFIG: missing files skipped, an empty one allowed, the rest merged.
  env["KUBECONFIG"] = "/missing:/a::/b:/c";
  CHECK(host(FindClusterAccess("", "", getenv, read)) == "SERVER");
  env["KUBECONFIG"] = "/missing";
  CHECK(FindClusterAccess("", "", getenv, read).status().code() == StatusCode::kNotFound);
  env.erase("KUBECONFIG");
  CHECK(host(FindClusterAccess("", "", getenv, read)) == "SERVER");  // ~/.kube/config
  env["HOME"] = "/nowhere";
  Result<ClusterAccess> none = FindClusterAccess("", "", getenv, read);
  CHECK(none.status().code() == StatusCode::kNotFound);
  CHECK(std::string(none.status().message()).find("not in a pod") != std::string::npos);
}

TEST_CASE("kube: an ExecCredential gives a token or a certificate, and its expiry") {
  constexpr std::string_view kV1 = "client.authentication.k8s.io/v1";
  Result<ExecCredential> token = ParseExecCredential(
      R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)"
      R"("status":{"token":"t0k3n","expirationTimestamp":"2026-11-25T10:00:00Z"}})",
      kV1);
  REQUIRE(token.ok());
  CHECK(token->token == "t0k3n");
  CHECK(token->expires == 1795600800);
  Result<ExecCredential> offset = ParseExecCredential(
      R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)"
      R"("status":{"token":"t","expirationTimestamp":"2026-11-25T11:00:00.5+01:00"}})",
      kV1);
  REQUIRE(offset.ok());
  CHECK(offset->expires == 1795600800);
  Result<ExecCredential> cert = ParseExecCredential(
      R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",)"
      R"("status":{"clientCertificateData":"CERT","clientKeyData":"KEY"}})",
      "client.authentication.k8s.io/v1beta1");
  REQUIRE(cert.ok());
  CHECK((cert->cert_pem == "CERT" && cert->key_pem == "KEY" && !cert->expires));
  auto error = [&](std::string_view json) {
    return std::string(ParseExecCredential(json, kV1).status().message());
  };
  CHECK(error("nope").starts_with("exec credential: not JSON"));
  CHECK(error(R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential"})") ==
        "exec credential: apiVersion 'client.authentication.k8s.io/v1beta1', but the kubeconfig "
        "asks for 'client.authentication.k8s.io/v1'");
  CHECK(
      error(
          R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}})") ==
      "exec credential: status has neither a token nor a client certificate");
  CHECK(error(R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)"
              R"("status":{"token":"t","expirationTimestamp":"tomorrow"}})") ==
        "exec credential: status.expirationTimestamp: time \"tomorrow\" is not RFC 3339 "
        "(2006-01-02T15:04:05Z07:00)");
}

TEST_CASE("kube: RunExecPlugin runs the command with its env and the exec info") {
  char dir_template[] = "/tmp/devshare-exec-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string script = dir + "/plugin";
  {
    std::ofstream out(script);
    out << "#!/bin/sh\n"
           "case \"$KUBERNETES_EXEC_INFO\" in *'\"server\":\"https://h:6443\"'*) ;; *) exit 3;; "
           "esac\n"
           "printf "
           "'{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
           "\"status\":{\"token\":\"%s-%s\"}}' \"$REGION\" \"$1\"\n";
  }
  chmod(script.c_str(), 0755);
  ClusterAccess access;
  access.server = "https://h:6443";
  access.exec = ExecConfig{
      "client.authentication.k8s.io/v1", script, {"arg"}, {{"REGION", "eu"}}, "see the docs", true};
  Result<ExecCredential> c = RunExecPlugin(access);
  REQUIRE(c.ok());
  CHECK(c->token == "eu-arg");
  access.exec->provide_cluster_info = false;  // then the script exits 3
  CHECK(RunExecPlugin(access).status().message() ==
        fmt::format("exec credential command {}: exited with status 3\nsee the docs", script));
  access.exec->command = "devshare-no-such-command";
  CHECK(RunExecPlugin(access).status().code() == StatusCode::kUnavailable);
  std::filesystem::remove_all(dir);
}

TEST_CASE("kube: in-cluster configuration comes from the environment and the service account") {
  auto env = [](const char* name) -> const char* {
    if (std::string_view(name) == "KUBERNETES_SERVICE_HOST") return "10.0.0.1";
    if (std::string_view(name) == "KUBERNETES_SERVICE_PORT") return "443";
    return nullptr;
  };
  ReadFileFn files = [](const std::string& path) -> Result<std::string> {
    return path.ends_with("token") ? std::string("tok\n") : std::string("CA");
  };
  Result<ClusterAccess> a = InClusterAccess(env, files);
  REQUIRE(a.ok());
  CHECK(a->host == "10.0.0.1");
  CHECK(a->token == "tok");
  CHECK(
      InClusterAccess([](const char*) -> const char* { return nullptr; }, files).status().code() ==
      StatusCode::kNotFound);
}

TEST_CASE("kube: metrics render as Prometheus text") {
  Metrics m;
  m.ObserveFilter("placed", 0.002);
  m.CountApiRequest("patch-pod", 200);
  m.SetState(true, 3, 24, 5);
  m.SetApiConnections(ApiConnectionStats{2, 40, 1});
  const std::string text = m.Render();
  CHECK(
      text.find("devshare_filter_duration_seconds_bucket{outcome=\"placed\",le=\"0.0025\"} 1\n") !=
      std::string::npos);
  CHECK(text.find("devshare_filter_duration_seconds_bucket{outcome=\"placed\",le=\"0.001\"} 0\n") !=
        std::string::npos);
  CHECK(text.find("devshare_api_requests_total{verb=\"patch-pod\",code=\"200\"} 1\n") !=
        std::string::npos);
  CHECK(text.find("devshare_leader 1\n") != std::string::npos);
  CHECK(text.find("devshare_devices 24\n") != std::string::npos);
  CHECK(text.find("# TYPE devshare_api_connections_opened_total counter\n"
                  "devshare_api_connections_opened_total 2\n") != std::string::npos);
  CHECK(text.find("devshare_api_connection_reuses_total 40\n") != std::string::npos);
  CHECK(text.find("devshare_api_tls_resumptions_total 1\n") != std::string::npos);
}

TEST_CASE("kube: metrics gauges of GPU allocation and fragmentation, from the snapshot") {
  using testing::MakeDevice;
  using testing::MakeNode;
  using testing::MakePod;
  ClusterSnapshot s;
  // a: two GPUs of 10 slots, 1000 MiB, 100 cores; a-gpu0 holds 250 MiB and
  // 50 cores (share 0.5, cores are the tighter), a-gpu1 is idle.
  REQUIRE(s.AddNode(MakeNode("a").Gpus(2, 10, 1000, 100)).ok());
  // b: one slot, 2000 MiB, held 1500 MiB and 10 cores (share 0.75; no free
  // slot, so nothing of it is free).
  REQUIRE(s.AddNode(MakeNode("b").Gpu(1, 2000, 100)).ok());
  // c: an unhealthy 4000 MiB GPU (allocated 0, free 0).
  REQUIRE(s.AddNode(MakeNode("c").With(MakeDevice("c-gpu0").Mem(4000).Health(false))).ok());
  REQUIRE(s.AddPod(MakePod("p").Container(1).Holding("a", "a-gpu0,NVIDIA,250,50:;")).ok());
  REQUIRE(s.AddPod(MakePod("q").Container(1).Holding("b", "b-gpu0,NVIDIA,1500,10:;")).ok());

  const std::vector<WorkloadClass> whole = {
      {1, 1, 0, 0, 0}};  // fragmented: free share of partly used GPUs
  const GpuGauges g = MeasureGpus(s, whole);
  CHECK(g.gpus == 4);
  CHECK(g.allocated == doctest::Approx(1.25));
  CHECK(g.memory_bytes == 8000ULL * 1024 * 1024);
  CHECK(g.memory_allocated_bytes == 1750ULL * 1024 * 1024);
  CHECK(g.free == doctest::Approx(1.5));
  CHECK(g.fragmented == doctest::Approx(0.5));

  Metrics m;
  m.SetCluster(true, s, whole);
  const std::string text = m.Render();
  for (const char* line :
       {"devshare_leader 1\n", "devshare_nodes 3\n", "devshare_devices 4\n", "devshare_pods 2\n",
        "devshare_gpus 4\n", "devshare_gpu_allocated 1.25\n",
        "devshare_gpu_memory_bytes 8388608000\n",
        "devshare_gpu_memory_allocated_bytes 1835008000\n", "devshare_gpu_free 1.5\n",
        "devshare_gpu_fragmented 0.5\n", "# TYPE devshare_gpu_allocated gauge\n",
        "# TYPE devshare_gpu_fragmented gauge\n"}) {
    CAPTURE(line);
    CHECK(text.find(line) != std::string::npos);
  }

  // The default workload (what serve measures) agrees with the core's measure.
  Result<ClusterFragmentation> f = MeasureFragmentation(s);
  REQUIRE(f.ok());
  const GpuGauges d = MeasureGpus(s);
  CHECK(d.free == doctest::Approx(1.5));
  CHECK(d.fragmented == f->fragmented_gpus);
  CHECK(d.fragmented <= d.free);

  // A workload the core refuses: the fragmentation gauges read NaN, the rest stand.
  const std::vector<WorkloadClass> invalid = {{1, 0, 0, 0, 0}};
  m.SetCluster(false, s, invalid);
  const std::string refused = m.Render();
  CHECK(refused.find("devshare_gpu_free NaN\n") != std::string::npos);
  CHECK(refused.find("devshare_gpu_fragmented NaN\n") != std::string::npos);
  CHECK(refused.find("devshare_gpu_allocated 1.25\n") != std::string::npos);
  CHECK(refused.find("devshare_leader 0\n") != std::string::npos);

  // An empty cluster renders zeros.
  m.SetCluster(false, ClusterSnapshot{});
  const std::string empty = m.Render();
  CHECK(empty.find("devshare_gpus 0\n") != std::string::npos);
  CHECK(empty.find("devshare_gpu_allocated 0\n") != std::string::npos);
  CHECK(empty.find("devshare_gpu_fragmented 0\n") != std::string::npos);
}

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

// One request over a fresh connection, from another thread.
std::pair<int, std::string> Send(std::uint16_t port, http::verb method, const std::string& target,
                                 std::string body) {
  boost::asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  http::request<http::string_body> req(method, target, 11);
  req.set(http::field::host, "localhost");
  req.body() = std::move(body);
  req.prepare_payload();
  http::write(socket, req);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  beast::error_code ec;
  http::read(socket, buffer, res, ec);
  return {ec ? 0 : static_cast<int>(res.result_int()), res.body()};
}

}  // namespace

TEST_CASE("kube: the HTTP server answers later, limits bodies, and stops") {
  boost::asio::io_context io;
  HttpServerOptions options;
  options.address = "127.0.0.1";
  options.port = 0;
  options.body_limit = 64;
  std::vector<Responder> later;
  HttpServer server(io, options, [&](HttpRequest r, Responder respond) {
    if (r.target == "/later") {
      later.push_back(std::move(respond));
      boost::asio::post(io, [&] { later.back()(HttpResponse{200, "text/plain", "late", {}}); });
      return;
    }
    respond(HttpResponse{201, "text/plain", r.method + " " + r.body, {}});
  });
  REQUIRE(server.Start().ok());
  const std::uint16_t port = server.port();
  std::vector<std::pair<int, std::string>> got;
  std::thread client([&] {
    got.push_back(Send(port, http::verb::post, "/echo", "hello"));
    got.push_back(Send(port, http::verb::post, "/later", ""));
    got.push_back(Send(port, http::verb::post, "/echo", std::string(100, 'x')));
    boost::asio::post(io, [&] { server.Stop(); });
  });
  io.run();
  client.join();
  REQUIRE(got.size() == 3);
  CHECK(got[0] == std::pair<int, std::string>{201, "POST hello"});
  CHECK(got[1] == std::pair<int, std::string>{200, "late"});
  CHECK(got[2].first == 413);
  CHECK(got[2].second.find("over 64 bytes") != std::string::npos);
}

namespace {

// Two self-signed P-256 certificates (CN cert-a, cert-b), valid for 100 years.
constexpr std::string_view kCertA = R"pem(-----BEGIN CERTIFICATE-----
MIIBejCCAR+gAwIBAgIUevWO1wFtiptZbCEmTPrIL6TmoqAwCgYIKoZIzj0EAwIw
ETEPMA0GA1UEAwwGY2VydC1hMCAXDTI2MTEyMTIwMDAwOFoYDzIxMjYxMDI4MjAw
MDA4WjARMQ8wDQYDVQQDDAZjZXJ0LWEwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNC
AASp7K1dD3Xu0Ny+EmjL5caLg0pos1txhYredg+yMTvo+aQmUc3k8r6iFBIPhTbc
TMTkMcNJxGoO9iOQsCzSgnUGo1MwUTAdBgNVHQ4EFgQUCtPh4YmcjYMY8hcfrJzF
/476FsMwHwYDVR0jBBgwFoAUCtPh4YmcjYMY8hcfrJzF/476FsMwDwYDVR0TAQH/
BAUwAwEB/zAKBggqhkjOPQQDAgNJADBGAiEA8Le9kTwNJyB1o+2MqXGpmi4VBycD
yoOpf3MqnIckrGgCIQDyq7hhIz6Qj/Bk4kS7jdljqwrYywHrfLqj0w2Su1q0TQ==
-----END CERTIFICATE-----
)pem";
constexpr std::string_view kKeyA = R"pem(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgqb5tMCyCXsLq2fDD
ms/2VF1pQBMjf+vHMsNgUqdFpDGhRANCAASp7K1dD3Xu0Ny+EmjL5caLg0pos1tx
hYredg+yMTvo+aQmUc3k8r6iFBIPhTbcTMTkMcNJxGoO9iOQsCzSgnUG
-----END PRIVATE KEY-----
)pem";
constexpr std::string_view kCertB = R"pem(-----BEGIN CERTIFICATE-----
MIIBeTCCAR+gAwIBAgIUEUZhjIkIIpONehg7cRQwtvdhfWcwCgYIKoZIzj0EAwIw
ETEPMA0GA1UEAwwGY2VydC1iMCAXDTI2MTEyMTIwMDAwOFoYDzIxMjYxMDI4MjAw
MDA4WjARMQ8wDQYDVQQDDAZjZXJ0LWIwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNC
AATzk22KS9Dwz9KfIXC8MI4fkzHj258Cnb6qVMawlu7X2DzmoJDyhihY9LT3RObV
HKFqLWhOlt1/gyxE0sCCwIMMo1MwUTAdBgNVHQ4EFgQU6i1zsTIA0oURl1XK/O0n
DjXTxm0wHwYDVR0jBBgwFoAU6i1zsTIA0oURl1XK/O0nDjXTxm0wDwYDVR0TAQH/
BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiEAnRv/54+V4N+275toJ9Slkdlzp0Kl
do7o8kwKAq603wwCIC6NDTLMAaR7E+ltSEo0dCNNHBq9POFzsM328Qyv7SDW
-----END CERTIFICATE-----
)pem";
constexpr std::string_view kKeyB = R"pem(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgI7yEix9X14TBOgjg
bhaWzXicxqp9tB2qKz4PxO4mJiChRANCAATzk22KS9Dwz9KfIXC8MI4fkzHj258C
nb6qVMawlu7X2DzmoJDyhihY9LT3RObVHKFqLWhOlt1/gyxE0sCCwIMM
-----END PRIVATE KEY-----
)pem";

void WriteFile(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// The common name of the certificate a TLS server on `port` presents, and
// the protocol ALPN settled on when the client offered h2 and http/1.1.
std::pair<std::string, std::string> Presented(std::uint16_t port) {
  boost::asio::io_context io;
  boost::asio::ssl::context context(boost::asio::ssl::context::tls_client);
  context.set_verify_mode(boost::asio::ssl::verify_none);
  boost::asio::ssl::stream<tcp::socket> stream(io, context);
  static constexpr unsigned char kProtocols[] = {2,   'h', '2', 8,   'h', 't',
                                                 't', 'p', '/', '1', '.', '1'};
  SSL_set_alpn_protos(stream.native_handle(), kProtocols, sizeof(kProtocols));
  stream.next_layer().connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  stream.handshake(boost::asio::ssl::stream_base::client);
  X509* peer = SSL_get1_peer_certificate(stream.native_handle());
  char name[64] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, name, sizeof(name));
  X509_free(peer);
  const unsigned char* alpn = nullptr;
  unsigned int alpn_length = 0;
  SSL_get0_alpn_selected(stream.native_handle(), &alpn, &alpn_length);
  boost::system::error_code ignored;
  stream.shutdown(ignored);
  return {name, std::string(reinterpret_cast<const char*>(alpn), alpn_length)};
}

// A loopback HTTPS server's options, serving certificate A from a fresh
// directory `dir` (removed by the caller).
HttpServerOptions LoopbackTls(const std::string& dir) {
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/tls.crt", kCertA);
  WriteFile(dir + "/tls.key", kKeyA);
  HttpServerOptions options;
  options.address = "127.0.0.1";
  options.port = 0;
  options.cert_file = dir + "/tls.crt";
  options.key_file = dir + "/tls.key";
  return options;
}

}  // namespace

TEST_CASE("kube: HTTPS offers http/1.1 only and reloads a changed certificate") {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("devshare-tls-" + std::to_string(getpid()));
  boost::asio::io_context io;
  HttpServerOptions options = LoopbackTls(dir);
  options.cert_check_period = std::chrono::milliseconds(20);
  HttpServer server(io, options, [](HttpRequest, Responder respond) { respond(HttpResponse{}); });
  REQUIRE(server.Start().ok());
  std::pair<std::string, std::string> before, after;
  std::thread client([&] {
    before = Presented(server.port());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    WriteFile(dir + "/tls.key", kKeyB);  // a new pair, written as a secret update would
    WriteFile(dir + "/tls.crt", kCertB);
    std::filesystem::last_write_time(
        dir + "/tls.crt",
        std::filesystem::last_write_time(dir + "/tls.crt") + std::chrono::seconds(1));
    for (int i = 0; i < 200 && after.first != "cert-b"; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      after = Presented(server.port());
    }
    boost::asio::post(io, [&] { server.Stop(); });
  });
  io.run();
  client.join();
  std::filesystem::remove_all(dir);
  CHECK(before == std::pair<std::string, std::string>{"cert-a", "http/1.1"});
  CHECK(after == std::pair<std::string, std::string>{"cert-b", "http/1.1"});
  HttpServerOptions missing;
  missing.address = "127.0.0.1";
  missing.port = 0;
  missing.cert_file = "/nonexistent.crt";
  missing.key_file = "/nonexistent.key";
  CHECK(HttpServer(io, missing, {}).Start().code() == StatusCode::kInvalidConfig);
}

namespace {

// `count` requests of an API client to a loopback server made with
// `options` (HTTPS when it has a certificate, not verified), in `at_once`
// chains, each request `pause` after the previous answer of its chain.
// Returns the statuses and what the client did with connections.
std::pair<std::vector<int>, ApiConnectionStats> RequestsInTurn(
    const HttpServerOptions& options, int count, std::chrono::milliseconds pause, int at_once = 1,
    std::size_t max_connections = 32, int pause_every = 1) {
  boost::asio::io_context io;
  HttpServer server(io, options, [](HttpRequest, Responder respond) {
    respond(HttpResponse{200, "application/json", "{}", {}});
  });
  REQUIRE(server.Start().ok());
  ClusterAccess access;
  access.host = "127.0.0.1";
  access.port = std::to_string(server.port());
  access.https = !options.cert_file.empty();
  access.insecure = true;
  ApiClientOptions client_options;
  client_options.qps = 1e6;
  client_options.burst = 1000;
  client_options.timeout = std::chrono::milliseconds(5000);
  client_options.max_connections = max_connections;
  ApiClient client(io, access, client_options, nullptr);
  REQUIRE(client.Start().ok());
  std::vector<int> statuses;
  int sent = 0;
  std::function<void()> next = [&] {
    if (sent == count) return;
    ++sent;
    client.Call("get", "GET", "/api/v1/nodes", "", "", [&](ApiResponse r) {
      statuses.push_back(r.status);
      if (static_cast<int>(statuses.size()) == count) {
        client.Stop();
        server.Stop();
        return;
      }
      const bool pausing = statuses.size() % static_cast<std::size_t>(pause_every) == 0;
      auto timer = std::make_shared<boost::asio::steady_timer>(
          io, pausing ? pause : std::chrono::milliseconds(0));
      timer->async_wait([&, timer](boost::system::error_code) { next(); });
    });
  };
  for (int i = 0; i < at_once; ++i) next();
  io.run();
  return {statuses, client.connection_stats()};
}

}  // namespace

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
  REQUIRE(targets.size() == 8);
  CHECK(targets[4] == "/apis/resource.k8s.io/v1/resourceslices?limit=500");
  CHECK(targets[7] == "/api/v1/namespaces/d/pods/gone");
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

TEST_CASE("kube: API requests reuse a kept-alive connection, and a closed one is replaced") {
  HttpServerOptions options = Loopback();
  options.read_timeout = std::chrono::milliseconds(5000);
  auto [statuses, stats] = RequestsInTurn(options, 4, std::chrono::milliseconds(0));
  CHECK(statuses == std::vector<int>{200, 200, 200, 200});
  CHECK(stats.opened == 1);
  CHECK(stats.reused == 3);

  // The server closes idle connections after 50 ms: every request after a
  // 200 ms pause finds its kept connection closed, and goes again on a new one.
  options.read_timeout = std::chrono::milliseconds(50);
  std::tie(statuses, stats) = RequestsInTurn(options, 4, std::chrono::milliseconds(200));
  CHECK(statuses == std::vector<int>{200, 200, 200, 200});
  CHECK(stats.opened == 4);
  CHECK(stats.reused == 3);
}

TEST_CASE("kube: API requests beyond the connection limit wait for a free connection") {
  auto [statuses, stats] =
      RequestsInTurn(Loopback(), 24, std::chrono::milliseconds(0), /*at_once=*/8,
                     /*max_connections=*/3);
  CHECK(statuses == std::vector<int>(24, 200));
  CHECK(stats.opened == 3);
  CHECK(stats.reused == 21);
}

TEST_CASE("kube: a new TLS connection to the API server resumes the last session") {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("devshare-resume-" + std::to_string(getpid()));
  HttpServerOptions options = LoopbackTls(dir);
  options.read_timeout = std::chrono::milliseconds(50);  // idle connections closed
  const auto [statuses, stats] = RequestsInTurn(options, 3, std::chrono::milliseconds(200));
  std::filesystem::remove_all(dir);
  CHECK(statuses == std::vector<int>{200, 200, 200});
  CHECK(stats.opened == 3);
  CHECK(stats.resumed == 2);  // the second and third handshakes resumed
}

TEST_CASE(
    "kube: a resumed TLS connection counts one resumption, however many requests it carries") {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("devshare-resume2-" + std::to_string(getpid()));
  HttpServerOptions options = LoopbackTls(dir);
  options.read_timeout = std::chrono::milliseconds(50);  // idle connections closed
  // Two requests in turn on each connection, a pause after every second.
  const auto [statuses, stats] = RequestsInTurn(options, 6, std::chrono::milliseconds(200),
                                                /*at_once=*/1, /*max_connections=*/32,
                                                /*pause_every=*/2);
  std::filesystem::remove_all(dir);
  CHECK(statuses == std::vector<int>(6, 200));
  CHECK(stats.opened == 3);
  CHECK(stats.reused == 5);  // the first request after a pause tries the closed connection first
  CHECK(stats.resumed == 2);
}

TEST_CASE("kube: a client that sends nothing is disconnected after the read timeout") {
  boost::asio::io_context io;
  HttpServerOptions options;
  options.address = "127.0.0.1";
  options.port = 0;
  options.read_timeout = std::chrono::milliseconds(100);
  HttpServer server(io, options, [](HttpRequest, Responder respond) { respond(HttpResponse{}); });
  REQUIRE(server.Start().ok());
  bool closed = false;
  std::thread client([&] {
    boost::asio::io_context client_io;
    tcp::socket socket(client_io);
    socket.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), server.port()));
    socket.write_some(
        boost::asio::buffer(std::string_view("POST /filter HTTP/1.1\r\n")));  // and then nothing
    char byte = 0;
    boost::system::error_code ec;
    socket.read_some(boost::asio::buffer(&byte, 1),
                     ec);  // returns when the server closes (else hangs)
    closed = ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset;
    boost::asio::post(io, [&] { server.Stop(); });
  });
  io.run();
  client.join();
  CHECK(closed);
}

// --- The HTTP server: client certificates, timeouts, limits ---

namespace {

// Client certificates (CN client-ok, client-other), valid for 100 years:
// client-ok signed by cert-b's key, client-other by cert-a's.
constexpr std::string_view kClientOkCert = R"pem(-----BEGIN CERTIFICATE-----
MIIBizCCATGgAwIBAgIUCjXUcb2FmiqOXWtMLWIIbhj9uaIwCgYIKoZIzj0EAwIw
ETEPMA0GA1UEAwwGY2VydC1iMCAXDTI2MTEyNjE3NDAyM1oYDzIxMjYxMTAyMTc0
MDIzWjAUMRIwEAYDVQQDDAljbGllbnQtb2swWTATBgcqhkjOPQIBBggqhkjOPQMB
BwNCAASCbk4fB7HZfixPpm9jp7U9RmejRQaJamSXa8nXRRX9cMUfp7Jf71T7xVpz
wMZ+gQJEDCqjzQWw2r5OX+eHsz3vo2IwYDAJBgNVHRMEAjAAMBMGA1UdJQQMMAoG
CCsGAQUFBwMCMB0GA1UdDgQWBBTrXkZcW1r3kMngbg7lesbpFLenPTAfBgNVHSME
GDAWgBTqLXOxMgDShRGXVcr87ScONdPGbTAKBggqhkjOPQQDAgNIADBFAiBK+DBj
Scm5DzCmHCdKGYmI8Ot3NrqHEBeV39wH/SzaFgIhAKuzZ2tNolQM06FasDiXq1oz
Oc0Ok6UdnczlJMP6rf2N
-----END CERTIFICATE-----
)pem";
constexpr std::string_view kClientOkKey = R"pem(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgUOk7Trtn2ewBF5CZ
r5nVKluVX6IcWN34Dpc8VvkcYeGhRANCAASCbk4fB7HZfixPpm9jp7U9RmejRQaJ
amSXa8nXRRX9cMUfp7Jf71T7xVpzwMZ+gQJEDCqjzQWw2r5OX+eHsz3v
-----END PRIVATE KEY-----
)pem";
constexpr std::string_view kClientOtherCert = R"pem(-----BEGIN CERTIFICATE-----
MIIBjzCCATSgAwIBAgIUGjOsdmmFyKcTXsXVlKPyZ4V8ISowCgYIKoZIzj0EAwIw
ETEPMA0GA1UEAwwGY2VydC1hMCAXDTI2MTEyNjE3NDAyNFoYDzIxMjYxMTAyMTc0
MDI0WjAXMRUwEwYDVQQDDAxjbGllbnQtb3RoZXIwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAAQhck630TAvTX/DnhUl0N6DoHUqbNTeVC8NCA14MCHOdKhlW/Y71ZGy
ipJKWXfWpuR5T4VCeH8apsMt1pNQoAqAo2IwYDAJBgNVHRMEAjAAMBMGA1UdJQQM
MAoGCCsGAQUFBwMCMB0GA1UdDgQWBBR9LOVnKRDB76wv0Pal5/MAjEfwpjAfBgNV
HSMEGDAWgBQK0+HhiZyNgxjyFx+snMX/jvoWwzAKBggqhkjOPQQDAgNJADBGAiEA
tCncmP4VAXIH7FDMXjABadGbRSBqy3RZyYNPXdHu1aECIQChya4XzRqRXjkVjDb+
8WL4vISet34o/XRlqhYnv5Cwyg==
-----END CERTIFICATE-----
)pem";
constexpr std::string_view kClientOtherKey = R"pem(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgxj3diTxa6Wba7oNl
rIUkLpxoiFmJ/PfbkotdfpQnbO6hRANCAAQhck630TAvTX/DnhUl0N6DoHUqbNTe
VC8NCA14MCHOdKhlW/Y71ZGyipJKWXfWpuR5T4VCeH8apsMt1pNQoAqA
-----END PRIVATE KEY-----
)pem";

// The status a loopback HTTPS server on `port` answers GET / with, the client
// presenting `cert` and `key` (none when empty); 0: no answer. (With TLS 1.3
// the client's handshake ends before the server checks its certificate, so
// a refusal can show only at the read.)
int StatusWithClientCert(std::uint16_t port, std::string_view cert, std::string_view key) {
  boost::asio::io_context io;
  boost::asio::ssl::context context(boost::asio::ssl::context::tls_client);
  context.set_verify_mode(boost::asio::ssl::verify_none);
  if (!cert.empty()) {
    context.use_certificate(boost::asio::buffer(cert), boost::asio::ssl::context::pem);
    context.use_private_key(boost::asio::buffer(key), boost::asio::ssl::context::pem);
  }
  boost::asio::ssl::stream<tcp::socket> stream(io, context);
  stream.next_layer().connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  boost::system::error_code ec;
  stream.handshake(boost::asio::ssl::stream_base::client, ec);
  if (ec) return 0;
  http::request<http::empty_body> req(http::verb::get, "/", 11);
  req.set(http::field::host, "localhost");
  http::write(stream, req, ec);
  if (ec) return 0;
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(stream, buffer, res, ec);
  return ec ? 0 : static_cast<int>(res.result_int());
}

// A connection to a loopback server on `port`, from another thread.
tcp::socket Connect(boost::asio::io_context& io, std::uint16_t port) {
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  return socket;
}

// Reads until the server closes `socket`; what it sent, and how long that took.
std::pair<std::string, std::chrono::milliseconds> UntilClosed(tcp::socket& socket) {
  const auto start = std::chrono::steady_clock::now();
  std::string got;
  char chunk[4096];
  boost::system::error_code ec;
  while (!ec) {
    const std::size_t n = socket.read_some(boost::asio::buffer(chunk), ec);
    got.append(chunk, n);
  }
  return {got, std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - start)};
}

}  // namespace

TEST_CASE("kube: with client_ca_file, HTTPS serves only clients with a certificate its CA signed") {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("devshare-mtls-" + std::to_string(getpid()));
  boost::asio::io_context io;
  HttpServerOptions options = LoopbackTls(dir);
  WriteFile(dir + "/ca.crt", kCertB);
  options.client_ca_file = dir + "/ca.crt";
  HttpServer server(io, options, [](HttpRequest, Responder respond) { respond(HttpResponse{}); });
  REQUIRE(server.Start().ok());
  int signed_by_ca = -1, without = -1, other_ca = -1;
  std::thread client([&] {
    signed_by_ca = StatusWithClientCert(server.port(), kClientOkCert, kClientOkKey);
    without = StatusWithClientCert(server.port(), "", "");
    other_ca = StatusWithClientCert(server.port(), kClientOtherCert, kClientOtherKey);
    boost::asio::post(io, [&] { server.Stop(); });
  });
  io.run();
  client.join();
  CHECK(signed_by_ca == 200);
  CHECK(without == 0);
  CHECK(other_ca == 0);

  // A CA file without a certificate and key, missing or holding no
  // certificate is a configuration error.
  HttpServerOptions plain = Loopback();
  plain.client_ca_file = dir + "/ca.crt";
  CHECK(HttpServer(io, plain, {}).Start().code() == StatusCode::kInvalidConfig);
  HttpServerOptions missing = LoopbackTls(dir);
  missing.client_ca_file = dir + "/nonexistent.crt";
  CHECK(HttpServer(io, missing, {}).Start().code() == StatusCode::kInvalidConfig);
  WriteFile(dir + "/empty.crt", "not a certificate\n");
  HttpServerOptions empty = LoopbackTls(dir);
  empty.client_ca_file = dir + "/empty.crt";
  CHECK(HttpServer(io, empty, {}).Start().code() == StatusCode::kInvalidConfig);
  std::filesystem::remove_all(dir);
}

TEST_CASE("kube: HTTPS reloads a changed client CA file for new connections") {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("devshare-mtls2-" + std::to_string(getpid()));
  boost::asio::io_context io;
  HttpServerOptions options = LoopbackTls(dir);
  WriteFile(dir + "/ca.crt", kCertB);
  options.client_ca_file = dir + "/ca.crt";
  options.cert_check_period = std::chrono::milliseconds(20);
  HttpServer server(io, options, [](HttpRequest, Responder respond) { respond(HttpResponse{}); });
  REQUIRE(server.Start().ok());
  int before = -1, after = -1;
  std::thread client([&] {
    before = StatusWithClientCert(server.port(), kClientOtherCert, kClientOtherKey);
    WriteFile(dir + "/ca.crt", kCertA);  // now the CA that signed client-other
    std::filesystem::last_write_time(
        dir + "/ca.crt",
        std::filesystem::last_write_time(dir + "/ca.crt") + std::chrono::seconds(1));
    for (int i = 0; i < 200 && after != 200; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      after = StatusWithClientCert(server.port(), kClientOtherCert, kClientOtherKey);
    }
    boost::asio::post(io, [&] { server.Stop(); });
  });
  io.run();
  client.join();
  std::filesystem::remove_all(dir);
  CHECK(before == 0);
  CHECK(after == 200);
}

TEST_CASE("kube: the HTTP server closes silent, slow and idle connections by their deadlines") {
  boost::asio::io_context io;
  HttpServerOptions options = Loopback();
  options.header_timeout = std::chrono::milliseconds(200);
  options.read_timeout = std::chrono::milliseconds(1000);
  HttpServer server(io, options, [](HttpRequest, Responder respond) { respond(HttpResponse{}); });
  REQUIRE(server.Start().ok());
  std::chrono::milliseconds silent{}, slow_header{}, slow_body{}, kept_alive{};
  std::string kept_alive_got;
  std::thread client([&] {
    boost::asio::io_context client_io;
    // Sends nothing: closed at the header timeout.
    tcp::socket a = Connect(client_io, server.port());
    silent = UntilClosed(a).second;
    // A header byte every 50 ms: still closed at the header timeout.
    tcp::socket b = Connect(client_io, server.port());
    std::thread trickle([&] {
      boost::system::error_code ec;
      const std::string header = "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaa";
      for (std::size_t i = 0; i < header.size() && !ec; ++i) {
        boost::asio::write(b, boost::asio::buffer(header.data() + i, 1), ec);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
    slow_header = UntilClosed(b).second;
    trickle.join();
    // The header at once, the body never: closed at the read timeout.
    tcp::socket c = Connect(client_io, server.port());
    boost::asio::write(
        c, boost::asio::buffer(std::string_view("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n{")));
    slow_body = UntilClosed(c).second;
    // One request answered, then nothing: closed at the read timeout.
    tcp::socket d = Connect(client_io, server.port());
    boost::asio::write(d, boost::asio::buffer(std::string_view("GET / HTTP/1.1\r\n\r\n")));
    std::tie(kept_alive_got, kept_alive) = UntilClosed(d);
    boost::asio::post(io, [&] { server.Stop(); });
  });
  io.run();
  client.join();
  CHECK(silent.count() >= 150);
  CHECK(silent.count() < 800);
  CHECK(slow_header.count() >= 150);
  CHECK(slow_header.count() < 800);
  CHECK(slow_body.count() >= 900);
  CHECK(slow_body.count() < 2000);
  CHECK(kept_alive_got.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(kept_alive.count() >= 900);
  CHECK(kept_alive.count() < 2000);
}

TEST_CASE("kube: the HTTP server answers 431 over header_limit and closes beyond max_connections") {
  boost::asio::io_context io;
  HttpServerOptions options = Loopback();
  options.header_limit = 1024;
  options.max_connections = 2;
  HttpServer server(io, options, [](HttpRequest, Responder respond) { respond(HttpResponse{}); });
  REQUIRE(server.Start().ok());
  std::string too_large, beyond, after;
  bool stopped_with_idle_open = false;
  std::thread client([&] {
    boost::asio::io_context client_io;
    tcp::socket a = Connect(client_io, server.port());
    boost::asio::write(
        a, boost::asio::buffer("GET / HTTP/1.1\r\nX-Big: " + std::string(2048, 'a') + "\r\n\r\n"));
    too_large = UntilClosed(a).first;
    // Two idle connections fill the server; a third is closed unanswered.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    tcp::socket b = Connect(client_io, server.port());
    tcp::socket c = Connect(client_io, server.port());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    tcp::socket d = Connect(client_io, server.port());
    boost::system::error_code ignored;
    boost::asio::write(d, boost::asio::buffer(std::string_view("GET / HTTP/1.1\r\n\r\n")), ignored);
    beyond = UntilClosed(d).first;
    // Once one goes, a new connection is served.
    b.close();
    for (int i = 0; i < 50 && after.empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      tcp::socket e = Connect(client_io, server.port());
      boost::asio::write(
          e, boost::asio::buffer(std::string_view("GET / HTTP/1.1\r\nConnection: close\r\n\r\n")),
          ignored);
      after = UntilClosed(e).first.substr(0, 12);
      if (after != "HTTP/1.1 200") after.clear();
    }
    // Stop closes the idle connection c, which never sent a byte.
    boost::asio::post(io, [&] { server.Stop(); });
    stopped_with_idle_open = UntilClosed(c).second.count() < 1000;
  });
  io.run();
  client.join();
  CHECK(too_large.rfind("HTTP/1.1 431", 0) == 0);
  CHECK(too_large.find("request header over 1024 bytes") != std::string::npos);
  CHECK(beyond.empty());
  CHECK(after == "HTTP/1.1 200");
  CHECK(stopped_with_idle_open);
}
