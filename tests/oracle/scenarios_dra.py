"""Seeded generator of DRA scenarios (resource.k8s.io/v1) for the DRA oracle.

    python3 tests/oracle/scenarios_dra.py --seed 1 --count 100 > scenarios.jsonl
    python3 tests/oracle/scenarios_dra.py --seed 1 --count 100 | tests/oracle/bin/dra-oracle

A scenario is one JSON object a line, the Kubernetes objects written as the
API server stores them (the API's JSON, defaults filled in):

    {"id": N,
     "nodes":     [core/v1 Node: metadata.name, metadata.labels],
     "slices":    [resource.k8s.io/v1 ResourceSlice],
     "classes":   [resource.k8s.io/v1 DeviceClass],
     "claims":    [resource.k8s.io/v1 ResourceClaim, unallocated: allocated together],
     "allocated": [resource.k8s.io/v1 ResourceClaim with status.allocation]}

What it holds (tests/oracle/dra/README.md has the schema and the counts):

- 1-4 nodes with hostname, zone and tier labels;
- on each node 1-8 GPUs published as HAMi's DRA driver publishes them
  (github.com/Project-HAMi/k8s-dra-driver, cmd/hami-kubelet-plugin/hami_core.go:
  driver hami-core-gpu.project-hami.io, pool = node, device hami-gpu-<minor>,
  attributes type/uuid/minor/productName/brand/architecture/
  cudaComputeCapability/driverVersion/cudaDriverVersion/pcieBusID and
  resource.kubernetes.io/pcieRoot, capacity cores 100 (default 100, range
  0..100 step 1) and memory (default all, range 1Mi..all step 1Mi),
  allowMultipleAllocations); sometimes split over several slices, with a
  slice missing (incomplete pool), with an older generation left behind,
  a newer incomplete generation, a duplicate device name (invalid pool),
  taints (NoSchedule, NoExecute, None) or binding conditions;
- sometimes whole, non-shared GPUs of a second driver (gpu.nvidia.com) and
  partitionable GPUs (a counter-set slice, devices consuming counters: the
  whole GPU and its MIG-like partitions), once in a while in a pool shared
  by several nodes through perDeviceNodeSelection, and network-attached
  devices selected by a node selector;
- DeviceClasses with CEL selectors (some with opaque config);
- 1-3 claims of 1-3 requests: exactly (ExactCount 1-3 or All), firstAvailable
  with 2-3 subrequests, capacity requests (cores/memory, off-step values so
  the request policy's rounding matters), tolerations, adminAccess (rarely),
  constraints matchAttribute/distinctAttribute, claim config;
- generated CEL selectors: attribute and capacity access, device.driver,
  comparisons, && || !, in, quantity() with compareTo/isGreaterThan/
  isLessThan, semver() comparisons, has(), device.allowMultipleAllocations;
  rarely one that does not compile or fails at run time;
- 0-4 claims already allocated, holding devices whole or sharing a HAMi GPU
  with consumed capacity.

Scenario N is a pure function of (seed, N): random.Random(f"dra:{seed}:{N}").
Only the standard library is used.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from math import comb
from typing import Any

HAMI = "hami-core-gpu.project-hami.io"
NV = "gpu.nvidia.com"
NET = "net-gpu.example.com"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
GI = 1 << 30
MI = 1 << 20

# (productName, brand, architecture, cudaComputeCapability, memory GiB)
GPUS = [
    ("NVIDIA A100-SXM4-80GB", "Nvidia", "Ampere", "8.0.0", 80),
    ("NVIDIA A100-PCIE-40GB", "Nvidia", "Ampere", "8.0.0", 40),
    ("Tesla T4", "Tesla", "Turing", "7.5.0", 15),
    ("NVIDIA A10", "Nvidia", "Ampere", "8.6.0", 24),
    ("NVIDIA L4", "Nvidia", "Ada Lovelace", "8.9.0", 23),
    ("NVIDIA H100 80GB HBM3", "Nvidia", "Hopper", "9.0.0", 80),
]
# (driverVersion, cudaDriverVersion)
DRIVERS = [("550.54.15", "12.4.0"), ("535.161.8", "12.2.0"), ("570.86.10", "12.8.0"),
           ("560.35.3", "12.6.0")]
ZONES = ["zone-a", "zone-b"]
TIERS = ["gold", "silver", "bronze"]
TAINT_KEYS = ["hami.io/maintenance", "example.com/unhealthy", "example.com/ecc-errors"]
EFFECTS = ["NoSchedule", "NoExecute", "None"]


def _meta(name: str, **extra: Any) -> dict:
    m: dict[str, Any] = {"name": name}
    m.update(extra)
    return m


def _uid(rng: random.Random) -> str:
    h = "%032x" % rng.getrandbits(128)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _gib(n: int) -> str:
    return f"{n}Gi"


def _string(v: str) -> dict:
    return {"string": v}


def _int(v: int) -> dict:
    return {"int": v}


def _version(v: str) -> dict:
    return {"version": v}


# --------------------------------------------------------------------------
# Devices and slices


def _hami_device(rng: random.Random, minor: int, gpu: tuple, drv: tuple, root: str) -> dict:
    """One GPU as HAMi's kubelet plugin publishes it (HAMiGpuInfo.GetDevice)."""
    product, brand, arch, cc, mem_gib = gpu
    mem = _gib(mem_gib)
    return {
        "name": f"hami-gpu-{minor}",
        "attributes": {
            "architecture": _string(arch),
            "brand": _string(brand),
            "cudaComputeCapability": _version(cc),
            "cudaDriverVersion": _version(drv[1]),
            "driverVersion": _version(drv[0]),
            "minor": _int(minor),
            "pcieBusID": _string(f"0000:{0x18 + 0x10 * minor:02x}:00.0"),
            "productName": _string(product),
            PCIE_ROOT: _string(root),
            "type": _string("hami-gpu"),
            "uuid": _string("GPU-" + _uid(rng)),
        },
        "capacity": {
            "cores": {"value": "100", "requestPolicy": {
                "default": "100", "validRange": {"min": "0", "max": "100", "step": "1"}}},
            "memory": {"value": mem, "requestPolicy": {
                "default": mem, "validRange": {"min": "1Mi", "max": mem, "step": "1Mi"}}},
        },
        "allowMultipleAllocations": True,
    }


