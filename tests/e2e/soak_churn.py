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
    free; fault windows (and 45 s after them) are excused;
  - no pod the test created and did not delete has vanished;
  - no write (Binding, node lock, pod patch) by a replica while the Lease was
    held by the other one, before and after (the API server's audit log, one
    user per replica through fault_proxy.py);
  - devshare serve's RSS and open descriptors per replica process: least
    squares slopes over the samples after its first minute;
  - the drift auditor's confirmed differences (/metrics
    devshare_audit_differences_total on the leader): those confirmed within
    SOAK_FAULT_ATTRIBUTION s after a fault are injected, any other is a failure.
    Skipped, and said so, when the replica does not serve /debug/audit.
After each fault a probe pod must be bound within 60 s and the recount hold.

Configuration comes from the environment soak.sh exports (see there).
Prints progress lines, a summary, "e2e-soak: N passed, N failed" last, and
writes the summary as JSON to SOAK_JSON when set.
"""

from __future__ import annotations

import collections
import concurrent.futures
import http.client
import json
import math
import os
import random
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

import soak_dra

ENV = os.environ
NS = "/api/v1/namespaces/default"
REGISTER = "hami.io/node-nvidia-register"
ALLOCATED = "hami.io/vgpu-devices-allocated"
LOCK = "hami.io/mutex.lock"
PENDING_LIMIT = 30.0
FAULT_EXCUSE = 45.0


def log(msg: str) -> None:
    print(f"soak: [{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Api:
    """Keep-alive connections to the API server, one per thread, as the admin."""

    def __init__(self) -> None:
        self.url = urllib.parse.urlparse(ENV["KUBE_SERVER"])
        self.context = ssl.create_default_context(cafile=ENV["KUBE_CA"])
        self.context.load_cert_chain(ENV["KUBE_CLIENT_CERT"], ENV["KUBE_CLIENT_KEY"])
        self.local = threading.local()

    def call(self, method: str, path: str, body: object = None,
             ctype: str = "application/json", timeout: float = 20) -> tuple[int, bytes]:
        """(HTTP status, body); status 0 when the API server did not answer."""
        data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
        for attempt in (0, 1):
            conn = getattr(self.local, "conn", None)
            if conn is None:
                conn = http.client.HTTPSConnection(self.url.hostname, self.url.port,
                                                   context=self.context, timeout=timeout)
                self.local.conn = conn
            try:
                conn.timeout = timeout
                if conn.sock is not None:
                    conn.sock.settimeout(timeout)
                conn.request(method, path, data, {"Content-Type": ctype, "Accept": "application/json"})
                r = conn.getresponse()
                payload = r.read()
                return r.status, payload
            except (http.client.HTTPException, OSError):
                conn.close()
                self.local.conn = None
                if attempt:
                    return 0, b""
        return 0, b""

    def json(self, method: str, path: str, body: object = None, ctype: str = "application/json",
             timeout: float = 20) -> dict | None:
        status, payload = self.call(method, path, body, ctype, timeout)
        if 200 <= status < 300:
            return json.loads(payload)
        return None


def https_get(port: int, path: str, timeout: float = 5) -> tuple[int, bytes]:
    context = ssl._create_unverified_context()
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}{path}", timeout=timeout,
                                    context=context) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except Exception:  # noqa: BLE001 — no answer
        return 0, b""


# --- replicas ------------------------------------------------------------------------------
def holder_replica(identity: str) -> str:
    """The replica name in a Lease's holderIdentity (HOSTNAME_SUFFIX, or HOSTNAME)."""
    return identity.split("_", 1)[0]


