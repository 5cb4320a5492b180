"""Self-check of the DRA oracle: generate scenarios, answer them twice with
tests/oracle/bin/dra-oracle, and check that the answers are well-formed,
deterministic and varied. Prints one summary line; --detail prints the counts
README.md quotes (verdicts per node, errors by kind, CEL verdicts, features).

    python3 tests/oracle/dra_selfcheck.py [--count 200] [--seed 1] [--detail]

Exit 0 when every check holds, or when the oracle was not built (the line
then says skipped, with build.sh's reason); 1 on any failed check.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scenarios_dra  # noqa: E402

BIN = os.path.join(HERE, "bin", "dra-oracle")

# Error kinds by the allocator's messages (structured/internal/incubating).
ERROR_KINDS = [
    ("cel-compile", r"CEL compile error"),
    ("cel-runtime", r"CEL runtime error"),
    ("all-incomplete-pool", r"asks for all devices, but resource pool .* is currently being updated"),
    ("all-invalid-pool", r"asks for all devices, but resource pool .* is currently invalid"),
    ("invalid-pools", r"invalid resource pools were encountered"),
    ("missing-class", r"could not retrieve device class"),
    ("node-selector", r"unsupported ResourceSlice.NodeSelector"),
    ("all-constraint", r"because a claim constraint would not be satisfied"),
    ("capacity", r"capacity"),
    ("aborted", r"filter operation aborted"),
]


def error_kind(msg: str) -> str:
    for kind, rx in ERROR_KINDS:
        if re.search(rx, msg):
            return kind
    return "other"


def result_kind(r: dict) -> str:
    if r["driver"] == scenarios_dra.HAMI:
        return "HAMi GPU"
    if r["driver"] == scenarios_dra.NET:
        return "network-attached GPU"
    return "partition (counters)" if "-mig-" in r["device"] else "whole GPU"


def run_oracle(data: bytes) -> bytes:
    p = subprocess.run([BIN], input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise SystemExit(f"dra-oracle exited {p.returncode}: {p.stderr.decode()[-2000:]}")
    return p.stdout


def selectors(sc: dict) -> list[str]:
    out: list[str] = []
    def add(sel):
        for s in sel or []:
            e = s.get("cel", {}).get("expression")
            if e is not None and e not in out:
                out.append(e)
    for c in sc["classes"]:
        add(c["spec"].get("selectors"))
    for c in sc["claims"]:
        for r in c["spec"]["devices"]["requests"]:
            add(r.get("exactly", {}).get("selectors"))
            for s in r.get("firstAvailable", []):
                add(s.get("selectors"))
    return out


def features(sc: dict) -> set[str]:
    """What a scenario exercises, read from its objects."""
    f: set[str] = set()
    pools: dict = {}
    for s in sc["slices"]:
        sp = s["spec"]
        pools.setdefault((sp["driver"], sp["pool"]["name"]), []).append(sp["pool"])
        if "sharedCounters" in sp:
            f.add("partitionable")
        if sp.get("perDeviceNodeSelection"):
            f.add("per-device-node-selection")
        if "nodeSelector" in sp:
            f.add("slice-node-selector")
        for d in sp.get("devices", []):
            if d.get("taints"):
                f.add("taints")
            if d.get("bindingConditions"):
                f.add("binding-conditions")
            if d.get("allowMultipleAllocations"):
                f.add("shared-devices")
            elif sp["driver"] == scenarios_dra.NV and "consumesCounters" not in d:
                f.add("whole-devices")
    for slices in pools.values():
        gens = {p["generation"] for p in slices}
        newest = [p for p in slices if p["generation"] == max(gens)]
        if len(gens) > 1:
            f.add("several-generations")
        if newest[0]["resourceSliceCount"] > 1:
            f.add("pool-of-several-slices")
        if len(newest) < newest[0]["resourceSliceCount"]:
            f.add("incomplete-pool")
    for c in sc["claims"]:
        spec = c["spec"]["devices"]
        for r in spec["requests"]:
            bodies = [r["exactly"]] if "exactly" in r else r["firstAvailable"]
            if "firstAvailable" in r:
                f.add("firstAvailable")
            for b in bodies:
                if b.get("allocationMode") == "All":
                    f.add("allocationMode-All")
                if b.get("count", 1) > 1:
                    f.add("count>1")
                if b.get("capacity"):
                    f.add("capacity-request")
                if b.get("tolerations"):
                    f.add("tolerations")
                if b.get("adminAccess"):
                    f.add("adminAccess")
                if b.get("selectors"):
                    f.add("claim-selectors")
        for con in spec.get("constraints", []):
            f.add("matchAttribute" if "matchAttribute" in con else "distinctAttribute")
        if spec.get("config"):
            f.add("claim-config")
    if sc["allocated"]:
        f.add("allocated-claims")
    if len(sc["claims"]) > 1:
        f.add("several-claims")
    return f


def check(scenarios: list[dict], answers: list[dict]) -> list[str]:
    """Well-formedness of every answer against its scenario."""
    bad: list[str] = []
    if len(answers) != len(scenarios):
        return [f"{len(answers)} answers for {len(scenarios)} scenarios"]
    for sc, ans in zip(scenarios, answers):
        sid = sc["id"]
        if ans.get("id") != sid:
            bad.append(f"scenario {sid}: answer id {ans.get('id')}")
            continue
        names = [n["metadata"]["name"] for n in sc["nodes"]]
        if [n["node"] for n in ans["nodes"]] != names:
            bad.append(f"scenario {sid}: nodes {[n['node'] for n in ans['nodes']]} != {names}")
        for n in ans["nodes"]:
            if n["feasible"]:
                if n["error"] is not None or not isinstance(n["results"], list) \
                        or len(n["results"]) != len(sc["claims"]):
                    bad.append(f"scenario {sid} {n['node']}: feasible answer malformed")
                for res in n["results"] or []:
                    for r in res["devices"].get("results", []):
                        if "shareID" in r and r["shareID"] != "*":
                            bad.append(f"scenario {sid}: shareID not replaced")
            elif n["results"] is not None:
                bad.append(f"scenario {sid} {n['node']}: results on an infeasible node")
            if n["error"] is None and n["node_only"]:
                bad.append(f"scenario {sid} {n['node']}: node_only without an error")
            if n["error"] and "filter operation aborted" in n["error"]:
                bad.append(f"scenario {sid} {n['node']}: the allocator ran out of time")
        devices = [(s["spec"]["driver"], s["spec"]["pool"]["name"], s["metadata"]["name"], d["name"])
                   for s in sc["slices"] for d in s["spec"].get("devices", [])]
        want = [(e,) + d for e in selectors(sc) for d in devices]
        got = [(c["expression"], c["driver"], c["pool"], c["slice"], c["device"]) for c in ans["cel"]]
        if got != want:
            bad.append(f"scenario {sid}: cel pairs differ from (selector, device) pairs")
        for c in ans["cel"]:
            if (c["matches"] is None) == (c["error"] is None) or \
                    (c["error"] is None) != (c["stage"] is None):
                bad.append(f"scenario {sid}: cel entry malformed: {c}")
                break
    return bad


def summarize(scenarios: list[dict], answers: list[dict]) -> dict:
    s: dict = {"scenarios": len(scenarios), "nodes": Counter(), "errors": Counter(),
               "scope": Counter(), "scenario": Counter(), "cel": Counter(), "cel_errors": Counter(),
               "features": Counter(), "results": Counter()}
    for sc, ans in zip(scenarios, answers):
        verdicts = set()
        for n in ans["nodes"]:
            if n["feasible"]:
                v = "feasible"
                for res in n["results"]:
                    for r in res["devices"].get("results", []):
                        if "shareID" in r:
                            s["results"]["shared device (shareID)"] += 1
                        if r.get("consumedCapacity"):
                            s["results"]["consumedCapacity"] += 1
                        if "/" in r["request"]:
                            s["results"]["firstAvailable subrequest"] += 1
                        if r.get("adminAccess"):
                            s["results"]["adminAccess"] += 1
                        if r.get("bindingConditions"):
                            s["results"]["bindingConditions"] += 1
                        if r.get("tolerations"):
                            s["results"]["tolerations"] += 1
                        s["results"]["device results"] += 1
                        s["results"]["device results: " + result_kind(r)] += 1
                    if res["devices"].get("config"):
                        s["results"]["claim results with config"] += 1
            elif n["error"] is not None:
                v = "error"
                s["errors"][error_kind(n["error"])] += 1
                s["scope"]["node only" if n["node_only"] else "fatal"] += 1
            else:
                v = "infeasible"
            s["nodes"][v] += 1
            verdicts.add(v)
        s["scenario"]["some node feasible" if "feasible" in verdicts else
                      ("no node feasible, some error" if "error" in verdicts else "no node feasible")] += 1
        for c in ans["cel"]:
            if c["error"] is None:
                s["cel"]["true" if c["matches"] else "false"] += 1
            else:
                s["cel"][c["stage"] + " error"] += 1
        for f in features(sc):
            s["features"][f] += 1
    return s


def varied(s: dict) -> list[str]:
    """The mix a run must show: both verdicts, errors, both CEL verdicts."""
    bad = []
    n = s["nodes"]
    total = sum(n.values())
    if n["feasible"] < total * 0.15:
        bad.append(f"only {n['feasible']} of {total} node answers feasible")
    if n["infeasible"] < total * 0.15:
        bad.append(f"only {n['infeasible']} of {total} node answers infeasible")
    if s["scenarios"] >= 100 and n["error"] == 0:
        bad.append("no allocator error")
    if s["cel"]["true"] == 0 or s["cel"]["false"] == 0:
        bad.append("CEL verdicts all alike")
    if s["scenarios"] >= 100:
        missing = [f for f in ["partitionable", "firstAvailable", "allocationMode-All", "capacity-request",
                               "matchAttribute", "distinctAttribute", "taints", "tolerations",
                               "allocated-claims", "incomplete-pool", "several-generations",
                               "pool-of-several-slices", "whole-devices"]
                   if s["features"][f] == 0]
        if missing:
            bad.append("features never generated: " + ", ".join(missing))
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--detail", action="store_true", help="print the counts, one per line")
    args = ap.parse_args(argv)
    if not os.access(BIN, os.X_OK):
        reason = "not built (run tests/oracle/build.sh)"
        skipped = BIN + ".SKIPPED"
        if os.path.exists(skipped):
            reason = open(skipped).read().strip()
        print(f"dra-oracle selfcheck: skipped: {reason}")
        return 0
    scenarios = [scenarios_dra.generate(args.seed, i) for i in range(args.count)]
    again = [scenarios_dra.generate(args.seed, i) for i in range(args.count)]
    data = "".join(json.dumps(sc, separators=(",", ":")) + "\n" for sc in scenarios).encode()
    problems = []
    if again != scenarios:
        problems.append("the generator is not a function of (seed, N)")
    first = run_oracle(data)
    second = run_oracle(data)
    if first != second:
        problems.append("two runs of dra-oracle answered differently")
    answers = [json.loads(line) for line in first.decode().splitlines()]
    problems += check(scenarios, answers)
    s = summarize(scenarios, answers)
    problems += varied(s)
    n, c = s["nodes"], s["cel"]
    line = (f"dra-oracle selfcheck: {s['scenarios']} scenarios (seed {args.seed}), "
            f"{sum(n.values())} node answers: {n['feasible']} feasible, {n['infeasible']} infeasible, "
            f"{n['error']} errors; {sum(c.values())} CEL verdicts: {c['true']} true, {c['false']} false, "
            f"{c['compile error'] + c['runtime error']} errors; deterministic: "
            f"{'yes' if first == second else 'NO'}; "
            + ("ok" if not problems else f"{len(problems)} problems"))
    if args.detail:
        for key in ["nodes", "scope", "errors", "scenario", "cel", "results", "features"]:
            print(f"{key}:")
            for k, v in sorted(s[key].items(), key=lambda kv: (-kv[1], kv[0])):
                print(f"  {k}: {v}")
    for p in problems[:20]:
        print("  " + p, file=sys.stderr)
    print(line)
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