def _nv_device(rng: random.Random, index: int, gpu: tuple, drv: tuple, root: str) -> dict:
    """A whole GPU of NVIDIA's DRA driver: no sharing, memory capacity only."""
    product, brand, arch, cc, mem_gib = gpu
    return {
        "name": f"gpu-{index}",
        "attributes": {
            "architecture": _string(arch),
            "brand": _string(brand),
            "cudaComputeCapability": _version(cc),
            "driverVersion": _version(drv[0]),
            "index": _int(index),
            "productName": _string(product),
            PCIE_ROOT: _string(root),
            "type": _string("gpu"),
            "uuid": _string("GPU-" + _uid(rng)),
        },
        "capacity": {"memory": {"value": _gib(mem_gib)}},
    }


# MIG-like partitions of a 40 GiB, 98-SM GPU: (profile, memory GiB, SMs, how many)
PROFILES = [("1g.5gb", 5, 14, 7), ("2g.10gb", 10, 28, 3), ("3g.20gb", 20, 42, 2),
            ("7g.40gb", 40, 98, 1)]


def _partitionable(rng: random.Random, pool: str, base: dict, gpus: int, per_device: bool,
                   nodes: list[dict], drv: tuple) -> list[dict]:
    """A pool of partitionable GPUs: one counter-set slice and one device slice.

    Each physical GPU is a counter set (memory, multiprocessors); the whole GPU
    and its partitions consume from it. With per_device, the device slice
    selects nodes per device (perDeviceNodeSelection) and the counter slice
    serves all nodes."""
    counter_sets = []
    devices = []
    for g in range(gpus):
        cs = f"gpu-{g}-counters"
        counter_sets.append({"name": cs, "counters": {
            "memory": {"value": "40Gi"}, "multiprocessors": {"value": "98"}}})
        uuid = "GPU-" + _uid(rng)
        profiles = [p for p in PROFILES if rng.random() < 0.7] or [PROFILES[0]]
        where: dict[str, Any] = {}
        if per_device:
            r = rng.random()
            if r < 0.6:
                where = {"nodeName": rng.choice(nodes)["metadata"]["name"]}
            elif r < 0.8:
                where = {"allNodes": True}
            else:
                where = {"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In",
                     "values": [rng.choice(ZONES)]}]}]}}
        for profile, mem, sms, count in profiles:
            for k in range(rng.randint(1, count)):
                d = {
                    "name": f"gpu-{g}-mig-{profile}-{k}",
                    "attributes": {
                        "type": _string("mig"),
                        "profile": _string(profile),
                        "parentUUID": _string(uuid),
                        "productName": _string("NVIDIA A100-PCIE-40GB"),
                        "cudaComputeCapability": _version("8.0.0"),
                        "driverVersion": _version(drv[0]),
                    },
                    "capacity": {"memory": {"value": _gib(mem)},
                                 "multiprocessors": {"value": str(sms)}},
                    "consumesCounters": [{"counterSet": cs, "counters": {
                        "memory": {"value": _gib(mem)},
                        "multiprocessors": {"value": str(sms)}}}],
                }
                d.update(where)
                devices.append(d)
    if rng.random() < 0.015:
        # A device consuming a counter set nobody declares: the pool is invalid.
        devices[-1]["consumesCounters"][0]["counterSet"] = "missing-counters"
    gen = 1
    counters_spec = dict(base)
    devices_spec = dict(base)
    if per_device:
        counters_spec = {k: v for k, v in base.items() if k != "nodeName"}
        counters_spec["allNodes"] = True
        devices_spec = {k: v for k, v in base.items() if k != "nodeName"}
        devices_spec["perDeviceNodeSelection"] = True
    pool_spec = {"name": pool, "generation": gen, "resourceSliceCount": 2}
    return [
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
         "metadata": _meta(f"{pool}-{NV}-counters"),
         "spec": {"driver": NV, "pool": pool_spec, **counters_spec,
                  "sharedCounters": counter_sets}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
         "metadata": _meta(f"{pool}-{NV}-devices"),
         "spec": {"driver": NV, "pool": dict(pool_spec), **devices_spec, "devices": devices}},
    ]


