// Node registration: node and lease events, the handshake protocols'
// passes, and which nodes the snapshot caches (engine.hpp, "Registration").
#include "devshare/annotations.hpp"
#include "devshare/engine/engine.hpp"
#include "devshare/request.hpp"
#include "engine_impl.hpp"

namespace devshare::engine {

namespace {

std::int64_t Allocatable(const Node& node, const std::string& resource) {
  const std::string* q = node.allocatable.Find(resource);
  return q != nullptr ? QuantityAsInt64(*q).value_or(0) : 0;
}

}  // namespace

void Engine::NodeObserved(const Node& node, std::int64_t now_ms, std::vector<Command>& out) {
  const std::size_t vendors = options_.config.vendors.size();
  auto [it, added] = impl_->nodes.try_emplace(node.name);
  NodeMemory& memory = it->second;
  memory.object = node;
  if (Annotation(node, keys::kNodeLock)) {
    impl_->locked.insert(node.name);
  } else {
    impl_->locked.erase(node.name);
  }
  if (added) {
    memory.hami.resize(vendors);
    memory.registered.resize(vendors);
  }
  if (options_.lock_retry == LockRetry::kRelease) WakeLockWaiters(node.name, now_ms, out);
  if (!Leading()) return;
  // Event-driven protocols look at the node now; under HAMi's a new node is
  // registered at once and a usable node's new object (devices, cordons,
  // pair scores) is applied, the handshake waiting for the periodic pass.
  if (!impl_->last_pass_ms) {
    RegistrationPass(now_ms, out);
  } else if (added || options_.registration != RegistrationProtocol::kHami) {
    RegisterNode(it->first, memory, now_ms, out);
  } else if (memory.usable) {
    CacheNode(node);
  } else {
    CacheDraOnly(memory);
  }
}

void Engine::NodeDeleted(const std::string& name) {
  impl_->nodes.erase(name);
  impl_->locked.erase(name);
  impl_->node_errors.erase(name);
  snapshot_.RemoveNode(name);
}

const std::map<std::string, std::string>& Engine::node_errors() const { return impl_->node_errors; }

void Engine::CacheNode(const Node& node) {
  DraNodeCached(node);
  const Status status = snapshot_.AddNode(node);
  if (status.ok()) {
    impl_->node_errors.erase(node.name);
  } else {
    impl_->node_errors[node.name] = std::string(status.message());
  }
}

void Engine::RegisterNode(const std::string& name, NodeMemory& memory, std::int64_t now_ms,
                          std::vector<Command>& out) {
  const std::int64_t now = Seconds(now_ms);
  bool usable = false;
  bool refresh = false;
  std::vector<AnnotationWrite> writes;
  for (std::size_t v = 0; v < options_.config.vendors.size(); ++v) {
    const VendorSpec& vendor = options_.config.vendors[v];
    if (vendor.registration == devshare::Registration::kCapacity) {
      // Devices from capacity: live while the kubelet reports them.
      usable = usable || Allocatable(memory.object, vendor.count_resource) > 0;
      continue;
    }
    NodeObservation obs{Annotation(memory.object, vendor.handshake_annotation),
                        Annotation(memory.object, vendor.register_annotation),
                        Allocatable(memory.object, vendor.count_resource)};
    RegistrationStep step;
    switch (options_.registration) {
      case RegistrationProtocol::kHami:
        step = HamiSchedulerPass(obs, memory.hami[v], vendor.handshake_annotation, now,
                                 options_.zone_offset_seconds, options_.filter.hami_exact);
        break;
      case RegistrationProtocol::kVolcano:
        obs.handshake = Annotation(memory.object, keys::kVolcanoHandshake);
        step = VolcanoSchedulerPass(obs, keys::kVolcanoHandshake, now, options_.zone_offset_seconds,
                                    {}, vendor.register_format);
        break;
      case RegistrationProtocol::kChangeOnly:
        step = ChangeOnlySchedulerPass(obs, memory.registered[v]);
        if (step.refresh || !step.usable)
          memory.registered[v] = step.usable ? obs.registered : std::nullopt;
        break;
    }
    usable = usable || (step.usable && obs.registered.has_value());
    refresh = refresh || step.refresh;
    if (step.write) writes.push_back(*step.write);
  }
  if (!writes.empty()) {
    const std::uint64_t id = NextId();
    impl_->pending.emplace(id, Release{});
    ++counters_.node_patches;
    ++counters_.registration_writes;
    out.push_back(PatchNode{id, name, std::move(writes), {}, {}, true});
  }
  if (usable && (refresh || !memory.usable)) {
    CacheNode(memory.object);
  } else if (!usable) {
    if (memory.usable) ++counters_.nodes_dropped;
    CacheDraOnly(memory);
  }
  memory.usable = usable;
}

void Engine::CacheDraOnly(const NodeMemory& memory) {
  if (options_.dra_device_classes.empty()) {
    if (memory.usable) snapshot_.RemoveNode(memory.object.name);
    return;
  }
  // DRA allocates on every node: one whose devices are not registered (or
  // has none) is cached without them.
  Node node = memory.object;
  for (const VendorSpec& vendor : options_.config.vendors) {
    node.annotations.Erase(vendor.register_annotation);
    node.allocatable.Erase(vendor.count_resource);
  }
  CacheNode(node);
}

void Engine::RegistrationPass(std::int64_t now_ms, std::vector<Command>& out) {
  ++counters_.registration_passes;
  impl_->last_pass_ms = now_ms;
  for (auto& [name, memory] : impl_->nodes) RegisterNode(name, memory, now_ms, out);
  if (options_.leadership == Leadership::kFollowLease) {
    RegistrationPassDone(impl_->follower, now_ms);
  } else {
    impl_->registered = true;
  }
}

void Engine::LeaseObserved(const std::optional<LeaseRecord>& lease, std::int64_t now_ms,
                           std::vector<Command>& out) {
  if (ObserveLease(impl_->follower, lease, now_ms) == LeaderEvent::kStartedLeading) {
    RegistrationPass(now_ms, out);  // leadership gained: register at once
    impl_->dra.all_due = true;      // and judge every gated pod
  }
}

}  // namespace devshare::engine
