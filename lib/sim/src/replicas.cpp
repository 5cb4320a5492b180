#include "replicas.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <type_traits>
#include <utility>
#include <variant>

namespace devshare::sim::internal {

namespace {

// The engine counters the report sums over replicas, into Counters or the
// Report (the same field names).
template <typename Sum>
void AddCounters(Sum& sum, const engine::Counters& c) {
  sum.filters_refused += c.filters_refused;
  sum.lock_contention += c.lock_contention;
  sum.lock_retries += c.lock_retries;
  sum.binds_failed += c.binds_failed;
  sum.registration_writes += c.registration_writes;
  sum.nodes_dropped += c.nodes_dropped;
}

void AddAudits(engine::AuditTotals& sum, const engine::AuditTotals& a) {
  sum.audits += a.audits;
  for (std::size_t k = 0; k < engine::kDriftKinds; ++k) {
    sum.found[k] += a.found[k];
    sum.healed[k] += a.healed[k];
  }
}

}  // namespace

Replicas::Replicas(const engine::EngineOptions& options, std::size_t count, std::uint64_t seed,
                   std::string handshake_key, EventQueue& events, ApiServer& api,
                   const LeaderElection& election, Listener& listener)
    : options_(options),
      seed_(seed),
      handshake_key_(std::move(handshake_key)),
      events_(events),
      api_(api),
      election_(election),
      listener_(listener),
      replicas_(count) {
  for (std::size_t r = 0; r < count; ++r) replicas_[r].host = fmt::format("scheduler-{}", r);
}

int Replicas::Leader() const {
  for (std::size_t r = 0; r < replicas_.size(); ++r) {
    const int i = static_cast<int>(r);
    if (replicas_[r].alive && (replicas_.size() == 1 || election_.leading(i))) return i;
  }
  return -1;
}

// ---- life and death

void Replicas::Start(int r) {
  Replica& rep = replica(r);
  engine::EngineOptions options = options_;
  options.seed = seed_ + static_cast<std::uint64_t>(r);
  if (replicas_.size() > 1) {
    options.leadership = engine::Leadership::kFollowLease;
    options.hostname = rep.host;
  }
  rep.engine = std::make_unique<engine::Engine>(std::move(options));
  rep.alive = true;
  rep.wake_at.reset();
  const std::int64_t now = events_.now();
  std::vector<engine::Command> out;
  for (std::size_t n = 0; n < api_.node_count(); ++n)
    rep.engine->NodeObserved(api_.node(n), now, out);
  for (const ResourceQuota& quota : api_.quotas()) rep.engine->ResourceQuotaObserved(quota);
  for (std::size_t b = 0; b < api_.budget_count(); ++b)
    rep.engine->PodDisruptionBudgetObserved(api_.BudgetStatus(b));
  for (std::size_t p = 0; p < api_.pod_count(); ++p) {
    if (api_.exists(p)) rep.engine->PodObserved(api_.pod(p));
  }
  if (replicas_.size() > 1) rep.engine->LeaseObserved(api_.lease(), now, out);
  rep.engine->Tick(now, out);
  Dispatch(r, std::move(out));
}

void Replicas::Crash(int r) {
  Replica& rep = replica(r);
  rep.alive = false;
  rep.registration_order.clear();
  rep.registration_queued.clear();
  AddCounters(rep.retired, rep.engine->counters());
  rep.retired.preemptions_abandoned += rep.engine->counters().preemptions_abandoned;
  AddAudits(rep.retired_audits, rep.engine->audit_totals());
}

void Replicas::Wake(int r) {
  Replica& rep = replica(r);
  if (!rep.alive || !rep.wake_at || *rep.wake_at != events_.now()) return;  // superseded
  rep.wake_at.reset();
  std::vector<engine::Command> out;
  rep.engine->Tick(events_.now(), out);
  Dispatch(r, std::move(out));
}

// ---- watch events and outcomes

void Replicas::NodeObserved(std::size_t node) {
  if (deaf_) return;
  for (std::size_t r = 0; r < replicas_.size(); ++r) {
    if (!replicas_[r].alive) continue;
    std::vector<engine::Command> out;
    replicas_[r].engine->NodeObserved(api_.node(node), events_.now(), out);
    Dispatch(static_cast<int>(r), std::move(out));
  }
}

void Replicas::PodObserved(const Pod& pod) {
  if (deaf_) return;
  for (Replica& rep : replicas_) {
    if (rep.alive) rep.engine->PodObserved(pod);
  }
}

void Replicas::PodDeleted(const std::string& uid) {
  if (deaf_) return;
  for (Replica& rep : replicas_) {
    if (rep.alive) rep.engine->PodDeleted(uid);
  }
}

void Replicas::BudgetObserved(const PodDisruptionBudget& budget) {
  for (Replica& rep : replicas_) {
    if (rep.alive) rep.engine->PodDisruptionBudgetObserved(budget);
  }
}

void Replicas::LeaseObserved() {
  for (std::size_t r = 0; r < replicas_.size(); ++r) {
    if (!replicas_[r].alive) continue;
    std::vector<engine::Command> out;
    replicas_[r].engine->LeaseObserved(api_.lease(), events_.now(), out);
    Dispatch(static_cast<int>(r), std::move(out));
  }
}

void Replicas::Tell(int r, std::uint64_t id, bool succeeded) {
  Replica& rep = replica(r);
  if (!rep.alive) return;
  std::vector<engine::Command> out;
  rep.engine->ApiResult(id, succeeded, events_.now(), out);
  Dispatch(r, std::move(out));
}

// ---- the extender

bool Replicas::Ready(int r) const { return replica(r).engine->Ready(events_.now()); }

void Replicas::Filter(int r, std::uint64_t request, const Pod& pod,
                      const std::vector<std::string>& nodes) {
  std::vector<engine::Command> out;
  replica(r).engine->PodObserved(pod);
  replica(r).engine->Filter(request, pod, nodes, events_.now(), out);
  Dispatch(r, std::move(out));
}

void Replicas::Audit(int r, const engine::AuditListing& listing) {
  engine::Engine& engine = *replica(r).engine;
  const std::int64_t now = events_.now();
  std::vector<engine::Command> out;
  const engine::AuditReport report = engine.Audit(listing, now, out);
  for (const std::string& name : report.nodes_to_read) {
    std::optional<Node> node;
    for (std::size_t n = 0; n < api_.node_count(); ++n) {
      if (api_.node(n).name == name) node = api_.node(n);
    }
    engine.NodeRead(name, node, now, out);
  }
  for (const engine::PodToRead& asked : report.pods_to_read) {
    std::optional<Pod> pod;
    for (std::size_t p = 0; p < api_.pod_count(); ++p) {
      if (api_.exists(p) && api_.pod(p).name == asked.name &&
          api_.pod(p).pod_namespace == asked.pod_namespace)
        pod = api_.pod(p);
    }
    engine.PodRead(asked, pod);
  }
  for (const engine::ObjectToRead& asked : report.quotas_to_read) {
    std::optional<ResourceQuota> quota;
    for (const ResourceQuota& q : api_.quotas()) {
      if (q.quota_namespace == asked.object_namespace && q.name == asked.name) quota = q;
    }
    engine.QuotaRead(asked, quota);
  }
  Dispatch(r, std::move(out));
}

void Replicas::Bind(int r, std::uint64_t request, const Pod& pod, const std::string& node) {
  std::vector<engine::Command> out;
  replica(r).engine->Bind(request, pod.pod_namespace, pod.name, pod.uid, node, events_.now(), out);
  Dispatch(r, std::move(out));
}

std::optional<std::string> Replicas::PreferredNode(int r, const Pod& pod,
                                                   const std::vector<std::string>& nodes) {
  std::vector<engine::Command> out;
  replica(r).engine->Filter(0, pod, nodes, events_.now(), out);
  for (const engine::Command& command : out) {
    const auto* reply = std::get_if<engine::FilterReply>(&command);
    if (reply != nullptr && reply->error.empty() && reply->nodes.size() == 1)
      return reply->nodes.front();
  }
  return std::nullopt;
}

// ---- the engines' commands

void Replicas::Dispatch(int r, std::vector<engine::Command> commands) {
  for (engine::Command& command : commands) {
    std::visit(
        [&](auto& c) {
          using C = std::decay_t<decltype(c)>;
          // The simulated engines serve no DeviceClass (DRA mode places
          // with dra::Placer itself), so they issue no DRA command; Events
          // are not modelled.
          if constexpr (!std::is_same_v<C, engine::WriteClaimStatus> &&
                        !std::is_same_v<C, engine::CreateResourceClaim> &&
                        !std::is_same_v<C, engine::RemoveSchedulingGate> &&
                        !std::is_same_v<C, engine::PodEvent>) {
            Handle(r, c);
          }
        },
        command);
  }
  while (!replaced_.empty()) {
    const std::uint64_t id = replaced_.back();
    replaced_.pop_back();
    Tell(r, id, false);
  }
  Rearm(r);
}

void Replicas::Rearm(int r) {
  Replica& rep = replica(r);
  if (!rep.alive) return;
  const std::optional<std::int64_t> wake = rep.engine->NextWakeMs();
  if (!wake || (rep.wake_at && *rep.wake_at <= *wake)) return;
  rep.wake_at = std::max(*wake, events_.now());
  events_.At(*rep.wake_at, EventKind::kWake, static_cast<std::uint64_t>(r));
}

void Replicas::Handle(int r, engine::PatchNode& c) {
  const bool handshake =
      std::any_of(c.writes.begin(), c.writes.end(),
                  [&](const AnnotationWrite& w) { return w.key == handshake_key_; });
  const std::optional<LeaseRecord>& lease = api_.lease();
  if (handshake && replicas_.size() > 1 && (!lease || lease->holder != election_.identity(r))) {
    ++duplicate_registration_writes_;
  }
  if (!c.registration) return api_.Submit(Request{Verb::kPatchNode, r, std::move(c)});
  Replica& rep = replica(r);
  auto [queued, added] = rep.registration_queued.try_emplace(c.node);
  ++registration_queued_;
  if (added) {
    rep.registration_order.push_back(c.node);
  } else {
    ++registration_done_;  // merged into the newer write
    replaced_.push_back(
        queued->second.id);  // told to the engine as failed once this dispatch is done
  }
  queued->second = std::move(c);
  SendRegistration(r);
}

void Replicas::Handle(int r, engine::PatchPod& c) {
  api_.Submit(Request{Verb::kPatchPod, r, std::move(c)});
}
void Replicas::Handle(int r, engine::PostBinding& c) {
  api_.Submit(Request{Verb::kBinding, r, std::move(c)});
}
void Replicas::Handle(int r, engine::EvictPod& c) {
  api_.Submit(Request{Verb::kEviction, r, std::move(c)});
}
void Replicas::Handle(int r, engine::NominatePod& c) {
  listener_.Preempting(r, c);
  api_.Submit(Request{Verb::kNominate, r, std::move(c)});
}
void Replicas::Handle(int r, engine::FilterReply& reply) { listener_.FilterAnswered(r, reply); }
void Replicas::Handle(int /*r*/, engine::BindReply& reply) { listener_.BindAnswered(reply); }

void Replicas::SendRegistration(int r) {
  Replica& rep = replica(r);
  if (rep.registration_busy || rep.registration_order.empty()) return;
  auto queued = rep.registration_queued.find(rep.registration_order.front());
  rep.registration_order.pop_front();
  engine::PatchNode next = std::move(queued->second);
  rep.registration_queued.erase(queued);
  rep.registration_busy = true;
  api_.Submit(Request{Verb::kPatchNode, r, std::move(next)});
}

void Replicas::RegistrationWritten(int r) {
  ++registration_done_;
  listener_.RegistrationWritten();
  Replica& rep = replica(r);
  rep.registration_busy = false;
  if (rep.alive) SendRegistration(r);
}

void Replicas::AddTo(Report& report) const {
  engine::AuditTotals audits;
  for (const Replica& rep : replicas_) {
    AddCounters(report, rep.retired);
    report.preemption.preemptions_abandoned += rep.retired.preemptions_abandoned;
    AddAudits(audits, rep.retired_audits);
    if (rep.alive) {
      AddCounters(report, rep.engine->counters());
      report.preemption.preemptions_abandoned += rep.engine->counters().preemptions_abandoned;
      AddAudits(audits, rep.engine->audit_totals());
    }
  }
  for (std::size_t k = 0; k < engine::kDriftKinds; ++k) {
    const std::string name(engine::kDriftKindNames[k]);
    if (audits.found[k] > 0) report.drift_found[name] += audits.found[k];
    if (audits.healed[k] > 0) report.drift_healed[name] += audits.healed[k];
  }
  report.duplicate_registration_writes += duplicate_registration_writes_;
}

}  // namespace devshare::sim::internal