def _slices_of_pool(rng: random.Random, driver: str, pool: str, where: dict,
                    devices: list[dict], stats: dict) -> list[dict]:
    """Publish one pool's devices: one slice, or several, with the variations
    the allocator distinguishes (incomplete, stale and newer generations,
    duplicate device names)."""
    def slice_(name: str, gen: int, count: int, devs: list[dict]) -> dict:
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": _meta(name),
                "spec": {"driver": driver,
                         "pool": {"name": pool, "generation": gen, "resourceSliceCount": count},
                         **where, "devices": devs}}

    gen = rng.choice([1, 1, 1, 2, 5])
    parts = 1
    if len(devices) >= 2 and rng.random() < 0.3:
        parts = rng.randint(2, min(3, len(devices)))
    cuts = sorted(rng.sample(range(1, len(devices)), parts - 1)) if parts > 1 else []
    groups = [devices[a:b] for a, b in zip([0] + cuts, cuts + [len(devices)])]
    if rng.random() < 0.015:
        # Two slices of the pool publish the same device name: invalid pool.
        dup = json.loads(json.dumps(groups[0][0]))
        groups.append([dup])
        parts += 1
        stats["duplicate"] = True
    out = [slice_(f"{pool}-{driver}-{gen}-{i}", gen, parts, g) for i, g in enumerate(groups)]
    r = rng.random()
    if parts > 1 and r < 0.07:
        out.pop(rng.randrange(len(out)))  # a slice not published yet
        stats["incomplete"] = True
    elif 0.07 <= r < 0.30 and gen > 1:
        # The previous generation is still there, with other devices: obsolete.
        old = json.loads(json.dumps(devices[: max(1, len(devices) - 1)]))
        for d in old:
            if "taints" not in d:
                d["taints"] = []
            d["taints"].append({"key": "old", "value": "generation", "effect": "None"})
        out.append(slice_(f"{pool}-{driver}-{gen - 1}-0", gen - 1, 1, old))
        stats["stale"] = True
    elif 0.30 <= r < 0.33:
        # A newer generation is being published, one slice of two so far.
        newer = json.loads(json.dumps(devices[:1]))
        out.append(slice_(f"{pool}-{driver}-{gen + 1}-0", gen + 1, 2, newer))
        stats["newer_incomplete"] = True
    rng.shuffle(out)
    return out


