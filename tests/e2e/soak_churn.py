"""The soak and fault test's driver (soak.sh sets up and runs it): starts the
two devshare serve replicas, registers the nodes and the webhook, churns GPU
pods for SOAK_MINUTES while faults are injected one after another, and
recounts the cluster from the API objects itself.

Churn: Poisson arrivals of pods asking 1-2 GPUs with various gpumem, some
with gpucores; each pod lives an exponential time once bound, then the test
deletes it (there is no kubelet: deletion is the end of its life). The rate
and lifetime aim at SOAK_UTIL of the GPU memory (busy, not saturated); a first
population is created at once so that the cluster is busy from the start.

Recount (every SOAK_POLL seconds a LIST of nodes and pods; the checks every
minute and at the end), decoding hami.io/node-nvidia-register and
hami.io/vgpu-devices-allocated here:
  - no GPU over its memory, cores or slots; no allocation on a device its
    node does not register;
  - every bound pod asking GPUs carries its devices, as many as it asked, on
    devices of its node, with the memory it asked;
  - no pod pending more than 30 s while a node that fits it (computed here,
    conservatively: the same node fitting at every look, not locked) was
    free; fault windows (and 45 s after them) are excused, and so is the
    queue of the first population until it is all bound (at most
    SOAK_FIRST_LIMIT s, 300; its bind rate is reported);
  - no pod the test created and did not delete has vanished;
  - no write (Binding, node lock, pod patch) by a replica while the Lease was
    held by the other one, before and after (the API server's audit log, one
    user per replica through fault_proxy.py);
  - devshare serve's RSS and open descriptors per replica process: least
    squares slopes over the samples after its first minute;
  - the drift auditor's confirmed differences (/metrics
    devshare_audit_differences_total on the leader): those confirmed within
    SOAK_FAULT_ATTRIBUTION s after a fault are injected, and so are orphaned
    locks of pods scheduled during a fault; any other is a failure.
    Skipped, and said so, when the replica does not serve /debug/audit.
After each fault a probe pod must be bound within 60 s and the recount hold.

Configuration comes from the environment soak.sh exports (see there).
Prints progress lines, a summary, "e2e-soak: N passed, N failed" last, and
writes the summary as JSON to SOAK_JSON when set.
"""


from __future__ import annotations

import collections
import concurrent.futures
import json
import math
import os
import random
import re
import signal
import sys
import threading
import time

import soak_dra
from soak_cluster import (FAULT_EXCUSE, NODE_GPUS, NODE_MEM, NS, PENDING_LIMIT, POD_CORES, POD_GPUS,
                          POD_MEM, ENV, Api, Replica, Snapshot, holder_replica, https_get, log, mean,
                          node_json, pick, pod_json, ready_patch)
from soak_faults import Faults
from soak_report import Report

# serve's log line for an orphaned lock its audit confirmed: the owner pod's name
ORPHANED_LOCK = re.compile(r"audit: lock-orphaned \S+: locked by [^/\s]+/(\S+), which does not exist")


