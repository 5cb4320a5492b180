"""Plots results of devshare's simulator with matplotlib.

1. allocation.png — GPU allocation at the end of the openb experiment (the
   FGD paper's: pods ask 130 % of the GPUs) per policy, mean and standard
   deviation over the seeds, next to the paper's published means. Without
   the openb traces it plots the `default` scenario (a synthetic cluster).
2. fragmentation.png — the same runs: fragmented GPUs (fgd's measure, for
   the pods of the trace) as the arrived pods ask more of the cluster's GPUs,
   mean over the seeds per policy.
3. latency-cdf.png — the distribution of creation-to-bound times in the
   handshake-storm scenario: the legacy handshakes against change-only.

Usage: python plot_simulation.py [--out DIR] [--seeds N] [--openb DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import devshare  # noqa: E402

PAPER = {"Random": 87.47, "DotProd": 90.85, "GpuClustering": 91.88, "GpuPacking": 92.00,
         "BestFit": 93.08, "FGD": 95.39}


def run_policies(seeds: int, openb: str | None) -> tuple[dict, str]:
    """The openb experiment (or the default scenario without the traces)."""
    try:
        results = devshare.simulate("openb", seed=list(range(seeds)), openb=openb)
        return results, f"openb, {seeds} seed(s)"
    except KeyError as e:  # the traces are not there
        print(f"openb traces not found ({e}); plotting the default scenario", file=sys.stderr)
        return devshare.simulate("default", seed=list(range(seeds))), f"default scenario, {seeds} seed(s)"


def plot_allocation(out: str, results: dict, title: str) -> str:
    names, means, errors = [], [], []
    for variant in results["variants"]:
        values = [run["allocationPercent"] for run in variant["runs"]]
        names.append(f"devshare\n{variant['name']}")
        means.append(statistics.mean(values))
        errors.append(statistics.stdev(values) if len(values) > 1 else 0)
    fig, ax = plt.subplots(figsize=(10, 4.5))
    ax.bar(names, means, yerr=errors, color="tab:blue", capsize=4, label="devshare (simulated)")
    ax.bar([f"paper\n{k}" for k in PAPER], list(PAPER.values()), color="tab:gray", label="FGD paper (mean of 10)")
    ax.set_ylim(80, 100)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_ylabel("GPUs allocated (%)")
    ax.set_title(f"{title}: pods asking 130 % of the GPUs")
    ax.legend(loc="lower right")
    for i, m in enumerate(means):
        ax.annotate(f"{m:.2f}", (i, m), ha="center", va="bottom", fontsize=8)
    fig.tight_layout()
    path = os.path.join(out, "allocation.png")
    fig.savefig(path, dpi=120)
    return path


def plot_fragmentation(out: str, results: dict, title: str) -> str:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for variant in results["variants"]:
        curves = [run["fragmentationCurve"] for run in variant["runs"]]
        demand = [point["demandPercent"] for point in curves[0]]
        fragmented = [statistics.mean(curve[i]["gpuFragmented"] for curve in curves) for i in range(len(demand))]
        ax.plot(demand, fragmented, marker="o", label=variant["name"])
    ax.set_xlabel("GPUs asked by the arrived pods (% of the cluster's)")
    ax.set_ylabel("fragmented GPUs (fgd's measure)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    path = os.path.join(out, "fragmentation.png")
    fig.savefig(path, dpi=120)
    return path


def plot_latency(out: str) -> str:
    results = devshare.simulate("handshake-storm", seed=0)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for variant in results["variants"]:
        run = variant["runs"][0]
        seconds = [max(ms, 1) / 1000 for ms in run["latencyPercentilesMs"]]
        ax.step(seconds, range(101), where="post",
                label=f"{variant['name']} (p50 {run['latencyP50Ms'] / 1000:.1f} s, "
                      f"{run['pending']} pending at the end)")
    ax.set_xscale("log")
    ax.set_xlabel("creation to bound (s, log scale)")
    ax.set_ylabel("pods (%)")
    ax.set_title("handshake-storm: 200 nodes, one hour")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path = os.path.join(out, "latency-cdf.png")
    fig.savefig(path, dpi=120)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="build/plots", help="directory for the PNG files")
    parser.add_argument("--seeds", type=int, default=3, help="seeds of the allocation plot (the paper: 10)")
    parser.add_argument("--openb", default=None, help="directory of the openb traces")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    results, title = run_policies(args.seeds, args.openb)
    for path in (plot_allocation(args.out, results, title), plot_fragmentation(args.out, results, title),
                 plot_latency(args.out)):
        print(path)


if __name__ == "__main__":
    main()