def _taint(rng: random.Random, devices: list[dict]) -> None:
    for d in rng.sample(devices, rng.randint(1, min(2, len(devices)))):
        t = {"key": rng.choice(TAINT_KEYS), "effect": rng.choice(EFFECTS)}
        if rng.random() < 0.7:
            t["value"] = rng.choice(["true", "pending", "1"])
        d.setdefault("taints", []).append(t)


def _cluster(rng: random.Random) -> tuple[list[dict], list[dict], dict]:
    nodes = []
    for i in range(rng.randint(1, 4)):
        name = f"node-{i}"
        labels = {"kubernetes.io/hostname": name,
                  "topology.kubernetes.io/zone": rng.choice(ZONES),
                  "example.com/tier": rng.choice(TIERS)}
        if rng.random() < 0.5:
            labels["devshare.io/dra"] = "true"
        nodes.append({"apiVersion": "v1", "kind": "Node",
                      "metadata": {"name": name, "labels": labels}})
    slices: list[dict] = []
    info: dict[str, Any] = {"hami": {}, "nv": {}, "mig": {}, "stats": {}, "products": set(),
                            "roots": set(), "drivers": set(), "ccs": set(), "mems": set()}
    for node in nodes:
        name = node["metadata"]["name"]
        gpu = rng.choice(GPUS)
        drv = rng.choice(DRIVERS)
        n = rng.randint(1, 8)
        devices = []
        for minor in range(n):
            g = gpu if rng.random() < 0.85 else rng.choice(GPUS)
            root = f"pci0000:{(minor // 2) * 0x20:02x}"
            devices.append(_hami_device(rng, minor, g, drv, root))
            info["products"].add(g[0])
            info["ccs"].add(g[3])
            info["mems"].add(g[4])
            info["roots"].add(root)
        info["drivers"].add(drv[0])
        if rng.random() < 0.2:
            _taint(rng, devices)
            info["stats"]["taints"] = True
        if rng.random() < 0.03:
            for d in rng.sample(devices, 1):
                d["bindingConditions"] = ["hami.io/prepared"]
                d["bindingFailureConditions"] = ["hami.io/failed"]
                d["bindsToNode"] = True
            info["stats"]["binding"] = True
        info["hami"][name] = devices
        slices += _slices_of_pool(rng, HAMI, name, {"nodeName": name}, devices, info["stats"])
        if rng.random() < 0.3:
            whole = [_nv_device(rng, i, rng.choice(GPUS), drv, f"pci0000:{0x80 + i * 0x20:02x}")
                     for i in range(rng.randint(1, 4))]
            if rng.random() < 0.2:
                _taint(rng, whole)
            info["nv"][name] = whole
            slices += _slices_of_pool(rng, NV, name, {"nodeName": name}, whole, info["stats"])
        if rng.random() < 0.25:
            part = _partitionable(rng, f"{name}-mig", {"nodeName": name}, rng.randint(1, 2),
                                  False, nodes, drv)
            info["mig"][name] = part[1]["spec"]["devices"]
            slices += part
            info["stats"]["partitionable"] = True
    if rng.random() < 0.12:
        part = _partitionable(rng, "shared-mig", {}, rng.randint(1, 2), True, nodes,
                              rng.choice(DRIVERS))
        info["mig"]["*"] = part[1]["spec"]["devices"]
        slices += part
        info["stats"]["per_device"] = True
    if rng.random() < 0.1:
        # Network-attached GPUs reachable from one zone (rarely a selector of
        # two terms, which the allocator cannot turn into a result).
        terms = [{"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In",
                                        "values": [rng.choice(ZONES)]}]}]
        if rng.random() < 0.25:
            terms.append({"matchExpressions": [{"key": "example.com/tier", "operator": "In",
                                                "values": ["gold"]}]})
        devs = []
        for i in range(rng.randint(1, 3)):
            d = _nv_device(rng, i, rng.choice(GPUS), rng.choice(DRIVERS), "pci0000:f0")
            d["name"] = f"net-gpu-{i}"
            devs.append(d)
        info["net"] = devs
        slices += _slices_of_pool(rng, NET, "fabric", {"nodeSelector": {"nodeSelectorTerms": terms}},
                                  devs, info["stats"])
        info["stats"]["network"] = True
    return nodes, slices, info


