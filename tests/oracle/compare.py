#!/usr/bin/env python3
"""Differential oracle: devshare against HAMi's own code, and Filter speed side by side.

    compare.py --scenarios 10000 [--seed 1] [--harness tests/oracle/bin/hami-oracle]
    compare.py --speed 100,1000,5000 [--harness ...]

Scenarios come from scenarios.py (seeded). Each is answered by

  * devshare, through the Python package (the same C++ core), and
  * HAMi, through the Go harness (tests/oracle/harness), which calls HAMi's
    exported functions: node and pod annotation codecs, the NVIDIA device's
    GenerateResourceRequests and Fit, the GPU policy ordering, node scoring and,
    through the scheduler with a fake clientset, Filter.

Both answer in one schema (one JSON object per scenario, see RESULT_SCHEMA), and
every function's answers are compared. A disagreement is either one of the
intentional differences of docs/compatibility.md, which `classify` recognises
and counts under its name, or a devshare bug. When the harness cannot be built
or run (no Go toolchain, or HAMi's module cannot be downloaded) that is reported
as skipped with the reason, never as agreement.

Each scenario number also gives two Volcano scenarios (scenarios.py), answered by Volcano's
own code through its harness (tests/oracle/volcano): a volcano.sh/node-vgpu-register value
(vgpu.NewGPUDevices) and a cluster with a pending pod, where every node is decided by the
vGPU FilterNode, ScoreNode and Allocate. devshare answers with its Volcano device config, in
its own decisions and with Volcano's device order and node score (VOLCANO_ROWS).

Independently of the harness, every scenario is also checked against the
behaviour spec (shared/spec/hami-behaviour.md) where it pins a value exactly:
the generator's own device and pod data (decoding), Go's json.Marshal output
(node encoding), the request rules (§3.3), the node score formula (§5.1) and
the node choice (§5.1). Those checks are labelled "spec", not "HAMi".

The closing line is "oracle: N passed, M failed[, 1 skipped]" (one count per
scenario and side; the HAMi side is one skipped check when the harness is not
available), and with --results FILE the lines "oracle-spec P F 0" and
"oracle-hami P F S" are appended for `make test`.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import itertools
import json
import math
import os
import struct
import subprocess
import sys
import time
from collections import Counter, defaultdict
from typing import Any, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenarios as gen  # noqa: E402

import devshare  # noqa: E402

FUNCTIONS = ["node_decode", "node_encode", "pod_decode", "pod_encode", "requests", "fit", "score", "filter"]

RESULT_SCHEMA = """
{"id": scenario id,
 "node_decode": {node: [device dict] | {"error": text}},
 "node_encode": {node: register value written from "devices"},
 "pod_decode":  {pod: [[{"uuid","type","usedmem","usedcores"}]] | {"error": text}},
 "pod_encode":  {pod: allocated value written from "devices"},
 "requests":    [per container: {"nums","type","memreq","mempercentage","coresreq"} | null],
 "fit":         {node: {"fits": bool, "reason": text, "devices": [[uuid, ...] per container]}},
 "score":       {node: float32, for every node where the pod fits},
 "filter":      {"node": name | null, "devices": [[{"uuid","usedmem","usedcores"}]] | null,
                 "annotation": vgpu-devices-allocated value | null, "failed": {node: reason},
                 "error": text | null}}
"""

REGISTER = "hami.io/node-nvidia-register"
ALLOCATED = "hami.io/vgpu-devices-allocated"


def f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


# ---------------------------------------------------------------------------------------------
# Kubernetes objects from a scenario (devshare side; the harness builds the same in Go).

def node_object(node: dict) -> dict:
    annotations = {REGISTER: node["register"], **node["annotations"]}
    slots = sum(d["count"] for d in node["devices"])
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node["name"], "annotations": annotations},
            "status": {"allocatable": {"nvidia.com/gpu": str(slots)}}}


def held_pod_object(pod: dict) -> dict:
    containers = [{"name": f"c{i}", "resources": {"limits": {"nvidia.com/gpu": str(len(c))} if c else {}}}
                  for i, c in enumerate(pod["devices"])]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod["name"], "namespace": pod["namespace"], "uid": f"uid-{pod['name']}",
                         "annotations": {"hami.io/vgpu-node": pod["node"], ALLOCATED: pod["allocated"],
                                         "hami.io/bind-phase": "success"}},
            "spec": {"nodeName": pod["node"], "containers": containers}, "status": {"phase": "Running"}}


def pod_object(pod: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod["name"], "namespace": pod["namespace"], "uid": pod["uid"],
                         "annotations": dict(pod["annotations"])},
            "spec": {"containers": [{"name": c["name"], "resources": {"limits": c["limits"]}}
                                    for c in pod["containers"]]},
            "status": {"phase": "Pending"}}


def build_cluster(s: dict, reasons: bool = True, hami_exact: str = "none") -> devshare.Cluster:
    cluster = devshare.Cluster({"scheduler": {**s["scheduler"], "reasons": reasons, "hami_exact": hami_exact}})
    for n in s["nodes"]:
        cluster.add_node(node_object(n))
    for p in s["pods"]:
        cluster.add_pod(held_pod_object(p))
    if s.get("quota"):
        cluster.set_quota("default", "gpu-quota", s["quota"])
    return cluster


# ---------------------------------------------------------------------------------------------
# devshare's answers

def _devices_json(containers) -> list:
    return [[{"uuid": cd.uuid, "type": cd.type, "usedmem": cd.usedmem, "usedcores": cd.usedcores} for cd in c]
            for c in containers]


def devshare_side(s: dict, hami_exact: str = "none") -> dict:
    """devshare's answers; `hami_exact` selects rows of docs/compatibility.md decided as HAMi does."""
    out: dict[str, Any] = {"id": s["id"]}
    out["node_decode"] = {}
    out["node_encode"] = {}
    for n in s["nodes"]:
        try:
            out["node_decode"][n["name"]] = [d.to_dict() for d in devshare.decode_node_devices(n["register"], "json")]
        except ValueError as e:
            out["node_decode"][n["name"]] = {"error": str(e)}
        out["node_encode"][n["name"]] = devshare.encode_node_devices([devshare.Device(**d) for d in n["devices"]])
    out["pod_decode"] = {}
    out["pod_encode"] = {}
    for p in s["pods"]:
        try:
            out["pod_decode"][p["name"]] = _devices_json(devshare.decode_pod_devices(p["allocated"]))
        except ValueError as e:
            out["pod_decode"][p["name"]] = {"error": str(e)}
        out["pod_encode"][p["name"]] = devshare.encode_pod_devices(
            [[devshare.ContainerDevice(**cd) for cd in c] for c in p["devices"]])
    reqs = []
    for c in s["pod"]["containers"]:
        r = devshare.container_requests({"name": c["name"], "resources": {"limits": c["limits"]}}).get("NVIDIA")
        reqs.append(None if r is None else {"nums": r.nums, "type": "NVIDIA", "memreq": r.memreq,
                                            "mempercentage": r.mem_percentage, "coresreq": r.coresreq})
    out["requests"] = reqs

    cluster = build_cluster(s, hami_exact=hami_exact)
    pod = pod_object(s["pod"])
    fit = {}
    for n in s["nodes"]:
        try:
            r = cluster.filter(pod, nodes=[n["name"]], now=0)
        except ValueError as e:
            fit[n["name"]] = {"fits": False, "reason": f"error: {e}", "devices": []}
            continue
        if r.node is not None:
            fit[n["name"]] = {"fits": True, "reason": "",
                              "devices": [[cd.uuid for cd in c] for c in r.devices.get("NVIDIA", [])]}
        else:
            fit[n["name"]] = {"fits": False, "reason": r.failed.get(n["name"], ""), "devices": []}
    out["fit"] = fit
    try:
        r = cluster.filter(pod, now=0)
        out["score"] = {k: f32(v) for k, v in r.scores.items()}
        out["filter"] = {"node": r.node,
                         "devices": _devices_json(r.devices.get("NVIDIA", [])) if r.node else None,
                         "annotation": r.annotations.get(ALLOCATED) if r.node else None,
                         "failed": dict(r.failed) if r.node is None else {},
                         "error": None, "has_requests": r.has_requests}
    except ValueError as e:
        out["score"] = {}
        out["filter"] = {"node": None, "devices": None, "annotation": None, "failed": {}, "error": str(e)}
    return out


