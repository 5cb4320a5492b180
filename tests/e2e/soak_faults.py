"""The soak's faults (soak_churn.py drives the soak): their plan over the run,
each one's injection through fault_proxy.py, signals and restarts, and the
probe pods that must be bound after each. A mixin of soak_churn.Soak: it uses
the run's state (pods, counts, replicas, checks).
"""

from __future__ import annotations

import collections
import json
import math
import signal
import socket
import subprocess
import time

import soak_dra
from soak_cluster import ALLOCATED, ENV, NS, log, node_json, parse_allocated, pod_json


class Faults:
    """The fault injection of soak_churn.Soak."""

    # --- faults ---
    def proxy(self, command: str) -> dict:
        with socket.create_connection(("127.0.0.1", int(ENV["SOAK_PROXY_CONTROL"])), timeout=10) as s:
            s.sendall((command + "\n").encode())
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        return json.loads(data)

    def probe(self, label: str, dra: bool = False) -> float | None:
        """Seconds from a probe pod's creation (tried for up to 60 s: the API server or the
        webhook may still be coming back) to its binding; None when not bound within 60 s.
        With DRA the probe's claim asks 10 % of a GPU of the served class."""
        with self.lock:
            self.seq += 1
            name = f"{'draprobe' if dra else 'probe'}-{self.seq:06d}"
            self.pods[name] = {"kind": "probe", "want": (0, 0, 0) if dra else (1, 1024, 0), "lifetime": 10.0,
                               "created": None, "asked": time.time(), "bound": None, "node": "",
                               "deleted": None, "fitset": None, "fit_since": None,
                               "dra": "share-10" if dra else None}
        body = soak_dra.pod_json(name, "share-10") if dra else pod_json(name, (1, 1024, 0))
        t0 = time.time()
        while True:
            status, _ = self.api.call("POST", f"{NS}/pods", body, timeout=10)
            if 200 <= status < 300 or status == 409:
                break
            if time.time() - t0 > 60:
                with self.lock:
                    self.pods[name]["deleted"] = time.time()
                log(f"probe {name} after {label} could not be created (HTTP {status})")
                return None
            time.sleep(1)
        t1 = time.time()
        with self.lock:
            self.pods[name]["created"] = t1
            self.counts["created"] += 1
        if t1 - t0 > 2:
            log(f"probe {name} after {label}: created {t1 - t0:.0f} s after the first try")
        while time.time() - t1 < 60:
            pod = self.api.json("GET", f"{NS}/pods/{name}", timeout=5)
            if pod and pod["spec"].get("nodeName"):
                return time.time() - t1
            time.sleep(0.5)
        return None

    def fault_thread(self, plan: list[tuple[float, str]]) -> None:
        previous_end = 0.0
        for at, kind in plan:
            while not self.stop.is_set() and (time.time() < at or time.time() < previous_end + 20):
                self.stop.wait(0.5)
            if self.stop.is_set():
                return
            record = {"kind": kind, "start": time.time(), "notes": []}
            window = [time.time(), None]
            with self.lock:
                self.windows.append(window)
                self.faults.append(record)
            log(f"fault {len(self.faults)}: {kind}")
            try:
                ok = getattr(self, "fault_" + kind.replace("-", "_"))(record)
            except Exception as e:  # noqa: BLE001 — a fault that could not be injected fails
                record["notes"].append(f"error: {e!r}")
                ok = False
            window[1] = time.time()
            record["end"] = window[1]
            self.check(f"{kind}: injected", ok, "; ".join(record["notes"]))
            waited = self.probe(kind)
            record["probe_bound_s"] = waited
            self.check(f"{kind}: scheduling resumes (a probe pod bound within 60 s)",
                       waited is not None, f"{waited:.1f} s" if waited is not None else "not bound")
            if self.dra:
                waited = self.probe(kind, dra=True)
                record["dra_probe_bound_s"] = waited
                self.check(f"{kind}: DRA allocation resumes (a DRA probe pod bound within 60 s)",
                           waited is not None, f"{waited:.1f} s" if waited is not None else "not bound")
            self.recount_check(f"after {kind}")
            previous_end = time.time()
            log(f"fault {kind} over in {previous_end - record['start']:.0f} s")

    def fault_watch_cut(self, record: dict) -> bool:
        answer = self.proxy("cut all watches")
        record["notes"].append(f"{answer.get('cut')} watch connections cut")
        time.sleep(5)
        answer2 = self.proxy("cut all all")
        record["notes"].append(f"then {answer2.get('cut')} connections of any kind")
        return bool(answer.get("ok"))

    def fault_api_errors(self, record: dict) -> bool:
        fraction = ENV.get("SOAK_ERROR_FRACTION", "0.5")
        seconds = float(ENV.get("SOAK_ERROR_SECONDS", "30"))
        ok = self.proxy(f"errors all 429 {fraction}").get("ok")
        time.sleep(seconds)
        ok = ok and self.proxy(f"errors all 500 {fraction}").get("ok")
        time.sleep(seconds)
        self.proxy("errors all 500 0")
        stats = self.proxy("stats")
        record["notes"].append(f"{fraction} of the requests answered 429 for {seconds:.0f} s, then 500; "
                               + ", ".join(f"{n}: {s['injected_429']} x 429, {s['injected_500']} x 500"
                                           for n, s in stats.items()))
        return bool(ok)

    def fault_leader_kill(self, record: dict) -> bool:
        leader = self.leader()
        if leader is None or not leader.alive():
            record["notes"].append("no leader to kill")
            return False
        burst = int(ENV.get("SOAK_BURST", "20"))
        names = [self.new_pod("burst") for _ in range(burst)]
        if self.dra:  # DRA pods too: the leader dies in the middle of their claims' writes
            names += [self.new_pod("burst", dra=self.dra.shape()) for _ in range(burst // 2)]
        time.sleep(float(ENV.get("SOAK_KILL_AFTER", "1.5")))
        with self.lock:
            bound_before = sum(1 for n in names if self.pods[n]["bound"])
        self.kill_times.append(time.time())
        leader.kill()
        t_kill = time.time()
        other = next(r for r in self.replicas if r is not leader)
        took_over = None
        while time.time() - t_kill < 60:
            if other.ready():
                took_over = time.time() - t_kill
                break
            time.sleep(0.5)
        record["notes"].append(f"replica {leader.name} killed with {len(names)} pods just created "
                               f"({bound_before} seen bound before); "
                               + (f"{other.name} ready {took_over:.1f} s later" if took_over is not None
                                  else f"{other.name} not ready within 60 s"))
        leader.start()
        record["names"] = names
        # every burst pod ends bound, or pending (retried) with no node fitting it
        t0 = time.time()
        while time.time() - t0 < 90:
            with self.lock:
                waiting = [n for n in names if self.pods[n]["bound"] is None and self.pods[n]["deleted"] is None]
            if not waiting:
                break
            time.sleep(2)
        with self.lock:
            unbound = [n for n in names if self.pods[n]["bound"] is None and self.pods[n]["deleted"] is None]
            lost = [n for n in names if n in self.lost]
        record["notes"].append(f"burst: {len(names) - len(unbound)} bound, {len(unbound)} still pending after "
                               f"90 s, {len(lost)} vanished")
        snap = self.snapshot
        stuck = [n for n in unbound if self.fits_now(snap, n)]
        self.check("leader-kill: every burst pod bound, or pending where nothing fits",
                   not stuck and not lost, f"{len(stuck)} pending though a node fits: {stuck[:5]}"
                   if stuck else "")
        return took_over is not None

    def fault_follower_stop(self, record: dict) -> bool:
        leader = self.leader()
        follower = next((r for r in self.replicas if r is not leader and r.alive()), None)
        if leader is None or follower is None:
            record["notes"].append("no leader and follower")
            return False
        stale_before = len(self.stale_writes)
        seconds = float(ENV.get("SOAK_STOP_SECONDS", "40"))
        with self.lock:
            self.stops.append((time.time(), math.inf))
        follower.signal(signal.SIGSTOP)
        time.sleep(seconds)
        follower.signal(signal.SIGCONT)
        with self.lock:
            self.stops[-1] = (self.stops[-1][0], time.time())
        time.sleep(30)
        self.scan_audit()
        holder = self.lease_holder()
        record["notes"].append(f"replica {follower.name} stopped {seconds:.0f} s while {leader.name} led; "
                               f"30 s after SIGCONT the Lease is held by {holder or 'nobody'}")
        self.check(f"follower-stop: replica {follower.name} wrote nothing as a stale leader",
                   len(self.stale_writes) == stale_before,
                   "; ".join(self.stale_writes[stale_before:stale_before + 3]))
        return True

    def fault_node_recreate(self, record: dict) -> bool:
        snap = self.snapshot
        if snap is None:
            return False
        counts = collections.Counter(p["node"] for p in snap.pods.values() if p["node"] in self.node_names)
        node = max(counts, key=lambda n: (counts[n], n)) if counts else self.node_names[0]
        old = [d["id"] for d in snap.devices.get(node, [])]
        gpus = len(old)
        self.node_generation[node] += 1
        gen = self.node_generation[node]
        new_gpus = {1: 2, 2: 4, 4: 2, 8: 4}.get(gpus, 2)
        old_mem = snap.devices[node][0]["devmem"] if snap.devices.get(node) else 40960
        new_mem = 40960 if old_mem != 40960 else 81920
        status, _ = self.api.call("DELETE", f"/api/v1/nodes/{node}", {"gracePeriodSeconds": 0})
        if status >= 300:
            record["notes"].append(f"DELETE node {node}: HTTP {status}")
            return False
        # Its pods, as the node lifecycle controller evicts them: listed now, and again after the
        # binds that were in flight when the node went have landed.
        victims: list[str] = []
        for _ in range(2):
            listed = self.api.json("GET", f"{NS}/pods?fieldSelector=spec.nodeName%3D{node}", timeout=30)
            fresh = [p["metadata"]["name"] for p in (listed or {"items": []})["items"]
                     if p["metadata"]["name"] not in victims]
            with self.lock:
                for n in fresh:
                    if n in self.pods and self.pods[n]["deleted"] is None:
                        self.pods[n]["deleted"] = time.time()
            for n in fresh:
                self.delete_pod(n, "node_gone")
            victims += fresh
            time.sleep(float(ENV.get("SOAK_NODE_GONE_SECONDS", "5")) / 2)
        err = self.register_node(node_json(node, new_gpus, new_mem, gen))
        record["notes"].append(f"node {node} ({gpus} x {old_mem} MiB) deleted with its {len(victims)} "
                               f"pods, created again with {new_gpus} x {new_mem} MiB (new device ids)"
                               + (f"; {err}" if err else ""))
        record["node"] = node
        record["old_devices"] = old
        time.sleep(20)
        # nothing placed on the vanished GPUs
        pods = self.api.json("GET", f"{NS}/pods", timeout=30) or {"items": []}
        on_old = [p["metadata"]["name"] for p in pods["items"]
                  if any(u in old for u, _, _ in parse_allocated(
                      p["metadata"].get("annotations", {}).get(ALLOCATED, "")))]
        self.check(f"node-recreate: no pod placed on the vanished GPUs of {node}", not on_old,
                   ", ".join(on_old[:5]))
        return err is None

    def fault_clock_step(self, record: dict) -> bool:
        """The follower's wall clock stepped ahead (it must not take the Lease it sees as
        expired by its clock), then back; then the leader's."""
        if not all(r.faketime for r in self.replicas):
            record["notes"].append("libfaketime is not available: the replicas run with the real clock")
            return False
        step = ENV.get("SOAK_CLOCK_STEP", "+600")
        stale_before = len(self.stale_writes)
        for role in ("follower", "leader"):
            leader = self.leader()
            if leader is None:
                record["notes"].append(f"no leader to find the {role} by")
                return False
            r = leader if role == "leader" else next(x for x in self.replicas if x is not leader)
            r.step_clock(step)
            time.sleep(60)
            after = self.lease_holder()
            r.step_clock("+0")
            time.sleep(20)
            record["notes"].append(f"{role} {r.name}'s clock {step} s for 60 s, then back "
                                   f"(the Lease then with {after or 'nobody'})")
        time.sleep(10)
        self.scan_audit()
        self.check("clock-step: no write by a replica that was not holding the Lease",
                   len(self.stale_writes) == stale_before,
                   "; ".join(self.stale_writes[stale_before:stale_before + 3]))
        return True

    def restart(self, name: str, record: dict) -> bool:
        t0 = time.time()
        self.restarting = name
        try:
            rc = subprocess.run(["bash", ENV["SOAK_CONTROL_PLANE"], "restart", name],
                                capture_output=True, text=True, timeout=300)
        finally:
            self.restarting = None
        record["notes"].append(f"{name} restarted in {time.time() - t0:.1f} s (exit {rc.returncode})"
                               + (f": {rc.stderr.strip()[-300:]}" if rc.returncode else ""))
        return rc.returncode == 0

    def fault_apiserver_restart(self, record: dict) -> bool:
        return self.restart("kube-apiserver", record)

    def fault_etcd_restart(self, record: dict) -> bool:
        return self.restart("etcd", record)

    def plan_faults(self, start: float, seconds: float) -> list[tuple[float, str]]:
        faults = self.fault_plan
        if not faults:
            return []
        warm = min(60.0, seconds * 0.15)
        tail = min(120.0, seconds * 0.1)
        span = seconds - warm - tail
        n = len(faults)
        rounds = max(1, min(3, int(span // (300 * n))))
        plan = []
        slots = n * rounds
        for i in range(slots):
            plan.append((start + warm + span * i / slots, faults[i % n]))
        return plan
