// The engine's life and its routing: construction, readiness, time passing,
// pods and quotas observed, and ApiResult, which hands each command's result to the
// flow that issued it (engine.hpp).
#include "devshare/engine/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "devshare/annotations.hpp"
#include "engine_impl.hpp"

namespace devshare::engine {

Engine::Engine(EngineOptions options)
    : options_(std::move(options)), snapshot_(options_.config), impl_(std::make_unique<Impl>()) {
  impl_->follower.hostname = options_.hostname;
  impl_->rng.seed(options_.seed);
  // Under the fgd policies the snapshot keeps each node's fragmentation
  // measure for the workload Filter is given (pods that ask for fgd by
  // annotation under other policies are measured node by node). An invalid
  // workload is refused here and by every Filter call.
  if (UsesFgd(options_.filter)) {
    static_cast<void>(snapshot_.SetFragmentationWorkload(options_.filter.workload));
  }
  MakeDraPlacer();
}

Engine::~Engine() = default;

bool Engine::Leading() const {
  return options_.leadership == Leadership::kAlways || impl_->follower.leading;
}

bool Engine::Ready(std::int64_t now_ms) const {
  if (options_.leadership == Leadership::kFollowLease)
    return FilterAllowed(impl_->follower, now_ms);
  return impl_->registered;
}

void Engine::Tick(std::int64_t now_ms, std::vector<Command>& out) {
  if (options_.leadership == Leadership::kFollowLease) FollowerTick(impl_->follower, now_ms);
  if (Leading()) {
    const bool periodic = options_.registration == RegistrationProtocol::kHami;
    if (!impl_->last_pass_ms ||
        (periodic && now_ms - *impl_->last_pass_ms >= options_.register_period_ms)) {
      RegistrationPass(now_ms, out);
    }
  }
  // Failed lock releases whose backoff is over, in order.
  std::vector<Impl::ReleaseRetry> retries;
  std::swap(retries, impl_->release_retries);
  for (Impl::ReleaseRetry& r : retries) {
    if (r.at_ms > now_ms) {
      impl_->release_retries.push_back(std::move(r));
      continue;
    }
    auto node = impl_->nodes.find(r.release.node);
    const std::string* lock = node == impl_->nodes.end()
                                  ? nullptr
                                  : node->second.object.annotations.Find(keys::kNodeLock);
    if (Leading() && lock != nullptr && *lock == r.release.lock)
      ReleaseLock(r.release.node, r.release.lock, r.release.attempt, out);
  }
  PreemptionTick(now_ms);
  RequestRetries(now_ms, out);
  // Lock retries whose wait is over, in the order they were parked.
  auto due = [&](const Impl::LockWait& wait) { return wait.at_ms <= now_ms; };
  for (Impl::LockWait& w : impl_->Unpark(due)) TryLock(std::move(w.flow), now_ms, out);
  // Held Filters whose hold is over are refused; kube-scheduler retries them.
  while (!impl_->held.empty() && impl_->held.front().until_ms <= now_ms) {
    ++counters_.filters_hold_expired;
    out.push_back(FilterReply{
        impl_->held.front().request,
        {},
        {},
        fmt::format("busy: {} binds in flight need {} ms of the API client's writes at {} "
                    "requests/s; try again",
                    impl_->binds_in_flight, options_.bind_budget_ms, options_.api_qps),
        {}});
    impl_->held.pop_front();
  }
  PlaceHeldFilters(now_ms, out);
  DraPass(now_ms, out);
}

std::optional<std::int64_t> Engine::NextWakeMs() const {
  std::optional<std::int64_t> wake;
  auto earliest = [&](std::int64_t at) { wake = wake ? std::min(*wake, at) : at; };
  if (Leading()) {
    if (!impl_->last_pass_ms) {
      earliest(0);
    } else if (options_.registration == RegistrationProtocol::kHami) {
      earliest(*impl_->last_pass_ms + options_.register_period_ms);
    }
  }
  const LeaseFollower& f = impl_->follower;
  if (options_.leadership == Leadership::kFollowLease && f.leading && f.observed &&
      f.observed->duration_seconds) {
    earliest(f.observed_at_ms + std::int64_t{*f.observed->duration_seconds} * 1000);
  }
  for (const Impl::LockWait& w : impl_->lock_waits) earliest(w.at_ms);
  for (const Impl::ReleaseRetry& r : impl_->release_retries) earliest(r.at_ms);
  if (!impl_->held.empty()) earliest(BindsBacklogged() ? impl_->held.front().until_ms : 0);
  if (std::optional<std::int64_t> dra = DraNextPassMs()) earliest(*dra);
  if (std::optional<std::int64_t> preemption = PreemptionWakeMs()) earliest(*preemption);
  if (impl_->devices_freed) earliest(0);
  return wake;
}

// ---------------------------------------------------------------------------
// Pods

void Engine::PodObserved(const Pod& pod) {
  // Bound by another hand while preempting: what was kept is released.
  if (!pod.node_name.empty()) EndPreemption(pod.uid, false);
  std::optional<Pod> before;
  if (auto known = impl_->pods.find(pod.uid); known != impl_->pods.end()) {
    impl_->CountBound(known->second, false);
    if (!options_.dra_device_classes.empty()) before = std::move(known->second);
    known->second = pod;
  } else {
    impl_->pods.emplace(pod.uid, pod);
  }
  impl_->CountBound(pod, true);
  impl_->uid_of[Impl::NameKey(pod.pod_namespace, pod.name)] = pod.uid;
  if (!pod.node_name.empty()) impl_->Unreserve(pod.uid);  // bound: no longer about to lock
  // A pod placed by the DRA flow is counted where it goes until it is seen
  // bound there (DraAssume).
  Pod assumed;
  const Pod* counted = &pod;
  if (auto a = impl_->dra.assumed_on.find(pod.uid); a != impl_->dra.assumed_on.end()) {
    if (pod.node_name.empty()) {
      assumed = pod;
      assumed.node_name = a->second;
      counted = &assumed;
    } else {
      impl_->dra.assumed_on.erase(a);
    }
  }
  // A pod whose annotations do not decode holds nothing, as in HAMi; why is kept.
  const Status status = snapshot_.AddPod(*counted);
  if (status.ok()) {
    impl_->pod_errors.erase(pod.uid);
  } else {
    impl_->pod_errors[pod.uid] = std::string(status.message());
  }
  DraPodChanged(before ? &*before : nullptr, &pod, pod.uid);
}

const std::map<std::string, std::string>& Engine::pod_errors() const { return impl_->pod_errors; }

void Engine::PodDeleted(const std::string& uid) {
  VictimGone(uid);
  EndPreemption(uid, false);
  impl_->refused.erase(uid);
  impl_->pod_errors.erase(uid);
  std::optional<Pod> before;
  if (auto pod = impl_->pods.find(uid); pod != impl_->pods.end()) {
    auto name = impl_->uid_of.find(Impl::NameKey(pod->second.pod_namespace, pod->second.name));
    if (name != impl_->uid_of.end() && name->second == uid) impl_->uid_of.erase(name);
    impl_->CountBound(pod->second, false);
    before = std::move(pod->second);
    impl_->pods.erase(pod);
  }
  impl_->Unreserve(uid);
  // Devices freed: the pods just refused are asked to be tried again (Tick).
  if (snapshot_.RemovePod(uid) && !impl_->refused.empty()) impl_->devices_freed = true;
  if (auto a = impl_->dra.assumed_on.find(uid); a != impl_->dra.assumed_on.end()) {
    const std::string node = std::move(a->second);
    impl_->dra.assumed_on.erase(a);
    DraRoomOn(node);
  }
  DraPodChanged(before ? &*before : nullptr, nullptr, uid);
}

// ---------------------------------------------------------------------------
// Quotas

void Engine::ResourceQuotaObserved(const ResourceQuota& quota) {
  const std::string key = Impl::NameKey(quota.quota_namespace, quota.name);
  impl_->quota_versions[key] = quota.resource_version;
  if (Status s = snapshot_.SetQuota(quota.quota_namespace, quota.name, quota.hard); s.ok()) {
    impl_->quota_errors.erase(key);
  } else {
    impl_->quota_errors[key] = std::string(s.message());
  }
}

void Engine::ResourceQuotaDeleted(const std::string& quota_namespace, const std::string& name) {
  const std::string key = Impl::NameKey(quota_namespace, name);
  impl_->quota_versions.erase(key);
  impl_->quota_errors.erase(key);
  snapshot_.RemoveQuota(quota_namespace, name);
}

const std::map<std::string, std::string>& Engine::quota_errors() const {
  return impl_->quota_errors;
}

std::size_t Engine::quota_count() const { return impl_->quota_versions.size(); }

// ---------------------------------------------------------------------------
// Results

void Engine::ApiResult(std::uint64_t id, bool succeeded, std::int64_t now_ms,
                       std::vector<Command>& out) {
  if (DraResult(id, succeeded, now_ms, out)) return;
  if (EvictionResult(id, succeeded, now_ms)) return;
  auto it = impl_->pending.find(id);
  if (it == impl_->pending.end()) return;  // unknown, or reported already
  std::variant<FilterFlow, BindFlow, Release> flow = std::move(it->second);
  impl_->pending.erase(it);
  if (auto* f = std::get_if<FilterFlow>(&flow)) return PlaceResult(std::move(*f), succeeded, out);
  if (auto* r = std::get_if<Release>(&flow)) return ReleaseResult(*r, succeeded, now_ms);
  BindResult(std::move(std::get<BindFlow>(flow)), succeeded, now_ms, out);
}

}  // namespace devshare::engine
