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
- the simulator: binpack and fgd as the pods arrive, and fgd again with the
  same pods largest first (`openb: {order: largest-first}`);
- balanced largest first (clairvoyant_fill): the GPU pods, most GPUs first,
  each where it leaves the node's CPU and memory least short of its free
  GPUs, under the same checks as random.

The clairvoyant reference is the better of the two largest-first runs: an
allocation a scheduler knowing every pod in advance achieves, so the optimum
lies between it and the bound.

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
# The clairvoyant placements tried; the reference is the best of them.
CLAIRVOYANT = ("fgd-largest-first", "balanced-largest-first")


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


def _part(left: np.ndarray, total: np.ndarray) -> np.ndarray:
    """left / total, 1 where the total is unlimited."""
    return np.where(np.isinf(total), 1.0, left / np.where(np.isinf(total), 1.0, total))


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
    columns: int
    rows: int
    seconds: float


def solve_lp(cost: list[float], columns: tuple, rows_upper: list[float]):
    """max cost.x subject to A x <= rows_upper, x >= 0, with A given column
    by column (starts, row indices, values); an infinite row limit is none.
    Returns the optimum and x. Raises RuntimeError when HiGHS does not reach
    an optimum."""
    starts, index, value = columns
    lp = highspy.HighsLp()
    lp.num_col_ = len(cost)
    lp.num_row_ = len(rows_upper)
    lp.col_cost_ = np.array(cost, dtype=float)
    lp.col_lower_ = np.zeros(len(cost))
    lp.col_upper_ = np.full(len(cost), highspy.kHighsInf)
    lp.row_lower_ = np.full(len(rows_upper), -highspy.kHighsInf)
    lp.row_upper_ = np.array([u if u != float("inf") else highspy.kHighsInf for u in rows_upper])
    lp.sense_ = highspy.ObjSense.kMaximize
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.array(starts, dtype=np.int32)
    lp.a_matrix_.index_ = np.array(index, dtype=np.int32)
    lp.a_matrix_.value_ = np.array(value, dtype=float)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(lp)
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    if status != "Optimal":
        raise RuntimeError(f"HiGHS did not solve the LP to optimality: {status}")
    return h.getInfo().objective_function_value, list(h.getSolution().col_value)


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
    objective, _ = solve_lp(cost, (starts, index, value), rows_upper)
    return Bound(objective, len(cost), len(rows_upper), time.perf_counter() - start)


class Placement:
    """Pods placed on the nodes under the simulator's checks: CPU and memory
    as kube-scheduler's NodeResourcesFit, the GPU type as
    nvidia.com/use-gputype, a share on one GPU whose cores (thousandths here)
    sum to at most all of it, whole GPUs only where nothing is used."""

    def __init__(self, nodes: list[dict]):
        gpus = np.array([int(n["gpus"]) for n in nodes])
        width = max(1, int(gpus.max()))
        self.free = np.where(np.arange(width)[None, :] < gpus[:, None], WHOLE, -1)
        self.gpus = np.maximum(gpus, 1)
        self.cpu = np.array([_unlimited(int(n["cpu_milli"])) for n in nodes], dtype=float)
        self.memory = np.array([_unlimited(int(n["memory_mib"])) for n in nodes], dtype=float)
        self.cpu_total = self.cpu.copy()
        self.memory_total = self.memory.copy()
        self.models = [n["model"] for n in nodes]
        self.types = [type_of(n) for n in nodes]
        self._allowed: dict[str, np.ndarray] = {}
        self.allocated = 0.0

    def fits(self, s: Shape) -> np.ndarray:
        """Whether each node can take a pod of shape `s` now."""
        ok = (self.cpu >= s.cpu_milli) & (self.memory >= s.memory_mib)
        if s.gpus:
            if s.gpu_spec not in self._allowed:
                self._allowed[s.gpu_spec] = np.array([allowed(s, m) for m in self.models])
            ok &= self._allowed[s.gpu_spec]
            if s.fractional:
                ok &= (self.free >= s.milli).any(axis=1)
            else:
                ok &= (self.free == WHOLE).sum(axis=1) >= s.gpus
        return ok

    def rooms(self, node: int, s: Shape) -> np.ndarray:
        """The GPUs of `node` a pod of shape `s` can use."""
        return np.flatnonzero(self.free[node] >= s.milli if s.fractional else
                              self.free[node] == WHOLE)

    def place(self, node: int, s: Shape, gpus) -> None:
        self.cpu[node] -= s.cpu_milli
        self.memory[node] -= s.memory_mib
        for g in gpus:
            self.free[node, g] -= s.milli
        self.allocated += s.asked if s.gpus else 0.0

    def balanced_fit(self, s: Shape) -> bool:
        """Places a pod of shape `s` on the node it starves least, then the
        fullest: starving is how much more of the node's GPUs than of its
        CPU or memory is left free after it (as parts of the node's,
        0 when less), rounded to tenths. A share goes to the fullest GPU it
        fits first (among those, nodes starved by more than 0.2 last), the
        lowest index among equals. False when it fits nowhere."""
        candidates = np.flatnonzero(self.fits(s))
        if candidates.size == 0:
            return False
        free = np.where(self.free > 0, self.free, 0)[candidates]
        left = free.sum(axis=1) / WHOLE - s.asked
        starve = np.maximum(left / self.gpus[candidates] - np.minimum(
            _part(self.cpu[candidates] - s.cpu_milli, self.cpu_total[candidates]),
            _part(self.memory[candidates] - s.memory_mib, self.memory_total[candidates])), 0)
        if s.fractional:
            room = np.where(free >= s.milli, free, 2 * WHOLE).min(axis=1)
            node = int(candidates[np.lexsort((left, starve > 0.2, room))[0]])
            rooms = self.rooms(node, s)
            gpus = [int(rooms[np.argmin(self.free[node, rooms])])]
        else:
            node = int(candidates[np.lexsort((left, np.round(starve, 1)))[0]])
            gpus = self.rooms(node, s)[:s.gpus]
        self.place(node, s, gpus)
        return True