def _stamp_time(value: Optional[str]) -> Optional[int]:
    """The Unix time of a "Requesting_2006-01-02 15:04:05" stamp (UTC), or None."""
    if not value or not value.startswith("Requesting_"):
        return None
    try:
        t = datetime.datetime.strptime(value[len("Requesting_"):], "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None
    return int(t.replace(tzinfo=datetime.timezone.utc).timestamp())


def devshare_handshakes(hs: dict, hm: dict, hami_exact: str = "none") -> list[dict]:
    """devshare's registration passes over the handshake scenario `hs`, at the times and with the
    values HAMi's run set (kept values are each side's own), as {"usable", "after"} per step.
    HAMi reads its clock during the pass: a stamp devshare writes at the pass's start equals HAMi's
    when HAMi's lies between the start and the end of its pass."""
    key = "hami.io/node-handshake"
    memory: dict = {}
    handshake = registered = None
    allocatable = 0
    out = []
    for step, theirs in zip(hs["steps"], hm["steps"]):
        if step["handshake"] == "absent":
            handshake = None
        elif step["handshake"] != "keep":
            handshake = theirs["handshake"]
        if step["registered"] != "keep":
            registered = None if step["registered"] == "absent" else step["registered"]
        if step["allocatable"] >= 0:
            allocatable = step["allocatable"]
        r = devshare.hami_scheduler_pass({"handshake": handshake, "registered": registered,
                                          "allocatable": allocatable}, memory, theirs["now"], key,
                                         hami_exact=hami_exact)
        if key in r["write"]:
            handshake = r["write"][key]
            at = _stamp_time(theirs["after"])
            if _stamp_time(handshake) == theirs["now"] and at is not None and theirs["now"] <= at <= theirs["end"]:
                handshake = theirs["after"]
        out.append({"usable": bool(r["usable"] and memory.get("cached")), "after": handshake})
    return out


def compare_handshakes(hs: dict, hm: dict, setting: str) -> tuple[str, Optional[str], str]:
    """("agree" | "intentional" | "disagree", label, the first step where they differ)."""
    def first_difference(hami_exact: str) -> Optional[str]:
        mine = devshare_handshakes(hs, hm, hami_exact)
        for k, (a, b) in enumerate(zip(mine, hm["steps"])):
            if a != {"usable": b["usable"], "after": b["after"]}:
                return (f"step {k} of {hs['steps']}: set {b['handshake']!r}; devshare {a}, "
                        f"HAMi usable {b['usable']} after {b['after']!r}")
        return None

    detail = first_difference(setting)
    if detail is None:
        return "agree", None, ""
    if setting != "all" and first_difference("W4") is None:
        return "intentional", "W4 cleaned-up node re-stamped", detail
    return "disagree", None, detail


def _lock_time(value: Optional[str]) -> Optional[int]:
    """The Unix time of a node lock "2006-01-02T15:04:05Z[,ns,name]" written in UTC, or None."""
    try:
        t = datetime.datetime.strptime((value or "").split(",")[0], "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return None
    return int(t.replace(tzinfo=datetime.timezone.utc).timestamp())


def devshare_node_lock(ls: dict, hm: dict) -> dict:
    """devshare's decision on the node-lock scenario `ls` at the time HAMi's run set, as
    {"acquired", "after"}. A lock devshare writes at that time equals HAMi's when HAMi's names the
    same pod and was written between the start and the end of its call."""
    holder: dict = {"state": "unknown"}
    while True:
        d = devshare.decide_lock(hm["lock"], ls["pod_namespace"], ls["pod_name"], hm["now"], holder)
        if d["action"] != "check_holder":
            break
        holder = ({"state": "present", "bind_phase": ls["bind_phase"], "bind_time": hm.get("bind_time")}
                  if ls["holder"] else {"state": "gone"})
    key = "hami.io/mutex.lock"
    after = d["write"][key] if key in d["write"] else hm["lock"]
    theirs = _lock_time(hm["after"])
    if (after and hm["after"] and _lock_time(after) == hm["now"] and theirs is not None
            and hm["now"] <= theirs <= hm["end"] and after.split(",")[1:] == hm["after"].split(",")[1:]):
        after = hm["after"]
    return {"acquired": d["action"] in ("set", "take_over", "reentrant"), "after": after}


def compare_node_lock(ls: dict, hm: dict) -> tuple[str, Optional[str], str]:
    """("agree" | "intentional" | "disagree", label, detail); the same in both settings: the
    node-lock differences are safety fixes, which have no HAMi-exact switch."""
    mine = devshare_node_lock(ls, hm)
    if mine == {"acquired": hm["acquired"], "after": hm["after"]}:
        return "agree", None, ""
    detail = (f"{ls} lock {hm['lock']!r}: devshare {mine}, HAMi acquired {hm['acquired']} "
              f"after {hm['after']!r}")
    expired = hm["lock"] is not None and (_lock_time(hm["lock"]) or hm["now"]) < hm["now"] - 300
    if (expired and hm["acquired"] and not mine["acquired"] and ls["bind_phase"] == "allocating"
            and hm["now"] - hm["bind_time"] <= 600):
        return "intentional", "#3096 an allocating holder keeps its expired lock (safety)", detail
    return "disagree", None, detail


def _apply_json_patch(doc: Any, patch: list[dict]) -> Any:
    """RFC 6902 add, replace and remove (what both webhooks write) on a copy of `doc`."""
    doc = json.loads(json.dumps(doc))
    for op in patch:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent = doc
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent[p]
        last = parts[-1]
        if isinstance(parent, list):
            index = len(parent) if last == "-" else int(last)
            if op["op"] == "add":
                parent.insert(index, op["value"])
            elif op["op"] == "replace":
                parent[index] = op["value"]
            else:
                del parent[index]
        elif op["op"] in ("add", "replace"):
            parent[last] = op["value"]
        else:
            del parent[last]
    return doc


def _without_empty(value: Any) -> Any:
    """`value` without null, {} and [] members: Go's re-encoding of a Pod adds "status": {} and the
    like, which mean the same as their absence."""
    if isinstance(value, dict):
        out = {k: _without_empty(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_without_empty(v) for v in value]
    return value


def devshare_webhook(ws: dict) -> dict:
    """devshare's webhook decision on the webhook scenario `ws`, as the harness reports HAMi's."""
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
              "request": {"uid": f"uid-{ws['id']}", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                          "resource": {"group": "", "version": "v1", "resource": "pods"},
                          "namespace": "default", "operation": "CREATE", "object": ws["pod"]}}
    r = devshare.decide_admission(review, scheduler_name=ws["scheduler_name"])["response"]
    status = r.get("status", {})
    pod = None
    if r["allowed"]:
        patch = json.loads(base64.b64decode(r["patch"])) if r.get("patch") else []
        pod = _apply_json_patch(ws["pod"], patch)
    return {"allowed": r["allowed"], "code": status.get("code", 0), "message": status.get("message", ""), "pod": pod}


def compare_webhook(ws: dict, hm: dict) -> tuple[str, Optional[str], str]:
    """("agree" | "intentional" | "disagree", label, detail); the same in both settings."""
    mine = devshare_webhook(ws)
    theirs = {k: hm[k] for k in ("allowed", "code", "message", "pod")}
    if not theirs["allowed"] or not mine["allowed"]:
        same = mine == theirs
    else:  # allowed: the mutated pods are the answer (HAMi's reason text for leaving one alone aside)
        same = _without_empty(mine["pod"]) == _without_empty(theirs["pod"])
    if same:
        return "agree", None, ""
    detail = f"{ws}: devshare {mine}, HAMi {theirs}"
    if (not mine["allowed"] and mine["code"] == 400 and theirs["code"] == 500
            and theirs["message"].startswith("invalid nvidia.com/gpumem-percentage value")):
        return "intentional", "memory percentage outside 0-100 denied, not an HTTP 500 (safety)", detail
    return "disagree", None, detail


def compare_volcano_register(vs: dict, vm: dict) -> tuple[str, Optional[str], str]:
    """devshare's Volcano register decoder against vgpu.NewGPUDevices: the devices (index, uuid,
    count, memory, type, health). Volcano keeps one sharing mode per node (the last device's),
    devshare each device's mode field: not compared."""
    try:
        devices = devshare.decode_node_devices(vs["register"], "volcano")
        mine: Optional[list] = [{"index": d.index, "uuid": d.id, "count": d.count, "devmem": d.devmem,
                                 "type": d.type, "health": d.health} for d in devices]
        error = None
    except ValueError as e:
        mine, error = None, str(e)
    theirs = vm["devices"]
    if mine == theirs:
        return "agree", None, ""
    detail = f"{vs['register']!r}: devshare {mine if mine is not None else 'error: ' + error}, Volcano {theirs}"
    if mine is None and theirs is not None:
        return "intentional", "Volcano register: every field validated, exactly 6", detail
    return "disagree", None, detail


# Volcano's vGPU Fit and score (Volcano's harness `fit` mode) against devshare under its
# Volcano device config. Rows of docs/compatibility.md ("Volcano's vGPU"): V1 and V2 are
# intentional and devshare can decide as Volcano does (GPU policy volcano-<policy>, node
# policy volcano); V3 and V4 are safety fixes, which devshare keeps, recognised by rerunning
# devshare on the cluster as Volcano sees it (every device healthy; each held pod counted
# once per device).
VOLCANO_ROWS = {"V1": "device order", "V2": "node score", "V3": "unhealthy devices given",
                "V4": "a pod counted once per device"}
VOLCANO_SETTINGS = [("devshare", ()), ("Volcano-exact", ("V1", "V2"))]
VOLCANO_FUNCTIONS = ["volcano_reg", "volcano_fit", "volcano_score"]
VOLCANO_IDS = "volcano.sh/vgpu-ids-new"


def devshare_volcano_fit(vs: dict, rows: tuple[str, ...]) -> dict:
    """devshare's answer per node, as the Volcano harness gives it, with `rows` decided as Volcano."""
    gpu_policy = f"volcano-{vs['policy']}" if "V1" in rows else vs["policy"]
    node_policy = "volcano" if "V2" in rows else "binpack"
    cluster = devshare.Cluster({"volcano": {}, "scheduler": {"node_policy": node_policy,
                                                             "gpu_policy": gpu_policy}})
    for n in vs["nodes"]:
        register = n["register"].replace(",false,", ",true,") if "V3" in rows else n["register"]
        cluster.add_node({"apiVersion": "v1", "kind": "Node",
                          "metadata": {"name": n["name"], "annotations": {"volcano.sh/node-vgpu-register": register}},
                          "status": {"allocatable": {"volcano.sh/vgpu-number": "10", "volcano.sh/vgpu-cores": "100",
                                                     "volcano.sh/vgpu-memory": "16384"}}})
    for p in vs["pods"]:
        ids = p["ids"]
        if "V4" in rows:
            seen: set = set()
            containers = []
            for c in p["devices"]:
                containers.append([devshare.ContainerDevice(uuid=u, type="NVIDIA", usedmem=m, usedcores=k)
                                   for u, m, k in c if u not in seen])
                seen.update(u for u, _, _ in c)
            ids = devshare.encode_pod_devices(containers, "volcano")
        cluster.add_pod({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": p["uid"], "namespace": "default", "uid": p["uid"],
                                      "annotations": {"volcano.sh/vgpu-node": p["node"], VOLCANO_IDS: ids}},
                         "spec": {"nodeName": p["node"], "containers": [{"name": "c"}]},
                         "status": {"phase": "Running"}})
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "pending", "namespace": "default", "uid": "uid-pending",
                        "annotations": vs["pod"]["annotations"]},
           "spec": {"containers": [{"name": c["name"], "resources": {"limits": c["limits"]}}
                                   for c in vs["pod"]["containers"]]},
           "status": {"phase": "Pending"}}
    out = {}
    for n in vs["nodes"]:
        r = cluster.filter(pod, nodes=[n["name"]], now=0)
        fits = r.node is not None
        out[n["name"]] = {"fits": fits, "score": r.scores.get(n["name"], 0.0) if fits else 0.0,
                          "ids": r.annotations.get(VOLCANO_IDS, "") if fits else ""}
    return out


