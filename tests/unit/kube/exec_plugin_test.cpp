// RunExecPlugin: a kubeconfig's credential command (lib/kube/src/exec_plugin.cpp).
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "devshare/kube/cluster_access.hpp"

using namespace devshare;
using namespace devshare::kube;

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