class Soak(Faults, Report):
    def __init__(self) -> None:
        self.api = Api()
        self.seed = int(ENV.get("SOAK_SEED", "1"))
        self.rng = random.Random(self.seed)
        self.minutes = float(ENV.get("SOAK_MINUTES", "5"))
        self.nodes_wanted = int(ENV.get("SOAK_NODES", "200"))
        self.poll_period = float(ENV.get("SOAK_POLL", "5"))
        self.lock = threading.RLock()
        self.passed = self.failed = 0
        self.check_log: list[dict] = []
        self.pods: dict[str, dict] = {}  # name -> created, bound, node, deleted, lifetime, kind
        self.counts = collections.Counter()
        self.restarting: str | None = None  # a control-plane component restarted on purpose, now
        self.faults: list[dict] = []
        self.windows: list[list[float]] = []  # [start, end or None]
        self.max_pending_fit = 0.0
        self.max_pending_fit_excused = 0.0
        self.pending_violations: dict[str, float] = {}
        self.first: set[str] = set()  # the first population's pods, created at once
        self.first_start = 0.0
        self.first_drained: float | None = None
        self.lost: set[str] = set()
        self.crashes: list[str] = []
        self.reported: set[tuple[str, str]] = set()
        self.over_seen: set[str] = set()
        self.recount_problems: set[str] = set()
        self.lease_samples: list[tuple[float, str]] = []
        self.audit_offset = 0
        self.audit_lock = threading.Lock()
        self.writes = collections.Counter()
        self.stale_writes: list[str] = []
        self.audit_pending: list[tuple[float, str, str]] = []
        self.auditor = {"available": None, "injected": collections.Counter(),
                        "uninjected": collections.Counter(), "last": {}, "samples": 0,
                        "healed": collections.Counter(), "notes": [], "log_offsets": {}}
        self.stop = threading.Event()
        self.pool = concurrent.futures.ThreadPoolExecutor(6)
        self.seq = 0
        fake = ENV.get("SOAK_FAKETIME_LIB", "")
        faults = [f for f in ENV.get("SOAK_FAULTS", "").split(",") if f]
        self.fault_plan = faults
        self.replicas = [
            Replica("a", int(ENV["SOAK_PORT_A"]), ENV["SOAK_KUBECONFIG_A"],
                    fake if fake and "clock-step" in faults else None),
            Replica("b", int(ENV["SOAK_PORT_B"]), ENV["SOAK_KUBECONFIG_B"],
                    fake if fake and "clock-step" in faults else None)]
        self.snapshot: Snapshot | None = None
        self.node_names: list[str] = []
        self.node_generation = collections.Counter()
        self.dra = soak_dra.DraChurn(self) if soak_dra.enabled() else None
        self.kill_times: list[float] = []  # when a replica was SIGKILLed
        # how long the webhook's Service may still send a dead replica new connections: its
        # probes fail it after SOAK_PROBE_FAILURES in a row, one each SOAK_PROBE_PERIOD s
        self.unseen_death_s = float(ENV.get("SOAK_PROBE_PERIOD", "2")) * (
            int(ENV.get("SOAK_PROBE_FAILURES", "3")) + 1)
        # when a replica was SIGSTOPped, and SIGCONTed (inf while it is still stopped: a call it
        # left unanswered fails after the webhook's 10 s timeout, before the SIGCONT)
        self.stops: list[tuple[float, float]] = []

    # --- checks ---
    def check(self, what: str, ok: bool | None, detail: str = "") -> bool:
        with self.lock:
            if ok is None:
                print(f"SKIPPED: {what}{': ' + detail if detail else ''}", flush=True)
                self.check_log.append({"check": what, "result": "skipped", "detail": detail})
                return True
            if ok:
                self.passed += 1
                print(f"ok: {what}{' (' + detail + ')' if detail else ''}", flush=True)
            else:
                self.failed += 1
                print(f"FAILED: {what}{': ' + detail if detail else ''}", flush=True)
            self.check_log.append({"check": what, "result": "passed" if ok else "failed",
                                   "detail": detail})
            return ok

    # --- set-up ---
    def create_nodes(self) -> None:
        t0 = time.time()

        def make(i: int) -> str | None:
            rnd = random.Random(self.seed * 1000003 + i)
            return self.register_node(node_json(f"soak-{i:04d}", pick(rnd, NODE_GPUS), pick(rnd, NODE_MEM)))

        errors = [e for e in self.pool.map(make, range(self.nodes_wanted)) if e]
        self.node_names = [f"soak-{i:04d}" for i in range(self.nodes_wanted)]
        self.check(f"register {self.nodes_wanted} GPU nodes ({time.time() - t0:.1f} s)", not errors,
                   errors[0] if errors else "")
        if self.dra:
            t0 = time.time()
            err = self.dra.setup()
            self.check(f"register {self.dra.nodes} DRA nodes of 4 GPUs, their ResourceSlices, the "
                       f"DeviceClass hami-gpu and the templates ({time.time() - t0:.1f} s)", err is None, err or "")

    def register_node(self, body: dict) -> str | None:
        name = body["metadata"]["name"]
        for method, path, payload, ctype in (
                ("POST", "/api/v1/nodes", body, "application/json"),
                ("PATCH", f"/api/v1/nodes/{name}/status", ready_patch(), "application/merge-patch+json"),
                ("PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": None}}, "application/merge-patch+json")):
            status, data = self.api.call(method, path, payload, ctype)
            if not 200 <= status < 300:
                return f"{method} {path}: HTTP {status} {data[:200]!r}"
        return None

    def register_webhook(self) -> bool:
        # The webhook's own Service (every replica whose cache is synced), when
        # soak.sh runs one; else the extender's (the leader only).
        port = ENV.get("SOAK_WEBHOOK_PORT") or ENV["DEVSHARE_PROXY_PORT"]
        body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
                "metadata": {"name": "devshare"},
                "webhooks": [{"name": "pods.devshare.e2e",
                              "clientConfig": {"url": f"https://127.0.0.1:{port}/webhook",
                                               "caBundle": ENV["CA_BUNDLE"]},
                              "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                         "resources": ["pods"]}],
                              "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "default"}},
                              "failurePolicy": "Fail", "sideEffects": "None",
                              "admissionReviewVersions": ["v1"], "timeoutSeconds": 10}]}
        status, _ = self.api.call("POST", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", body)
        return 200 <= status < 300

    def leader(self) -> Replica | None:
        holder = self.lease_holder()
        return next((r for r in self.replicas if r.name == holder), None)

    def lease_holder(self) -> str:
        """The replica holding the Lease (its identity is --hostname, "_", a suffix), or ""."""
        lease = self.api.json("GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases/devshare",
                              timeout=5)
        return holder_replica((lease or {}).get("spec", {}).get("holderIdentity") or "")

    def wait_ready(self, limit: float) -> Replica | None:
        t0 = time.time()
        while time.time() - t0 < limit:
            for r in self.replicas:
                if r.alive() and r.ready():
                    return r
            time.sleep(0.5)
        return None

    # --- churn ---
    def new_pod(self, kind: str, want: tuple[int, int, int] | None = None,
                lifetime: float | None = None, dra: str | None = None) -> str:
        """A pod asking WANT of the annotation GPUs, or with DRA a pod whose claims come from
        that template (soak_dra.SHAPES)."""
        with self.lock:
            self.seq += 1
            name = f"{kind}-{self.seq:06d}"
            rng = self.dra.rng if dra else self.rng
            if dra:
                want = (0, 0, 0)
            elif want is None:
                want = (pick(self.rng, POD_GPUS), pick(self.rng, POD_MEM), pick(self.rng, POD_CORES))
            if lifetime is None:
                lifetime = rng.expovariate(1 / self.lifetime)
            self.pods[name] = {"kind": kind, "want": want, "lifetime": lifetime, "created": None,
                               "asked": time.time(), "bound": None, "node": "", "deleted": None,
                               "fitset": None, "fit_since": None, "dra": dra}
        self.pool.submit(self.create_pod, name)
        return name

    def create_pod(self, name: str) -> None:
        rec = self.pods[name]
        body = soak_dra.pod_json(name, rec["dra"]) if rec.get("dra") else pod_json(name, rec["want"])
        t0 = time.time()
        status, data = self.api.call("POST", f"{NS}/pods", body, timeout=30)
        t1 = time.time()
        with self.lock:
            if 200 <= status < 300:
                rec["created"] = time.time()
                self.counts["created"] += 1
                obj = json.loads(data)
                if rec.get("dra"):
                    self.counts["dra_created"] += 1
                    if not soak_dra.dra_recount.gated(obj, soak_dra.dra_recount.GATE):
                        self.counts["dra_not_gated"] += 1
                elif obj["spec"].get("schedulerName") != "devshare-scheduler":
                    self.counts["not_moved_by_webhook"] += 1
            elif status == 409:  # an earlier try that timed out went through
                rec["created"] = time.time()
                self.counts["created"] += 1
            elif rec["created"] is not None:  # a poll saw it: the answer was lost on the way
                self.counts["created"] += 1
            else:
                rec["failed"] = status
                rec["deleted"] = time.time()
                self.counts["create_failed"] += 1
                if b"failed calling webhook" in data and any(
                        t0 - self.unseen_death_s <= k <= t1 for k in self.kill_times):
                    # its webhook call was in flight to the replica SIGKILLed meanwhile, or sent
                    # before the Service's probes could fail it: a new connection the Service
                    # gave the dead replica is closed at once
                    self.counts["create_refused_at_kill"] += 1
                elif b"failed calling webhook" in data and any(a - 1 <= t0 <= b for a, b in self.stops):
                    # sent while a replica was SIGSTOPped: only a frozen replica leaves a call
                    # unanswered (the Service sends it new connections until its readiness
                    # probes fail, and the API server's kept ones until they time out)
                    self.counts["create_refused_while_stopped"] += 1
                elif b"failed calling webhook" in data:
                    self.counts["create_refused_by_webhook"] += 1
                key = f"create_failed_http_{status}"
                self.counts[key] += 1

    def delete_pod(self, name: str, why: str) -> None:
        status, _ = self.api.call("DELETE", f"{NS}/pods/{name}", {"gracePeriodSeconds": 0}, timeout=30)
        with self.lock:
            rec = self.pods[name]
            if 200 <= status < 300 or status == 404:
                self.counts["deleted"] += 1
                self.counts[f"deleted_{why}"] += 1
            else:
                rec["deleted"] = None  # try again on the next tick
                rec["delete_at"] = time.time() + 5
                self.counts["delete_failed"] += 1

    def schedule_deletions(self, now: float) -> None:
        with self.lock:
            due = []
            for name, rec in self.pods.items():
                if rec["deleted"] is not None or rec["created"] is None:
                    continue
                at = rec.get("delete_at")
                if at is None and rec["bound"] is not None:
                    at = rec["delete_at"] = rec["bound"] + rec["lifetime"]
                if at is None and now - rec["created"] > self.giveup:
                    at = now
                    rec["gave_up"] = True
                if at is not None and at <= now:
                    rec["deleted"] = now
                    due.append((name, "gave_up" if rec.get("gave_up") else "lifetime"))
        for name, why in due:
            self.pool.submit(self.delete_pod, name, why)

    # --- looking at the cluster ---
    def in_fault(self, t: float, grace: float = FAULT_EXCUSE) -> bool:
        return any(s <= t <= (e if e is not None else t) + grace for s, e in self.windows)

    def poll(self) -> Snapshot | None:
        t = time.time()
        nodes = self.api.json("GET", "/api/v1/nodes", timeout=30)
        pods = self.api.json("GET", f"{NS}/pods", timeout=30)
        if nodes is None or pods is None:
            return None
        snap = Snapshot(nodes["items"], pods["items"], t)
        excused = self.in_fault(t) or self.first_draining(t)
        room = None
        if self.dra:
            result = self.dra.poll(pods["items"], nodes["items"])
            room = result["room"] if result else None
        with self.lock:
            self.snapshot = snap
            for name, rec in self.pods.items():
                seen = snap.pods.get(name)
                if seen is None:
                    if rec["created"] is not None and rec["deleted"] is None and t - rec["created"] > 10:
                        # created, not deleted by the test, and not there
                        if name not in self.lost:
                            self.lost.add(name)
                            log(f"pod {name} vanished (created {t - rec['created']:.0f} s ago)")
                    continue
                if rec["created"] is None and rec["deleted"] is None:
                    rec["created"] = t  # the create answer is still on its way
                if rec.get("failed") in (0, 504) and rec["created"] is None:
                    # the create timed out on the way back but went through: churn it too
                    rec["created"], rec["deleted"] = t, None
                    del rec["failed"]
                    self.counts["create_failed"] -= 1
                    self.counts["created"] += 1
                if seen["node"]:
                    if rec["bound"] is None:
                        rec["bound"] = t
                        rec["node"] = seen["node"]
                        self.counts["bound"] += 1
                        self.counts["dra_bound"] += 1 if rec.get("dra") else 0
                    rec["fitset"] = rec["fit_since"] = None
                    continue
                if rec["deleted"] is not None:
                    continue
                if rec.get("dra"):
                    self.dra_pending(name, rec, room, t, excused)
                    continue
                fits = snap.fitting_nodes(seen["want"])
                if excused:
                    rec["fitset"], rec["fit_since"] = None, None
                    continue
                if rec["fitset"] and fits & rec["fitset"]:
                    rec["fitset"] &= fits
                else:
                    rec["fitset"] = fits or None
                    rec["fit_since"] = t if fits else None
                if rec["fit_since"] is not None:
                    waited = t - rec["fit_since"]
                    self.max_pending_fit = max(self.max_pending_fit, waited)
                    if waited > PENDING_LIMIT and name not in self.pending_violations:
                        self.pending_violations[name] = waited
                        log(f"pod {name} {seen['want']} pending {waited:.0f} s while "
                            f"{sorted(rec['fitset'])[:3]} fit it")
                    elif name in self.pending_violations:
                        self.pending_violations[name] = max(self.pending_violations[name], waited)
            for d in snap.over:
                if d not in self.over_seen:
                    self.over_seen.add(d)
                    log(f"OVER-ALLOCATED: {d}")
            for p in snap.problems:
                if p not in self.recount_problems:
                    self.recount_problems.add(p)
                    log(f"recount: {p}")
        return snap

    def first_draining(self, t: float) -> bool:
        """Whether the first population, created at once, is still being bound: a queue that
        size is no stall, so the waits (its own and those behind it) are excused until the last
        of it is bound or gone, for at most SOAK_FIRST_LIMIT s."""
        if self.first_drained is not None or not self.first:
            return False
        left = sum(1 for n in self.first if self.pods[n]["bound"] is None and self.pods[n]["deleted"] is None)
        limit = float(ENV.get("SOAK_FIRST_LIMIT", "300"))
        if left and t - self.first_start <= limit:
            return True
        self.first_drained = t
        took = t - self.first_start
        self.check(f"the first population ({len(self.first)} pods) bound within {limit:.0f} s", not left,
                   f"in {took:.0f} s, {(len(self.first) - left) / took:.1f} pods/s; {left} left")
        return False

    def dra_pending(self, name: str, rec: dict, room: dict | None, t: float, excused: bool) -> None:
        """A DRA pod's wait while its claims fit a node (the recount's "room"), as fit_since is
        an annotation pod's; unknown (no recount) or excused in a fault window."""
        if room is None or excused or name not in room:
            rec["fit_since"] = None
            return
        if rec["fit_since"] is None:
            rec["fit_since"] = t
        waited = t - rec["fit_since"]
        self.dra.max_pending_room = max(self.dra.max_pending_room, waited)
        self.max_pending_fit = max(self.max_pending_fit, waited)
        if waited > PENDING_LIMIT and name not in self.pending_violations:
            self.pending_violations[name] = waited
            log(f"DRA pod {name} ({rec['dra']}) pending {waited:.0f} s while it fits: {room[name]}")
        elif name in self.pending_violations:
            self.pending_violations[name] = max(self.pending_violations[name], waited)

    def fits_now(self, snap: Snapshot | None, name: str) -> bool:
        """Whether the pod, pending, fits somewhere by the last recount."""
        if snap is None or name not in snap.pods:
            return False
        if self.pods.get(name, {}).get("dra"):
            return bool(self.dra and self.dra.result and name in self.dra.result["room"])
        return bool(snap.fitting_nodes(snap.pods[name]["want"]))

    def lease_loop(self) -> None:
        api = Api()
        while not self.stop.is_set():
            lease = api.json("GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases/devshare",
                             timeout=5)
            if lease is not None:
                holder = holder_replica(lease.get("spec", {}).get("holderIdentity") or "")
                with self.lock:
                    self.lease_samples.append((time.time(), holder))
            self.stop.wait(1)

    def holder_around(self, t: float) -> tuple[str | None, str | None]:
        """The Lease holder at the last sample before t and the first after."""
        before = after = None
        for st, holder in reversed(self.lease_samples):
            if st <= t:
                before = holder
                break
            after = holder
        return before, after

    def scan_audit(self) -> None:
        """Writes by the replicas, from the API server's audit log; a write by one while
        the Lease was held by the other (before and after) is a stale leader's."""
        with self.audit_lock:
            self.scan_audit_locked()

    def scan_audit_locked(self) -> None:
        path = ENV.get("AUDIT_LOG", "")
        users = {r.user: r.name for r in self.replicas}
        try:
            with open(path, encoding="utf-8") as f:
                f.seek(self.audit_offset)
                while True:
                    line = f.readline()
                    if not line.endswith("\n"):
                        break
                    self.audit_offset = f.tell()
                    try:
                        e = json.loads(line)
                    except ValueError:
                        continue
                    if e.get("stage") != "ResponseComplete":
                        continue
                    who = users.get(e.get("user", {}).get("username", ""))
                    verb = e.get("verb", "")
                    if who is None or verb not in ("create", "update", "patch", "delete"):
                        continue
                    ref = e.get("objectRef") or {}
                    res = ref.get("resource", "") + ("/" + ref["subresource"] if ref.get("subresource") else "")
                    if res == "leases":
                        continue
                    stamp = e.get("requestReceivedTimestamp", "")
                    try:
                        import datetime
                        t = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
                    except ValueError:
                        continue
                    ok = (e.get("responseStatus") or {}).get("code", 0) < 300
                    self.writes[(who, verb, res, ok)] += 1
                    self.audit_pending.append((t, who, f"{verb} {res} {ref.get('name', '')} "
                                               f"-> {(e.get('responseStatus') or {}).get('code')}"))
        except OSError:
            return
        # Decide once the Lease has been sampled after the write.
        with self.lock:
            last = self.lease_samples[-1][0] if self.lease_samples else 0
            keep = []
            for t, who, what in self.audit_pending:
                if t >= last:
                    keep.append((t, who, what))
                    continue
                before, after = self.holder_around(t)
                if before and after and before != who and after != who:
                    self.stale_writes.append(f"{time.strftime('%H:%M:%S', time.localtime(t))} "
                                             f"replica {who} (Lease held by {before}): {what}")
                    if len(self.stale_writes) <= 20:
                        log(f"STALE WRITE by replica {who} while {before} held the Lease: {what}")
            self.audit_pending = keep

    def sample_auditor(self) -> None:
        """Confirmed drift differences on the replicas' /metrics; the increments seen within
        SOAK_FAULT_ATTRIBUTION s after a fault's end are the fault's, and so is an orphaned
        lock confirmed later whose pod was being scheduled during a fault
        (`locks_left_in_faults`)."""
        attribution = float(ENV.get("SOAK_FAULT_ATTRIBUTION", "120"))
        holder = self.lease_samples[-1][1] if self.lease_samples else ""
        for r in self.replicas:
            status, body = https_get(r.port, "/metrics", 5)
            if status != 200:
                continue
            totals, healed = collections.Counter(), collections.Counter()
            for line in body.decode().splitlines():
                for prefix, into in (("devshare_audit_differences_total{", totals),
                                     ("devshare_audit_healed_total{", healed)):
                    if line.startswith(prefix):
                        labels, _, value = line.rpartition(" ")
                        kind = labels.split('kind="', 1)[-1].split('"', 1)[0]
                        into[kind] += int(float(value))
            key = (r.name, r.proc.pid if r.proc else 0)
            last = self.auditor["last"].get(key, collections.Counter())
            self.auditor["last"][key] = totals
            if r.name != holder:
                continue  # only the leader's audit counts
            now = time.time()
            injected = any(s <= now <= (e or now) + attribution for s, e in self.windows)
            # Read at every sample, so that a line is weighed with the difference it counts.
            left_by_faults = self.locks_left_in_faults(r, attribution)
            for kind, value in totals.items():
                delta = value - last.get(kind, 0)
                if delta <= 0:
                    continue
                left = 0 if injected or kind != "lock-orphaned" else min(delta, left_by_faults)
                for into, n in ((self.auditor["injected"], delta if injected else left),
                                (self.auditor["uninjected"], 0 if injected else delta - left)):
                    if n:
                        into[kind] += n
                log(f"auditor ({r.name}): {delta} confirmed {kind} "
                    f"({'during a fault' if injected else f'{left} left by a fault, NOT INJECTED'})")
            for kind, value in healed.items():
                self.auditor["healed"][kind] = max(self.auditor["healed"][kind], value)

    def locks_left_in_faults(self, r: Replica, attribution: float) -> int:
        """Of the orphaned locks the replica's audits logged since the last look, how many a
        pod holds that was being scheduled while a fault was on (created before the fault's
        end + attribution, bound after its start, or not yet): a lock whose release the
        fault refused is orphaned only once its pod is deleted, which may be much later."""
        path = os.path.join(ENV["E2E_LOGS"], f"devshare-{r.name}.log")
        offset = self.auditor["log_offsets"].get(r.name, 0)
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                data = f.read()
        except OSError:
            return 0
        data = data[:data.rfind(b"\n") + 1]
        self.auditor["log_offsets"][r.name] = offset + len(data)
        now, left = time.time(), 0
        for owner in ORPHANED_LOCK.findall(data.decode(errors="replace")):
            pod = self.pods.get(owner)
            if pod and any(pod["asked"] <= (e or now) + attribution and (pod["bound"] or now) >= s
                           for s, e in self.windows):
                left += 1
        return left

    def probe_auditor(self) -> None:
        r = self.leader()
        if r is None:
            return
        status, body = https_get(r.port, "/debug/audit", 60)
        if status == 404:
            if self.auditor["available"] is None:
                log("the replicas do not serve /debug/audit: the drift auditor check is skipped")
            self.auditor["available"] = False
            return
        if status != 200:
            self.auditor["notes"].append(f"/debug/audit on {r.name}: HTTP {status}")
            return
        self.auditor["available"] = True
        try:
            a = json.loads(body)
        except ValueError:
            self.auditor["notes"].append(f"/debug/audit on {r.name}: not JSON")
            return
        self.auditor["samples"] += 1
        self.auditor["last_audit"] = {"replica": r.name, "duration_ms": a.get("duration_ms"),
                                      "list": a.get("list"), "totals": a.get("totals"),
                                      "differences": len(a.get("differences", []))}

    def handovers(self) -> list[str]:
        out, last = [], None
        for t, holder in self.lease_samples:
            if holder != last:
                out.append(f"{time.strftime('%H:%M:%S', time.localtime(t))} {holder or 'nobody'}")
                last = holder
        return out

    def sample_processes(self) -> None:
        t = time.time()
        for r in self.replicas:
            r.sample(t)

    # --- the recount's verdicts ---
    def recount_check(self, label: str) -> None:
        """The recount's checks; each problem fails the first recount that finds it (a device
        still over at a later one is named there, without failing it again)."""
        snap = self.poll()
        if snap is None:
            # A recount that falls on a planned restart waits for the one that
            # follows the fault (the API server is down on purpose).
            restarting = self.restarting
            self.check(f"recount {label}: the API server answers the LISTs", None if restarting else False,
                       f"{restarting} is being restarted on purpose: recounted after it" if restarting else "")
            return
        self.scan_audit()
        used, total = snap.memory()
        with self.lock:
            reported = self.reported
            new_over = [d for d in snap.over if ("over", d) not in reported]
            new_problems = [p for p in snap.problems if ("problem", p) not in reported]
            lost = [n for n in sorted(self.lost) if ("lost", n) not in reported]
            stale = [w for w in self.stale_writes if ("stale", w) not in reported]
            viol = {n: w for n, w in self.pending_violations.items() if ("pending", n) not in reported}
            reported.update([("over", d) for d in new_over] + [("problem", p) for p in new_problems] +
                            [("lost", n) for n in lost] + [("stale", w) for w in stale] +
                            [("pending", n) for n in viol])
        still = len(snap.over) - len(new_over)
        self.check(f"recount {label}: no GPU over its memory, cores or slots", not new_over,
                   "; ".join(new_over[:3]) if new_over else
                   f"{used * 100 // max(total, 1)}% of GPU memory held"
                   + (f"; {still} device(s) found over before are still over" if still else ""))
        self.check(f"recount {label}: bound pods carry their devices, of their node", not new_problems,
                   "; ".join(new_problems[:3]))
        self.check(f"recount {label}: no pod lost", not lost, ", ".join(lost[:5]))
        if self.dra:
            self.dra_recount_check(label)
        if snap.orphans and not self.in_fault(snap.t):
            self.check(f"recount {label}: no pod bound to a node that is not there", False,
                       ", ".join(snap.orphans[:5]))
        self.check(f"recount {label}: no write by a replica not holding the Lease", not stale,
                   f"{len(stale)}: " + "; ".join(stale[:3]) if stale else "")
        self.check(f"recount {label}: no pod pending > {PENDING_LIMIT:.0f} s while a node fits it",
                   not viol, f"{len(viol)} pods: " + ", ".join(f"{n} {s:.0f} s" for n, s in list(viol.items())[:5])
                   if viol else "")

    def dra_recount_check(self, label: str) -> None:
        """The DRA devices from the same recount: a problem fails the first recount that finds it.
        A bound pod the test has deleted since may have lost its claims between the LISTs."""
        r = self.dra.result
        if r is None:
            self.check(f"recount {label}: the API server answers the LISTs of claims and slices", False)
            return
        with self.lock:
            deleted = {n for n, rec in self.pods.items() if rec["deleted"] is not None}
        over = self.dra.new_problems(("over", "unknown"))
        shared = self.dra.new_problems(("shared", "reserved"))
        split = [p for p in self.dra.new_problems(("split",)) if p.split()[1].split("/")[-1] not in deleted]
        self.dra.note_split(split)
        c = r["counts"]
        self.check(f"recount {label}: no DRA device over its capacity", not over,
                   "; ".join(over[:3]) if over else f"{c.get('claims_allocated', 0)} claims allocated on "
                   f"{c.get('devices', 0)} devices, {c.get('bound', 0)} DRA pods bound, {c.get('gated', 0)} gated")
        self.check(f"recount {label}: no DRA device share in two claims, no claim reserved for two pods",
                   not shared, "; ".join(shared[:3]))
        self.check(f"recount {label}: bound DRA pods hold their claims, on their node", not split,
                   "; ".join(split[:3]))

    # --- the run ---
    def run(self) -> int:
        seconds = self.minutes * 60
        util = float(ENV.get("SOAK_UTIL", "0.6"))
        max_rate = float(ENV.get("SOAK_RATE_MAX", "2.5"))
        self.create_nodes()
        for r in self.replicas:
            r.start()
        threading.Thread(target=self.lease_loop, daemon=True).start()
        leader = self.wait_ready(90)
        if not self.check("a replica leads and is ready", leader is not None,
                          f"replica {leader.name}" if leader else ""):
            for r in self.replicas:
                with open(os.path.join(ENV["E2E_LOGS"], f"devshare-{r.name}.log"), errors="replace") as f:
                    print(f"--- devshare-{r.name}.log (last lines)\n" + "".join(f.readlines()[-10:]))
            print(f"e2e-soak: {self.passed} passed, {self.failed} failed", flush=True)
            return 1
        self.check("register the webhook", self.register_webhook())
        # the webhook must answer before pods are created
        t0 = time.time()
        while time.time() - t0 < 30:
            status, data = self.api.call("POST", f"{NS}/pods?dryRun=All", pod_json("dry", (1, 1000, 0)))
            if status == 201 and json.loads(data)["spec"].get("schedulerName") == "devshare-scheduler":
                break
            time.sleep(0.5)
        snap = self.poll()
        _, capacity = snap.memory() if snap else (0, 1)
        demand = mean(POD_GPUS) * mean(POD_MEM)
        concurrent_pods = util * capacity / demand
        self.rate = min(max_rate, concurrent_pods / 60.0)
        self.lifetime = concurrent_pods / self.rate
        self.giveup = float(ENV.get("SOAK_GIVEUP", "600"))
        prefill = int(concurrent_pods * 0.8)
        log(f"{len(self.node_names)} nodes, {capacity // 1024} GiB of GPU memory; aiming at {util:.0%}: "
            f"~{concurrent_pods:.0f} pods at once, {self.rate:.2f} pods/s arriving, lifetime "
            f"{self.lifetime:.0f} s on average once bound; {prefill} created at once first; seed {self.seed}")
        self.first_start = time.time()
        for _ in range(prefill):
            self.first.add(self.new_pod("soak"))
        dra_rate = self.dra.rate(self.rate) if self.dra else 0.0
        if self.dra:
            log(f"DRA: {self.dra.nodes} nodes of 4 GPUs, {dra_rate:.2f} pods/s arriving (mean "
                f"{soak_dra.mean_cores():.1f} % of a GPU), {int(prefill * self.dra.fraction)} created at once first")
            for _ in range(int(prefill * self.dra.fraction)):
                self.first.add(self.new_pod("dra", dra=self.dra.shape()))
        start = time.time()
        plan = self.plan_faults(start, seconds)
        if plan:
            log("faults: " + ", ".join(f"{k} at +{(t - start) / 60:.1f} min" for t, k in plan))
        faults = threading.Thread(target=self.fault_thread, args=(plan,), daemon=True)
        faults.start()
        next_arrival = start + self.rng.expovariate(self.rate)
        next_dra = start + self.dra.rng.expovariate(dra_rate) if self.dra else math.inf
        next_poll = start
        next_sample = start
        next_minute = start + 60
        next_metrics = start + 30
        minute = 0
        while time.time() < start + seconds:
            now = time.time()
            while next_arrival <= now:
                self.new_pod("soak")
                next_arrival += self.rng.expovariate(self.rate)
            while next_dra <= now:
                self.new_pod("dra", dra=self.dra.shape())
                next_dra += self.dra.rng.expovariate(dra_rate)
            self.schedule_deletions(now)
            if now >= next_sample:
                self.sample_processes()
                next_sample = now + 10
            if now >= next_poll:
                self.poll()
                next_poll = now + self.poll_period
            if now >= next_metrics:
                self.sample_auditor()
                next_metrics = now + 30
            if now >= next_minute:
                minute += 1
                self.minute_report(minute)
                self.probe_auditor()
                self.recount_check(f"minute {minute}")
                next_minute += 60
            for r in self.replicas:
                if r.proc and r.proc.poll() is not None and r.proc.returncode != -signal.SIGKILL:
                    # died of itself (a crash): reported once, started again after 5 s
                    if getattr(r, "reported_exit", None) != r.proc.pid:
                        r.reported_exit = r.proc.pid
                        r.exited_at = now
                        log(f"replica {r.name} (pid {r.proc.pid}) exited with {r.proc.returncode}")
                        self.crashes.append(f"replica {r.name} pid {r.proc.pid} exit {r.proc.returncode}")
                    elif now - r.exited_at > 5:
                        r.start()
            time.sleep(0.2)
        log("churn over; waiting for the faults in progress")
        # Still polled meanwhile: a fault's checks (the burst's bindings) read what
        # the polls see.
        give_up = time.time() + 240
        while faults.is_alive() and time.time() < give_up:
            self.poll()
            faults.join(timeout=self.poll_period)
        self.stop.set()
        time.sleep(2)
        self.sample_auditor()
        self.probe_auditor()
        self.sample_processes()
        self.minute_report(minute + 1, final=True)
        self.recount_check("at the end")
        return self.finish(time.time() - start, plan)

def main() -> int:
    soak = Soak()
    code = 1
    try:
        code = soak.run()
    finally:
        soak.stop.set()
        for r in soak.replicas:
            r.signal(signal.SIGCONT)
            r.kill()
        soak.pool.shutdown(wait=False, cancel_futures=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