def _volcano_fit_agrees(mine: dict, theirs: dict) -> bool:
    return all(mine[n]["fits"] == t["fits"] and mine[n]["ids"] == t["ids"] for n, t in theirs.items())


def _volcano_score_agrees(mine: dict, theirs: dict) -> bool:
    """Scores of the nodes where both fit the pod, equal to 1e-9 (both sum in double, in the
    order the devices are given)."""
    return all(abs(mine[n]["score"] - t["score"]) <= 1e-9 * max(1.0, abs(t["score"]))
               for n, t in theirs.items() if t["fits"] and mine[n]["fits"])


def compare_volcano_fit(vs: dict, vm: dict, exact: tuple[str, ...]) -> dict[str, tuple[str, Optional[str], str]]:
    """Verdicts for volcano_fit and volcano_score in one setting (`exact`: the rows decided as
    Volcano). A disagreement is explained by the smallest set of further rows with which devshare
    agrees, counted under their names."""
    theirs = vm["fit"]
    others = [r for r in VOLCANO_ROWS if r not in exact]
    subsets = [c for k in range(1, len(others) + 1) for c in itertools.combinations(others, k)]
    answers = {(): devshare_volcano_fit(vs, exact)}

    def answer(extra: tuple[str, ...]) -> dict:
        if extra not in answers:
            answers[extra] = devshare_volcano_fit(vs, tuple(sorted(exact + extra)))
        return answers[extra]

    verdicts = {}
    for fn, agrees in (("volcano_fit", _volcano_fit_agrees), ("volcano_score", _volcano_score_agrees)):
        if agrees(answer(()), theirs):
            verdicts[fn] = ("agree", None, "")
            continue
        label = next((" + ".join(f"{r} {VOLCANO_ROWS[r]}" for r in c) for c in subsets if agrees(answer(c), theirs)),
                     None)
        mine = answer(())
        detail = "; ".join(f"{n}: devshare {mine[n]}, Volcano {t}" for n, t in theirs.items()
                           if mine[n]["fits"] != t["fits"] or mine[n]["ids"] != t["ids"]
                           or abs(mine[n]["score"] - t["score"]) > 1e-9 * max(1.0, abs(t["score"])))
        verdicts[fn] = ("intentional", label, detail) if label else ("disagree", None, detail)
    return verdicts