def random_fill(nodes: list[dict], pods: list[dict], seed: int) -> float:
    """GPUs allocated when each pod, in arrival order, goes to a node drawn
    uniformly among those it fits and, there, to GPUs drawn uniformly among
    those it fits (Placement's checks); a pod that fits nowhere is given
    up."""
    rng = random.Random(seed)
    cluster = Placement(nodes)
    for pod in pods:
        s = shape_of(pod)
        candidates = np.flatnonzero(cluster.fits(s))
        if candidates.size == 0:
            continue
        node = int(candidates[rng.randrange(candidates.size)])
        gpus = rng.sample(list(cluster.rooms(node, s)), s.gpus) if s.gpus else []
        cluster.place(node, s, gpus)
    return cluster.allocated


def clairvoyant_fill(nodes: list[dict], pods: list[dict]) -> float:
    """A placement knowing every pod in advance: the GPU pods, the most GPUs
    first (in arrival order among equals), each by Placement.balanced_fit;
    pods without GPUs are left out (they only take CPU and memory)."""
    cluster = Placement(nodes)
    for s in sorted((shape_of(p) for p in pods if int(p["gpus"]) > 0), key=lambda s: -s.asked):
        cluster.balanced_fit(s)
    return cluster.allocated


def simulated(list_name: str, seeds: list[int], openb_dir: str | None) -> dict:
    """GPUs allocated per (variant, seed), from the simulator: binpack and
    fgd in arrival order, and fgd largest first (binpack largest first did
    worse: 97.56 % against fgd's 99.10 % on the default list, seed 0)."""
    openb = {"pods": f"openb_pod_list_{list_name}.csv", "mode": "inflate", "demand": 1.3}
    variants = [{"name": policy, "engine": {"policy": policy}} for policy in POLICIES]
    variants.append({"name": "fgd-largest-first", "engine": {"policy": "fgd"},
                     "openb": {"order": "largest-first"}})
    scenario = {"name": f"openb-{list_name}", "openb": openb, "engine": {"policy": "fgd"},
                "variants": variants}
    results = devshare.simulate(scenario, seed=seeds, openb=openb_dir)
    return {(v.name, seed): r for v in results.variants for seed, r in zip(v.seeds, v.reports)}


