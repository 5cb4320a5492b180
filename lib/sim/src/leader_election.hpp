// Private: the leader election of the kube-schedulers: with several
// replicas, each runs client-go's elector on one Lease (15 s duration, 10 s
// renew deadline, 2 s retry period), writing it through the API server
// model. The replicas' engines follow the Lease on their own (Replicas
// delivers it); the one leading is the replica whose kube-scheduler
// schedules.
//
// A replica's elector runs while its process does: a crash stops it and
// forgets what it saw; a restart runs a new one.
//
// Thread-safety: none; a run is single-threaded.
#ifndef DEVSHARE_SIM_SRC_LEADER_ELECTION_HPP_
#define DEVSHARE_SIM_SRC_LEADER_ELECTION_HPP_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api_server.hpp"
#include "devshare/lease.hpp"
#include "event_queue.hpp"

namespace devshare::sim::internal {

inline constexpr std::string_view kLeaseName = "devshare-scheduler";
inline constexpr std::string_view kLeaseNamespace = "kube-system";

class LeaderElection {
 public:
  // Electors for `replicas` replicas, all running, none scheduled yet.
  LeaderElection(std::size_t replicas, EventQueue& events, ApiServer& api);
  LeaderElection(const LeaderElection&) = delete;
  LeaderElection& operator=(const LeaderElection&) = delete;

  // Replica r's identity, `<hostname>_<uuid>` as kube-scheduler's.
  void SetIdentity(int r, std::string identity);
  const std::string& identity(int r) const { return candidates_[Index(r)].config.identity; }

  // Replica r's elector runs: its first try at `at`, then one every retry
  // period (kElect).
  void Run(int r, std::int64_t at);
  // Replica r's process died: its elector stops (at its next try) and
  // forgets what it saw.
  void Stop(int r);

  // kElect: one try (client-go's tryAcquireOrRenew on the Lease as the API
  // server has it); a create, takeover or renewal is written.
  void Elect(int r);
  // The outcome of replica r's Lease write. Returns true when r started
  // leading with it.
  bool WriteResult(int r, const ElectionDecision& decision, bool ok);
  bool leading(int r) const { return candidates_[Index(r)].elector.leading; }

 private:
  struct Candidate {
    ElectionConfig config;
    Elector elector;
    bool running = true;
  };
  static std::size_t Index(int r) { return static_cast<std::size_t>(r); }

  EventQueue& events_;
  ApiServer& api_;
  std::vector<Candidate> candidates_;  // by replica
};

}  // namespace devshare::sim::internal

#endif  // DEVSHARE_SIM_SRC_LEADER_ELECTION_HPP_
