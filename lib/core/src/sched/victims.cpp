// kube-scheduler's victim selection and node ranking over a judge of fit
// (sched/victims.hpp).
#include "sched/victims.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

namespace devshare::internal {

namespace {

// kube-scheduler's MoreImportantPod: higher priority, then earlier start (a
// pod not started counts as started last); then by namespace and name, so
// that equal pods come in one order.
bool MoreImportant(const Pod* a, const Pod* b) {
  if (a->priority != b->priority) return a->priority > b->priority;
  const bool a_started = !a->start_time.empty(), b_started = !b->start_time.empty();
  if (a_started != b_started) return a_started;
  if (a->start_time != b->start_time) return a->start_time < b->start_time;
  return std::tie(a->pod_namespace, a->name) < std::tie(b->pod_namespace, b->name);
}

// kube-scheduler's filterPodsWithPDBViolation: `pods` (most important
// first) split into those whose eviction would exceed a budget and the
// others; each budget's allowance is spent in that order.
void SplitByBudget(const std::vector<const Pod*>& pods,
                   std::span<const PodDisruptionBudget> budgets, std::vector<const Pod*>& violating,
                   std::vector<const Pod*>& others) {
  std::vector<std::int64_t> allowed;
  for (const PodDisruptionBudget& b : budgets) allowed.push_back(b.disruptions_allowed);
  for (const Pod* pod : pods) {
    bool violates = false;
    for (std::size_t i = 0; i < budgets.size() && !pod->labels.empty(); ++i) {
      const PodDisruptionBudget& b = budgets[i];
      if (b.budget_namespace != pod->pod_namespace || b.selector == LabelSelector{} ||
          !LabelSelectorMatches(b.selector, pod->labels))
        continue;
      const auto& disrupted = b.disrupted_pods;
      if (std::find(disrupted.begin(), disrupted.end(), pod->name) != disrupted.end()) continue;
      if (--allowed[i] < 0) violates = true;
    }
    (violates ? violating : others).push_back(pod);
  }
}

// The ranking of pickOneNodeForPreemption; the node name last.
struct Rank {
  std::size_t budget_violations;
  std::int64_t highest_priority;
  std::int64_t priority_sum;
  std::size_t victims;
  std::string latest_start;  // of the most important victims; later is better
  std::string node;
};

Rank RankOf(const PreemptionCandidate& c, const std::map<std::string, const Pod*>& by_uid) {
  Rank r{c.budget_violations, c.victims.front().priority, 0, c.victims.size(), "", c.node};
  for (const PreemptionVictim& v : c.victims) {
    r.priority_sum += v.priority;
    if (v.priority != r.highest_priority) continue;
    // The earliest start among the most important victims.
    const std::string& start = by_uid.at(v.uid)->start_time;
    if (r.latest_start.empty() || (!start.empty() && start < r.latest_start))
      r.latest_start = start;
  }
  return r;
}

bool Better(const Rank& a, const Rank& b) {
  if (a.budget_violations != b.budget_violations) return a.budget_violations < b.budget_violations;
  if (a.highest_priority != b.highest_priority) return a.highest_priority < b.highest_priority;
  if (a.priority_sum != b.priority_sum) return a.priority_sum < b.priority_sum;
  if (a.victims != b.victims) return a.victims < b.victims;
  if (a.latest_start != b.latest_start) return a.latest_start > b.latest_start;
  return a.node < b.node;
}

// FNV-1a: where a pod's examination of the nodes starts, the same on
// every run and platform.
std::size_t StartOf(std::string_view uid, std::size_t nodes) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : uid) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return static_cast<std::size_t>(h % nodes);
}

}  // namespace

