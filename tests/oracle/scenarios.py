"""Seeded scenario generator for the HAMi differential oracle.

A scenario is plain JSON that both sides read: devshare (through the Python
package) and the Go harness (through HAMi's exported functions). It holds the
data, not Kubernetes objects, so neither side depends on the other's object
builder:

    {"id": 17,
     "scheduler": {"node_policy": "binpack", "gpu_policy": "spread"},
     "nodes": [{"name": "node-000",
                "register": "<hami.io/node-nvidia-register value>",
                "devices": [{"id", "index", "count", "devmem", "devcore", "type",
                             "numa", "mode", "health"}, ...],
                "annotations": {"hami.io/device-cordon": "..."}}],
     "pods": [{"name", "namespace", "node", "allocated": "<vgpu-devices-allocated>",
               "devices": [[{"uuid", "type", "usedmem", "usedcores"}], ...]}],
     "pod": {"name", "namespace", "uid", "annotations": {...},
             "containers": [{"name", "limits": {...}}]},
     "quota": {"limits.nvidia.com/gpumem": "...", ...}}   # a ResourceQuota of "default", or {}

`register` is the same device list written with the variations HAMi's decoder
accepts (key order, key case, extra keys), so decoding is tested on more than
the encoder's own output. The same seed always gives the same scenarios.
"""

from __future__ import annotations

import json
import random
from typing import Any

TYPES = ["NVIDIA", "NVIDIA-Tesla T4", "NVIDIA A100-SXM4-40GB", "NVIDIA-H100", "NVIDIA-A10"]
MEMORIES = [4096, 8000, 15360, 16384, 24576, 40960, 81920]
SLOTS = [1, 2, 4, 10, 10, 10]
MODES = ["hami-core", "hami-core", "hami-core", "", "mps"]
GPU_POLICIES = ["spread", "binpack", "topology-aware", "mutex", "numa", "binpack,numa",
                "spread, numa", "numa,binpack", "mutex,binpack", "topology-aware,spread", "unknown"]
NODE_POLICIES = ["binpack", "spread"]

# HAMi's DeviceInfo JSON keys in the order the device plugin writes them.
DEVICE_KEYS = ["id", "index", "count", "devmem", "devcore", "type", "numa", "mode", "health"]


def _register_value(rng: random.Random, devices: list[dict]) -> str:
    """The device list as a register annotation, with variations Go's
    encoding/json accepts: keys in any order, any ASCII case, unknown keys."""
    out = []
    for d in devices:
        keys = list(DEVICE_KEYS)
        if rng.random() < 0.2:
            rng.shuffle(keys)
        entry: dict[str, Any] = {}
        for k in keys:
            name = k.upper() if rng.random() < 0.05 else (k.capitalize() if rng.random() < 0.05 else k)
            entry[name] = d[k]
        if rng.random() < 0.05:
            entry["devicepairscore"] = {}
        out.append(entry)
    return json.dumps(out, separators=(",", ":") if rng.random() < 0.7 else (", ", ": "))


