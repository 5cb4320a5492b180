"""The soak's cluster side (soak_churn.py drives the soak): the API client, the
devshare serve replicas it runs, the recount's snapshot of nodes and pods, and
the node and pod shapes of the churn.
"""

from __future__ import annotations

import collections
import http.client
import json
import os
import random
import signal
import ssl
import subprocess
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
