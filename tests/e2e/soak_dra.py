"""The soak's DRA part (soak_churn.py uses it when SOAK_DRA is 1): nodes whose
GPUs are published as HAMi's DRA driver publishes them (ResourceSlices), the
DeviceClass hami-gpu the replicas serve, ResourceClaimTemplates asking shares
of a GPU, pods from them arriving beside the annotation pods, and the
recount of the DRA devices from the API objects (dra_recount.py).

  SOAK_DRA_NODES      nodes of 4 GPUs (40 or 80 GiB), default 15 % of SOAK_NODES (at least 4)
  SOAK_DRA_FRACTION   DRA pods arriving for each annotation pod (0.25), a Poisson process of
                      their own (its own random sequence: the annotation pods are those of
                      a soak without DRA)

The claims of a deleted pod are deleted once the resourceclaim controller has
deallocated them, as the garbage collector would (none runs).
"""

from __future__ import annotations

import collections
import os
import random
import time

import dra_recount

ENV = os.environ
NS = "/api/v1/namespaces/default"
DRA = "/apis/resource.k8s.io/v1"
DRIVER = "hami-core-gpu.project-hami.io"
# (template, cores, memory, weight); "pair" is a pod with two claims of share-25.
SHAPES = [("share-10", 10, "4Gi", 0.30), ("share-25", 25, "10Gi", 0.30), ("share-50", 50, "20Gi", 0.25),
          ("whole", 100, "40Gi", 0.10), ("pair", 0, "", 0.05)]
GPU_MEM = [("40Gi", 0.7), ("80Gi", 0.3)]


def enabled() -> bool:
    return ENV.get("SOAK_DRA", "0") not in ("", "0")


def serve_args() -> list[str]:
    return ["--dra-device-class", "hami-gpu", "--dra-policy", "binpack"] if enabled() else []


def gpu_json(minor: int, memory: str) -> dict:
    def cap(value: str, default: str, low: str, step: str) -> dict:
        return {"value": value, "requestPolicy": {"default": default,
                                                  "validRange": {"min": low, "max": value, "step": step}}}
    return {"name": f"hami-gpu-{minor}", "attributes": {"type": {"string": "hami-gpu"}, "minor": {"int": minor}},
            "capacity": {"cores": cap("100", "100", "0", "1"), "memory": cap(memory, memory, "1Mi", "1Mi")},
            "allowMultipleAllocations": True}


def node_json(name: str) -> dict:
    res = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "dra": "on"}},
            "spec": {}, "status": {"capacity": res, "allocatable": res}}


def slice_json(node: str, memories: list[str]) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpus"},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [gpu_json(i, m) for i, m in enumerate(memories)]}}


def pod_json(name: str, shape: str) -> dict:
    """A pod whose claims come from the template SHAPE, for the soak's one kube-scheduler (its
    profile devshare-scheduler: the extender is not called for a pod asking none of its
    resources, kube-scheduler binds it where its claims are allocated)."""
    claims = [("gpu", shape)] if shape != "pair" else [("gpu", "share-25"), ("gpu2", "share-25")]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"soak": "1", "dra": "1"}},
            "spec": {"schedulerName": "devshare-scheduler", "terminationGracePeriodSeconds": 0,
                     "resourceClaims": [{"name": c, "resourceClaimTemplateName": t} for c, t in claims],
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": "100m"},
                                                   "claims": [{"name": c} for c, _ in claims]}}]}}


def mean_cores() -> float:
    total = sum(w for *_, w in SHAPES)
    return sum((c if s != "pair" else 50) * w for s, c, _, w in SHAPES) / total


