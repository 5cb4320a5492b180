"""The DRA devices recounted from the API objects alone (ResourceSlices,
ResourceClaims, Pods, Nodes), for the suites that fault devshare's DRA
allocator (dra-serve.sh, dra-failover.sh, the soak):

  over          a device capacity (cores, memory) whose consumedCapacity,
                summed over every allocated claim, is beyond what its slice
                publishes
  unknown       an allocation on a device no slice publishes
  shared        one share (driver, pool, device, shareID) in two claims, a
                claim's results naming one share twice, or a device that does
                not allow multiple allocations in two claims
  reserved      a claim reserved for more than one pod, or for a pod that is
                not its owner (a claim made from a template is its pod's)
  split         a bound pod whose claims are not all allocated, reserved for
                it and on its node
  room          (settled) a pod still gated by devshare although its claims
                fit the free capacity of one node (computed here,
                conservatively: first fit, largest request first, a pod with
                some claims allocated only on their node)
  unbound       (settled) a pod no longer gated, not bound
  waiting       (settled) a gated pod whose claims the resourceclaim
                controller has not made

Used as a module (recount()) by soak_churn.py and as a command:
  python3 dra_recount.py CLAIMS.json SLICES.json [PODS.json [NODES.json]] [--settled]
    [--gate devshare.dev/dra-allocation] [--json]
prints one line per problem (and the counts), exits 1 when there is one.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
from fractions import Fraction

GATE = "devshare.dev/dra-allocation"
SUFFIX = {"": 1, "m": Fraction(1, 1000), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
          "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
KINDS = ("over", "unknown", "shared", "reserved", "split", "room", "unbound", "waiting")


def quantity(text: object) -> Fraction:
    m = re.fullmatch(r"([0-9.]+)(?:[eE]([0-9]+))?([a-zA-Z]*)", str(text))
    if not m:
        raise ValueError(f"not a quantity: {text!r}")
    value = Fraction(m.group(1)) * SUFFIX[m.group(3)]
    return value * 10 ** int(m.group(2)) if m.group(2) else value


def fmt(value: Fraction) -> str:
    return str(int(value)) if value.denominator == 1 else f"{float(value):g}"


class Device:
    def __init__(self, driver: str, pool: str, node: str, d: dict) -> None:
        self.key = (driver, pool, d["name"])
        self.node = node
        self.multi = bool(d.get("allowMultipleAllocations"))
        self.capacity = {n: quantity(c["value"]) for n, c in d.get("capacity", {}).items()}
        self.policy = {n: c.get("requestPolicy") or {} for n, c in d.get("capacity", {}).items()}
        self.used: dict[str, Fraction] = collections.defaultdict(Fraction)
        self.claims: set[str] = set()

    def need(self, asked: dict[str, Fraction]) -> dict[str, Fraction]:
        """What a request asking ASKED would consume of this device: an amount asked rounded
        up to the policy's step, the policy's default for one not asked, else all of it."""
        if not self.multi:
            return dict(self.capacity)
        out = {}
        for name, cap in self.capacity.items():
            policy = self.policy[name]
            if name in asked:
                v = asked[name]
                vr = policy.get("validRange") or {}
                low = quantity(vr["min"]) if "min" in vr else Fraction(0)
                v = max(v, low)
                if "step" in vr:
                    step = quantity(vr["step"])
                    n = -(-(v - low) // step)
                    v = low + n * step
                out[name] = v
            elif "default" in policy:
                out[name] = quantity(policy["default"])
            else:
                out[name] = cap
        return out


def claim_requests(claim: dict) -> list[dict[str, Fraction]]:
    """The capacity each device request of the claim asks (one device a request)."""
    out = []
    for r in claim.get("spec", {}).get("devices", {}).get("requests", []):
        exactly = r.get("exactly") or {}
        asked = {n: quantity(v) for n, v in (exactly.get("capacity") or {}).get("requests", {}).items()}
        out += [asked] * int(exactly.get("count", 1))
    return out


def allocation_node(claim: dict) -> str:
    terms = (claim.get("status", {}).get("allocation", {}).get("nodeSelector") or {}).get(
        "nodeSelectorTerms", [])
    for term in terms:
        for f in term.get("matchFields", []):
            if f.get("key") == "metadata.name" and f.get("values"):
                return f["values"][0]
    return ""


def gated(pod: dict, gate: str) -> bool:
    return any(g.get("name") == gate for g in pod.get("spec", {}).get("schedulingGates") or [])


def recount(claims: list[dict], slices: list[dict], pods: list[dict] | None = None,
            nodes: list[dict] | None = None, settled: bool = False, gate: str = GATE) -> dict:
    """The problems found (kind -> list of strings), the counts, and the pods that could be
    placed now ("room": NAMESPACE/NAME -> the node their claims fit, or why)."""
    problems: dict[str, list[str]] = {k: [] for k in KINDS}
    devices: dict[tuple, Device] = {}
    for s in slices:
        spec = s["spec"]
        for d in spec.get("devices", []):
            dev = Device(spec["driver"], spec["pool"]["name"], spec.get("nodeName", ""), d)
            devices[dev.key] = dev
    shares: dict[tuple, str] = {}
    by_name = {}
    allocated = 0
    for c in claims:
        cname = f"{c['metadata'].get('namespace', '')}/{c['metadata']['name']}"
        by_name[cname] = c
        results = c.get("status", {}).get("allocation", {}).get("devices", {}).get("results", [])
        if results:
            allocated += 1
        for r in results:
            key = (r["driver"], r["pool"], r["device"])
            dev = devices.get(key)
            if dev is None:
                problems["unknown"].append(f"claim {cname} holds {'/'.join(key[1:])}, which no slice publishes")
                continue
            if r.get("shareID"):
                share = key + (r["shareID"],)
                if share in shares:
                    problems["shared"].append(f"share {r['shareID']} of {'/'.join(key[1:])} in claims "
                                              f"{shares[share]} and {cname}")
                shares[share] = cname
            elif not dev.multi and dev.claims - {cname}:
                problems["shared"].append(f"{'/'.join(key[1:])} (one allocation only) in claims "
                                          f"{sorted(dev.claims)[0]} and {cname}")
            dev.claims.add(cname)
            consumed = r.get("consumedCapacity")
            if consumed is None:
                consumed = {n: str(v) for n, v in dev.capacity.items()} if not dev.multi else {}
            for n, v in consumed.items():
                dev.used[n] += quantity(v)
        reserved = [x.get("uid") for x in c.get("status", {}).get("reservedFor", [])]
        owners = [o.get("uid") for o in c["metadata"].get("ownerReferences", []) if o.get("kind") == "Pod"]
        if len(reserved) > 1 or (owners and reserved and reserved[0] not in owners):
            problems["reserved"].append(f"claim {cname} reserved for {reserved} (owner {owners})")
    for dev in devices.values():
        for n, v in dev.used.items():
            if v > dev.capacity.get(n, Fraction(0)):
                problems["over"].append(f"{'/'.join(dev.key[1:])} {n}: {fmt(v)} of "
                                        f"{fmt(dev.capacity.get(n, Fraction(0)))} in "
                                        f"{len(dev.claims)} claims ({', '.join(sorted(dev.claims))})")
    counts = {"devices": len(devices), "claims": len(claims), "claims_allocated": allocated}
    room_pods: dict[str, str] = {}
    if pods is not None:
        counts.update(pod_checks(pods, nodes, by_name, devices, settled, gate, problems, room_pods))
    return {"problems": problems, "counts": counts, "room": room_pods}


def pod_checks(pods: list[dict], nodes: list[dict] | None, by_name: dict, devices: dict,
               settled: bool, gate: str, problems: dict, room_pods: dict) -> dict:
    bound_on = collections.Counter()
    for p in pods:
        if p["spec"].get("nodeName"):
            bound_on[p["spec"]["nodeName"]] += 1
    pod_room = {}
    for n in nodes or []:
        alloc = n.get("status", {}).get("allocatable", {})
        pod_room[n["metadata"]["name"]] = int(alloc.get("pods", "110")) - bound_on[n["metadata"]["name"]]
    counts = collections.Counter()
    by_node = collections.defaultdict(list)
    for dev in devices.values():
        by_node[dev.node].append(dev)
    for p in pods:
        meta = p["metadata"]
        name = f"{meta.get('namespace', '')}/{meta['name']}"
        # A claim named in the spec, or the one made from a template (the status says which).
        statuses = {s["name"]: s.get("resourceClaimName") for s in p.get("status", {}).get(
            "resourceClaimStatuses", []) or []}
        for rc in p["spec"].get("resourceClaims", []) or []:
            if rc.get("resourceClaimName"):
                statuses[rc["name"]] = rc["resourceClaimName"]
        wanted = [rc["name"] for rc in p["spec"].get("resourceClaims", []) or []]
        if not wanted or meta.get("deletionTimestamp"):
            continue
        counts["pods"] += 1
        made = [by_name.get(f"{meta.get('namespace', '')}/{statuses[w]}") if statuses.get(w) else None
                for w in wanted]
        node = p["spec"].get("nodeName", "")
        if node:
            counts["bound"] += 1
            for w, c in zip(wanted, made):
                ok = c is not None and allocation_node(c) == node and meta.get("uid") in [
                    x.get("uid") for x in c.get("status", {}).get("reservedFor", [])]
                if not ok:
                    problems["split"].append(f"pod {name} on {node}: claim {w} "
                                             + ("not made" if c is None else
                                                f"on {allocation_node(c) or 'no node'}, reserved for "
                                                f"{[x.get('name') for x in c.get('status', {}).get('reservedFor', [])]}"))
            continue
        if not gated(p, gate):
            counts["ungated_unbound"] += 1
            room_pods[name] = "(ungated, not bound)"
            if settled:
                problems["unbound"].append(f"pod {name} is not gated and not bound")
            continue
        counts["gated"] += 1
        if any(c is None for c in made):
            counts["gated_waiting_for_claims"] += 1
            if settled:
                problems["waiting"].append(f"pod {name}: claims not made "
                                           f"{[w for w, c in zip(wanted, made) if c is None]}")
            continue
        fixed = {allocation_node(c) for c in made if allocation_node(c)}
        asks = [a for c in made if not allocation_node(c) for a in claim_requests(c)]
        candidates = sorted(fixed) if fixed else sorted(by_node)
        room = next((n for n in candidates if len(fixed) <= 1 and (not pod_room or pod_room.get(n, 0) > 0)
                     and fits_node(by_node[n], asks)), None)
        if room is not None:
            counts["gated_with_room"] += 1
            room_pods[name] = room
            if settled:
                problems["room"].append(f"pod {name} is gated, but its claims fit on {room}")
    return dict(counts)


def fits_node(devs: list[Device], asks: list[dict[str, Fraction]]) -> bool:
    """First fit of the requests, largest first, on a copy of the devices' use."""
    used = {d.key: dict(d.used) for d in devs}
    taken = {d.key: bool(d.claims) for d in devs}
    order = sorted(asks, key=lambda a: sorted(((n, -v) for n, v in a.items())))
    for asked in order:
        for d in devs:
            need = d.need(asked)
            if not d.multi and taken[d.key]:
                continue
            if all(used[d.key].get(n, Fraction(0)) + v <= d.capacity.get(n, Fraction(0))
                   for n, v in need.items()):
                for n, v in need.items():
                    used[d.key][n] = used[d.key].get(n, Fraction(0)) + v
                taken[d.key] = True
                break
        else:
            return False
    return True


def summary_lines(result: dict, limit: int = 5) -> list[str]:
    out = []
    for kind in KINDS:
        items = result["problems"][kind]
        for item in items[:limit]:
            out.append(f"{kind}: {item}")
        if len(items) > limit:
            out.append(f"{kind}: ... {len(items) - limit} more")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="CLAIMS SLICES [PODS [NODES]] (LISTs as JSON)")
    parser.add_argument("--settled", action="store_true", help="also: room, unbound, waiting")
    parser.add_argument("--gate", default=GATE)
    parser.add_argument("--only", default=",".join(KINDS), help="the kinds that fail (comma-separated)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    lists = [json.load(open(f))["items"] for f in args.files]
    while len(lists) < 4:
        lists.append(None)
    result = recount(lists[0], lists[1], lists[2], lists[3], settled=args.settled, gate=args.gate)
    failing = [k for k in args.only.split(",") if result["problems"].get(k)]
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        for line in summary_lines(result):
            print(line)
        print("counts: " + ", ".join(f"{k} {v}" for k, v in sorted(result["counts"].items())))
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
