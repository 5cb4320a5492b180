#include "sched/filter_plan.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "base/text.hpp"
#include "sched/fragmentation.hpp"

namespace devshare::internal {

namespace {

GpuPolicy ParseGpuPolicy(std::string_view text, bool numa_bind) {
  GpuPolicy p;
  internal::ForEachSplit(text, ',', [&](std::string_view token, std::size_t) {
    const std::optional<GpuPolicyWord> word = kGpuPolicyNames.Find(internal::TrimSpace(token));
    if (!word) return true;
    std::optional<SortKey> key;
    switch (*word) {
      case GpuPolicyWord::kMutex:
        p.mutex = true;
        break;
      case GpuPolicyWord::kTopologyAware:
        p.topology = true;
        break;
      case GpuPolicyWord::kFgd:
        p.fgd = true;
        break;
      case GpuPolicyWord::kBinpack:
        key = SortKey::kBinpack;
        break;
      case GpuPolicyWord::kSpread:
        key = SortKey::kSpread;
        break;
      case GpuPolicyWord::kNuma:
        key = SortKey::kNuma;
        break;
      case GpuPolicyWord::kVolcanoBinpack:
      case GpuPolicyWord::kVolcanoSpread:
        break;
    }
    if (key && std::find(p.keys.begin(), p.keys.end(), *key) == p.keys.end())
      p.keys.push_back(*key);
    return true;
  });
  p.chain = text.find(',') != std::string_view::npos || text == "numa";
  if (p.chain) {
    if (p.keys.empty()) p.keys.push_back(SortKey::kSpread);
    if (numa_bind && p.keys.front() != SortKey::kNuma) {
      p.keys.erase(std::remove(p.keys.begin(), p.keys.end(), SortKey::kNuma), p.keys.end());
      p.keys.insert(p.keys.begin(), SortKey::kNuma);
    }
  } else {
    const std::optional<GpuPolicyWord> word = kGpuPolicyNames.Find(internal::TrimSpace(text));
    p.single = word == GpuPolicyWord::kMutex     ? SingleOrder::kMutex
               : word == GpuPolicyWord::kBinpack ? SingleOrder::kBinpack
                                                 : SingleOrder::kOther;
    p.volcano = word == GpuPolicyWord::kVolcanoBinpack  ? VolcanoOrder::kBinpack
                : word == GpuPolicyWord::kVolcanoSpread ? VolcanoOrder::kSpread
                                                        : VolcanoOrder::kNone;
  }
  return p;
}

}  // namespace

Status ValidateOptions(const FilterOptions& options) {
  if (Result<NodePolicy> node = kNodePolicyNames.Parse(options.node_policy, "node policy");
      !node.ok()) {
    return node.status();
  }
  Status status;
  internal::ForEachSplit(options.gpu_policy, ',', [&](std::string_view token, std::size_t) {
    token = internal::TrimSpace(token);
    const Result<GpuPolicyWord> word = kGpuPolicyNames.Parse(token, "GPU policy");
    if (!word.ok()) {
      status = word.status();
      return false;
    }
    const bool alone =
        *word == GpuPolicyWord::kVolcanoBinpack || *word == GpuPolicyWord::kVolcanoSpread;
    if (alone && internal::TrimSpace(options.gpu_policy) != token) {
      status = Status::InvalidArgument(
          fmt::format("GPU policy {} cannot be part of a chain", internal::Quote(token)));
      return false;
    }
    return true;
  });
  if (!status.ok()) return status;
  return ValidateWorkload(options.workload);
}

// ---------------------------------------------------------------------------
// Plan

Result<PodPlan> MakePlan(const SnapshotState& s, const Pod& pod, const FilterOptions& options) {
  PodPlan plan;
  plan.pod = &pod;
  plan.config = &s.config;
  plan.requests = PodRequests(pod, s.config);
  plan.init_containers = pod.init_containers.size();
  for (std::size_t c = 0; c < plan.init_containers; ++c) {
    plan.init_requests = plan.init_requests || !plan.requests[c].empty();
  }
  for (std::uint32_t v = 0; v < s.config.vendors.size(); ++v) {
    if (s.config.vendors[v].common_word == "NVIDIA") plan.nvidia = v;
  }
  std::vector<bool> requested(s.config.vendors.size(), false);
  plan.request_vendor.resize(plan.requests.size());
  for (std::size_t c = 0; c < plan.requests.size(); ++c) {
    for (const ContainerRequest& r : plan.requests[c]) {
      std::uint32_t v = 0;
      while (s.config.vendors[v].common_word != r.vendor) ++v;
      plan.request_vendor[c].push_back(v);
      requested[v] = true;
    }
  }
  for (std::uint32_t v = 0; v < requested.size(); ++v) {
    if (requested[v]) plan.vendors.push_back(v);
  }
  const StringMap& annotations = pod.annotations;
  if (const std::string* w = annotations.Find(keys::kDeviceScoringWeights)) {
    Result<ScoringWeights> weights = DecodeScoringWeights(*w);
    if (!weights.ok()) return weights.status();
    plan.weights = *weights;
  }
  std::string node_policy = options.node_policy;
  if (const std::string* p = annotations.Find(keys::kNodeSchedulerPolicy)) node_policy = *p;
  const std::optional<NodePolicy> node = kNodePolicyNames.Find(node_policy);
  plan.node_spread = node == NodePolicy::kSpread;
  plan.node_fgd = node == NodePolicy::kFgd;
  if (const std::string* b = annotations.Find(keys::kNumaBind)) {
    plan.numa_bind = internal::ParseGoBool(*b).value_or(false);
  }
  std::string gpu_policy = options.gpu_policy;
  if (const std::string* p = annotations.Find(keys::kGpuSchedulerPolicy)) gpu_policy = *p;
  plan.gpu = ParseGpuPolicy(gpu_policy, plan.numa_bind);
  plan.node_volcano = node == NodePolicy::kVolcano;
  plan.volcano_binpack_score =
      plan.node_volcano && (plan.gpu.volcano == VolcanoOrder::kBinpack ||
                            (!plan.gpu.chain && plan.gpu.single == SingleOrder::kBinpack));
  Selectors& sel = plan.selectors;
  if (const std::string* v = annotations.Find(s.config.use_uuid_annotation))
    sel.use_uuid = DecodeNameList(*v);
  if (const std::string* v = annotations.Find(s.config.nouse_uuid_annotation))
    sel.nouse_uuid = DecodeNameList(*v);
  if (const std::string* v = annotations.Find(keys::kUseGpuType)) {
    for (std::string& t : DecodeNameList(*v)) sel.use_type.push_back(UpperAscii(t));
  }
  if (const std::string* v = annotations.Find(keys::kNoUseGpuType)) {
    for (std::string& t : DecodeNameList(*v)) sel.nouse_type.push_back(UpperAscii(t));
  }
  if (const std::string* v = annotations.Find(keys::kVgpuMode)) {
    sel.has_mode = true;
    sel.mode = *v;
  }
  plan.selectors_any = !sel.use_uuid.empty() || !sel.nouse_uuid.empty() || !sel.use_type.empty() ||
                       !sel.nouse_type.empty() || sel.has_mode;
  if (auto it = s.pods.find(pod.uid); it != s.pods.end() && !pod.uid.empty()) {
    plan.previous = &it->second;
  }
  if (plan.node_fgd || plan.gpu.fgd) {
    plan.fgd = &ModelFor(s, options.workload, plan.own_fgd);
    plan.cpu_milli = std::max<std::int64_t>(pod.cpu_milli, 0);
    plan.memory_bytes = std::max<std::int64_t>(pod.memory_bytes, 0);
    if (auto it = s.requests.find(pod.uid); it != s.requests.end() && !pod.uid.empty()) {
      plan.previous_requests = &it->second;
    }
  }
  plan.reasons = options.reasons;
  plan.hami_exact = options.hami_exact;
  std::size_t request_count = 0;
  for (std::size_t c = 0; c < plan.requests.size(); ++c) {
    for (std::size_t r = 0; r < plan.requests[c].size(); ++r) {
      ++request_count;
      plan.simple_container = c;
      plan.simple_index = r;
    }
  }

  const std::size_t vendors = s.config.vendors.size();
  plan.mem_limit.assign(vendors, -1);
  plan.core_limit.assign(vendors, -1);
  plan.mem_used.assign(vendors, 0);
  plan.core_used.assign(vendors, 0);
  for (std::uint32_t v = 0; v < vendors; ++v) {
    const VendorSpec& spec = s.config.vendors[v];
    auto load = [&](const std::string& resource, std::int64_t& limit, std::int64_t& used) {
      if (resource.empty()) return;
      const internal::QuotaEntry* q = s.FindQuota(pod.pod_namespace, resource);
      if (q == nullptr) return;
      limit = q->Limit();
      used = q->used;
      plan.any_quota = plan.any_quota || limit >= 0;
    };
    load(spec.memory_resource, plan.mem_limit[v], plan.mem_used[v]);
    load(spec.core_resource, plan.core_limit[v], plan.core_used[v]);
    // The pod's own reservation is released before the quota check.
    if (plan.previous != nullptr) {
      for (const internal::PodUsageItem& item : plan.previous->usage) {
        if (item.vendor != v) continue;
        plan.mem_used[v] = std::max<std::int64_t>(0, plan.mem_used[v] - item.usage.usedmem);
        plan.core_used[v] = std::max<std::int64_t>(0, plan.core_used[v] - item.usage.usedcores);
      }
    }
  }
  plan.simple = request_count == 1 && !plan.numa_bind && !plan.gpu.topology && !plan.any_quota;
  plan.ties_possible = request_count > 1 && !plan.gpu.chain && !plan.gpu.fgd &&
                       plan.gpu.volcano == VolcanoOrder::kNone;
  return plan;
}

}  // namespace devshare::internal

namespace devshare {

bool UsesFgd(const FilterOptions& options) {
  return kNodePolicyNames.Find(options.node_policy) == NodePolicy::kFgd ||
         internal::ParseGpuPolicy(options.gpu_policy, false).fgd;
}

}  // namespace devshare