# ---------------------------------------------------------------------------------------------
# What the behaviour spec pins exactly (independent of both implementations)

def go_marshal_device(d: dict) -> str:
    """encoding/json of HAMi's DeviceInfo: struct order, every field omitempty (spec §1.4)."""
    parts = []
    for key in ["id", "index", "count", "devmem", "devcore", "type", "numa", "mode"]:
        if d[key] not in (0, "", None):
            parts.append(f'"{key}":{json.dumps(d[key])}')
    if d["health"]:
        parts.append('"health":true')
    return "{" + ",".join(parts) + "}"


def spec_request(limits: dict) -> Optional[dict]:
    """§3.3 with the built-in config (defaultMemory 0, defaultCores 0, factor 1)."""
    def integral(v):
        try:
            return int(v)
        except (TypeError, ValueError):
            return None
    nums = integral(limits.get("nvidia.com/gpu"))
    if not nums:
        return None
    mem = 0
    if "nvidia.com/gpumem" in limits:
        mem = integral(limits["nvidia.com/gpumem"])
        if mem is None or mem < 0 or mem > 2**31 - 1:
            return None
    pct = 101
    if "nvidia.com/gpumem-percentage" in limits:
        p = integral(limits["nvidia.com/gpumem-percentage"])
        if p is not None:
            p = min(p, 100)
            if p >= 1:
                pct = p
    if pct == 101 and mem == 0:
        pct = 100
    cores = integral(limits.get("nvidia.com/gpucores", 0)) or 0
    return {"nums": nums, "type": "NVIDIA", "memreq": mem, "mempercentage": pct, "coresreq": cores}