Result<PreemptionPlan> PlanVictims(const Pod& pod, std::span<const Pod> pods,
                                   std::span<const PodDisruptionBudget> budgets,
                                   const std::map<std::string, std::string>& reasons,
                                   VictimJudge& judge, std::size_t enough) {
  PreemptionPlan plan;
  // The lower-priority pods on each candidate node, most important first.
  std::map<std::string, std::vector<const Pod*>> lower;
  std::map<std::string, const Pod*> by_uid;
  for (const Pod& p : pods) {
    if (p.node_name.empty() || p.uid == pod.uid || p.priority >= pod.priority) continue;
    if (!reasons.contains(p.node_name)) continue;
    lower[p.node_name].push_back(&p);
    by_uid[p.uid] = &p;
  }
  for (auto& [node, list] : lower) std::sort(list.begin(), list.end(), MoreImportant);

  auto next = reasons.begin();
  if (enough > 0 && !reasons.empty()) std::advance(next, StartOf(pod.uid, reasons.size()));
  std::size_t within_budgets = 0;  // candidates without a violation
  for (std::size_t k = 0; k < reasons.size(); ++k, ++next) {
    if (next == reasons.end()) next = reasons.begin();
    const auto& [node, reason] = *next;
    if (enough > 0 && within_budgets > 0 && plan.candidates.size() >= enough) {
      plan.unexamined.push_back(NodeFailure{node, reason});
      continue;
    }
    auto on_node = lower.find(node);
    if (on_node == lower.end()) {
      plan.unresolvable.push_back(NodeFailure{node, reason});
      continue;
    }
    // Those the judge holds something of are set aside.
    std::vector<const Pod*> all;
    for (const Pod* p : on_node->second) {
      if (judge.SetAside(*p)) all.push_back(p);
    }
    PreemptionCandidate candidate{node, {}, 0, {}, {}, {}};
    std::string why = reason;
    Result<bool> fits = judge.Fits(node, candidate, &why);
    if (!fits.ok()) return fits.status();
    if (!*fits) {
      plan.unresolvable.push_back(
          NodeFailure{node, fmt::format("{} (with every pod of lower priority gone)", why)});
      for (const Pod* p : all) judge.GiveBack(*p);
      continue;
    }
    std::vector<const Pod*> violating, others;
    SplitByBudget(all, budgets, violating, others);
    // Each pod given back in turn stays when the pod still fits; what the
    // pod takes is that of the last placement found (a victim's removal
    // restores it).
    std::vector<std::pair<const Pod*, bool>> victims;  // and whether it violates a budget
    for (const auto* group : {&violating, &others}) {
      for (const Pod* p : *group) {
        judge.GiveBack(*p);
        Result<bool> still = judge.Fits(node, candidate, nullptr);
        if (!still.ok()) return still.status();
        if (*still) continue;  // reprieved
        judge.SetAside(*p);
        victims.emplace_back(p, group == &violating);
        if (group == &violating) ++candidate.budget_violations;
      }
    }
    std::sort(victims.begin(), victims.end(),
              [](const auto& a, const auto& b) { return MoreImportant(a.first, b.first); });
    for (const auto& [p, violates] : victims) {
      candidate.victims.push_back(
          PreemptionVictim{p->pod_namespace, p->name, p->uid, p->priority, violates});
      judge.GiveBack(*p);
    }
    if (candidate.budget_violations == 0) ++within_budgets;
    plan.candidates.push_back(std::move(candidate));
  }
  auto by_node = [](const NodeFailure& a, const NodeFailure& b) { return a.node < b.node; };
  std::sort(plan.unresolvable.begin(), plan.unresolvable.end(), by_node);
  std::sort(plan.unexamined.begin(), plan.unexamined.end(), by_node);
  std::vector<std::pair<Rank, PreemptionCandidate>> ranked;
  ranked.reserve(plan.candidates.size());
  for (PreemptionCandidate& c : plan.candidates) {
    Rank rank = RankOf(c, by_uid);
    ranked.emplace_back(std::move(rank), std::move(c));
  }
  std::sort(ranked.begin(), ranked.end(),
            [](const auto& a, const auto& b) { return Better(a.first, b.first); });
  for (std::size_t i = 0; i < ranked.size(); ++i) plan.candidates[i] = std::move(ranked[i].second);
  return plan;
}

}  // namespace devshare::internal