class Replica:
    def __init__(self, name: str, port: int, kubeconfig: str, faketime: str | None) -> None:
        self.name, self.port, self.kubeconfig, self.faketime = name, port, kubeconfig, faketime
        self.proc: subprocess.Popen | None = None
        self.instances: list[dict] = []  # per process: pid, start, samples [(t, rss_kib, fds)]
        self.user = f"devshare-serve-{name}"

    def start(self) -> None:
        args = [ENV["SOAK_DEVSHARE"], "serve", "--kubeconfig", self.kubeconfig,
                "--listen", f"127.0.0.1:{self.port}", "--tls-cert", ENV["SERVE_CERT"],
                "--tls-key", ENV["SERVE_KEY"], "--leader", "elect", "--hostname", self.name,
                "--lease-namespace", "default", "--lease-name", "devshare",
                "--scheduler-name", "devshare-scheduler", "--node-policy", "binpack",
                "--gpu-policy", "spread", "--qps", "50", "--burst", "100"]
        args += soak_dra.serve_args() + ENV.get("SOAK_SERVE_ARGS", "").split()
        env = dict(ENV)
        if self.faketime:
            if not os.path.exists(self.clock_file()):
                self.step_clock("+0")
            env.update(LD_PRELOAD=self.faketime, FAKETIME_TIMESTAMP_FILE=self.clock_file(),
                       FAKETIME_CACHE_DURATION="1", FAKETIME_DONT_FAKE_MONOTONIC="1")
        logf = open(os.path.join(ENV["E2E_LOGS"], f"devshare-{self.name}.log"), "ab")
        self.proc = subprocess.Popen(args, stdout=logf, stderr=subprocess.STDOUT, env=env,
                                     stdin=subprocess.DEVNULL)
        logf.close()
        self.instances.append({"pid": self.proc.pid, "start": time.time(), "samples": []})

    def clock_file(self) -> str:
        return f"{ENV['SOAK_FAKETIME_FILE']}-{self.name}"

    def step_clock(self, offset: str) -> None:
        """The wall clock libfaketime gives the process: OFFSET seconds from the real one."""
        with open(self.clock_file(), "w") as f:
            f.write(offset + "\n")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.alive():
            os.kill(self.proc.pid, sig)

    def kill(self) -> None:
        if self.alive():
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def ready(self) -> bool:
        return https_get(self.port, "/readyz", 2)[0] == 200

    def sample(self, t: float) -> None:
        if not self.alive():
            return
        pid = self.proc.pid
        try:
            with open(f"/proc/{pid}/status") as f:
                rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
            fds = len(os.listdir(f"/proc/{pid}/fd"))
        except (OSError, StopIteration):
            return
        self.instances[-1]["samples"].append((t, rss, fds))


def slope(points: list[tuple[float, float]]) -> float | None:
    """Least squares slope per minute of (seconds, value) points."""
    if len(points) < 3:
        return None
    n = len(points)
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    if sxx == 0:
        return None
    return 60 * sum((p[0] - mx) * (p[1] - my) for p in points) / sxx


# --- the cluster as the API objects say ---------------------------------------------------
def pod_request(pod: dict) -> tuple[int, int, int]:
    """(GPUs, MiB per GPU, cores per GPU) the pod's containers ask, summed over containers
    (every test pod has one)."""
    n = m = c = 0
    for ctr in pod["spec"].get("containers", []):
        res = ctr.get("resources", {})
        lim = dict(res.get("requests", {}), **res.get("limits", {}))
        n += int(lim.get("nvidia.com/gpu", 0))
        m = max(m, int(lim.get("nvidia.com/gpumem", 0)))
        c = max(c, int(lim.get("nvidia.com/gpucores", 0)))
    return n, m, c


def parse_allocated(value: str) -> list[tuple[str, int, int]]:
    """hami.io/vgpu-devices-allocated: containers split by ';', devices by ':',
    fields uuid,type,mem,cores."""
    out = []
    for container in value.split(";"):
        for device in filter(None, container.split(":")):
            fields = device.split(",")
            if len(fields) >= 4:
                out.append((fields[0], int(fields[2]), int(fields[3])))
    return out