def where_free(free_by_share: dict[int, int]) -> dict:
    """Where a run's free GPUs are at the end (Report.free_by_share): whole
    GPUs, and the partly used ones, with the free share that holds the most
    free GPU (say the 0.19 a 0.81 share leaves) apart."""
    partial = {milli: milli * n / WHOLE for milli, n in free_by_share.items() if milli < WHOLE}
    top = max(partial, key=lambda milli: (partial[milli], milli), default=0)
    return {"whole": float(free_by_share.get(WHOLE, 0)), "top_share": top,
            "top_share_gpus": partial.get(top, 0.0),
            "other_partial": sum(partial.values()) - partial.get(top, 0.0)}


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
        for name in POLICIES + ("fgd-largest-first",):
            row[name] = sims[(name, seed)].gpu_allocated
        for name in ("fgd", "fgd-largest-first"):
            row[f"{name} free"] = where_free(sims[(name, seed)].free_by_share)
        row["balanced-largest-first"] = clairvoyant_fill(run["nodes"], run["pods"])
        row["clairvoyant"] = max(row[k] for k in CLAIRVOYANT)
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
    """The means per list, then every list and seed, as Markdown tables
    (GPU allocation, % of the cluster's GPUs; gap closed as a fraction)."""
    keys = ("random", "binpack", "fgd", "clairvoyant", "bound")
    closed = ("binpack", "fgd", "clairvoyant")
    head = ("| Random | binpack | fgd | Clairvoyant | Bound | Gap closed: binpack | fgd | clairvoyant |\n"
            "|---|---|---|---|---|---|---|---|")

    def cells(values: dict, fractions: dict) -> str:
        return (" | ".join(f"{values[k]:.2f} %" for k in keys) + " | "
                + " | ".join(f"{fractions[k]:.3f}" for k in closed) + " |")

    lines = ["| List | Seeds " + head.split("\n")[0], "|---|---" + head.split("\n")[1]]
    for name in dict.fromkeys(r["list"] for r in rows):
        rs = [r for r in rows if r["list"] == name]
        mean = {k: sum(percent(r, k) for r in rs) / len(rs) for k in keys}
        gaps = {k: sum(gap_closed(r, k) for r in rs) / len(rs) for k in closed}
        numbers = sorted(r["seed"] for r in rs)
        contiguous = numbers == list(range(numbers[0], numbers[-1] + 1)) and len(numbers) > 2
        seeds = f"{numbers[0]}–{numbers[-1]}" if contiguous else ",".join(map(str, numbers))
        lines.append(f"| {name} | {seeds} | " + cells(mean, gaps))
    lines += ["", "| List | Seed " + head.split("\n")[0], "|---|---" + head.split("\n")[1]]
    for r in rows:
        lines.append(f"| {r['list']} | {r['seed']} | "
                     + cells({k: percent(r, k) for k in keys}, {k: gap_closed(r, k) for k in closed}))
    return "\n".join(lines)


def free_markdown(rows: list[dict]) -> str:
    """Where fgd's free GPUs are at the end, as it places the pods as they
    arrive and largest first: means per list of the free GPUs, the whole
    ones, those on partly used GPUs at the share that holds the most (named
    with the seeds it was the most on), and the other partly used ones."""
    lines = ["| List | Order | Free GPUs | Whole | Partly used: the largest share | its GPUs | others |",
             "|---|---|---|---|---|---|---|"]
    for name in dict.fromkeys(r["list"] for r in rows):
        rs = [r for r in rows if r["list"] == name and "fgd free" in r]
        for key, order in (("fgd", "as they arrive"), ("fgd-largest-first", "largest first")):
            free = [r[f"{key} free"] for r in rs]
            if not free:
                continue
            tops = collections.Counter(f["top_share"] for f in free)
            share = ", ".join(f"{milli / WHOLE:.2f} ({n})" for milli, n in tops.most_common())

            def mean(field):
                return sum(f[field] for f in free) / len(free)

            total = mean("whole") + mean("top_share_gpus") + mean("other_partial")
            lines.append(f"| {name} | {order} | {total:.1f} | {mean('whole'):.1f} | {share} | "
                         f"{mean('top_share_gpus'):.1f} | {mean('other_partial'):.1f} |")
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
    parser.add_argument("--from-json", nargs="+", metavar="FILE",
                        help="print the rows of earlier --json files instead of running")
    parser.add_argument("--markdown", action="store_true", help="print the means as a table")
    args = parser.parse_args(argv)
    lists = args.lists.split(",")
    unknown = [name for name in lists if name not in LISTS]
    if unknown:
        parser.error(f"unknown pod list {', '.join(unknown)}: one of {', '.join(LISTS)}")
    rows = []
    if args.from_json:
        for path in args.from_json:
            with open(path, encoding="utf-8") as f:
                rows += json.load(f)
        rows.sort(key=lambda r: (LISTS.index(r["list"]), r["seed"]))
        lists = []
    for name in lists:
        rows += run_list(name, seed_list(args.seeds), args.openb,
                         log=lambda line: print(line, flush=True))
        if args.json:  # after each list, so that a long run keeps what it measured
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(rows, f, indent=1)
    if args.markdown:
        print(markdown(rows))
        print()
        print(free_markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
