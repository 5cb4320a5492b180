"""How far from optimal the openb policies are: an offline upper bound on the
GPUs any placement of a run's pods could allocate, a random baseline, and
each policy's share of the gap between them.

For every pod list and seed, the pods of that openb run (the FGD paper's
experiment, `devshare simulate --scenario openb`: the same arrivals, seed by
seed, from devshare.openb_scenario) are given to

- the bound: a linear program over node types x pod shapes (HiGHS, through
  highspy) whose optimum no placement of any subset of those pods exceeds
  (derivation in docs/researchers/optimality.md);
- random: each pod, in arrival order, on a node drawn uniformly from those it
  fits (CPU, memory, GPU type, whole GPUs or a GPU with room for its share),
  its share on a GPU drawn likewise; given up when it fits nowhere;
- the simulator: binpack and fgd as the pods arrive, and both again with the
  same pods largest first (`openb: {order: largest-first}`), the clairvoyant
  reference: an allocation a scheduler knowing every pod in advance achieves.

The gap closed by a policy is (policy - random) / (bound - random).

Usage: python openb_bound.py [--lists default,gpushare40,...] [--seeds 0-9]
                             [--json FILE] [--markdown]
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
import time
from dataclasses import dataclass

import highspy
import numpy as np

import devshare

LISTS = ("default", "gpushare40", "multigpu20", "gpuspec10", "cpu050")
WHOLE = 1000  # a GPU in thousandths
POLICIES = ("binpack", "fgd")


@dataclass(frozen=True)
class NodeType:
    gpus: int
    model: str
    cpu_milli: int
    memory_mib: int


@dataclass(frozen=True)
class Shape:
    gpus: int       # devices
    milli: int      # thousandths of one GPU when gpus == 1 and milli < 1000
    gpu_spec: str   # allowed models, '|'-joined; empty: any
    cpu_milli: int
    memory_mib: int

    @property
    def fractional(self) -> bool:
        return self.gpus == 1 and 0 < self.milli < WHOLE

    @property
    def asked(self) -> float:
        """GPUs asked, as the simulator counts them (GpusOf)."""
        return self.milli / WHOLE if self.fractional else float(self.gpus)


def shape_of(pod: dict) -> Shape:
    gpus = int(pod["gpus"])
    milli = int(pod["gpu_milli"]) if gpus == 1 else WHOLE
    return Shape(gpus, milli if gpus else 0, pod.get("gpu_spec", ""), int(pod["cpu_milli"]),
                 int(pod["memory_mib"]))


def type_of(node: dict) -> NodeType:
    return NodeType(int(node["gpus"]), node["model"], int(node["cpu_milli"]),
                    int(node["memory_mib"]))


def allowed(shape: Shape, model: str) -> bool:
    """devshare's nvidia.com/use-gputype: the device type contains one of the
    listed names, case aside (container_fit.cpp TypeAllowed)."""
    if not shape.gpu_spec:
        return True
    upper = model.upper()
    return any(t.upper() in upper for t in shape.gpu_spec.split("|") if t)


def fits_type(shape: Shape, t: NodeType) -> bool:
    return (0 < shape.gpus <= t.gpus and shape.cpu_milli <= _unlimited(t.cpu_milli)
            and shape.memory_mib <= _unlimited(t.memory_mib) and allowed(shape, t.model))


def _unlimited(capacity: int) -> float:
    return capacity if capacity > 0 else float("inf")


def maximal_patterns(values: list[int]) -> list[tuple[int, ...]]:
    """Every multiset of the share sizes `values` (thousandths, descending)
    that fits one GPU (sum <= 1000) and to which none of them can be added,
    as counts per value. Any set of shares one GPU holds is covered by one."""
    out = []
    smallest = min(values)

    def walk(i: int, room: int, counts: list[int]) -> None:
        if i == len(values):
            if room < smallest:
                out.append(tuple(counts))
            return
        for k in range(room // values[i], -1, -1):
            counts.append(k)
            walk(i + 1, room - k * values[i], counts)
            counts.pop()

    walk(0, WHOLE, [])
    return out


@dataclass
class Bound:
    gpus: float           # the LP's optimum: no placement allocates more GPUs
    status: str
    columns: int
    rows: int
    seconds: float


def upper_bound(nodes: list[dict], pods: list[dict]) -> Bound:
    """The most GPUs any placement of any subset of `pods` on `nodes` could
    allocate, bounded above by an LP (docs/researchers/optimality.md):

      max  sum_{t,s} asked_s x_ts
      s.t. sum_t x_ts                        <= n_s           every shape s
           sum_s cpu_s x_ts                  <= N_t cpu_t     every node type t
           sum_s mem_s x_ts                  <= N_t mem_t
           sum_{s whole} gpus_s x_ts + sum_p y_tp <= N_t gpus_t
           sum_{s: share m} x_ts - sum_p p_m y_tp <= 0        every t, share size m
           x, y >= 0

    x_ts: pods of shape s on nodes of type t (only where s fits t: model,
    GPU count, one node's CPU and memory); y_tp: GPUs of type t holding the
    shares of maximal pattern p. Pods without GPUs add nothing and only take
    CPU and memory, so they are left out (the bound may drop any pod)."""
    start = time.perf_counter()
    types = collections.Counter(type_of(n) for n in nodes)
    shapes = collections.Counter(shape_of(p) for p in pods if int(p["gpus"]) > 0)
    type_list = sorted(types, key=lambda t: (t.model, t.gpus, t.cpu_milli, t.memory_mib))
    shape_list = sorted(shapes, key=lambda s: (s.gpus, s.milli, s.cpu_milli, s.memory_mib,
                                               s.gpu_spec))
    rows_upper: list[float] = []
    row_of: dict[tuple, int] = {}

    def row(key: tuple, upper: float) -> int:
        if key not in row_of:
            row_of[key] = len(rows_upper)
            rows_upper.append(upper)
        return row_of[key]

    cost: list[float] = []
    starts: list[int] = [0]
    index: list[int] = []
    value: list[float] = []

    def column(objective: float, entries: list[tuple[int, float]]) -> None:
        cost.append(objective)
        for r, v in entries:
            index.append(r)
            value.append(v)
        starts.append(len(index))

    for s in shape_list:
        row(("shape", s), float(shapes[s]))
    for t in type_list:
        n = types[t]
        cpu_row = row(("cpu", t), n * _unlimited(t.cpu_milli))
        mem_row = row(("mem", t), n * _unlimited(t.memory_mib))
        gpu_row = row(("gpu", t), float(n * t.gpus))
        sizes = set()
        for s in shape_list:
            if not fits_type(s, t):
                continue
            entries = [(row_of[("shape", s)], 1.0)]
            if s.cpu_milli and t.cpu_milli > 0:
                entries.append((cpu_row, float(s.cpu_milli)))
            if s.memory_mib and t.memory_mib > 0:
                entries.append((mem_row, float(s.memory_mib)))
            if s.fractional:
                entries.append((row(("share", t, s.milli), 0.0), 1.0))
                sizes.add(s.milli)
            else:
                entries.append((gpu_row, float(s.gpus)))
            column(s.asked, entries)
        if sizes:
            values = sorted(sizes, reverse=True)
            for pattern in maximal_patterns(values):
                entries = [(gpu_row, 1.0)]
                entries += [(row_of[("share", t, m)], -float(k)) for m, k in zip(values, pattern) if k]
                column(0.0, entries)
    # Rows without a finite limit (a node type of unlimited CPU) are dropped by
    # giving them HiGHS's infinity.
    lp = highspy.HighsLp()
    lp.num_col_ = len(cost)
    lp.num_row_ = len(rows_upper)
    lp.col_cost_ = np.array(cost)
    lp.col_lower_ = np.zeros(len(cost))
    lp.col_upper_ = np.full(len(cost), highspy.kHighsInf)
    lp.row_lower_ = np.full(len(rows_upper), -highspy.kHighsInf)
    lp.row_upper_ = np.array([u if u != float("inf") else highspy.kHighsInf for u in rows_upper])
    lp.sense_ = highspy.ObjSense.kMaximize
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.array(starts, dtype=np.int32)
    lp.a_matrix_.index_ = np.array(index, dtype=np.int32)
    lp.a_matrix_.value_ = np.array(value)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(lp)
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    if status != "Optimal":
        raise RuntimeError(f"the bound's LP was not solved to optimality: {status}")
    return Bound(h.getInfo().objective_function_value, status, lp.num_col_, lp.num_row_,
                 time.perf_counter() - start)


def random_fill(nodes: list[dict], pods: list[dict], seed: int) -> float:
    """GPUs allocated when each pod, in arrival order, goes to a node drawn
    uniformly among those it fits and, there, to GPUs drawn uniformly among
    those it fits (whole GPUs: free ones; a share: a GPU with room for it);
    a pod that fits nowhere is given up. The checks are the simulator's:
    CPU and memory as kube-scheduler's NodeResourcesFit, the GPU type as
    nvidia.com/use-gputype, a GPU's cores (thousandths here) summing to at most
    all of it."""
    rng = random.Random(seed)
    gpus = np.array([int(n["gpus"]) for n in nodes])
    width = max(1, int(gpus.max()))
    free = np.where(np.arange(width)[None, :] < gpus[:, None], WHOLE, -1)
    cpu = np.array([_unlimited(int(n["cpu_milli"])) for n in nodes], dtype=float)
    mem = np.array([_unlimited(int(n["memory_mib"])) for n in nodes], dtype=float)
    models = [n["model"] for n in nodes]
    spec_mask: dict[str, np.ndarray] = {}
    allocated = 0.0
    for pod in pods:
        s = shape_of(pod)
        ok = (cpu >= s.cpu_milli) & (mem >= s.memory_mib)
        if s.gpus:
            if s.gpu_spec not in spec_mask:
                spec_mask[s.gpu_spec] = np.array([allowed(s, m) for m in models])
            ok &= spec_mask[s.gpu_spec]
            if s.fractional:
                ok &= (free >= s.milli).any(axis=1)
            else:
                ok &= (free == WHOLE).sum(axis=1) >= s.gpus
        candidates = np.flatnonzero(ok)
        if candidates.size == 0:
            continue
        node = int(candidates[rng.randrange(candidates.size)])
        cpu[node] -= s.cpu_milli
        mem[node] -= s.memory_mib
        if s.gpus:
            room = np.flatnonzero(free[node] >= s.milli) if s.fractional else np.flatnonzero(
                free[node] == WHOLE)
            for g in rng.sample(list(room), 1 if s.fractional else s.gpus):
                free[node, g] -= s.milli
            allocated += s.asked
    return allocated


def simulated(list_name: str, seeds: list[int], openb_dir: str | None) -> dict:
    """GPUs allocated per (variant, seed): binpack and fgd in arrival order,
    and largest first (`-largest-first`), from the simulator."""
    openb = {"pods": f"openb_pod_list_{list_name}.csv", "mode": "inflate", "demand": 1.3}
    variants = []
    for policy in POLICIES:
        variants.append({"name": policy, "engine": {"policy": policy}})
        variants.append({"name": f"{policy}-largest-first", "engine": {"policy": policy},
                         "openb": {"order": "largest-first"}})
    scenario = {"name": f"openb-{list_name}", "openb": openb, "engine": {"policy": "fgd"},
                "variants": variants}
    results = devshare.simulate(scenario, seed=seeds, openb=openb_dir)
    return {(v.name, seed): r.gpu_allocated
            for v in results.variants for seed, r in zip(v.seeds, v.reports)}


def run_list(list_name: str, seeds: list[int], openb_dir: str | None, log=None) -> list[dict]:
    sims = simulated(list_name, seeds, openb_dir)
    rows = []
    for seed in seeds:
        run = devshare.openb_scenario(f"openb_pod_list_{list_name}.csv", seed=seed, openb=openb_dir)
        capacity = sum(int(n["gpus"]) for n in run["nodes"])
        bound = upper_bound(run["nodes"], run["pods"])
        row = {"list": list_name, "seed": seed, "pods": len(run["pods"]), "capacity": capacity,
               "random": random_fill(run["nodes"], run["pods"], seed), "bound": bound.gpus,
               "bound_seconds": round(bound.seconds, 2)}
        for policy in POLICIES:
            row[policy] = sims[(policy, seed)]
            row[f"{policy}-largest-first"] = sims[(f"{policy}-largest-first", seed)]
        row["clairvoyant"] = max(row[f"{p}-largest-first"] for p in POLICIES)
        rows.append(row)
        if log:
            log(format_row(row))
    return rows


def percent(row: dict, key: str) -> float:
    return 100.0 * row[key] / row["capacity"]


def gap_closed(row: dict, key: str) -> float:
    """(policy - random) / (bound - random)."""
    return (row[key] - row["random"]) / (row["bound"] - row["random"])


def format_row(row: dict) -> str:
    return (f"{row['list']:<11} seed {row['seed']:<2} random {percent(row, 'random'):6.2f} "
            f"binpack {percent(row, 'binpack'):6.2f} fgd {percent(row, 'fgd'):6.2f} "
            f"clairvoyant {percent(row, 'clairvoyant'):6.2f} bound {percent(row, 'bound'):6.2f} "
            f"gap closed: binpack {gap_closed(row, 'binpack'):.3f} fgd {gap_closed(row, 'fgd'):.3f}")


def markdown(rows: list[dict]) -> str:
    """The means per list as a Markdown table (GPU allocation, %)."""
    keys = ("random", "binpack", "fgd", "clairvoyant", "bound")
    lines = ["| List | Seeds | Random | binpack | fgd | Clairvoyant | Bound | Gap closed: binpack | fgd "
             "| clairvoyant |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name in dict.fromkeys(r["list"] for r in rows):
        rs = [r for r in rows if r["list"] == name]
        mean = {k: sum(percent(r, k) for r in rs) / len(rs) for k in keys}
        closed = {k: sum(gap_closed(r, k) for r in rs) / len(rs) for k in ("binpack", "fgd", "clairvoyant")}
        lines.append(f"| {name} | {len(rs)} | " + " | ".join(f"{mean[k]:.2f} %" for k in keys) + " | "
                     + " | ".join(f"{closed[k]:.3f}" for k in ("binpack", "fgd", "clairvoyant")) + " |")
    return "\n".join(lines)


def seed_list(text: str) -> list[int]:
    seeds = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        seeds += list(range(int(lo), int(hi or lo) + 1))
    return seeds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lists", default=",".join(LISTS))
    parser.add_argument("--seeds", default="0-9", help="e.g. 0-9 or 0,3,5")
    parser.add_argument("--openb", default=None, help="the traces' directory")
    parser.add_argument("--json", help="write every row here")
    parser.add_argument("--markdown", action="store_true", help="print the means as a table")
    args = parser.parse_args(argv)
    lists = args.lists.split(",")
    unknown = [name for name in lists if name not in LISTS]
    if unknown:
        parser.error(f"unknown pod list {', '.join(unknown)}: one of {', '.join(LISTS)}")
    rows = []
    for name in lists:
        rows += run_list(name, seed_list(args.seeds), args.openb,
                         log=lambda line: print(line, flush=True))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    if args.markdown:
        print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
