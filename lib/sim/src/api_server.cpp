#include "api_server.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "disruption.hpp"
#include "scenario_objects.hpp"

namespace devshare::sim::internal {

std::string_view VerbName(Verb verb) {
  static constexpr std::string_view kNames[kVerbCount] = {
      "patch-node",         "patch-pod", "binding",  "plugin-patch-node", "plugin-patch-pod",
      "kubelet-patch-node", "lease",     "eviction", "patch-pod-status"};
  return kNames[static_cast<std::size_t>(verb)];
}

ApiServer::ApiServer(const ApiModel& model, std::size_t clients, std::size_t pods,
                     std::string register_key, EventQueue& events, std::mt19937_64& rng)
    : model_(model),
      register_key_(std::move(register_key)),
      events_(events),
      rng_(rng),
      pods_(pods),
      buckets_(clients, TokenBucket{static_cast<double>(model.burst), 0}) {}

// ---- the objects

void ApiServer::AddNode(Node object) {
  StoredNode node{std::move(object)};
  node.object.resource_version = std::to_string(node.resource_version);
  Record(truth_.AddNode(node.object));
  node_index_.emplace(node.object.name, nodes_.size());
  nodes_.push_back(std::move(node));
}

Status ApiServer::AddQuota(ResourceQuota quota) {
  quota.uid = fmt::format("uid-quota-{}-{}", quota.quota_namespace, quota.name);
  quota.resource_version = std::to_string(1);  // as AddNode numbers a node
  Status set = truth_.SetQuota(quota.quota_namespace, quota.name, quota.hard);
  quotas_.push_back(std::move(quota));
  return set;
}

void ApiServer::CreatePod(std::size_t index, Pod object) {
  StoredPod& pod = pods_[index];
  pod.object = std::move(object);
  pod.created = true;
  pod_by_name_.emplace(pod.object.name, index);
}

void ApiServer::BindPod(std::size_t pod, const std::string& node) {
  pods_[pod].object.node_name = node;
  pods_[pod].object.start_time = StartTime(events_.now());
  Record(truth_.AddPod(pods_[pod].object));  // devices, CPU and memory
}

void ApiServer::DeletePod(std::size_t pod) {
  pods_[pod].deleted = true;
  truth_.RemovePod(pods_[pod].object.uid);
}

void ApiServer::ReplaceNode(std::size_t index, Node object) {
  StoredNode& node = nodes_[index];
  node.object = std::move(object);
  node.object.resource_version = std::to_string(++node.resource_version);
  truth_.RemoveNode(node.object.name);
  Record(truth_.AddNode(node.object));
}

std::optional<std::size_t> ApiServer::PodIndex(const std::string& name) const {
  auto it = pod_by_name_.find(name);
  if (it == pod_by_name_.end()) return std::nullopt;
  return it->second;
}

// ---- requests

void ApiServer::Submit(Request request) {
  ++calls_[static_cast<std::size_t>(request.verb)];
  const std::uint64_t id = next_request_++;
  const std::int64_t start =
      Throttled(request) ? TokenAt(request.client, events_.now()) : events_.now();
  requests_.emplace(id, std::move(request));
  events_.At(start, EventKind::kRequestStart, id);
}

bool ApiServer::Throttled(const Request& request) {
  return request.verb == Verb::kPatchNode || request.verb == Verb::kPatchPod ||
         request.verb == Verb::kBinding || request.verb == Verb::kEviction ||
         request.verb == Verb::kNominate;
}

// When the client may send a request it has at `from`: client-go's token
// bucket, first come first served.
std::int64_t ApiServer::TokenAt(int client, std::int64_t from) {
  TokenBucket& bucket = buckets_[static_cast<std::size_t>(client)];
  const double rate = model_.qps / 1000.0;  // tokens per ms
  if (from > bucket.refilled_at) {
    bucket.tokens = std::min<double>(
        model_.burst, bucket.tokens + static_cast<double>(from - bucket.refilled_at) * rate);
    bucket.refilled_at = from;
  }
  const std::int64_t base = std::max(from, bucket.refilled_at);
  std::int64_t start = base;
  if (bucket.tokens < 1) {
    start = base + static_cast<std::int64_t>(std::ceil((1 - bucket.tokens) / rate));
    throttled_ms_ += start - from;
  }
  bucket.tokens -= 1;  // a debt is repaid by the refill before the next request
  return start;
}

void ApiServer::Receive(std::uint64_t id) {
  const Request& request = requests_.at(id);
  const std::int64_t now = events_.now();
  if (inflight_ >= model_.max_inflight) {
    ++rejected_429_;
    const std::int64_t retry = now + model_.retry_after_ms;
    events_.At(Throttled(request) ? TokenAt(request.client, retry) : retry,
               EventKind::kRequestStart, id);
    return;
  }
  ++inflight_;
  std::uniform_int_distribution<std::int64_t> jitter(0,
                                                     std::max<std::int64_t>(model_.jitter_ms, 0));
  events_.At(now + model_.latency_ms + jitter(rng_), EventKind::kRequestDone, id);
}

Completion ApiServer::Complete(std::uint64_t id) {
  --inflight_;
  auto it = requests_.find(id);
  Completion done{std::move(it->second)};
  requests_.erase(it);
  done.ok = std::visit([&](auto& body) { return Apply(done, body); }, done.request.body);
  return done;
}

bool ApiServer::Apply(Completion& done, engine::PatchNode& c) {
  auto it = node_index_.find(c.node);
  if (it == node_index_.end()) return false;
  if (!Holds(nodes_[it->second].object, c.preconditions)) {
    ++conflicts_409_;
    return false;
  }
  WriteNode(it->second, c.writes, std::nullopt);
  done.node = it->second;
  return true;
}

bool ApiServer::Apply(Completion& done, engine::PatchPod& c) {
  const std::optional<std::size_t> index = PodIndex(c.name);
  if (!index) return false;
  for (const auto& [k, v] : c.annotations.entries()) pods_[*index].object.annotations.Set(k, v);
  done.pod = *index;
  return true;
}

bool ApiServer::Apply(Completion& done, engine::PostBinding& c) {
  const std::optional<std::size_t> index = PodIndex(c.name);
  if (!index) return false;
  if (pods_[*index].deleted) return false;  // 404
  Pod& pod = pods_[*index].object;
  if (!pod.node_name.empty() || !node_index_.contains(c.node)) {
    ++conflicts_409_;  // already bound: the API server refuses
    return false;
  }
  for (const auto& [k, v] : c.annotations.entries()) pod.annotations.Set(k, v);
  pod.node_name = c.node;
  pod.start_time = StartTime(events_.now());
  Record(truth_.AddPod(pod));  // devices, CPU and memory
  done.pod = *index;
  return true;
}

bool ApiServer::Apply(Completion& done, NodeWrite& w) {
  WriteNode(w.node, w.writes, w.gpu_allocatable);
  done.node = w.node;
  return true;
}

bool ApiServer::Apply(Completion& done, PodWrite& w) {
  for (const auto& [k, v] : w.annotations.entries()) pods_[w.pod].object.annotations.Set(k, v);
  done.pod = w.pod;
  return true;
}

bool ApiServer::Apply(Completion& /*done*/, LeaseWrite& w) {
  const ElectionDecision& d = w.decision;
  const bool ok = d.action == ElectionAction::kCreate
                      ? !lease_.has_value()
                      : lease_.has_value() && lease_->resource_version == d.lease.resource_version;
  if (!ok) {
    ++conflicts_409_;
    return false;
  }
  lease_ = d.lease;
  lease_->resource_version = std::to_string(++lease_version_);
  return true;
}

// A pod gone, or another pod under the name (another UID), is a 404: a
// success for the engine (EvictPod), with nothing evicted. A pod not bound
// yet goes without a budget's say, as the Eviction API lets a pod that is
// not running go.
bool ApiServer::Apply(Completion& done, engine::EvictPod& c) {
  const std::optional<std::size_t> index = PodIndex(c.name);
  if (!index || !exists(*index) || pods_[*index].object.uid != c.uid) return true;
  Pod& pod = pods_[*index].object;
  done.pod = *index;
  if (pod.terminating) return true;
  if (!pod.node_name.empty() && EvictionRefused(pod)) {
    ++evictions_refused_;
    return false;
  }
  pod.terminating = true;
  done.evicted = true;
  return true;
}

bool ApiServer::EvictionRefused(const Pod& pod) const {
  int covering = 0;
  bool refused = false;
  for (std::size_t b = 0; b < budgets_.size(); ++b) {
    if (!Covers(budgets_[b], pod)) continue;
    ++covering;
    refused = refused || BudgetStatus(b).disruptions_allowed <= 0;
  }
  return refused || covering > 1;
}

bool ApiServer::Apply(Completion& done, engine::NominatePod& c) {
  const std::optional<std::size_t> index = PodIndex(c.name);
  if (!index || !exists(*index) || pods_[*index].object.uid != c.uid) return false;
  pods_[*index].nominated_node = c.node;
  done.pod = *index;
  return true;
}

PodDisruptionBudget ApiServer::BudgetStatus(std::size_t index) const {
  const DisruptionBudget& budget = budgets_[index];
  std::int64_t expected = 0, healthy = 0;
  for (const StoredPod& p : pods_) {
    if (!p.created || p.deleted || !Covers(budget, p.object)) continue;
    ++expected;
    if (!p.object.node_name.empty() && !p.object.terminating) ++healthy;
  }
  return BudgetObject(budget, DisruptionsAllowed(budget, expected, healthy));
}

// The adapter's read-check-write of a precondition (GET, then PATCH with
// its resourceVersion): atomic here, as the window between them is.
bool ApiServer::Holds(const Node& node, const std::vector<AnnotationWrite>& preconditions) {
  return std::all_of(preconditions.begin(), preconditions.end(), [&](const AnnotationWrite& p) {
    const std::string* value = node.annotations.Find(p.key);
    return p.value ? value != nullptr && *value == *p.value : value == nullptr;
  });
}

void ApiServer::WriteNode(std::size_t index, const std::vector<AnnotationWrite>& writes,
                          const std::optional<std::string>& gpu_allocatable) {
  StoredNode& n = nodes_[index];
  bool devices = gpu_allocatable.has_value();
  for (const AnnotationWrite& w : writes) {
    if (w.value) {
      n.object.annotations.Set(w.key, *w.value);
    } else {
      n.object.annotations.Erase(w.key);
    }
    devices = devices || w.key == register_key_;
  }
  if (gpu_allocatable) n.object.allocatable.Set("nvidia.com/gpu", *gpu_allocatable);
  n.object.resource_version = std::to_string(++n.resource_version);
  if (devices) Record(truth_.AddNode(n.object));
}

void ApiServer::AddTo(Report& report) const {
  for (std::size_t v = 0; v < kVerbCount; ++v) {
    if (calls_[v] > 0) report.api_calls[std::string(VerbName(static_cast<Verb>(v)))] += calls_[v];
  }
  report.rejected_429 += rejected_429_;
  report.conflicts_409 += conflicts_409_;
  report.preemption.evictions_refused += evictions_refused_;
  report.throttled_ms += throttled_ms_;
}

}  // namespace devshare::sim::internal
