"""Cluster.filter from Python against the C++ benchmark, at 5,000 nodes.

Builds the cluster of BM_Filter_5000Nodes (8 GPUs per node, 40 GiB each, about
half of them carrying a pod, the same six request shapes) through the Python
package, times Cluster.filter, runs the C++ benchmark binary for the same
case, and prints both and their ratio (goal: at most 1.3).

Usage: python bench/python_filter_overhead.py [BENCH_BINARY]
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time

import devshare

NODES = 5000
HERE = os.path.dirname(os.path.abspath(__file__))


def request(name, gpus, mem=0, cores=0, pct=0):
    limits = {"nvidia.com/gpu": str(gpus)}
    if mem:
        limits["nvidia.com/gpumem"] = str(mem)
    if cores:
        limits["nvidia.com/gpucores"] = str(cores)
    if pct:
        limits["nvidia.com/gpumem-percentage"] = str(pct)
    return {"metadata": {"name": name, "namespace": "bench", "uid": "uid-" + name},
            "spec": {"containers": [{"name": "main", "resources": {"limits": limits}}]}}


def build_cluster():
    cluster = devshare.Cluster()
    rng = random.Random(7)
    for n in range(NODES):
        name = f"node-{n:05}"
        devices = [devshare.Device(f"GPU-{n:05}-{g}-7c3b1f52-0b1e-4a49-9e1f", index=g, count=10, devmem=40960,
                                   devcore=100, type="NVIDIA A100-SXM4-40GB", numa=g // 4, health=True,
                                   mode="hami-core") for g in range(8)]
        cluster.add_node({"metadata": {"name": name, "annotations": {
            "hami.io/node-nvidia-register": devshare.encode_node_devices(devices)}}})
        for g in range(8):
            if rng.random() < 0.5:
                continue
            mem, cores = 4096 * rng.randint(1, 6), 10 * rng.randint(1, 6)
            pod = request(f"load-{n}-{g}", 1, mem, cores)
            pod["metadata"]["annotations"] = {
                "hami.io/vgpu-node": name,
                "hami.io/vgpu-devices-allocated": f"{devices[g].id},NVIDIA,{mem},{cores}:;"}
            cluster.add_pod(pod)
    return cluster


def python_time(cluster, seconds=3.0):
    pods = [request("a", 1, 4096, 20), request("b", 1, 0, 30, 50), request("c", 2, 8192, 30),
            request("d", 1, 16384), request("e", 4), request("f", 1, 2048, 10)]
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        cluster.filter(pods[calls % len(pods)], now=1787300439)
        calls += 1
    return (time.perf_counter() - start) / calls


def cpp_time(binary):
    out = subprocess.run([binary, "--benchmark_filter=BM_Filter_5000Nodes$", "--benchmark_min_time=2",
                          "--benchmark_format=json"], check=True, capture_output=True, text=True).stdout
    run = json.loads(out)["benchmarks"][0]
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3}[run["time_unit"]]
    return run["real_time"] * scale


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build", "bench", "filter_bench")
    cluster = build_cluster()
    py = python_time(cluster)
    cpp = cpp_time(binary)
    print(f"Cluster.filter from Python: {py * 1e3:.3f} ms per pod at {NODES} nodes")
    print(f"BM_Filter_5000Nodes (C++):  {cpp * 1e3:.3f} ms per pod")
    print(f"ratio: {py / cpp:.2f} (goal <= 1.3)")


if __name__ == "__main__":
    main()