# --------------------------------------------------------------------------
# CEL selectors


def _q(s: str) -> str:
    return json.dumps(s)


def _atom(rng: random.Random, info: dict, driver: str) -> str:
    """One comparison on a device of `driver` (values drawn from the cluster)."""
    a = f"device.attributes[{_q(driver)}]"
    c = f"device.capacity[{_q(driver)}]"
    products = sorted(info["products"]) or [GPUS[0][0]]
    mems = sorted(info["mems"]) or [40]
    ccs = sorted(info["ccs"] | {"8.0.0"})
    choices = [
        lambda: f"{a}.productName == {_q(rng.choice(products))}",
        lambda: f"{a}.productName != {_q(rng.choice(products))}",
        lambda: f"{a}.productName in [{', '.join(_q(p) for p in rng.sample(products, min(2, len(products))))}]",
        lambda: f"{a}.cudaComputeCapability.compareTo(semver({_q(rng.choice(ccs))})) >= 0",
        lambda: f"{a}.cudaComputeCapability.isGreaterThan(semver({_q(rng.choice(ccs))}))",
        lambda: f"{a}.cudaComputeCapability.isLessThan(semver({_q(rng.choice(['8.0.0', '8.9.0', '9.0.0']))}))",
        lambda: f"{a}.driverVersion.compareTo(semver({_q(rng.choice(['535.0.0', '550.54.15', '560.0.0']))})) {rng.choice(['<', '>=', '=='])} 0",
        lambda: f"semver({_q(rng.choice(['550.0.0', '570.0.0']))}).isLessThan({a}.driverVersion)",
        lambda: f"{c}.memory.compareTo(quantity({_q(_gib(rng.choice(mems)))})) {rng.choice(['>=', '<', '=='])} 0",
        lambda: f"{c}.memory.isGreaterThan(quantity({_q(rng.choice(['16Gi', '20000Mi', '24Gi', '40G']))}))",
        lambda: f"{c}.memory.isLessThan(quantity({_q(rng.choice(['32Gi', '48Gi', '81920Mi']))}))",
        lambda: f"has({a}.productName)",
        lambda: f"!has({a}.profile)",
        lambda: f"device.attributes[{_q('resource.kubernetes.io')}].pcieRoot == {_q(rng.choice(sorted(info['roots']) or ['pci0000:00']))}",
        lambda: f"device.driver == {_q(driver)}",
        lambda: f"device.driver in [{_q(HAMI)}, {_q(NV)}]",
        lambda: f"{a}.type == {_q(rng.choice(['hami-gpu', 'gpu', 'mig']))}",
    ]
    if driver == HAMI:
        choices += [
            lambda: f"{a}.minor {rng.choice(['<', '<=', '>', '>=', '==', '!='])} {rng.randint(0, 7)}",
            lambda: f"{a}.minor in [{', '.join(str(x) for x in sorted(rng.sample(range(8), 3)))}]",
            lambda: f"{c}.cores.compareTo(quantity({_q(rng.choice(['100', '50', '1']))})) >= 0",
            lambda: f"device.allowMultipleAllocations",
            lambda: f"{a}.architecture == {_q(rng.choice(['Ampere', 'Hopper', 'Turing']))}",
        ]
    elif driver == NV:
        choices += [
            lambda: f"{a}.profile in [{_q('1g.5gb')}, {_q('2g.10gb')}]",
            lambda: f"{c}.multiprocessors.compareTo(quantity({_q(rng.choice(['14', '42']))})) > 0",
            lambda: f"!device.allowMultipleAllocations",
        ]
    return rng.choice(choices)()


