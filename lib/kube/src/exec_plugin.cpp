// RunExecPlugin (devshare/kube/cluster_access.hpp): a kubeconfig's
// credential command, run with posix_spawn (Boost.Process 1.81's v2, which
// bookworm ships, does not compile with the standard filesystem, and its v1
// needs Boost.Filesystem for one fork and exec).
#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "devshare/kube/cluster_access.hpp"

extern char** environ;  // NOLINT: POSIX's process environment

namespace devshare::kube {

namespace {

namespace bj = boost::json;

std::string Base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

// KUBERNETES_EXEC_INFO: what client-go tells a plugin.
std::string ExecInfo(const ClusterAccess& access) {
  bj::object spec{{"interactive", false}};
  if (access.exec->provide_cluster_info) {
    bj::object cluster{{"server", access.server}};
    if (!access.ca_pem.empty()) cluster["certificate-authority-data"] = Base64(access.ca_pem);
    if (access.insecure) cluster["insecure-skip-tls-verify"] = true;
    if (!access.tls_server_name.empty()) cluster["tls-server-name"] = access.tls_server_name;
    spec["cluster"] = std::move(cluster);
  }
  return bj::serialize(bj::object{{"apiVersion", access.exec->api_version},
                                  {"kind", "ExecCredential"},
                                  {"spec", std::move(spec)}});
}

}  // namespace

Result<ExecCredential> RunExecPlugin(const ClusterAccess& access) {
  if (!access.exec) return Status::InvalidArgument("no exec credential command configured");
  const ExecConfig& exec = *access.exec;
  const auto failed = [&](std::string_view what) {
    return Status::Unavailable(fmt::format(
        "exec credential command {}: {}{}", exec.command, what,
        exec.install_hint.empty() ? std::string() : fmt::format("\n{}", exec.install_hint)));
  };
  // Our environment, the configured variables replacing ours, and the exec info.
  std::vector<std::string> env;
  auto overridden = [&](std::string_view entry) {
    const std::string_view name = entry.substr(0, entry.find('='));
    return name == "KUBERNETES_EXEC_INFO" ||
           std::ranges::any_of(exec.env, [&](const auto& kv) { return kv.first == name; });
  };
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (!overridden(*e)) env.emplace_back(*e);
  }
  for (const auto& [key, value] : exec.env) env.push_back(fmt::format("{}={}", key, value));
  env.push_back(fmt::format("KUBERNETES_EXEC_INFO={}", ExecInfo(access)));

  // posix_spawn's NULL-terminated arrays, pointing into `env` and `args`.
  auto pointers = [](std::vector<std::string>& texts) {
    std::vector<char*> out;
    out.reserve(texts.size() + 1);
    for (std::string& t : texts) out.push_back(t.data());
    out.push_back(nullptr);
    return out;
  };
  std::vector<char*> envp = pointers(env);
  std::vector<std::string> args{exec.command};
  args.insert(args.end(), exec.args.begin(), exec.args.end());
  std::vector<char*> argv = pointers(args);

  // Its stdout into a pipe, its stdin from /dev/null, its stderr ours.
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return failed(std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  pid_t pid = 0;
  // posix_spawnp searches PATH when the command has no '/'.
  const int spawned =
      posix_spawnp(&pid, exec.command.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  if (spawned != 0) {
    close(out[0]);
    return failed(spawned == ENOENT ? std::string("not found") : std::strerror(spawned));
  }
  std::string printed;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(out[0], buffer, sizeof(buffer));
    if (n > 0) {
      printed.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (exit_code != 0) return failed(fmt::format("exited with status {}", exit_code));
  return ParseExecCredential(printed, exec.api_version);
}

}  // namespace devshare::kube