def spec_node_scores(s: dict) -> dict[str, float]:
    """§5.1 base score of every node, before placement (float64 here; compared with a tolerance)."""
    node_of = {d["id"]: n["name"] for n in s["nodes"] for d in n["devices"]}
    used = defaultdict(lambda: [0, 0, 0])
    for p in s["pods"]:
        for c in p["devices"]:
            for cd in c:
                if node_of.get(cd["uuid"]) == p["node"]:
                    u = used[cd["uuid"]]
                    u[0] += 1
                    u[1] += cd["usedcores"]
                    u[2] += cd["usedmem"]
    scores = {}
    for n in s["nodes"]:
        cnt = sum(d["count"] for d in n["devices"])
        core = sum(d["devcore"] for d in n["devices"])
        mem = sum(d["devmem"] for d in n["devices"])
        if not cnt or not core or not mem:
            scores[n["name"]] = 0.0
            continue
        u = [sum(used[d["id"]][i] for d in n["devices"]) for i in range(3)]
        scores[n["name"]] = 10 * (u[0] / cnt + u[1] / core + u[2] / mem)
    return scores


def spec_checks(s: dict, ds: dict) -> list[tuple[str, str]]:
    """(function, message) for every way devshare's answer contradicts the spec."""
    bad = []
    for n in s["nodes"]:
        got = ds["node_decode"][n["name"]]
        if got != [dict(d) for d in n["devices"]]:
            bad.append(("node_decode", f"{n['name']}: {got} != {n['devices']}"))
        want = "[" + ",".join(go_marshal_device(d) for d in n["devices"]) + "]"
        if ds["node_encode"][n["name"]] != want:
            bad.append(("node_encode", f"{n['name']}: {ds['node_encode'][n['name']]!r} != {want!r}"))
    for p in s["pods"]:
        if ds["pod_decode"][p["name"]] != p["devices"] + ([[]] if p["allocated"].endswith(";") else []):
            bad.append(("pod_decode", f"{p['name']}: {ds['pod_decode'][p['name']]} != {p['devices']}"))
        if ds["pod_encode"][p["name"]] != p["allocated"]:
            bad.append(("pod_encode", f"{p['name']}: {ds['pod_encode'][p['name']]!r} != {p['allocated']!r}"))
    for c, got in zip(s["pod"]["containers"], ds["requests"]):
        want = spec_request(c["limits"])
        if got != want:
            bad.append(("requests", f"{c['limits']}: {got} != {want}"))
    base = spec_node_scores(s)
    for name, score in ds["score"].items():
        if not math.isclose(score, base[name], rel_tol=1e-5, abs_tol=1e-5):
            bad.append(("score", f"{name}: {score} != {base[name]}"))
    f = ds["filter"]
    if f["node"] is not None:
        fitting = {k for k, v in ds["fit"].items() if v["fits"]}
        if set(ds["score"]) != fitting:
            bad.append(("fit", f"Filter scored {sorted(ds['score'])}, single-node Filter fits {sorted(fitting)}"))
        spread = s["pod"]["annotations"].get("hami.io/node-scheduler-policy",
                                             s["scheduler"]["node_policy"]) == "spread"
        best = (min if spread else max)(ds["score"].values())
        first = min(k for k, v in ds["score"].items() if v == best)
        if f["node"] != first:
            bad.append(("filter", f"chose {f['node']} ({ds['score'][f['node']]}), expected {first} ({best})"))
        if f["devices"] and [[cd["uuid"] for cd in c] for c in f["devices"]] != ds["fit"][f["node"]]["devices"]:
            bad.append(("filter", f"devices on {f['node']} differ from the single-node Filter"))
    return bad


# ---------------------------------------------------------------------------------------------
# Intentional differences (docs/compatibility.md) and the comparison

# The rows of docs/compatibility.md that devshare can decide as HAMi does (FilterOptions::hami_exact),
# alone and together. A disagreement counts against a row only when devshare, rerun with that row's
# HAMi behaviour, agrees with HAMi.
FILTER_ROWS = ["W1", "W2", "W10"]
EXACT_ROWS = [rows for k in range(1, len(FILTER_ROWS) + 1) for rows in itertools.combinations(FILTER_ROWS, k)]
ROW_NAMES = {"W1": "W1 containers without devices", "W2": "W2 device score request terms",
             "W10": "W10 device order above 12 devices (Go's sort)"}
W10 = "W10 node ties (HAMi's goroutine order)"
TIE_RUNS = 5


def normalise(fn: str, answer: Any) -> Any:
    """One side's answer for `fn`, in the form both sides are compared in."""
    if fn == "score":
        return {k: f32(v) for k, v in answer.items()}
    if fn == "filter":
        answer = {k: v for k, v in answer.items() if k != "has_requests"}
        if answer.get("node") is not None:
            answer["failed"] = {}  # the chosen node is the answer; HAMi keeps no reasons then
    return answer


def w10_tie(ds: dict, hm: dict) -> bool:
    """HAMi chose another node than devshare among nodes HAMi itself scores equal, and put the pod
    there on the devices devshare would choose on that node: a tie HAMi breaks in goroutine order."""
    mine, theirs = ds["filter"], hm["filter"]
    h, d = theirs.get("node"), mine.get("node")
    scores = {k: f32(v) for k, v in hm.get("score", {}).items()}
    if not h or not d or h == d or h not in scores or d not in scores or scores[h] != scores[d]:
        return False
    on_h = ds["fit"].get(h, {})
    return on_h.get("fits") and on_h.get("devices") == [[cd["uuid"] for cd in c] for c in theirs["devices"]]