def _odd_selector(rng: random.Random) -> str:
    """A selector that fails to compile or may fail at run time."""
    return rng.choice([
        f"device.attributes[{_q(HAMI)}].minor == 1 &&",                      # syntax error
        f"device.attributes[{_q(HAMI)}].productName > 3",                    # no such overload at run time
        "device.nosuchfield == 1",                                           # undeclared field
        f"device.capacity[{_q(HAMI)}].memory > 0",                           # compile: quantity > int
        f"device.attributes[{_q(NV)}].profile == {_q('1g.5gb')}",           # no such key on other devices
        f"device.attributes[{_q(HAMI)}].minor == {_q('1')}",                 # int vs string: false
        f"device.attributes[{_q(HAMI)}].minor < 3.5",                        # int vs double
        "1 + 1",                                                             # not a bool
    ])


def _selector(rng: random.Random, info: dict, driver: str) -> str:
    """A selector mixing atoms with && || ! and parentheses."""
    if rng.random() < 0.025:
        return _odd_selector(rng)
    atoms = [_atom(rng, info, driver) for _ in range(rng.choice([1, 1, 2, 2, 3]))]
    expr = atoms[0]
    for a in atoms[1:]:
        op = "&&" if rng.random() < 0.4 else "||"
        if rng.random() < 0.15:
            a = f"!({a})"
        expr = f"({expr}) {op} ({a})" if rng.random() < 0.5 else f"{expr} {op} {a}"
    if driver and rng.random() < 0.85:
        # Guard by driver, as classes usually do, so other drivers' devices do
        # not fail with "no such key".
        expr = f"device.driver == {_q(driver)} && ({expr})"
    return expr


# --------------------------------------------------------------------------
# Classes and claims


def _classes(rng: random.Random, info: dict) -> list[dict]:
    def cls(name: str, exprs: list[str], config: bool = False) -> dict:
        spec: dict[str, Any] = {"selectors": [{"cel": {"expression": e}} for e in exprs]}
        if config:
            spec["config"] = [{"opaque": {"driver": HAMI, "parameters": {
                "apiVersion": "gpu.resource.hami.io/v1alpha1", "kind": "HAMiConfig",
                "sharing": {"strategy": "TimeSlicing"}}}}]
        return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                "metadata": _meta(name), "spec": spec}

    hami_sel = [f"device.driver == {_q(HAMI)}"]
    if rng.random() < 0.5:
        hami_sel.append(f"device.attributes[{_q(HAMI)}].type == {_q('hami-gpu')}")
    out = [
        cls("hami-gpu", hami_sel, config=rng.random() < 0.3),
        cls("nvidia-gpu", [f"device.driver == {_q(NV)} && device.attributes[{_q(NV)}].type == {_q('gpu')}"]),
        cls("mig", [f"device.driver == {_q(NV)} && device.attributes[{_q(NV)}].type == {_q('mig')}"]),
        cls("any-gpu", [] if rng.random() < 0.5 else [f"device.driver in [{_q(HAMI)}, {_q(NV)}, {_q(NET)}]"]),
    ]
    if "net" in info:
        out.append(cls("net-gpu", [f"device.driver == {_q(NET)}"]))
    for i in range(rng.randint(0, 2)):
        driver = rng.choice([HAMI, HAMI, NV])
        out.append(cls(f"custom-{i}", [_selector(rng, info, driver)]))
    rng.shuffle(out)
    return out


