"""devshare's model of Volcano 1.12's handshake and node lock against Volcano
v1.12.4's own code (volcano112-oracle) on seeded scenarios (scenarios_volcano112.py).

handshake: for every observation of every sequence, devshare's
`volcano_scheduler_pass` decides on the values Volcano observed (the
handshake, the register annotation, the second Volcano read the clock at, the
zone Volcano ran in), and is compared with vgpu.NewGPUDevices: the patch
written (or none) and the devices the scheduler uses (none when the node is
dropped). nodelock: devshare's `decide_volcano_lock` against
nodelock.LockNode: whether the lock is taken, and the value left on the node.

A disagreement is explained by a row of docs/compatibility.md ("Volcano's
handshake and node lock") only when devshare, rerun with that row's fix
switched off, gives Volcano's answer:

  W16 (handshake zone)    rerun reading stamps as UTC (read_utc), as Volcano's
                          time.Parse does whatever zone it wrote them in;
  register fields         rerun on the register value re-encoded from the
                          devices Volcano read (devshare refuses the value);
  V5 (Requesting, no _)   Volcano panicked (index out of range) on a
                          Requesting value without '_'; devshare dropped the
                          node with a Deleted stamp (safety, no switch);
  lock zone               rerun writing the lock time in Volcano's zone;
  W6 (unreadable lock)    rerun with unreadable values blocking forever.

Both are compared a second time Volcano-exact, every switch above off at once
(read_utc, the lock written in Volcano's zone, unreadable locks blocking):
only the rows without a switch (register fields, V5) may be left.

Anything else is unexplained. Prints a summary line per function and exits 1
on any unexplained disagreement.

  python3 tests/oracle/compare_volcano112.py --scenarios 300 --seed 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scenarios_volcano112 as gen  # noqa: E402

import devshare  # noqa: E402

BIN = os.path.join(HERE, "bin", "volcano112-oracle")
KEY = "volcano.sh/node-vgpu-handshake"
LOCK_KEY = "hamivgpu"


def run(mode: str, scenarios: list[dict]) -> list[dict]:
    out = subprocess.run([BIN, mode], input="".join(json.dumps(s) + "\n" for s in scenarios).encode(),
                         stdout=subprocess.PIPE, check=True).stdout.decode().splitlines()
    if len(out) != len(scenarios):
        raise SystemExit(f"volcano112-oracle {mode} answered {len(out)} of {len(scenarios)} scenarios")
    return [json.loads(line) for line in out]


def devices_of(register: Optional[str]) -> Optional[list]:
    """The devices devshare reads from a register value, as the harness reports Volcano's."""
    try:
        return [{"index": d.index, "uuid": d.id, "count": d.count, "devmem": d.devmem, "type": d.type,
                 "health": d.health} for d in devshare.decode_node_devices(register or "", "volcano")]
    except ValueError:
        return None


def devshare_pass(step: dict, zone: int, register: Optional[str], read_utc: bool = False) -> dict:
    """devshare's decision on one observation: {"write": {key: value} or {}, "devices": list or None}."""
    decided = devshare.volcano_scheduler_pass(step["handshake"], step["now"], KEY, zone, register, read_utc)
    return {"write": dict(decided["write"]), "devices": devices_of(register) if decided["usable"] else None}


def volcano_pass(step: dict) -> dict:
    writes = step["writes"]
    if len(writes) > 1:
        raise SystemExit(f"Volcano wrote {len(writes)} patches in one observation: {writes}")
    return {"write": dict(writes[0]) if writes else {}, "devices": step["devices"]}


def representable(devices: Optional[list]) -> Optional[list]:
    """Volcano's devices with a count or memory that wrapped around (Volcano
    reads -1 as 2^64 - 1) or exceeds devshare's range as 1."""
    if devices is None:
        return None
    return [{**d, **{k: 1 for k in ("count", "devmem") if d[k] > 2**31 - 1}} for d in devices]


def volcano_register(devices: list) -> str:
    """A register value devshare reads as the devices Volcano read (an empty
    segment where Volcano skipped one, so that the indexes stay; numbers out
    of range as representable() has them)."""
    devices = representable(devices)
    segments = [""] * (max(d["index"] for d in devices) + 1)
    for d in devices:
        segments[d["index"]] = ",".join([d["uuid"], str(d["count"]), str(d["devmem"]), d["type"],
                                         "true" if d["health"] else "false", "hami-core"])
    return ":".join(segments) + ":"


def explain_pass(step: dict, zone: int, exact: bool = False) -> Optional[str]:
    """The rows that explain a disagreement on one observation, or None.
    Volcano-exact (`exact`): W16 switched off already; only the rows without a
    switch may explain."""
    theirs = volcano_pass(step)
    hs = step["handshake"] or ""
    register = step["register"]
    rows = []
    # Register fields: devshare refuses a value Volcano reads ("read": the
    # devices Volcano takes from it whatever the handshake); rerun on the
    # devices as Volcano read them.
    if step["read"] is not None and devices_of(register) is None:
        register = volcano_register(step["read"])
        rows.append("Volcano register: fields")
        theirs = {**theirs, "devices": representable(theirs["devices"])}
    if step["panic"]:
        ours = devshare_pass(step, zone, register, exact)
        written = list(ours["write"].values())
        if ("index out of range" in step["panic"] and "Requesting" in hs and "_" not in hs
                and ours["devices"] is None and written and written[0].startswith("Deleted_")):
            return " + ".join(rows + ["V5 Requesting without '_'"])
        return None
    for read_utc in ((True,) if exact else (False, True)):
        if read_utc and not exact:
            if zone == 0:
                break
            rows.append("W16 handshake zone")
        if devshare_pass(step, zone, register, read_utc) == theirs:
            return " + ".join(rows) if rows else None
    return None