class DraChurn:
    def __init__(self, soak) -> None:
        self.soak = soak
        self.rng = random.Random(soak.seed * 7919 + 17)
        self.nodes = int(ENV.get("SOAK_DRA_NODES") or max(4, soak.nodes_wanted * 15 // 100))
        self.fraction = float(ENV.get("SOAK_DRA_FRACTION", "0.25"))
        self.result: dict | None = None
        self.counts = collections.Counter()
        self.max_pending_room = 0.0
        self.reported: set[str] = set()
        self.seen: dict[str, set[str]] = collections.defaultdict(set)  # kind -> problems seen

    # --- set-up ---
    def setup(self) -> str | None:
        """Nodes, slices, the DeviceClass and the templates; the first error, or None."""
        api = self.soak.api
        calls = [("POST", "/apis/resource.k8s.io/v1/deviceclasses",
                  {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "hami-gpu"},
                   "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})]
        for name, cores, memory, _ in SHAPES:
            if name == "pair":
                continue
            calls.append(("POST", f"{DRA}/namespaces/default/resourceclaimtemplates",
                          {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                           "metadata": {"name": name, "namespace": "default"},
                           "spec": {"spec": {"devices": {"requests": [
                               {"name": "gpu", "exactly": {"deviceClassName": "hami-gpu", "capacity": {
                                   "requests": {"cores": str(cores), "memory": memory}}}}]}}}}))
        for method, path, body in calls:
            status, data = api.call(method, path, body)
            if not 200 <= status < 300:
                return f"{method} {path}: HTTP {status} {data[:200]!r}"

        def make(i: int) -> str | None:
            rnd = random.Random(self.soak.seed * 1000033 + i)
            name = f"dra-{i:04d}"
            err = self.soak.register_node(node_json(name))
            if err:
                return err
            status, data = api.call("POST", f"{DRA}/resourceslices",
                                    slice_json(name, [self.pick(rnd, GPU_MEM) for _ in range(4)]))
            return None if 200 <= status < 300 else f"slice of {name}: HTTP {status} {data[:200]!r}"

        errors = [e for e in self.soak.pool.map(make, range(self.nodes)) if e]
        return errors[0] if errors else None

    @staticmethod
    def pick(rng: random.Random, table: list) -> str:
        return rng.choices([row[0] for row in table], [row[-1] for row in table])[0]

    def shape(self) -> str:
        return self.pick(self.rng, SHAPES)

    def rate(self, annotation_rate: float) -> float:
        return annotation_rate * self.fraction

    # --- the recount ---
    def poll(self, pods: list[dict], nodes: list[dict]) -> dict | None:
        api = self.soak.api
        claims = api.json("GET", f"{DRA}/resourceclaims", timeout=30)
        slices = api.json("GET", f"{DRA}/resourceslices", timeout=30)
        if claims is None or slices is None:
            return None
        result = dra_recount.recount(claims["items"], slices["items"], pods, nodes)
        result["room"] = {k.split("/", 1)[1]: v for k, v in result["room"].items()}
        self.result = result
        for kind in ("over", "unknown", "shared", "reserved"):  # split: see note_split
            for p in result["problems"][kind]:
                if p not in self.seen[kind]:
                    self.seen[kind].add(p)
                    log(f"DRA {kind}: {p}")
        self.collect(claims["items"], pods)
        return result

    def collect(self, claims: list[dict], pods: list[dict]) -> None:
        """Deletes the claims of pods that are gone, once deallocated (the garbage collector's part):
        of pods the soak deleted, and not in the LIST of pods. (A pod missing from that LIST may
        have been created after it: the claims' LIST comes later.)"""
        live = {p["metadata"]["uid"] for p in pods}
        with self.soak.lock:
            deleted = {n for n, rec in self.soak.pods.items() if rec["deleted"] is not None}
        for c in claims:
            meta = c["metadata"]
            owners = [o for o in meta.get("ownerReferences", []) if o.get("kind") == "Pod"]
            if (owners and owners[0]["uid"] not in live and owners[0].get("name") in deleted
                    and not c.get("status", {}).get("allocation") and not meta.get("deletionTimestamp")):
                self.soak.pool.submit(self.delete_claim, meta["name"], meta["uid"])

    def delete_claim(self, name: str, uid: str) -> None:
        status, _ = self.soak.api.call("DELETE", f"{DRA}/namespaces/default/resourceclaims/{name}",
                                       {"preconditions": {"uid": uid}}, timeout=30)
        if 200 <= status < 300:
            self.counts["claims_collected"] += 1

    def note_split(self, problems: list[str]) -> None:
        """Split pods the soak did not delete between its LIST of pods and that of claims."""
        for p in problems:
            if p not in self.seen["split"]:
                self.seen["split"].add(p)
                log(f"DRA split: {p}")

    def new_problems(self, kinds: tuple[str, ...]) -> list[str]:
        """The problems of these kinds the last recount found and no check reported yet."""
        if self.result is None:
            return []
        out = [p for k in kinds for p in self.result["problems"][k] if (k, p) not in self.reported]
        self.reported.update((k, p) for k in kinds for p in self.result["problems"][k])
        return out

    def summary(self) -> dict:
        return {"nodes": self.nodes, "fraction": self.fraction,
                "over_capacity": len(self.seen["over"]) + len(self.seen["unknown"]),
                "double_allocations": len(self.seen["shared"]) + len(self.seen["reserved"]),
                "split": len(self.seen["split"]),
                "problems": {k: sorted(v)[:10] for k, v in self.seen.items() if v},
                "max_pending_while_room_s": round(self.max_pending_room, 1),
                "claims_collected": self.counts["claims_collected"],
                "last_counts": (self.result or {}).get("counts", {})}


def log(msg: str) -> None:
    print(f"soak: [{time.strftime('%H:%M:%S')}] {msg}", flush=True)