class Snapshot:
    def __init__(self, nodes: list[dict], pods: list[dict], t: float) -> None:
        self.t = t
        self.devices: dict[str, list[dict]] = {}
        self.device_node: dict[str, str] = {}
        self.locked: set[str] = set()
        self.locks: dict[str, str] = {}
        for n in nodes:
            name = n["metadata"]["name"]
            ann = n["metadata"].get("annotations", {})
            try:
                devs = json.loads(ann.get(REGISTER, "[]"))
            except ValueError:
                devs = []
            self.devices[name] = devs
            for d in devs:
                self.device_node[d["id"]] = name
            if ann.get(LOCK):
                self.locked.add(name)
                self.locks[name] = ann[LOCK]
        self.used = collections.defaultdict(lambda: [0, 0, 0])  # mem, cores, slots
        self.pods = {}
        self.problems: list[str] = []      # the recount's failures
        self.over: list[str] = []          # devices over memory, cores or slots
        self.orphans: list[str] = []       # pods bound to a node that is not there
        for p in pods:
            meta = p["metadata"]
            name = meta["name"]
            node = p["spec"].get("nodeName", "")
            want = pod_request(p)
            alloc = parse_allocated(meta.get("annotations", {}).get(ALLOCATED, ""))
            self.pods[name] = {"node": node, "want": want, "alloc": alloc,
                               "scheduler": p["spec"].get("schedulerName", ""),
                               "deleting": bool(meta.get("deletionTimestamp"))}
            for uuid, mem, cores in alloc:
                u = self.used[uuid]
                u[0] += mem
                u[1] += cores
                u[2] += 1
            if node and node not in self.devices:
                # bound to a node that is gone (re-created by the test, its pods not yet evicted)
                self.orphans.append(name)
                continue
            if node and want[0] > 0:
                if not alloc:
                    self.problems.append(f"pod {name} on {node} asks {want[0]} GPU(s) but carries no devices")
                    continue
                if len(alloc) != want[0]:
                    self.problems.append(f"pod {name}: {len(alloc)} devices for {want[0]} GPU(s)")
                for uuid, mem, _ in alloc:
                    if self.device_node.get(uuid) != node:
                        self.problems.append(f"pod {name} on {node} holds {uuid}, not a device of its node")
                    if want[1] and mem != want[1]:
                        self.problems.append(f"pod {name} holds {mem} MiB of {uuid}, asked {want[1]}")
        for uuid, (mem, cores, slots) in self.used.items():
            node = self.device_node.get(uuid)
            if node is None:
                continue  # reported above when its pod is bound; a vanished node's pods are gone
            d = next(d for d in self.devices[node] if d["id"] == uuid)
            if mem > d["devmem"] or cores > d.get("devcore", 100) or slots > d["count"]:
                self.over.append(f"{uuid} on {node}: {mem}/{d['devmem']} MiB, "
                                 f"{cores}/{d.get('devcore', 100)} cores, {slots}/{d['count']} slots")

    def fitting_nodes(self, want: tuple[int, int, int]) -> set[str]:
        n, m, c = want
        out = set()
        for node, devs in self.devices.items():
            if node in self.locked:
                continue
            free = 0
            for d in devs:
                u = self.used.get(d["id"], (0, 0, 0))
                if not d.get("health", True) or u[2] >= d["count"]:
                    continue
                if d["devmem"] - u[0] < m or d.get("devcore", 100) - u[1] < c:
                    continue
                if c >= 100 and u[2] > 0:
                    continue
                free += 1
            if free >= n:
                out.add(node)
        return out

    def memory(self) -> tuple[int, int]:
        total = sum(d["devmem"] for devs in self.devices.values() for d in devs)
        used = sum(u[0] for uuid, u in self.used.items() if uuid in self.device_node)
        return used, total


# --- the test ---------------------------------------------------------------------------------
GPU_TYPES = {16384: "Tesla T4", 24576: "NVIDIA A10", 40960: "NVIDIA A100-SXM4-40GB",
             81920: "NVIDIA A100-SXM4-80GB"}
NODE_GPUS = [(1, 0.35), (2, 0.30), (4, 0.25), (8, 0.10)]
NODE_MEM = [(16384, 0.30), (24576, 0.30), (40960, 0.25), (81920, 0.15)]
POD_GPUS = [(1, 0.8), (2, 0.2)]
POD_MEM = [(2048, 0.15), (4096, 0.2), (8192, 0.25), (12288, 0.15), (16384, 0.15), (24576, 0.1)]
POD_CORES = [(0, 0.7), (10, 0.1), (20, 0.08), (30, 0.07), (50, 0.05)]


def pick(rng: random.Random, table: list[tuple[int, float]]) -> int:
    return rng.choices([v for v, _ in table], [w for _, w in table])[0]


def mean(table: list[tuple[int, float]]) -> float:
    return sum(v * w for v, w in table) / sum(w for _, w in table)


def node_json(name: str, gpus: int, mem: int, generation: int = 0) -> dict:
    tag = f"-g{generation}" if generation else ""
    devices = [{"id": f"GPU-{name}{tag}-{i}", "index": i, "count": 10, "devmem": mem, "devcore": 100,
                "type": GPU_TYPES[mem], "numa": 0, "mode": "hami-core", "health": True}
               for i in range(gpus)]
    res = {"cpu": "64", "memory": "512Gi", "pods": "250", "nvidia.com/gpu": str(gpus * 10)}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                         "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "gpu": "on"},
                         "annotations": {REGISTER: json.dumps(devices, separators=(",", ":")),
                                         "hami.io/node-handshake": "Reported " +
                                         time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}},
            "spec": {}, "status": {"capacity": res, "allocatable": res}}