def compare_handshake(sc: dict, answer: dict, counts: Counter, show, exact: bool = False) -> None:
    fn = "handshake exact" if exact else "handshake"
    verdicts = []
    for k, step in enumerate(answer["steps"]):
        if not exact:
            counts["handshake observations"] += 1
            if step["retries"]:
                counts["handshake observations run again (a second boundary)"] += 1
        theirs = volcano_pass(step)
        ours = devshare_pass(step, sc["zone"], step["register"], exact)
        if not step["panic"] and ours == theirs:
            verdicts.append(None)
            continue
        row = explain_pass(step, sc["zone"], exact)
        verdicts.append(row or "unexplained")
        if row is None:
            show(fn, sc, {"step": k, "observed": {x: step[x] for x in ("now", "handshake", "register")},
                                   "devshare": ours, "volcano": {**theirs, "panic": step["panic"]}})
    bad = [v for v in verdicts if v]
    if not bad:
        counts[f"{fn} agree"] += 1
    elif "unexplained" in bad:
        counts[f"{fn} unexplained"] += 1
    else:
        counts[f"{fn} explained"] += 1
        for row in sorted(set(bad)):
            counts[f"{fn} explained: {row}"] += 1


def devshare_lock(sc: dict, answer: dict, zone: int = 0, unreadable_expires: bool = True) -> dict:
    current = answer["lock"]
    sighting = {"value": current, "first_seen": answer["now"] - sc["seen_age"]} if current is not None else {}
    d = devshare.decide_volcano_lock(current, answer["now"], sighting, 300, zone, unreadable_expires)
    return {"acquired": d["acquired"], "left": d["write"][LOCK_KEY] if d["acquired"] else current}


def compare_lock(sc: dict, answer: dict, counts: Counter, show) -> None:
    theirs = {"acquired": answer["acquired"], "left": answer["left"]}
    ours = devshare_lock(sc, answer)
    if answer["acquired"]:
        counts[f"nodelock Volcano updates {answer['updates']}"] += 1
    # Volcano-exact: both switches off; nothing may be left.
    exact = devshare_lock(sc, answer, zone=sc["zone"], unreadable_expires=False)
    if exact == theirs and not answer["panic"]:
        counts["nodelock exact agree"] += 1
    else:
        counts["nodelock exact unexplained"] += 1
        show("nodelock exact", sc, {"devshare": exact, "volcano": answer})
    if ours == theirs and not answer["panic"]:
        counts["nodelock agree"] += 1
        return
    row = None
    if not answer["panic"]:
        if devshare_lock(sc, answer, zone=sc["zone"]) == theirs:
            row = "lock value written in UTC"
        elif devshare_lock(sc, answer, unreadable_expires=False) == theirs:
            row = "W6 unreadable lock expires"
    if row:
        counts["nodelock explained"] += 1
        counts[f"nodelock explained: {row}"] += 1
    else:
        counts["nodelock unexplained"] += 1
        show("nodelock", sc, {"devshare": ours, "volcano": answer})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--show", type=int, default=5, help="unexplained disagreements to print in full")
    parser.add_argument("--results", help="append 'oracle-volcano112 passed unexplained skipped' to this file")
    args = parser.parse_args()
    if not os.path.exists(BIN):
        reason = open(BIN + ".SKIPPED").read().strip() if os.path.exists(BIN + ".SKIPPED") else \
            "not built (tests/oracle/build.sh)"
        print(f"volcano112-oracle: skipped: {reason}")
        if args.results:
            with open(args.results, "a", encoding="utf-8") as f:
                f.write("oracle-volcano112 0 0 1\n")
        return 0
    counts: Counter = Counter()
    shown = 0

    def show(what: str, sc: dict, detail: dict) -> None:
        nonlocal shown
        if shown < args.show:
            shown += 1
            print(f"UNEXPLAINED {what} in scenario {sc['id']}: {json.dumps(sc)[:800]}\n  {json.dumps(detail)[:1500]}")

    ids = range(args.start, args.start + args.scenarios)
    for first in range(args.start, args.start + args.scenarios, 500):
        batch = [i for i in ids if first <= i < first + 500]
        handshakes = [gen.handshake_scenario(args.seed, i) for i in batch]
        for sc, answer in zip(handshakes, run("handshake", handshakes)):
            compare_handshake(sc, answer, counts, show)
            compare_handshake(sc, answer, counts, show, exact=True)
        locks = [gen.node_lock_scenario(args.seed, i) for i in batch]
        for sc, answer in zip(locks, run("nodelock", locks)):
            compare_lock(sc, answer, counts, show)
    fns = ("handshake", "nodelock", "handshake exact", "nodelock exact")
    unexplained = sum(counts[f"{fn} unexplained"] for fn in fns)
    for fn in fns:
        detail = ", ".join(f"{k.split(': ', 1)[1] if ': ' in k else k} {v}" for k, v in sorted(counts.items())
                           if k.startswith(fn + " ") and not k.startswith(fn + " exact")
                           and k not in (f"{fn} agree", f"{fn} explained", f"{fn} unexplained"))
        name = fn.replace(" exact", " (Volcano-exact: W16, lock zone, W6 switched off)")
        print(f"volcano112-oracle {name}: {counts[fn + ' agree']} agree, {counts[fn + ' explained']} explained, "
              f"{counts[fn + ' unexplained']} unexplained ({args.scenarios} scenarios, seed {args.seed}"
              + (f"; {detail})" if detail else ")"))
    if args.results:
        passed = 4 * args.scenarios - unexplained
        with open(args.results, "a", encoding="utf-8") as f:
            f.write(f"oracle-volcano112 {passed} {unexplained} 0\n")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