def _capacity(rng: random.Random, info: dict) -> dict:
    req: dict[str, str] = {}
    if rng.random() < 0.75:
        req["cores"] = rng.choice(["10", "20", "25", "30", "50", "60", "100", "0", "33500m", "12.5",
                                   "101", str(rng.randint(1, 100)), str(rng.randint(1, 50))])
    if rng.random() < 0.75:
        mem = rng.choice(sorted(info["mems"]) or [16])
        req["memory"] = rng.choice([
            "1Gi", "4Gi", "8Gi", "10Gi", _gib(max(1, mem // 2)), _gib(mem), _gib(mem + 1),
            "1500M",            # not a whole number of Mi: rounded up to the step
            "3000000000",       # bytes, off-step
            "512Ki",            # under the minimum of 1Mi
            f"{rng.randint(1, 20000)}Mi",
        ])
    return {"requests": req} if req else {}


def _request_body(rng: random.Random, info: dict, cls_names: list[str], shared_hint: bool,
                  allow_all: bool) -> dict:
    cls = rng.choice(cls_names)
    body: dict[str, Any] = {"deviceClassName": cls}
    if rng.random() < 0.007:
        body["deviceClassName"] = "no-such-class"
    driver = {"hami-gpu": HAMI, "nvidia-gpu": NV, "mig": NV, "net-gpu": NET}.get(cls, rng.choice([HAMI, NV]))
    if rng.random() < 0.3:
        body["selectors"] = [{"cel": {"expression": _selector(rng, info, driver)}}
                             for _ in range(rng.randint(1, 2))]
    if allow_all and rng.random() < 0.1:
        body["allocationMode"] = "All"
    else:
        body["allocationMode"] = "ExactCount"
        body["count"] = rng.choice([1, 1, 1, 1, 1, 1, 2, 2, 3])
    if (cls == "hami-gpu" or shared_hint) and rng.random() < 0.6:
        cap = _capacity(rng, info)
        if cap:
            body["capacity"] = cap
    if info["stats"].get("taints") and rng.random() < 0.35:
        tols = []
        for _ in range(rng.randint(1, 2)):
            t: dict[str, Any] = {"operator": rng.choice(["Exists", "Equal"])}
            if rng.random() < 0.8:
                t["key"] = rng.choice(TAINT_KEYS)
            if t["operator"] == "Equal":
                t["value"] = rng.choice(["true", "pending", "1"])
            if rng.random() < 0.5:
                t["effect"] = rng.choice(["NoSchedule", "NoExecute"])
            tols.append(t)
        body["tolerations"] = tols
    if rng.random() < 0.03:
        body["adminAccess"] = True
    return body


def _claim(rng: random.Random, info: dict, index: int, cls_names: list[str]) -> dict:
    requests = []
    for r in range(rng.randint(1, 3) if rng.random() < 0.4 else 1):
        name = f"req-{r}"
        if rng.random() < 0.2:
            subs = []
            for s in range(rng.randint(2, 3)):
                body = _request_body(rng, info, cls_names, False, allow_all=True)
                body.pop("adminAccess", None)  # not allowed in subrequests
                subs.append({"name": f"sub-{s}", **body})
            requests.append({"name": name, "firstAvailable": subs})
        else:
            requests.append({"name": name, "exactly": _request_body(rng, info, cls_names, False, True)})
    spec: dict[str, Any] = {"requests": requests}
    if rng.random() < 0.25:
        constraints = []
        for _ in range(rng.randint(1, 2)):
            c: dict[str, Any] = {}
            if rng.random() < 0.5 and len(requests) > 1:
                c["requests"] = sorted(rng.sample([r["name"] for r in requests], 2))
            if rng.random() < 0.55:
                c["matchAttribute"] = rng.choice([
                    PCIE_ROOT, f"{HAMI}/productName", f"{HAMI}/cudaComputeCapability",
                    f"{NV}/parentUUID", f"{HAMI}/architecture"])
            else:
                c["distinctAttribute"] = rng.choice([f"{HAMI}/uuid", f"{HAMI}/minor", PCIE_ROOT])
            constraints.append(c)
        spec["constraints"] = constraints
    if rng.random() < 0.15:
        cfg: dict[str, Any] = {"opaque": {"driver": HAMI, "parameters": {"hint": rng.choice(["a", "b"])}}}
        if rng.random() < 0.5:
            cfg["requests"] = [requests[0]["name"]]
        spec["config"] = [cfg]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": _meta(f"claim-{index}", namespace="default", uid=_uid(rng)),
            "spec": {"devices": spec}, "status": {}}


def _search_size(claims: list[dict], devices_per_node: int) -> int:
    """An upper bound on the allocator's backtracking for one node."""
    size = 1
    for c in claims:
        for r in c["spec"]["devices"]["requests"]:
            bodies = [r["exactly"]] if "exactly" in r else r["firstAvailable"]
            size *= sum(comb(devices_per_node, b.get("count", 1)) for b in bodies)
    return size


def _allocated(rng: random.Random, info: dict, nodes: list[dict], slices: list[dict]) -> list[dict]:
    out = []
    for i in range(rng.choice([0, 0, 1, 1, 2, 3, 4])):
        node = rng.choice(nodes)["metadata"]["name"]
        results = []
        hami = info["hami"].get(node, [])
        whole = info["nv"].get(node, [])
        mig = info["mig"].get(node, [])
        for k in range(rng.randint(1, 3)):
            pick = rng.random()
            if hami and pick < 0.6:
                d = rng.choice(hami)
                mem = d["capacity"]["memory"]["value"]
                if rng.random() < 0.85:
                    consumed = {"cores": rng.choice(["10", "30", "50", "100"]),
                                "memory": rng.choice(["1Gi", "4Gi", "8Gi", mem])}
                    results.append({"request": f"req-{k}", "driver": HAMI, "pool": node,
                                    "device": d["name"], "shareID": _uid(rng),
                                    "consumedCapacity": consumed})
                else:  # held whole (before consumable capacity, or admin access)
                    r = {"request": f"req-{k}", "driver": HAMI, "pool": node, "device": d["name"]}
                    if rng.random() < 0.3:
                        r["adminAccess"] = True
                    results.append(r)
            elif whole and pick < 0.8:
                d = rng.choice(whole)
                results.append({"request": f"req-{k}", "driver": NV, "pool": node, "device": d["name"]})
            elif mig:
                d = rng.choice(mig)
                results.append({"request": f"req-{k}", "driver": NV, "pool": f"{node}-mig",
                                "device": d["name"]})
        if not results:
            continue
        out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                    "metadata": _meta(f"held-{i}", namespace="default", uid=_uid(rng)),
                    "spec": {"devices": {"requests": [
                        {"name": f"req-{k}", "exactly": {"deviceClassName": "any-gpu",
                                                         "allocationMode": "ExactCount", "count": 1}}
                        for k in sorted({int(r["request"][4:]) for r in results})]}},
                    "status": {"allocation": {
                        "devices": {"results": results},
                        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}})
    return out