def ready_patch() -> dict:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "set by the soak test", "lastHeartbeatTime": now,
                                       "lastTransitionTime": now}]}}


def pod_json(name: str, want: tuple[int, int, int]) -> dict:
    n, m, c = want
    limits = {"nvidia.com/gpu": str(n), "nvidia.com/gpumem": str(m)}
    if c:
        limits["nvidia.com/gpucores"] = str(c)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"soak": "1"}},
            "spec": {"terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"limits": limits}}]}}


class Soak:
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
                        "healed": collections.Counter(), "notes": []}
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
                if b"failed calling webhook" in data and any(t0 - 1 <= k <= t1 for k in self.kill_times):
                    # its webhook call was in flight to the replica SIGKILLed meanwhile (or sent,
                    # within a second of the kill, on a connection the API server had to it)
                    self.counts["create_refused_in_flight_at_kill"] += 1
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
        excused = self.in_fault(t)
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
        SOAK_FAULT_ATTRIBUTION s after a fault's start are the fault's."""
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
            for kind, value in totals.items():
                delta = value - last.get(kind, 0)
                if delta > 0:
                    (self.auditor["injected"] if injected else self.auditor["uninjected"])[kind] += delta
                    log(f"auditor ({r.name}): {delta} confirmed {kind} "
                        f"({'during a fault' if injected else 'NOT INJECTED'})")
            for kind, value in healed.items():
                self.auditor["healed"][kind] = max(self.auditor["healed"][kind], value)

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
        follower.signal(signal.SIGSTOP)
        time.sleep(seconds)
        follower.signal(signal.SIGCONT)
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
        for _ in range(prefill):
            self.new_pod("soak")
        dra_rate = self.dra.rate(self.rate) if self.dra else 0.0
        if self.dra:
            log(f"DRA: {self.dra.nodes} nodes of 4 GPUs, {dra_rate:.2f} pods/s arriving (mean "
                f"{soak_dra.mean_cores():.1f} % of a GPU), {int(prefill * self.dra.fraction)} created at once first")
            for _ in range(int(prefill * self.dra.fraction)):
                self.new_pod("dra", dra=self.dra.shape())
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
        self.stop_faults_after = time.time()
        faults.join(timeout=240)
        self.stop.set()
        time.sleep(2)
        self.sample_auditor()
        self.probe_auditor()
        self.sample_processes()
        self.minute_report(minute + 1, final=True)
        self.recount_check("at the end")
        return self.finish(time.time() - start, plan)

    def minute_report(self, minute: int, final: bool = False) -> None:
        with self.lock:
            pending = sum(1 for r in self.pods.values()
                          if r["created"] and r["bound"] is None and r["deleted"] is None)
            live = sum(1 for r in self.pods.values() if r["created"] and r["deleted"] is None)
            c = self.counts
            snap = self.snapshot
            used, total = snap.memory() if snap else (0, 1)
            rss = " ".join(f"{r.name}:{r.instances[-1]['samples'][-1][1] // 1024}MiB/"
                           f"{r.instances[-1]['samples'][-1][2]}fd"
                           for r in self.replicas if r.instances and r.instances[-1]["samples"])
            log(f"{'end' if final else f'minute {minute}'}: created {c['created']}, bound {c['bound']}, "
                f"deleted {c['deleted']}, live {live}, pending {pending}, create errors "
                f"{c['create_failed']}, GPU memory held {used * 100 // max(total, 1)}%, faults done "
                f"{sum(1 for f in self.faults if 'end' in f)}, max pending while fitting "
                f"{self.max_pending_fit:.0f} s, {rss}")

    def leaks(self, run_seconds: float) -> dict:
        out = {}
        long_run = run_seconds >= 1800
        for r in self.replicas:
            per = []
            for inst in r.instances:
                samples = [s for s in inst["samples"] if s[0] - inst["start"] >= 60]
                if not inst["samples"]:
                    continue
                rss_slope = slope([(s[0], s[1]) for s in samples])
                fd_slope = slope([(s[0], s[2]) for s in samples])
                first, last = inst["samples"][0], inst["samples"][-1]
                minutes = (last[0] - inst["start"]) / 60
                fd_growth = (last[2] - samples[0][2]) if samples else 0
                per.append({"pid": inst["pid"], "minutes": round(minutes, 1), "samples": len(samples),
                            "rss_kib_first": first[1], "rss_kib_last": last[1],
                            "rss_kib_max": max(s[1] for s in inst["samples"]),
                            "fds_first": first[2], "fds_last": last[2],
                            "rss_slope_kib_per_min": None if rss_slope is None else round(rss_slope, 1),
                            "fd_slope_per_min": None if fd_slope is None else round(fd_slope, 2),
                            "fd_growth": fd_growth})
            out[r.name] = per
        failures = []
        for name, per in out.items():
            for inst in per:
                if inst["fd_growth"] > 50:
                    failures.append(f"replica {name} pid {inst['pid']}: {inst['fd_growth']} more fds")
                if long_run and inst["minutes"] >= 20 and (inst["rss_slope_kib_per_min"] or 0) > 1024:
                    failures.append(f"replica {name} pid {inst['pid']}: RSS +{inst['rss_slope_kib_per_min']} KiB/min")
        return {"replicas": out, "failures": failures,
                "rule": "fail on fd growth > 50 per process" + (
                    ", or RSS > 1024 KiB/min over a process of >= 20 min" if long_run else
                    " (RSS reported only: a run under 30 min is too short to tell)")}

    def finish(self, run_seconds: float, plan: list) -> int:
        leaks = self.leaks(run_seconds)
        self.check("no replica exited of itself", not self.crashes,
                   f"{len(self.crashes)} exits: " + "; ".join(self.crashes[:3]) +
                   " (see logs/devshare-*.log)")
        self.check("no descriptor leak" + (" nor gross memory leak" if run_seconds >= 1800 else ""),
                   not leaks["failures"], "; ".join(leaks["failures"]))
        a = self.auditor
        if a["available"] is False or not a["last"]:
            self.check("drift auditor: no confirmed difference that was not injected", None,
                       "the replicas do not serve /debug/audit (or no devshare_audit_differences_total): not checked")
        else:
            self.check("drift auditor: no confirmed difference that was not injected",
                       not a["uninjected"], dict(a["uninjected"]).__repr__() if a["uninjected"] else
                       f"injected {dict(a['injected'])}")
        self.check("no pod refused because no replica answered the webhook",
                   self.counts["create_refused_by_webhook"] == 0 if ENV.get("SOAK_WEBHOOK_PORT") else None,
                   f"{self.counts['create_refused_by_webhook']} refused; "
                   f"{self.counts['create_refused_in_flight_at_kill']} whose call was in flight to a replica "
                   f"SIGKILLed, not counted" if ENV.get("SOAK_WEBHOOK_PORT") else
                   "the webhook shares the leader's Service (no SOAK_WEBHOOK_PORT): not checked")
        self.check("every fault planned was injected",
                   len([f for f in self.faults if "end" in f]) == len(plan),
                   f"{len([f for f in self.faults if 'end' in f])} of {len(plan)}")
        with self.lock:
            c = self.counts
            summary = {
                "seed": self.seed, "minutes": round(run_seconds / 60, 2), "nodes": len(self.node_names),
                "rate_per_s": round(self.rate, 3), "lifetime_s": round(self.lifetime, 1),
                "pods": {"created": c["created"], "scheduled": c["bound"], "deleted": c["deleted"],
                         "refused_by_webhook": c["create_refused_by_webhook"],
                         "refused_in_flight_at_kill": c["create_refused_in_flight_at_kill"],
                         "create_failed": c["create_failed"],
                         "create_failed_by_status": {k[len('create_failed_http_'):]: v for k, v in c.items()
                                                     if k.startswith("create_failed_http_")},
                         "gave_up": c["deleted_gave_up"], "deleted_with_node": c["deleted_node_gone"],
                         "pending_at_end": sum(1 for r in self.pods.values() if r["created"] and
                                               r["bound"] is None and r["deleted"] is None),
                         "not_moved_by_webhook": c["not_moved_by_webhook"]},
                "faults": [{k: (round(v, 1) if isinstance(v, float) and k not in ("start", "end") else v)
                            for k, v in f.items() if k not in ("names", "old_devices")} for f in self.faults],
                "faults_by_kind": dict(collections.Counter(f["kind"] for f in self.faults)),
                "checks": {"passed": self.passed, "failed": self.failed,
                           "failed_list": [x["check"] + (": " + x["detail"] if x["detail"] else "")
                                           for x in self.check_log if x["result"] == "failed"],
                           "skipped": [x["check"] + ": " + x["detail"] for x in self.check_log
                                       if x["result"] == "skipped"]},
                "over_allocations": len(self.over_seen), "over_allocated": sorted(self.over_seen)[:20],
                "recount_problems_seen": sorted(self.recount_problems)[:20],
                "lost_pods": sorted(self.lost),
                "max_pending_while_fits_s": round(self.max_pending_fit, 1),
                "pending_while_fits_over_30s": {n: round(s, 1) for n, s in self.pending_violations.items()},
                "stale_leader_writes": self.stale_writes[:50],
                "stale_leader_writes_total": len(self.stale_writes),
                "lease_handovers": self.handovers(),
                "writes_by_replica": {f"{w} {v} {r} {'ok' if ok else 'failed'}": n
                                      for (w, v, r, ok), n in sorted(self.writes.items())},
                "leaks": leaks,
                "dra": None if not self.dra else dict(self.dra.summary(), created=c["dra_created"],
                                                      scheduled=c["dra_bound"], not_gated=c["dra_not_gated"]),
                "auditor": {"available": a["available"], "injected": dict(a["injected"]),
                            "not_injected": dict(a["uninjected"]), "healed": dict(a["healed"]),
                            "audits_asked": a["samples"], "last_audit": a.get("last_audit"),
                            "notes": a["notes"]},
            }
        try:
            summary["fault_proxy"] = self.proxy("stats")
        except OSError:
            pass
        self.print_summary(summary)
        if ENV.get("SOAK_JSON"):
            with open(ENV["SOAK_JSON"], "w") as f:
                json.dump(summary, f, indent=1)
            log(f"summary written to {ENV['SOAK_JSON']}")
        print(f"e2e-soak: {self.passed} passed, {self.failed} failed", flush=True)
        return 0 if self.failed == 0 else 1

    def print_summary(self, s: dict) -> None:
        p = s["pods"]
        print("---- soak summary ----")
        print(f"minutes run          {s['minutes']} (seed {s['seed']}, {s['nodes']} nodes, "
              f"{s['rate_per_s']} pods/s, lifetime {s['lifetime_s']} s)")
        print(f"pods                 created {p['created']}, scheduled {p['scheduled']}, deleted {p['deleted']}, "
              f"create errors {p['create_failed']} {p['create_failed_by_status']} "
              f"({p['refused_by_webhook']} by an unanswered webhook, {p['refused_in_flight_at_kill']} whose "
              f"webhook call was in flight to the replica killed), pending at end "
              f"{p['pending_at_end']}")
        print(f"faults               {s['faults_by_kind']}")
        for f in s["faults"]:
            print(f"  {f['kind']:18} probe bound in {f.get('probe_bound_s')} s; {'; '.join(f['notes'])}")
        print(f"checks               {s['checks']['passed']} passed, {s['checks']['failed']} failed, "
              f"{len(s['checks']['skipped'])} skipped")
        for x in s["checks"]["failed_list"]:
            print(f"  FAILED {x}")
        for x in s["checks"]["skipped"]:
            print(f"  SKIPPED {x}")
        print(f"over-allocations     {s['over_allocations']}")
        print(f"max pending while a node fits  {s['max_pending_while_fits_s']} s "
              f"({len(s['pending_while_fits_over_30s'])} pods over 30 s)")
        print(f"stale-leader writes  {s['stale_leader_writes_total']}")
        if s["dra"]:
            d = s["dra"]
            print(f"DRA                  {d['nodes']} nodes, pods created {d['created']}, scheduled "
                  f"{d['scheduled']} ({d['not_gated']} not gated by the webhook); devices over capacity "
                  f"{d['over_capacity']}, double allocations {d['double_allocations']}, pods split "
                  f"{d['split']}; max pending while its claims fit {d['max_pending_while_room_s']} s; "
                  f"claims collected {d['claims_collected']}; last recount {d['last_counts']}")
        print(f"Lease holders        {', '.join(s['lease_handovers'])}")
        for name, per in s["leaks"]["replicas"].items():
            for inst in per:
                print(f"replica {name} pid {inst['pid']:<7} {inst['minutes']} min: RSS {inst['rss_kib_first'] // 1024}"
                      f"->{inst['rss_kib_last'] // 1024} MiB, slope {inst['rss_slope_kib_per_min']} KiB/min; "
                      f"fds {inst['fds_first']}->{inst['fds_last']}, slope {inst['fd_slope_per_min']}/min")
        a = s["auditor"]
        print(f"auditor differences  injected {a['injected']}, not injected {a['not_injected']}"
              + ("" if a["available"] else " (auditor not available: not checked)"))


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
