"""Fill the openb GPU cluster (Alibaba cluster-trace-gpu-v2023) with each
scheduling policy and print the GPU allocation ratio and the GPUs left
fragmented.

The experiment of the FGD paper (Weng et al., ATC '23): pods are sampled
with replacement from a pod list and arrive, with no departures, until their
GPU requests reach 130 % of the cluster's GPUs; the score is the share of
GPUs allocated at that point. Fragmentation is fgd's measure
(Cluster.fragmentation()) for the pod list's mix of GPU requests: the free
GPUs those requests could not use. The paper reports, for openb_pod_list_default:
Random 87.47, DotProd 90.85, GpuClustering 91.88, GpuPacking 92.00,
BestFit 93.08, FGD 95.39 (mean of 10 seeds).

Mapping: a pod asking one GPU with gpu_milli m asks nvidia.com/gpucores and
nvidia.com/gpumem-percentage m/10; a pod asking n whole GPUs asks
nvidia.com/gpu n with 100 % of each; gpu_spec becomes nvidia.com/use-gputype.
CPU-only pods do not touch GPUs and are skipped; CPU and memory are not
checked here (the simulator does that).

GPU memory per model (the traces do not give it): V100M16 16 GiB and
V100M32 32 GiB by name, P100 16 GiB, T4 16 GiB, A10 24 GiB; the undisclosed
G1/G2 are assumed 16 GiB and G3 32 GiB. Memory is asked as a percentage, so
these only matter for absolute requests.

Usage: python openb_fill.py [--pods FILE] [--demand 1.3] [--seed 0] [--policies ...]
"""

from __future__ import annotations

import argparse
import collections
import csv
import os
import random
import sys
import time

import devshare

HERE = os.path.dirname(os.path.abspath(__file__))
OPENB = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "data", "openb"))
MODEL_MEMORY_MIB = {"V100M16": 16384, "V100M32": 32768, "P100": 16384, "T4": 16384,
                    "A10": 24576, "G1": 16384, "G2": 16384, "G3": 32768}
SLOTS = 64  # enough sharers per GPU that slots never bind before memory and cores
POLICIES = {
    "hami-default": {"node_policy": "binpack", "gpu_policy": "spread"},
    "binpack": {"node_policy": "binpack", "gpu_policy": "binpack"},
    "spread": {"node_policy": "spread", "gpu_policy": "spread"},
    "fgd": {"node_policy": "fgd", "gpu_policy": "fgd"},
}


def load_nodes(path):
    nodes = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            gpus = int(row["gpu"])
            model = row["model"]
            devices = [devshare.Device(f"{row['sn']}-gpu{i}", index=i, count=SLOTS,
                                       devmem=MODEL_MEMORY_MIB.get(model, 16384), devcore=100,
                                       type=model, health=True, mode="hami-core") for i in range(gpus)]
            nodes.append({"metadata": {"name": row["sn"], "annotations": {
                "hami.io/node-nvidia-register": devshare.encode_node_devices(devices)}}})
    return nodes


def load_pods(path):
    """GPU pods as (num_gpu, gpu_milli, gpu_spec); CPU-only rows are dropped."""
    pods = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            num_gpu = int(row["num_gpu"])
            if num_gpu == 0:
                continue
            milli = int(row.get("gpu_milli") or 1000) if num_gpu == 1 else 1000
            pods.append((num_gpu, milli, row.get("gpu_spec") or ""))
    return pods


def to_pod(i, num_gpu, milli, spec):
    share = max(1, milli // 10)
    limits = {"nvidia.com/gpu": str(num_gpu), "nvidia.com/gpucores": str(share),
              "nvidia.com/gpumem-percentage": str(share)}
    annotations = {"nvidia.com/use-gputype": spec.replace("|", ",")} if spec else {}
    return {"metadata": {"name": f"pod-{i}", "namespace": "openb", "uid": f"uid-{i}",
                         "annotations": annotations},
            "spec": {"containers": [{"name": "main", "resources": {"limits": limits}}]},
            "status": {"phase": "Running"}}


def workload_of(pods):
    """The request mix fgd minimises fragmentation for (and fragmentation is
    measured for), from the pod list."""
    counts = collections.Counter((n, m if n == 1 and m < 1000 else 0) for n, m, _ in pods)
    return [{"weight": c, "gpus": n if m == 0 else 0, "gpu_milli": m} for (n, m), c in counts.items()]


def fill(nodes, pods, policy, demand, seed):
    # Rejections need no reasons here: only the placement is used.
    scheduler = dict(POLICIES[policy], reasons=False, workload=workload_of(pods))
    cluster = devshare.Cluster({"scheduler": scheduler})
    for node in nodes:
        cluster.add_node(node)
    capacity = sum(len(devshare.decode_node_devices(n["metadata"]["annotations"]["hami.io/node-nvidia-register"]))
                   for n in nodes)
    rng = random.Random(seed)
    requested = allocated = 0.0
    i = 0
    while requested < demand * capacity:
        num_gpu, milli, spec = pods[rng.randrange(len(pods))]
        gpus = num_gpu * milli / 1000.0
        requested += gpus
        pod = to_pod(i, num_gpu, milli, spec)
        i += 1
        result = cluster.filter(pod, now=0)
        if result.node is None:
            continue
        pod["metadata"]["annotations"].update(result.annotations)
        cluster.add_pod(pod)
        allocated += gpus
    fragmentation = cluster.fragmentation()
    return 100.0 * allocated / capacity, fragmentation["free_gpus"], fragmentation["fragmented_gpus"], i


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default=os.path.join(OPENB, "openb_node_list_gpu_node.csv"))
    parser.add_argument("--pods", default=os.path.join(OPENB, "openb_pod_list_default.csv"))
    parser.add_argument("--demand", type=float, default=1.3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--policies", default=",".join(POLICIES))
    args = parser.parse_args(argv)
    nodes = load_nodes(args.nodes)
    pods = load_pods(args.pods)
    print(f"{len(nodes)} nodes, {len(pods)} GPU pods in the list; demand {args.demand:.0%} of the GPUs, seed {args.seed}")
    print(f"{'policy':<14}{'allocated GPUs':>16}{'free GPUs':>11}{'fragmented':>12}{'pods arrived':>14}{'seconds':>10}")
    for policy in args.policies.split(","):
        start = time.perf_counter()
        ratio, free, fragmented, arrived = fill(nodes, pods, policy, args.demand, args.seed)
        print(f"{policy:<14}{ratio:>15.2f}%{free:>11.1f}{fragmented:>12.1f}{arrived:>14}"
              f"{time.perf_counter() - start:>10.1f}")
        sys.stdout.flush()
    print("FGD paper, openb_pod_list_default: BestFit 93.08 %, FGD 95.39 % (10 seeds).")


if __name__ == "__main__":
    main()