def _node(rng: random.Random, i: int, node_type: str) -> dict:
    name = f"node-{i:03d}"
    n = rng.randint(1, 8)
    mem = rng.choice(MEMORIES)
    slots = rng.choice(SLOTS)
    numa_split = rng.random() < 0.4
    devices = []
    for j in range(n):
        devices.append({
            "id": f"GPU-{i:03d}-{j}",
            "index": j,
            "count": slots,
            "devmem": mem if rng.random() < 0.9 else rng.choice(MEMORIES),
            "devcore": 100,
            "type": node_type if rng.random() < 0.95 else rng.choice(TYPES),
            "numa": (j * 2 // n) if numa_split else 0,
            "mode": rng.choice(MODES),
            "health": rng.random() < 0.95,
        })
    annotations = {}
    if rng.random() < 0.08:
        cordoned = rng.sample([d["id"] for d in devices], k=rng.randint(1, max(1, n // 2)))
        annotations["hami.io/device-cordon"] = " , ".join(cordoned) + ("," if rng.random() < 0.3 else "")
    return {"name": name, "devices": devices, "register": _register_value(rng, devices),
            "annotations": annotations}


def _usage(rng: random.Random, nodes: list[dict]) -> list[dict]:
    """Pods holding devices: each takes 1-2 devices of one node, never more
    memory or cores than remain (as a real scheduler would have placed them)."""
    pods = []
    left = {d["id"]: [d["count"], d["devmem"], d["devcore"]] for n in nodes for d in n["devices"]}
    target = rng.choice([0.0, 0.1, 0.3, 0.6])
    for node in nodes:
        for _ in range(int(len(node["devices"]) * target * 3)):
            k = 1 if rng.random() < 0.8 else 2
            picks = rng.sample(node["devices"], k=min(k, len(node["devices"])))
            container = []
            for d in picks:
                slot, mem, core = left[d["id"]]
                if slot <= 0 or mem <= 0:
                    continue
                usedmem = rng.randint(1, mem) if rng.random() < 0.7 else min(mem, rng.choice([1024, 2048, 4096]))
                usedcores = rng.choice([0, 0, 10, 20, 25, 50, 100]) if core > 0 else 0
                usedcores = min(usedcores, core)
                left[d["id"]] = [slot - 1, mem - usedmem, core - usedcores]
                container.append({"uuid": d["id"], "type": "NVIDIA", "usedmem": usedmem, "usedcores": usedcores})
            if not container:
                continue
            devices = [container]
            if rng.random() < 0.1:
                devices.append([])  # a second container without devices
            allocated = "".join(
                "".join(f"{cd['uuid']},{cd['type']},{cd['usedmem']},{cd['usedcores']}:" for cd in c) + ";"
                for c in devices)
            pods.append({"name": f"held-{len(pods):04d}", "namespace": "default", "node": node["name"],
                         "allocated": allocated, "devices": devices})
    return pods


def _limits(rng: random.Random) -> dict:
    limits: dict[str, str] = {"nvidia.com/gpu": str(rng.choice([1, 1, 1, 1, 2, 2, 3, 4, 8, 9]))}
    r = rng.random()
    if r < 0.45:
        limits["nvidia.com/gpumem"] = str(rng.choice([256, 1000, 2048, 3000, 4096, 8000, 10240, 20000, 40000]))
    elif r < 0.75:
        limits["nvidia.com/gpumem-percentage"] = str(rng.choice([1, 10, 25, 50, 75, 100]))
    if rng.random() < 0.6:
        limits["nvidia.com/gpucores"] = str(rng.choice([0, 5, 10, 25, 30, 50, 75, 100, 120]))
    return limits


def _pod(rng: random.Random, sid: int, nodes: list[dict]) -> dict:
    containers = []
    for c in range(rng.choice([1, 1, 1, 2, 3])):
        if c > 0 and rng.random() < 0.3:
            containers.append({"name": f"c{c}", "limits": {"cpu": "1"}})
        else:
            containers.append({"name": f"c{c}", "limits": _limits(rng)})
    ann: dict[str, str] = {}
    all_devices = [d for n in nodes for d in n["devices"]]
    if rng.random() < 0.3:
        ann["hami.io/gpu-scheduler-policy"] = rng.choice(GPU_POLICIES)
    if rng.random() < 0.2:
        ann["hami.io/node-scheduler-policy"] = rng.choice(NODE_POLICIES + ["Spread", "other"])
    if rng.random() < 0.15:
        ann["nvidia.com/numa-bind"] = rng.choice(["true", "1", "false", "T", "yes"])
    if rng.random() < 0.1:
        ann["nvidia.com/use-gputype"] = rng.choice(["A100", "t4,h100", "nvidia", "A10,", "V100"])
    if rng.random() < 0.08:
        ann["nvidia.com/nouse-gputype"] = rng.choice(["A100", "T4", "h100", ",A10"])
    if rng.random() < 0.06:
        chosen = rng.sample(all_devices, k=min(len(all_devices), rng.randint(1, 4)))
        ann["nvidia.com/use-gpuuuid"] = ",".join(d["id"] for d in chosen)
    if rng.random() < 0.06:
        chosen = rng.sample(all_devices, k=min(len(all_devices), rng.randint(1, 4)))
        ann["nvidia.com/nouse-gpuuuid"] = ", ".join(d["id"] for d in chosen)
    if rng.random() < 0.06:
        ann["nvidia.com/vgpu-mode"] = rng.choice(["hami-core", "mps", "hami-core,mps"])
    if rng.random() < 0.1:
        ann["hami.io/device-scoring-weights"] = rng.choice(
            ["slot=1,core=1,memory=1", "slot=1,core=1,memory=3", "core=3, slot=1 ,memory=1", "slot=0,core=0,memory=2"])
    return {"name": f"pod-{sid}", "namespace": "default", "uid": f"uid-{sid}",
            "annotations": ann, "containers": containers}


def _quota(rng: random.Random, pods: list[dict]) -> dict:
    """In one scenario of eight, a ResourceQuota on the namespace's GPU memory
    and/or cores, set around what its pods already use, so that the pod to
    place sometimes fits under it and sometimes not."""
    if rng.random() >= 0.125:
        return {}
    used_mem = sum(cd["usedmem"] for p in pods for c in p["devices"] for cd in c)
    used_cores = sum(cd["usedcores"] for p in pods for c in p["devices"] for cd in c)
    hard = {}
    if rng.random() < 0.7:
        hard["limits.nvidia.com/gpumem"] = str(used_mem + rng.choice([0, 500, 4000, 20000, 100000]))
    if not hard or rng.random() < 0.5:
        hard["limits.nvidia.com/gpucores"] = str(used_cores + rng.choice([0, 10, 50, 100, 400]))
    return hard


def generate(seed: int, sid: int, max_nodes: int = 50) -> dict:
    """Scenario number `sid` of the stream seeded by `seed`."""
    rng = random.Random(f"{seed}:{sid}")
    node_type = rng.choice(TYPES)
    nodes = [_node(rng, i, node_type) for i in range(rng.randint(1, max_nodes))]
    scenario = {
        "id": sid,
        "scheduler": {"node_policy": rng.choice(NODE_POLICIES),
                      "gpu_policy": rng.choice(["spread", "binpack", "topology-aware", "mutex"])},
        "nodes": nodes,
        "pods": _usage(rng, nodes),
        "pod": _pod(rng, sid, nodes),
    }
    scenario["quota"] = _quota(rng, scenario["pods"])  # drawn last: the rest is as it was without quotas
    _add_big_node(random.Random(f"big:{seed}:{sid}"), scenario)
    return scenario


def _add_big_node(rng: random.Random, scenario: dict) -> None:
    """In one scenario of ten, a node of 13-16 GPUs (where Go's sort.Sort, which HAMi orders devices
    with, is no longer stable), some of them in use. Its own random stream leaves the rest of the
    scenario as it was."""
    if rng.random() >= 0.1:
        return
    i = len(scenario["nodes"])
    node_type = scenario["nodes"][0]["devices"][0]["type"]
    big = _node(rng, i, node_type)
    mem, slots = rng.choice(MEMORIES), rng.choice(SLOTS)
    big["devices"] = [{**big["devices"][0], "id": f"GPU-{i:03d}-{j}", "index": j, "count": slots, "devmem": mem,
                       "numa": j * 2 // 16, "health": True, "mode": "hami-core"} for j in range(rng.randint(13, 16))]
    big["register"] = _register_value(rng, big["devices"])
    big["annotations"] = {}
    scenario["nodes"].append(big)
    for d in rng.sample(big["devices"], k=rng.randint(0, 6)):
        cd = {"uuid": d["id"], "type": "NVIDIA", "usedmem": rng.choice([1024, 2048]), "usedcores": rng.choice([0, 10])}
        scenario["pods"].append({"name": f"held-big-{d['index']}", "namespace": "default", "node": big["name"],
                                 "allocated": f"{cd['uuid']},NVIDIA,{cd['usedmem']},{cd['usedcores']}:;",
                                 "devices": [[cd]]})


def speed_cluster(nodes: int, gpus: int = 8) -> dict:
    """The cluster of the speed comparison: `nodes` nodes x `gpus` GPUs
    (10 slots, 40960 MiB, 100 cores), a quarter of the GPUs half used, and a
    pod asking for one GPU with 4000 MiB and 20 cores."""
    rng = random.Random(nodes)
    out = []
    pods = []
    for i in range(nodes):
        devices = [{"id": f"GPU-{i:05d}-{j}", "index": j, "count": 10, "devmem": 40960, "devcore": 100,
                    "type": "NVIDIA", "numa": j // 4, "mode": "hami-core", "health": True} for j in range(gpus)]
        out.append({"name": f"node-{i:05d}", "devices": devices,
                    "register": json.dumps(devices, separators=(",", ":")), "annotations": {}})
        for d in devices:
            if rng.random() < 0.25:
                cd = {"uuid": d["id"], "type": "NVIDIA", "usedmem": 20480, "usedcores": 50}
                pods.append({"name": f"held-{len(pods):06d}", "namespace": "default", "node": out[-1]["name"],
                             "allocated": f"{d['id']},NVIDIA,20480,50:;", "devices": [[cd]]})
    pod = {"name": "speed", "namespace": "default", "uid": "uid-speed", "annotations": {},
           "containers": [{"name": "c0", "limits": {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "4000",
                                                    "nvidia.com/gpucores": "20"}}]}
    return {"id": -nodes, "scheduler": {"node_policy": "binpack", "gpu_policy": "spread"},
            "nodes": out, "pods": pods, "pod": pod, "quota": {}}


REGISTER_VALUES = [
    json.dumps([{"id": "GPU-x-0", "count": 10, "devmem": 16384, "devcore": 100, "type": "NVIDIA", "health": True}],
               separators=(",", ":")),
    json.dumps([{"id": f"GPU-x-{i}", "count": 10, "devmem": 40960, "devcore": 100, "type": "NVIDIA-A100",
                 "health": True} for i in range(2)], separators=(",", ":")),
]
HANDSHAKE_KINDS = ["keep", "keep", "keep", "absent", "requesting", "requesting", "bare", "garbage", "reported",
                   "deleted"]
# Ages of a "requesting" stamp, at least 2 s away from HAMi's 60 s expiry.
HANDSHAKE_AGES = [0, 5, 30, 55, 65, 90, 3600]


def handshake_scenario(seed: int, sid: int) -> dict:
    """One node through 1-6 registration passes (the harness's `handshake`
    mode): before each pass the handshake, register annotation and
    allocatable GPU count are set, or kept as the previous pass left them."""
    rng = random.Random(f"handshake:{seed}:{sid}")
    steps = []
    for k in range(rng.randint(1, 6)):
        kind = rng.choice(HANDSHAKE_KINDS[3:] if k == 0 else HANDSHAKE_KINDS)
        registered = rng.choice(["keep", "keep", "keep", "absent"] + REGISTER_VALUES)
        if k == 0 and registered == "keep":
            registered = REGISTER_VALUES[0]
        allocatable = rng.choice([-1, -1, -1, 0, 10, 20]) if k else rng.choice([0, 10, 10, 20])
        steps.append({"handshake": kind, "age": rng.choice(HANDSHAKE_AGES), "registered": registered,
                      "allocatable": allocatable})
    return {"id": sid, "steps": steps}


# Lock ages at least 2 s away from HAMi's 5-minute expiry; bind ages around
# devshare's timeout + grace (#3096: 10 minutes).
LOCK_AGES = [0, 10, 150, 290, 310, 590, 610, 7200]


def node_lock_scenario(seed: int, sid: int) -> dict:
    """A node's hami.io/mutex.lock and a pod asking for it (the harness's
    `nodelock` mode): no lock, a lock held by another pod (present or gone,
    allocating or not), by this pod, a legacy bare time, or a malformed value."""
    rng = random.Random(f"nodelock:{seed}:{sid}")
    pod_ns, pod_name = "default", f"pod-{sid}"
    kind = rng.choice(["none", "other", "other", "other", "self", "legacy", "malformed", "other-ns"])
    holder_ns, holder_name = ("team-b" if kind == "other-ns" else "default"), f"holder-{sid}"
    lock = {"none": "", "self": f"{{time}},{pod_ns},{pod_name}", "legacy": "{time}",
            "malformed": rng.choice(["locked", "{time},default", "2026-13-01T00:00:00Z,default,x"]),
            }.get(kind, f"{{time}},{holder_ns},{holder_name}")
    present = kind in ("other", "other-ns") and rng.random() < 0.6
    return {"id": sid, "lock": lock, "age": rng.choice(LOCK_AGES),
            "holder": f"{holder_ns}/{holder_name}" if present else "",
            "bind_phase": rng.choice(["", "allocating", "allocating", "success", "failed"]) if present else "",
            "bind_age": rng.choice(LOCK_AGES), "pod_namespace": pod_ns, "pod_name": pod_name}


# Quantities in Go's canonical form (no multiple of 1000 in decimal), so that
# a Pod decoded and re-encoded by Go keeps its strings.
WEBHOOK_MEMORY = ["256", "1024", "3072", "10240", "20480"]
WEBHOOK_CORES = ["5", "25", "30", "50", "100", "120"]


def _webhook_container(rng: random.Random, name: str) -> dict:
    limits: dict[str, str] = {}
    r = rng.random()
    if r < 0.3:
        limits["nvidia.com/gpu"] = rng.choice(["1", "2", "4"])
    if rng.random() < 0.35:
        limits["nvidia.com/gpumem"] = rng.choice(WEBHOOK_MEMORY)
    if rng.random() < 0.15:
        limits["nvidia.com/gpumem-percentage"] = rng.choice(["25", "50", "100", "150", "-5"])
    if rng.random() < 0.3:
        limits["nvidia.com/gpucores"] = rng.choice(WEBHOOK_CORES)
    if rng.random() < 0.1:
        limits["nvidia.com/priority"] = rng.choice(["0", "1"])
    if rng.random() < 0.3:
        limits["cpu"] = "1"
    container: dict[str, Any] = {"name": name, "image": "busybox"}
    if limits:
        container["resources"] = {"limits": limits}
    if rng.random() < 0.08:
        container["securityContext"] = {"privileged": rng.random() < 0.8}
    if rng.random() < 0.1:
        container["env"] = [{"name": "A", "value": "1"}]
    return container


def webhook_scenario(seed: int, sid: int) -> dict:
    """A Pod for the mutating webhook (the harness's `webhook` mode): 0-3
    containers and maybe init containers with GPU limits or none, privileged
    containers, a schedulerName or a nodeName already set."""
    rng = random.Random(f"webhook:{seed}:{sid}")
    spec: dict[str, Any] = {"containers": [_webhook_container(rng, f"c{i}")
                                           for i in range(rng.choice([0, 1, 1, 1, 2, 3]))]}
    if rng.random() < 0.15:
        spec["initContainers"] = [_webhook_container(rng, "init")]
    if rng.random() < 0.3:
        spec["schedulerName"] = rng.choice(["default-scheduler", "hami-scheduler", "other-scheduler"])
    if rng.random() < 0.05:
        spec["nodeName"] = "node-1"
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": f"pod-{sid}", "namespace": "default", "uid": f"uid-{sid}"}, "spec": spec}
    return {"id": sid, "scheduler_name": rng.choice(["hami-scheduler", "hami-scheduler", ""]), "pod": pod}


def volcano_register_scenario(seed: int, sid: int) -> dict:
    """A volcano.sh/node-vgpu-register value (the Volcano harness's `register`
    mode): 1-8 devices "<uuid>,<count>,<devmem>,<type>,<health>,<mode>:" as
    Volcano's device plugin writes them, and in one value of four a malformed
    field (too few or too many fields, a count, memory or health that does
    not parse, a negative number)."""
    rng = random.Random(f"volcano:{seed}:{sid}")
    parts = []
    for i in range(rng.randint(1, 8)):
        fields = [f"GPU-{sid}-{i}", str(rng.choice(SLOTS)), str(rng.choice(MEMORIES)), rng.choice(TYPES),
                  rng.choice(["true", "true", "false"]), rng.choice(["hami-core", "hami-core", "mps", "mig"])]
        if rng.random() < 0.05:
            fields[rng.randrange(len(fields))] = rng.choice(["", "x", "-1", "1.5", "True", "2147483648"])
        if rng.random() < 0.03:
            fields = fields[:rng.randint(1, 5)]
        elif rng.random() < 0.03:
            fields.append("extra")
        parts.append(",".join(fields) + ":")
    return {"id": sid, "register": "".join(parts)}


VOLCANO_TYPES = ["NVIDIA-Tesla T4", "NVIDIA-Tesla V100-PCIE-32GB", "NVIDIA A100-SXM4-40GB", "NVIDIA-H100"]


def volcano_fit_scenario(seed: int, sid: int) -> dict:
    """A cluster as Volcano's scheduler sees it, for the Volcano harness's `fit` mode:

        {"id", "policy": "binpack" | "spread",
         "nodes": [{"name", "register", "devices": [{"uuid", "count", "devmem", "type", "health"}]}],
         "pods": [{"uid", "node", "ids", "devices": [[[uuid, usedmem, usedcores], ...] per container]}],
         "pod": {"containers": [{"name", "limits"}], "annotations"}}

    1-4 nodes of 1-8 GPUs (hami-core sharing, one in twelve unhealthy), pods Volcano placed there
    (volcano.sh/vgpu-ids-new, 1-2 containers of 1-2 devices each, so that a pod sometimes holds
    one device twice), and a pending pod of 1-3 containers asking volcano.sh/vgpu-number with
    or without volcano.sh/vgpu-memory and volcano.sh/vgpu-cores, sometimes restricted to a GPU
    type (nvidia.com/use-gputype, nouse-gputype) or to GPUs by UUID (volcano.sh/vgpu-use-gpuuuid,
    vgpu-nouse-gpuuuid). UUIDs have one length, so Volcano's substring
    match of pod devices to node devices finds only the device itself."""
    rng = random.Random(f"volcano-fit:{seed}:{sid}")
    nodes, pods = [], []
    for n in range(rng.randint(1, 4)):
        name = f"node-{n:03d}"
        devices = [{"uuid": f"GPU-{sid:05d}-{n}-{i}", "count": rng.choice([1, 2, 4, 10, 10, 10]),
                    "devmem": rng.choice(MEMORIES), "type": rng.choice(VOLCANO_TYPES),
                    "health": rng.random() >= 1 / 12}
                   for i in range(rng.randint(1, 8))]
        register = "".join(f"{d['uuid']},{d['count']},{d['devmem']},{d['type']},"
                           f"{'true' if d['health'] else 'false'},hami-core:" for d in devices)
        nodes.append({"name": name, "register": register, "devices": devices})
        for p in range(rng.randint(0, 2 * len(devices))):
            containers = []
            for _ in range(rng.choice([1, 1, 1, 2])):
                held = rng.sample(devices, k=min(len(devices), rng.choice([1, 1, 1, 2])))
                containers.append([[d["uuid"], rng.randrange(0, d["devmem"] // 2 + 1, 256),
                                    rng.choice([0, 0, 10, 25, 50, 100])] for d in held])
            ids = ";".join("".join(f"{u},NVIDIA,{m},{c}:" for u, m, c in cont) for cont in containers)
            pods.append({"uid": f"held-{n}-{p}", "node": name, "ids": ids, "devices": containers})
    pending = []
    for c in range(rng.choice([1, 1, 1, 2, 3])):
        limits = {"volcano.sh/vgpu-number": str(rng.choice([1, 1, 1, 2, 3]))}
        if rng.random() < 0.7:
            limits["volcano.sh/vgpu-memory"] = str(rng.choice([256, 1000, 2048, 4000, 8000, 12000, 20000]))
        if rng.random() < 0.5:
            limits["volcano.sh/vgpu-cores"] = str(rng.choice([0, 10, 30, 50, 100]))
        pending.append({"name": f"c{c}", "limits": limits})
    annotations = {}
    r = rng.random()
    if r < 0.08:
        annotations["nvidia.com/use-gputype"] = rng.choice(["T4", "A100", "v100,h100"])
    elif r < 0.12:
        annotations["nvidia.com/nouse-gputype"] = rng.choice(["T4", "H100"])
    elif r < 0.2:
        devices = rng.choice(nodes)["devices"]
        key = "volcano.sh/vgpu-use-gpuuuid" if r < 0.16 else "volcano.sh/vgpu-nouse-gpuuuid"
        annotations[key] = ", ".join(d["uuid"] for d in rng.sample(devices, k=min(len(devices), rng.randint(1, 3))))
    return {"id": sid, "policy": rng.choice(["binpack", "spread"]), "nodes": nodes, "pods": pods,
            "pod": {"containers": pending, "annotations": annotations}}
