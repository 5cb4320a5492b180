#include "leader_election.hpp"

#include <utility>

namespace devshare::sim::internal {

LeaderElection::LeaderElection(std::size_t replicas, EventQueue& events, ApiServer& api)
    : events_(events), api_(api), candidates_(replicas) {}

void LeaderElection::SetIdentity(int r, std::string identity) {
  candidates_[Index(r)].config.identity = std::move(identity);
}

void LeaderElection::Run(int r, std::int64_t at) {
  candidates_[Index(r)].running = true;
  events_.At(at, EventKind::kElect, static_cast<std::uint64_t>(r));
}

void LeaderElection::Stop(int r) {
  Candidate& c = candidates_[Index(r)];
  c.running = false;
  c.elector = Elector{};
}

void LeaderElection::Elect(int r) {
  Candidate& c = candidates_[Index(r)];
  if (!c.running) return;
  const std::int64_t now = events_.now();
  ElectionDecision d =
      TryAcquireOrRenew(c.elector, api_.lease(), c.config, kLeaseName, kLeaseNamespace, now);
  if (d.action == ElectionAction::kCreate || d.action == ElectionAction::kAcquire ||
      d.action == ElectionAction::kRenew) {
    api_.Submit(Request{Verb::kLease, r, LeaseWrite{std::move(d)}});
  }
  events_.At(now + c.config.retry_period_ms, EventKind::kElect, static_cast<std::uint64_t>(r));
}

bool LeaderElection::WriteResult(int r, const ElectionDecision& decision, bool ok) {
  Candidate& c = candidates_[Index(r)];
  return c.running && ElectionWriteResult(c.elector, decision, ok, events_.now()) ==
                          LeaderEvent::kStartedLeading;
}

}  // namespace devshare::sim::internal
