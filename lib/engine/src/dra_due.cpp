// What concerns a gated pod (engine.hpp, "DRA"): the DRA watch events and
// the pod and node changes, each marking for the next pass only the pods it
// may change the verdict of.
//
// A pod held for want of room (kNoFit) fits nowhere, so an event that only
// takes room (a claim allocated, a pod bound, a node's heartbeat) cannot
// change its verdict; one that may give room gives it on a node, and the
// pod is judged again on that node alone (Placer::Place `among`). Pods
// waiting for a claim are judged again when the claim changes, and every
// pod when what all of them depend on does (a DeviceClass, a template, the
// first listing, leadership), or, for what no event says, every
// kDraSweepMs (dra.cpp).
#include <algorithm>

#include "engine_impl.hpp"

namespace devshare::engine {

namespace {

// A pod judged again on more nodes than this is judged on every node.
constexpr std::size_t kMaxGainedNodes = 16;

// What the DRA placement reads of a node (dra::Placer: its CPU and memory,
// its labels and taints for NodeExcludes): heartbeats and annotations aside.
bool SameForPlacement(const Node& a, const Node& b) {
  return a.uid == b.uid && a.labels == b.labels && a.allocatable == b.allocatable &&
         a.taints == b.taints && a.unschedulable == b.unschedulable;
}

// Whether resourceVersion `a` comes before `b`: both decimal, as the API
// server's are (comparable since Kubernetes 1.34); anything else is not
// ordered.
bool OlderVersion(std::string_view a, std::string_view b) {
  auto decimal = [](std::string_view v) {
    return !v.empty() && v.size() <= 20 && v.find_first_not_of("0123456789") == std::string::npos;
  };
  if (!decimal(a) || !decimal(b)) return false;
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}

// The claims `pod` names by name: its own, or the one made from its
// template once the pod's status says which.
std::vector<ClaimKey> ClaimKeys(const Pod& pod) {
  std::vector<ClaimKey> keys;
  for (const PodResourceClaim& c : pod.resource_claims) {
    const std::string& name =
        c.resource_claim_name.empty() ? c.generated_claim_name : c.resource_claim_name;
    if (!name.empty()) keys.emplace_back(pod.pod_namespace, name);
  }
  return keys;
}

}  // namespace

// ---------------------------------------------------------------------------
// Marking

void Engine::DraDue(const std::string& uid) {
  Impl::Dra& d = impl_->dra;
  auto seq = d.seq_of.find(uid);
  if (seq == d.seq_of.end()) return;
  Impl::Dra::Due& due = d.due[seq->second];
  due.anywhere = true;
  due.gained.clear();
}

void Engine::DraDueAt(const std::string& uid, std::int64_t at_ms) {
  Impl::Dra& d = impl_->dra;
  if (auto seq = d.seq_of.find(uid); seq != d.seq_of.end()) d.timers.emplace(at_ms, seq->second);
}

void Engine::DraRoomOn(const std::string& node) {
  Impl::Dra& d = impl_->dra;
  if (d.no_fit.empty()) return;
  auto memory = impl_->nodes.find(node);
  if (memory == impl_->nodes.end()) return;
  for (std::uint64_t seq : d.no_fit) {
    const auto uid = d.queue.find(seq);
    if (uid == d.queue.end()) continue;
    const auto pod = impl_->pods.find(uid->second);
    if (pod == impl_->pods.end() || NodeExcludes(pod->second, memory->second.object)) continue;
    Impl::Dra::Due& due = d.due[seq];
    if (due.anywhere) continue;
    auto at = std::lower_bound(due.gained.begin(), due.gained.end(), node);
    if (at != due.gained.end() && *at == node) continue;
    if (due.gained.size() == kMaxGainedNodes) {
      due.anywhere = true;
      due.gained.clear();
      continue;
    }
    due.gained.insert(at, node);
  }
}

void Engine::DraRoomAnywhere() {
  Impl::Dra& d = impl_->dra;
  for (std::uint64_t seq : d.no_fit) {
    Impl::Dra::Due& due = d.due[seq];
    due.anywhere = true;
    due.gained.clear();
  }
}

void Engine::DraPreemptorsDue() {
  for (const auto& [uid, preemption] : impl_->preemptions) DraDue(uid);
}

void Engine::DraUnhold(const std::string& uid) {
  Impl::Dra& d = impl_->dra;
  d.held.erase(uid);
  if (auto seq = d.seq_of.find(uid); seq != d.seq_of.end()) d.no_fit.erase(seq->second);
}

// `before` (the snapshot's claim, or nullptr) replaced by `after` (nullptr:
// deleted): the pods naming it are judged again, and the devices `before`
// held and `after` does not give room on their nodes.
void Engine::DraClaimChanged(const dra::ResourceClaim* before, const dra::ResourceClaim* after) {
  Impl::Dra& d = impl_->dra;
  const dra::ResourceClaim& claim = after != nullptr ? *after : *before;
  if (auto users = d.claim_users.find(KeyOf(claim)); users != d.claim_users.end()) {
    for (const std::string& uid : users->second) DraDue(uid);
  }
  DraPreemptorsDue();
  if (before == nullptr || !before->allocation) return;
  if (after != nullptr && after->allocation == before->allocation) return;
  for (const dra::AllocatedDevice& device : before->allocation->devices) {
    auto node = d.pool_node.find({device.driver, device.pool});
    if (node == d.pool_node.end()) return DraRoomAnywhere();
    DraRoomOn(node->second);
  }
}

// `claim`, as the watch shows it, allocated for a pod whose gate waits for
// the watch to show its claims (DraWrite::unseen): one fewer to wait for
// (DraClaimChanged then judges the pod again, which removes the gate).
void Engine::DraClaimSeen(const dra::ResourceClaim& claim) {
  Impl::Dra& d = impl_->dra;
  if (!claim.allocation) return;
  auto users = d.claim_users.find(KeyOf(claim));
  if (users == d.claim_users.end()) return;
  for (const std::string& uid : users->second) {
    auto w = d.writing.find(uid);
    if (w == d.writing.end()) continue;
    if (std::any_of(claim.reserved_for.begin(), claim.reserved_for.end(),
                    [&](const dra::ClaimConsumer& c) { return c.uid == uid; }))
      w->second.unseen.erase(KeyOf(claim));
  }
}

// ---------------------------------------------------------------------------
// Watch events

void Engine::ResourceSliceObserved(dra::ResourceSlice slice) {
  const std::string node = slice.node_scope.node_name;
  if (!node.empty()) impl_->dra.pool_node[{slice.driver, slice.pool.name}] = node;
  snapshot_.AddResourceSlice(std::move(slice));
  if (node.empty()) {
    DraRoomAnywhere();
  } else {
    DraRoomOn(node);
  }
}

// A slice of an older generation going may complete a newer one: room
// anywhere (slices seldom go).
void Engine::ResourceSliceDeleted(const std::string& name) {
  if (snapshot_.RemoveResourceSlice(name)) DraRoomAnywhere();
}

void Engine::DeviceClassObserved(dra::DeviceClass device_class) {
  snapshot_.AddDeviceClass(std::move(device_class));
  impl_->dra.all_due = true;
}

void Engine::DeviceClassDeleted(const std::string& name) {
  snapshot_.RemoveDeviceClass(name);
  impl_->dra.all_due = true;
}

void Engine::ResourceClaimObserved(dra::ResourceClaim claim) {
  // An event older than the claim the snapshot has (the event of our
  // finalizer write, come after the status write's answer) is passed over:
  // it would show an allocated device free until the next event.
  if (const dra::ResourceClaim* known =
          snapshot_.FindResourceClaim(claim.claim_namespace, claim.name);
      known != nullptr && known->uid == claim.uid &&
      OlderVersion(claim.resource_version, known->resource_version))
    return;
  // While a write of ours is in flight the snapshot keeps what it assumed,
  // unless the claim shows an allocation (ours, come back, or another's).
  if (auto before = impl_->dra.before.find(KeyOf(claim)); before != impl_->dra.before.end()) {
    if (!claim.allocation) {
      before->second = std::move(claim);
      return;
    }
    before->second = claim;
  }
  impl_->dra.creating.erase(KeyOf(claim));
  DraClaimSeen(claim);
  DraClaimChanged(snapshot_.FindResourceClaim(claim.claim_namespace, claim.name), &claim);
  snapshot_.AddResourceClaim(std::move(claim));
}

void Engine::ResourceClaimDeleted(const std::string& claim_namespace, const std::string& name) {
  impl_->dra.before.erase({claim_namespace, name});
  if (const dra::ResourceClaim* claim = snapshot_.FindResourceClaim(claim_namespace, name)) {
    DraClaimChanged(claim, nullptr);
    snapshot_.RemoveResourceClaim(claim_namespace, name);
  }
}

void Engine::ResourceClaimTemplateObserved(dra::ResourceClaimTemplate claim_template) {
  snapshot_.AddResourceClaimTemplate(std::move(claim_template));
  impl_->dra.all_due = true;
}

void Engine::ResourceClaimTemplateDeleted(const std::string& template_namespace,
                                          const std::string& name) {
  snapshot_.RemoveResourceClaimTemplate(template_namespace, name);
  impl_->dra.all_due = true;
}

void Engine::DraSynced() {
  impl_->dra.synced = true;
  impl_->dra.all_due = true;
}

// ---------------------------------------------------------------------------
// Pods and nodes

// A pod observed (`after`) or deleted (nullptr), `before` as the engine
// last had it (nullptr: new): gated pods join the queue in the order first
// seen and leave it when ungated, bound, finishing or gone; a gated pod's
// own change judges it again, and a bound pod that goes, moves or shrinks
// gives room on its node.
void Engine::DraPodChanged(const Pod* before, const Pod* after, const std::string& uid) {
  Impl::Dra& d = impl_->dra;
  if (options_.dra_device_classes.empty()) return;
  const bool gated = after != nullptr && dra::HasSchedulingGate(*after) &&
                     after->node_name.empty() && !after->terminating;
  auto seq = d.seq_of.find(uid);
  if (gated && seq == d.seq_of.end()) {
    seq = d.seq_of.emplace(uid, d.next_seq).first;
    d.queue.emplace(d.next_seq++, uid);
  } else if (!gated && seq != d.seq_of.end()) {
    d.queue.erase(seq->second);
    d.due.erase(seq->second);
    d.no_fit.erase(seq->second);
    d.seq_of.erase(seq);
    d.held.erase(uid);
    d.evented.erase(uid);
    d.waiting_since.erase(uid);
    d.released.erase(uid);
    d.backoff_until.erase(uid);
    // Ungated by another replica, or gone, while its gate waited for the watch.
    if (auto w = d.writing.find(uid); w != d.writing.end() && w->second.written_at_ms)
      d.writing.erase(w);
  }
  // The claims it names, indexed while it is gated.
  if (auto of = d.claims_of.find(uid); of != d.claims_of.end()) {
    for (const ClaimKey& key : of->second) {
      auto users = d.claim_users.find(key);
      users->second.erase(uid);
      if (users->second.empty()) d.claim_users.erase(users);
    }
    d.claims_of.erase(of);
  }
  if (gated) {
    std::vector<ClaimKey> keys = ClaimKeys(*after);
    for (const ClaimKey& key : keys) d.claim_users[key].insert(uid);
    if (!keys.empty()) d.claims_of.emplace(uid, std::move(keys));
    DraDue(uid);
  }
  if (before == nullptr || before->node_name.empty()) return;
  if (after != nullptr && after->node_name == before->node_name &&
      after->cpu_milli >= before->cpu_milli && after->memory_bytes >= before->memory_bytes &&
      after->terminating == before->terminating)
    return;
  DraRoomOn(before->node_name);
  DraPreemptorsDue();
}

// The snapshot caches `node` anew: room may have grown there unless what
// the placement reads of it is as it was.
void Engine::DraNodeCached(const Node& node) {
  if (options_.dra_device_classes.empty()) return;
  const Node* cached = snapshot_.FindNode(node.name);
  if (cached != nullptr && SameForPlacement(*cached, node)) return;
  DraRoomOn(node.name);
}

}  // namespace devshare::engine
