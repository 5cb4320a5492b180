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
its own decisions and with Volcano's device order and node score (VOLCANO_ROWS of
compare_protocols.py, which holds the handshake, node lock, webhook and Volcano comparisons).

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
from compare_protocols import (VOLCANO_FUNCTIONS, VOLCANO_SETTINGS, compare_handshakes,  # noqa: E402
                               compare_node_lock, compare_volcano_fit, compare_volcano_register,
                               compare_webhook)

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