class Comparison:
    """Compares devshare (in one setting) with HAMi on one scenario, explaining each disagreement."""

    def __init__(self, s: dict, hm: dict, hami_exact: str):
        self.s, self.hm, self.setting = s, hm, hami_exact
        self._answers: dict[str, dict] = {}

    def devshare(self, rows: tuple[str, ...] = ()) -> dict:
        """devshare's answers in this setting, with `rows` decided as HAMi does as well."""
        setting = "all" if self.setting == "all" else ",".join(rows) or "none"
        if setting not in self._answers:
            self._answers[setting] = devshare_side(self.s, setting)
        return self._answers[setting]

    def agree(self, fn: str, ds: dict, key: Any = None) -> bool:
        a, b = normalise(fn, ds.get(fn)), normalise(fn, self.hm.get(fn))
        if key is not None:
            return (a or {}).get(key) == (b or {}).get(key)
        return a == b

    def explain(self, fn: str, key: Any = None) -> Optional[str]:
        """The row(s) that explain a disagreement, or None (a bug)."""
        if self.setting != "all":
            for rows in EXACT_ROWS:
                if self.agree(fn, self.devshare(rows), key):
                    return " + ".join(ROW_NAMES[r] for r in rows)
        if fn == "filter":
            for rows in ([()] if self.setting == "all" else [(), *EXACT_ROWS]):
                if w10_tie(self.devshare(rows), self.hm):
                    return W10 if not rows else f"{W10} + " + " + ".join(ROW_NAMES[r] for r in rows)
        return None

    def verdicts(self) -> dict[str, tuple[str, Optional[str], str]]:
        """Per function: ("agree" | "intentional" | "disagree" | "missing", label, detail)."""
        out = {}
        ds = self.devshare()
        for fn in FUNCTIONS:
            if self.hm.get(fn) is None:
                out[fn] = ("missing", None, "the harness gave no answer")
                continue
            if self.agree(fn, ds):
                out[fn] = ("agree", None, "")
                continue
            a, b = normalise(fn, ds.get(fn)), normalise(fn, self.hm.get(fn))
            if fn in ("fit", "score", "node_decode", "pod_decode", "node_encode", "pod_encode"):
                keys = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
                labels = {self.explain(fn, k) for k in keys}
                details = "; ".join(f"{k}: devshare {a.get(k)!r} HAMi {b.get(k)!r}" for k in keys)
            else:
                labels = {self.explain(fn)}
                details = f"devshare {a!r} HAMi {b!r}"
            if None in labels:
                out[fn] = ("disagree", None, details)
            else:
                out[fn] = ("intentional", ", ".join(sorted(labels)), details)
        return out


# ---------------------------------------------------------------------------------------------
# The harness

HERE = os.path.dirname(os.path.abspath(__file__))


def harness_status(path: Optional[str], name: str = "hami-oracle") -> tuple[Optional[str], str]:
    """(the harness binary, "") or (None, why it is not available)."""
    path = path or os.path.join(HERE, "bin", name)
    if os.access(path, os.X_OK):
        return path, ""
    reason_file = os.path.join(HERE, "bin", f"{name}.SKIPPED")
    if os.path.exists(reason_file):
        with open(reason_file, encoding="utf-8") as f:
            return None, f.read().strip()
    return None, f"no harness binary at {path} (build it with tests/oracle/build.sh)"