SEARCH_LIMIT = 200_000


def generate(seed: int, sid: int) -> dict:
    """Scenario `sid` of `seed`: a pure function of both."""
    rng = random.Random(f"dra:{seed}:{sid}")
    nodes, slices, info = _cluster(rng)
    classes = _classes(rng, info)
    cls_names = [c["metadata"]["name"] for c in classes]
    # Mostly HAMi's class; the others as often as the cluster has their devices.
    weighted = cls_names + ["hami-gpu"] * 6
    if info["nv"]:
        weighted += ["nvidia-gpu"]
    if info["mig"]:
        weighted += ["mig"] * 2
    if "net" in info:
        weighted += ["net-gpu"] * 2
    if not info["nv"] and rng.random() < 0.7:
        weighted.remove("nvidia-gpu")
    if not info["mig"] and rng.random() < 0.7:
        weighted.remove("mig")
    claims = [_claim(rng, info, i, weighted) for i in range(rng.choice([1, 1, 1, 1, 2, 2, 3]))]
    per_node = max(len(s["spec"].get("devices", [])) for s in slices) * 2 + 4
    while _search_size(claims, per_node) > SEARCH_LIMIT:
        # Keep the exhaustive search small: drop the last request or claim.
        last = claims[-1]["spec"]["devices"]
        if len(claims) > 1:
            claims.pop()
        elif len(last["requests"]) > 1:
            last["requests"].pop()
            last.pop("constraints", None)
            last.pop("config", None)
        else:
            break
    allocated = _allocated(rng, info, nodes, slices)
    return {"id": sid, "nodes": nodes, "slices": slices, "classes": classes,
            "claims": claims, "allocated": allocated}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--start", type=int, default=0, help="first scenario number")
    args = ap.parse_args(argv)
    out = sys.stdout
    for sid in range(args.start, args.start + args.count):
        out.write(json.dumps(generate(args.seed, sid), separators=(",", ":"), sort_keys=False))
        out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
