"""The protocol comparisons of the differential oracle (compare.py): devshare's
answers beside HAMi's for its node handshake, node lock and mutating webhook,
and beside Volcano's for its node registration and vGPU fit and score. Each
compare_* returns (verdict, label, detail): "agree", "intentional" with the
name of a documented difference, or "disagree".
"""

from __future__ import annotations

import base64
import datetime
import itertools
import json
from typing import Any, Optional

import devshare


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