def run_harness(binary: str, mode: str, scenario_lines: list[str]) -> list[dict]:
    proc = subprocess.run([binary, mode], input="\n".join(scenario_lines) + "\n", capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{binary} {mode} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


# ---------------------------------------------------------------------------------------------

SETTINGS = [("devshare", "none"), ("HAMi-exact", "all")]
# Compared with HAMi only (the spec pins no single answer): HAMi's registration loop over one node
# through a sequence of handshake values, register annotations and allocatable counts; HAMi's
# nodelock.LockNode on a node's lock; HAMi's mutating webhook on a Pod.
HAMI_ONLY = ["handshake", "nodelock", "webhook"]


def run_compare(args) -> int:
    sides = set(args.sides.split(","))
    binary, why = harness_status(args.harness) if "hami" in sides else (None, "not selected (--sides)")
    if binary is None:
        print(f"oracle: HAMi harness skipped: {why}")
    volcano, volcano_why = (harness_status(args.volcano_harness, "volcano-oracle") if "volcano" in sides
                            else (None, "not selected (--sides)"))
    if volcano is None:
        print(f"oracle: Volcano harness skipped: {volcano_why}")
    volcano_tally = {name: {fn: Counter() for fn in VOLCANO_FUNCTIONS} for name, _ in VOLCANO_SETTINGS}
    volcano_passed = volcano_failed = 0
    spec_tally: dict[str, Counter] = {fn: Counter() for fn in FUNCTIONS}
    # Per setting and function: "agree", "disagree", "missing" or "intentional: <label>".
    hami_tally = {name: {fn: Counter() for fn in FUNCTIONS + HAMI_ONLY} for name, _ in SETTINGS}
    examples: dict[str, list[str]] = defaultdict(list)

    def example(key: str, scenario: dict, text: str) -> None:
        """Keeps the first five disagreements of each kind to print."""
        if len(examples[key]) < 5:
            examples[key].append(f"scenario {scenario['id']}: {text}")

    spec_passed = spec_failed = hami_passed = hami_failed = 0
    t0 = time.time()
    batch: list[dict] = []
    tie_checks: list[dict] = []  # HAMi-exact W10 ties to rerun on HAMi (--confirm-ties)

    def flush(batch):
        nonlocal spec_passed, spec_failed, hami_passed, hami_failed, volcano_passed, volcano_failed
        if volcano is not None:
            registers = [gen.volcano_register_scenario(args.seed, s["id"]) for s in batch]
            fits = [gen.volcano_fit_scenario(args.seed, s["id"]) for s in batch]
            register_answers = run_harness(volcano, "register", [json.dumps(v) for v in registers])
            fit_answers = run_harness(volcano, "fit", [json.dumps(v) for v in fits])
            for vs, vm, fs, fm in zip(registers, register_answers, fits, fit_answers):
                ok = True
                register_verdict = compare_volcano_register(vs, vm)
                for name, exact in VOLCANO_SETTINGS:
                    verdicts = {"volcano_reg": register_verdict, **compare_volcano_fit(fs, fm, exact)}
                    for fn, (verdict, label, detail) in verdicts.items():
                        volcano_tally[name][fn][verdict if verdict != "intentional" else f"intentional: {label}"] += 1
                        if verdict == "disagree":
                            ok = False
                            example(f"Volcano ({name}) {fn}", vs if fn == "volcano_reg" else fs, detail[:600])
                if ok:
                    volcano_passed += 1
                else:
                    volcano_failed += 1
        answers, handshake_answers = {}, {}
        handshake_scenarios = {s["id"]: gen.handshake_scenario(args.seed, s["id"]) for s in batch}
        lock_scenarios = {s["id"]: gen.node_lock_scenario(args.seed, s["id"]) for s in batch}
        lock_answers, webhook_answers = {}, {}
        webhook_scenarios = {s["id"]: gen.webhook_scenario(args.seed, s["id"]) for s in batch}
        if binary is not None:
            for r in run_harness(binary, "answer", [json.dumps(s) for s in batch]):
                answers[r["id"]] = r
            for r in run_harness(binary, "handshake", [json.dumps(h) for h in handshake_scenarios.values()]):
                handshake_answers[r["id"]] = r
            for r in run_harness(binary, "nodelock", [json.dumps(x) for x in lock_scenarios.values()]):
                lock_answers[r["id"]] = r
            for r in run_harness(binary, "webhook", [json.dumps(x) for x in webhook_scenarios.values()]):
                webhook_answers[r["id"]] = r
        for s in batch if "hami" in sides else []:
            ds = devshare_side(s)
            bad = spec_checks(s, ds)
            bad_fns = {fn for fn, _ in bad}
            for fn in FUNCTIONS:
                spec_tally[fn]["disagree" if fn in bad_fns else "agree"] += 1
            for fn, msg in bad:
                example(f"spec {fn}", s, msg)
            if bad:
                spec_failed += 1
            else:
                spec_passed += 1
            if binary is None:
                continue
            ok = True
            for name, setting in SETTINGS:
                comparison = Comparison(s, answers.get(s["id"], {}), setting)
                verdicts = comparison.verdicts()
                verdicts["handshake"] = compare_handshakes(handshake_scenarios[s["id"]],
                                                           handshake_answers[s["id"]], setting)
                verdicts["nodelock"] = compare_node_lock(lock_scenarios[s["id"]], lock_answers[s["id"]])
                verdicts["webhook"] = compare_webhook(webhook_scenarios[s["id"]], webhook_answers[s["id"]])
                if (setting == "all" and verdicts["filter"][1] == W10
                        and len(tie_checks) < args.confirm_ties):
                    tie_checks.append(s)
                for fn, (verdict, label, detail) in verdicts.items():
                    hami_tally[name][fn][verdict if verdict != "intentional" else f"intentional: {label}"] += 1
                    if verdict in ("disagree", "missing"):
                        ok = False
                        example(f"HAMi ({name}) {fn}", s, detail[:600])
            if ok:
                hami_passed += 1
            else:
                hami_failed += 1

    for sid in range(args.scenarios):
        batch.append(gen.generate(args.seed, sid, args.max_nodes) if "hami" in sides else {"id": sid})
        if len(batch) == 200:
            flush(batch)
            batch = []
            if sys.stderr.isatty() or args.scenarios > 1000:
                print(f"oracle: {sid + 1} of {args.scenarios} scenarios, {time.time() - t0:.0f} s, "
                      f"{hami_failed + volcano_failed} with unexplained disagreements", file=sys.stderr, flush=True)
    if batch:
        flush(batch)
    elapsed = time.time() - t0

    print(f"\n{args.scenarios} scenarios (seed {args.seed}, 1-{args.max_nodes} nodes), {elapsed:.1f} s")
    print(f"{'':12} {'spec':>16}   HAMi, devshare's decisions    HAMi, HAMi-exact setting")
    print(f"{'function':12} {'agree':>6} {'disagree':>9}   {'agree / explained / unexplained':31}"
          f" {'agree / explained / unexplained'}")
    for fn in FUNCTIONS + HAMI_ONLY:
        st = spec_tally.get(fn)
        cells = []
        for name, _ in SETTINGS:
            ht = hami_tally[name][fn]
            if binary is None:
                cells.append(f"{'skipped':31}")
                continue
            explained = sum(v for k, v in ht.items() if k.startswith("intentional"))
            cells.append(f"{ht['agree']:>5} / {explained:>9} / {ht['disagree'] + ht['missing']:<11}".ljust(31))
        spec = f"{st['agree']:6} {st['disagree']:9}" if st is not None else f"{'-':>6} {'-':>9}"
        print(f"{fn:12} {spec}   {cells[0]} {cells[1]}")
    if binary is not None:
        for name, _ in SETTINGS:
            labels = Counter()
            for fn in FUNCTIONS + HAMI_ONLY:
                for k, v in hami_tally[name][fn].items():
                    if k.startswith("intentional"):
                        labels[f"{fn}: {k[len('intentional: '):]}"] += v
            for k, v in sorted(labels.items()):
                print(f"  {name}, explained by {k}: {v}")
    if volcano is not None:
        print(f"\n{'':12} {'':16}   Volcano, devshare's decisions Volcano, Volcano-exact setting")
        for fn in VOLCANO_FUNCTIONS:
            cells = []
            for name, _ in VOLCANO_SETTINGS:
                vt = volcano_tally[name][fn]
                explained = sum(v for k, v in vt.items() if k.startswith("intentional"))
                cells.append(f"{vt['agree']:>5} / {explained:>9} / {vt['disagree']:<11}".ljust(31))
            print(f"{fn:13} {'-':>6} {'-':>9}   {cells[0]} {cells[1]}")
        for name, _ in VOLCANO_SETTINGS:
            for fn in VOLCANO_FUNCTIONS:
                for k, v in sorted(volcano_tally[name][fn].items()):
                    if k.startswith("intentional"):
                        print(f"  {name}, explained by {fn}: {k[len('intentional: '):]}: {v}")
    for k, msgs in examples.items():
        print(f"\nfirst disagreements, {k}:")
        for m in msgs:
            print(f"  {m}")
    if tie_checks:
        # HAMi's choice among its equal-best nodes is its goroutine and map order: rerun HAMi on
        # each tie scenario and see whether it answers differently.
        varied = 0
        for s in tie_checks:
            nodes = {r["filter"]["node"] for r in run_harness(binary, "answer", [json.dumps(s)] * TIE_RUNS)}
            varied += len(nodes) > 1
        print(f"  W10 confirmed: HAMi chose different nodes across {TIE_RUNS} runs of the same scenario "
              f"in {varied} of {len(tie_checks)} tie scenarios rerun")
    # One count per scenario and side; the HAMi side counts as one skipped
    # check when the harness is not available, never as passed.
    skipped = 0 if binary is not None else 1
    volcano_skipped = 0 if volcano is not None else 1
    print(f"oracle-spec: {spec_passed} passed, {spec_failed} failed")
    if binary is None:
        print(f"oracle-hami: skipped ({why})")
    else:
        print(f"oracle-hami: {hami_passed} passed, {hami_failed} failed")
    if volcano is None:
        print(f"oracle-volcano: skipped ({volcano_why})")
    else:
        print(f"oracle-volcano: {volcano_passed} passed, {volcano_failed} failed")
    passed = spec_passed + hami_passed + volcano_passed
    failed = spec_failed + hami_failed + volcano_failed
    print(f"oracle: {passed} passed, {failed} failed"
          + (f", {skipped + volcano_skipped} skipped" if skipped + volcano_skipped else ""))
    if args.results:
        with open(args.results, "a", encoding="utf-8") as f:
            f.write(f"oracle-spec {spec_passed} {spec_failed} 0\n")
            f.write(f"oracle-hami {hami_passed} {hami_failed} {skipped}\n")
            f.write(f"oracle-volcano {volcano_passed} {volcano_failed} {volcano_skipped}\n")
    return 1 if failed else 0


def speed_objects(s: dict) -> dict:
    """The cluster of a speed scenario as Kubernetes objects, for bench/oracle_speed."""
    return {"nodes": [node_object(n) for n in s["nodes"]],
            "pods": [held_pod_object(p) for p in s["pods"]],
            "pod": pod_object(s["pod"]),
            "candidates": [n["name"] for n in s["nodes"]]}


def run_speed(args) -> int:
    binary, why = harness_status(args.harness)
    devshare_speed = args.devshare_speed
    if not os.access(devshare_speed, os.X_OK):
        print(f"oracle-speed: no {devshare_speed} (ninja -C build bench/oracle_speed)")
        return 1
    sizes = [int(x) for x in args.speed.split(",")]
    print(f"Filter of one pod (1 GPU, 4000 MiB, 20 cores) on N nodes x 8 GPUs (a quarter of them half used),\n"
          f"{args.repeat} repetitions each: HAMi's Scheduler.Filter on the Go ExtenderArgs (fake clientset),\n"
          f"devshare's engine Filter on the decoded pod and candidates; both build the pod patch, neither parses JSON.")
    print(f"{'nodes':>6} {'devshare best':>14} {'median':>9} {'HAMi best':>10} {'median':>9}"
          f" {'HAMi/devshare best':>19} {'median':>8}")
    for n in sizes:
        s = gen.speed_cluster(n)
        proc = subprocess.run([devshare_speed, str(args.repeat)], input=json.dumps(speed_objects(s)),
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            print(f"oracle-speed: {devshare_speed} failed: {proc.stderr.strip()}")
            return 1
        mine = json.loads(proc.stdout)
        theirs = None
        if binary is not None:
            theirs = run_harness(binary, f"speed={args.repeat}", [json.dumps(s)])[0]
        if theirs is None:
            print(f"{n:6} {mine['best_ms']:14.4f} {mine['median_ms']:9.4f} {'-':>10} {'-':>9} {'skipped':>19} {'':>8}")
            continue
        best = theirs["best_ms"] / mine["best_ms"]
        median = theirs["median_ms"] / mine["median_ms"]
        print(f"{n:6} {mine['best_ms']:14.4f} {mine['median_ms']:9.4f} {theirs['best_ms']:10.3f}"
              f" {theirs['median_ms']:9.3f} {best:18.1f}x {median:7.1f}x")
        if theirs.get("node") != mine.get("node"):
            cluster = build_cluster(s, reasons=False)
            pod = pod_object(s["pod"])
            score = {name: cluster.filter(pod, nodes=[name], now=0).scores.get(name)
                     for name in (theirs.get("node"), mine.get("node")) if name}
            tie = len(set(score.values())) == 1
            print(f"       chosen: HAMi {theirs.get('node')}, devshare {mine.get('node')}: "
                  + ("equal scores, HAMi breaks ties in goroutine order (W10)" if tie
                     else f"different scores {score}: a disagreement"))
    if binary is None:
        print(f"HAMi side skipped: {why}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenarios", type=int, default=300)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-nodes", type=int, default=50)
    p.add_argument("--harness", help="the HAMi harness binary (default tests/oracle/bin/hami-oracle)")
    p.add_argument("--volcano-harness", help="the Volcano harness binary (default tests/oracle/bin/volcano-oracle)")
    p.add_argument("--sides", default="hami,volcano", choices=["hami,volcano", "hami", "volcano"],
                   help="which peers to compare with (the spec checks go with hami)")
    p.add_argument("--results", help="append 'oracle passed failed skipped' to this file")
    p.add_argument("--speed", help="comma-separated node counts: time Filter instead of comparing")
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--devshare-speed", default=os.path.join(HERE, "..", "..", "build", "bench", "oracle_speed"),
                   help="devshare's side of --speed (bench/oracle_speed, release build)")
    p.add_argument("--dump", help="write the scenarios as JSON lines to this file and stop")
    p.add_argument("--confirm-ties", type=int, default=0,
                   help=f"rerun HAMi {TIE_RUNS} times on up to this many W10 tie scenarios and report how "
                        "many it answered differently (exploration: HAMi's answer is left to chance)")
    args = p.parse_args()
    if args.dump:
        with open(args.dump, "w", encoding="utf-8") as f:
            for sid in range(args.scenarios):
                f.write(json.dumps(gen.generate(args.seed, sid, args.max_nodes)) + "\n")
        return 0
    return run_speed(args) if args.speed else run_compare(args)


if __name__ == "__main__":
    sys.exit(main())
