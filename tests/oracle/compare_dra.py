"""devshare's DRA allocation ("upstream") and CEL selectors against
Kubernetes' own code (dra-oracle) on seeded scenarios.

For every scenario of scenarios_dra.py and every node in it: the verdict
(feasible, infeasible, or an error) and, when feasible, each claim's
allocation — the devices in order with their request, pool, consumed
capacity, tolerations and binding conditions, whether the device is shared
(a share ID, whose value is random upstream), and the node selector. For
every (selector, device) pair the oracle lists: the CEL verdict, or that it
is an error. A selector devshare refuses as unsupported is counted apart,
never as agreement. devshare's own device orders (binpack, spread) search the
same space in another order, so where upstream finds no fit they find none
either, and where it finds one they find one too (or meet a selector that
errs on a device upstream never reached); each node is checked for that.

  python3 tests/oracle/compare_dra.py --scenarios 200 --seed 1 [--show 5]

Prints one summary line last: "dra-oracle: N agreed, M disagreed (...)";
exits 1 on any disagreement. A selector devshare refuses as unsupported is
counted in the summary, never as agreement.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scenarios_dra  # noqa: E402

import devshare  # noqa: E402

BIN = os.path.join(HERE, "bin", "dra-oracle")


def comparable(allocation: dict | None) -> dict | None:
    """An AllocationResult with what is random upstream (share ID values)
    reduced to whether it is there, and absent lists as empty."""
    if allocation is None:
        return None
    results = []
    for r in (allocation.get("devices") or {}).get("results") or []:
        results.append({"request": r["request"], "driver": r["driver"], "pool": r["pool"],
                        "device": r["device"], "adminAccess": bool(r.get("adminAccess")),
                        "tolerations": r.get("tolerations") or [],
                        "bindingConditions": r.get("bindingConditions") or [],
                        "bindingFailureConditions": r.get("bindingFailureConditions") or [],
                        "shared": r.get("shareID") is not None,
                        "consumedCapacity": {k: devshare.dra_quantity_milli(v)
                                             for k, v in (r.get("consumedCapacity") or {}).items()}})
    return {"results": results, "nodeSelector": allocation.get("nodeSelector")}


def normalized_tolerations(allocation: dict | None) -> None:
    """Tolerations as the API server stores them (operator defaulted)."""
    if allocation is None:
        return
    for r in allocation["results"]:
        r["tolerations"] = [{**t, "operator": t.get("operator") or "Equal"} for t in r["tolerations"]]


def devshare_node(sc: dict, node: dict, policy: str = "upstream") -> dict:
    """devshare's answer for one node, shaped as the oracle's."""
    try:
        results = devshare.dra_allocate(sc["claims"], node, sc["slices"], sc["classes"],
                                        sc["allocated"], policy)
    except devshare.UnsupportedError as e:
        return {"unsupported": str(e)}
    except (ValueError, KeyError) as e:
        return {"feasible": False, "error": str(e)}
    return {"feasible": results is not None, "error": None,
            "results": None if results is None else [comparable(a) for a in results]}


def devshare_cel(sc: dict, entry: dict) -> dict:
    slice_obj = next(s for s in sc["slices"] if s["metadata"]["name"] == entry["slice"])
    try:
        return {"matches": devshare.dra_selector_matches(entry["expression"], slice_obj,
                                                         entry["device"]), "error": None}
    except devshare.UnsupportedError as e:
        return {"unsupported": str(e)}
    except devshare.DecodeError as e:
        return {"matches": None, "error": str(e), "stage": "compile"}
    except (ValueError, KeyError) as e:
        return {"matches": None, "error": str(e), "stage": "runtime"}


def answered(seed: int, start: int, count: int, batch: int = 250):
    """(scenario, the oracle's answer) for scenarios start.., a batch at a time
    (an answer is about 40 kB, mostly CEL verdicts)."""
    for first in range(start, start + count, batch):
        scenarios = [scenarios_dra.generate(seed, n) for n in range(first, min(first + batch, start + count))]
        out = subprocess.run([BIN], input="".join(json.dumps(s) + "\n" for s in scenarios).encode(),
                             stdout=subprocess.PIPE, check=True).stdout.decode().splitlines()
        if len(out) != len(scenarios):
            raise SystemExit(f"dra-oracle answered {len(out)} of {len(scenarios)} scenarios")
        for sc, line in zip(scenarios, out):
            yield sc, json.loads(line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--show", type=int, default=5, help="disagreements to print in full")
    parser.add_argument("--results", help="append 'dra-oracle agreed disagreed unsupported' to this file")
    args = parser.parse_args()
    if not os.path.exists(BIN):
        reason = open(BIN + ".SKIPPED").read().strip() if os.path.exists(BIN + ".SKIPPED") else \
            "not built (tests/oracle/build.sh)"
        print(f"dra-oracle: skipped: {reason}")
        return 0
    counts: Counter = Counter()
    shown = 0

    def disagree(what: str, sc: dict, ours: object, theirs: object) -> None:
        nonlocal shown
        counts["disagreed"] += 1
        counts[f"disagreed {what}"] += 1
        if shown < args.show:
            shown += 1
            print(f"DISAGREE {what} in scenario {sc['id']}:\n  devshare: {json.dumps(ours)[:1500]}\n"
                  f"  upstream: {json.dumps(theirs)[:1500]}")

    for sc, answer in answered(args.seed, args.start, args.scenarios):
        for node, theirs in zip(sc["nodes"], answer["nodes"]):
            ours = devshare_node(sc, node)
            if "unsupported" in ours:
                counts["unsupported allocations"] += 1
                continue
            counts["node verdicts"] += 1
            if (theirs["error"] is None) != (ours["error"] is None):
                disagree("error or not", sc, ours, theirs)
            elif theirs["error"] is not None:
                counts["agreed"] += 1
                counts["both errors"] += 1
            elif theirs["feasible"] != ours["feasible"]:
                disagree("feasibility", sc, ours, theirs)
            elif not theirs["feasible"]:
                counts["agreed"] += 1
                for policy in ("binpack", "spread"):
                    other = devshare_node(sc, node, policy)
                    if other.get("feasible") or other.get("error"):
                        disagree(f"{policy} verdict (upstream: no fit)", sc, other, theirs)
            else:
                upstream = [comparable(a) for a in theirs["results"]]
                for a in upstream + ours["results"]:
                    normalized_tolerations(a)
                if upstream != ours["results"]:
                    disagree("devices chosen", sc, ours["results"], upstream)
                else:
                    counts["agreed"] += 1
                    counts["feasible, same devices"] += 1
                # Another order may meet a device whose selector errs before
                # it finds a fit; it never finds none.
                for policy in ("binpack", "spread"):
                    other = devshare_node(sc, node, policy)
                    if other.get("feasible") is False and other.get("error") is None:
                        disagree(f"{policy} verdict (upstream: fits)", sc, other, theirs)
        for entry in answer["cel"]:
            ours = devshare_cel(sc, entry)
            if "unsupported" in ours:
                counts["unsupported selectors"] += 1
                continue
            counts["cel verdicts"] += 1
            if (entry["error"] is None) != (ours["error"] is None):
                disagree("cel error or not", sc, {**ours, "expression": entry["expression"]}, entry)
            elif entry["error"] is None and entry["matches"] != ours["matches"]:
                disagree("cel verdict", sc, {**ours, "expression": entry["expression"]}, entry)
            else:
                counts["agreed"] += 1
    detail = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())
                       if k not in ("agreed", "disagreed"))
    print(f"dra-oracle: {counts['agreed']} agreed, {counts['disagreed']} disagreed "
          f"({args.scenarios} scenarios, seed {args.seed}; {detail})")
    if args.results:
        unsupported = counts["unsupported allocations"] + counts["unsupported selectors"]
        with open(args.results, "a", encoding="utf-8") as f:
            f.write(f"dra-oracle {counts['agreed']} {counts['disagreed']} {unsupported}\n")
    return 1 if counts["disagreed"] else 0


if __name__ == "__main__":
    sys.exit(main())
