"""devshare: the scheduling core for shared accelerators, from Python.

The real C++ core (not a re-implementation): HAMi/Volcano annotation codecs,
requests, the incremental cluster snapshot and Filter, and the protocol state
machines (handshake, leases, node lock, admission). Kubernetes objects are
plain dicts shaped as the API server serves them.

Errors: malformed annotations and objects raise ``DecodeError`` (a
``ValueError``); an invalid device config or option raises ``ConfigError``
(a ``ValueError``).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Mapping, Optional, Sequence

from . import _devshare
from ._devshare import (
    ConfigError,
    ContainerDevice,
    DecodeError,
    Device,
    DeviceState,
    Elector,
    FilterResult,
    LeaseFollower,
    Request,
    backoff_delay_ms,
)

__version__: str = _devshare.__version__

__all__ = [
    "Cluster",
    "ConfigError",
    "ContainerDevice",
    "DecodeError",
    "Device",
    "DeviceState",
    "Elector",
    "FilterResult",
    "LeaseFollower",
    "Request",
    "backoff_delay_ms",
    "change_only_scheduler_pass",
    "container_requests",
    "decide_admission",
    "decide_node_lock",
    "decode_handshake",
    "decode_node_devices",
    "decode_node_lock",
    "decode_pod_devices",
    "decode_scoring_weights",
    "encode_node_devices",
    "encode_pod_devices",
    "hami_scheduler_pass",
    "scenarios",
    "simulate",
    "volcano_scheduler_pass",
]


def _json(obj: Any) -> str:
    return obj if isinstance(obj, str) else json.dumps(obj)


def _config(config: Optional[Any]) -> Optional[str]:
    """A device config given as YAML text or a dict (JSON is YAML), or None."""
    if config is None:
        return None
    if isinstance(config, str):
        return config
    return json.dumps(dict(config))


def decode_node_devices(value: str, format: str = "auto") -> list[Device]:
    """Decodes a node register annotation.

    ``format`` is "auto", "json" (hami.io/node-nvidia-register), "legacy" (the
    colon format of older vendors) or "volcano" (volcano.sh/node-vgpu-register).
    Raises DecodeError naming the field and byte position on bad input.
    """
    return _devshare._decode_node_devices(value, format)


def encode_node_devices(devices: Sequence[Device], format: str = "json") -> str:
    """Encodes devices exactly as HAMi (json, legacy) or Volcano (volcano) writes them."""
    return _devshare._encode_node_devices(list(devices), format)


def decode_pod_devices(value: str) -> list[list[ContainerDevice]]:
    """Decodes hami.io/vgpu-devices-allocated (or -to-allocate): one list per
    container, init containers first. A value ending in ';' gives one more,
    empty, entry, exactly as HAMi decodes it."""
    return _devshare._decode_pod_devices(value)


def encode_pod_devices(containers: Sequence[Sequence[ContainerDevice]], format: str = "hami") -> str:
    """Encodes per-container devices: 'UUID,Type,mem,cores:' per device; format "hami" ends every
    container with ';', "volcano" (volcano.sh/vgpu-ids-new) joins the containers with ';'."""
    return _devshare._encode_pod_devices([list(c) for c in containers], format)


def container_requests(container: Mapping[str, Any], config: Optional[Any] = None) -> dict[str, Request]:
    """What a Kubernetes container (a dict) asks of each configured vendor,
    by HAMi's rules (limits, else requests; defaults; memory factor)."""
    pod = {"metadata": {"name": "container"}, "spec": {"containers": [container]}}
    return _devshare._container_requests(json.dumps(pod), _config(config))


def decode_node_lock(value: str) -> dict:
    """Decodes hami.io/mutex.lock: unix_seconds, utc_offset_seconds, namespace, name."""
    return _devshare._decode_node_lock(value)


def decode_handshake(value: str, zone_offset_seconds: int = 0) -> dict:
    """Decodes a HAMi or Volcano handshake value: state, dialect, unix_seconds."""
    return _devshare._decode_handshake(value, zone_offset_seconds)


def decode_scoring_weights(value: str) -> dict:
    """Decodes hami.io/device-scoring-weights: slot, core, memory."""
    return _devshare._decode_scoring_weights(value)


def _hami_exact(rows: Any) -> str:
    """The ``hami_exact`` setting as the core parses it: a string, or a list of row names."""
    if isinstance(rows, str):
        return rows
    return ",".join(str(r) for r in rows)


class Cluster:
    """A cluster snapshot: nodes with their devices, pods holding devices,
    GPU quotas; updated incrementally, filtered like the HAMi extender.

    ``config`` is the device-config YAML (text or dict; ``{"volcano": {}}`` for
    Volcano's vGPU annotations), optionally with a ``scheduler`` section:
    ``{"node_policy": "binpack", "gpu_policy": "spread"}`` (Volcano's decisions:
    ``"node_policy": "volcano"`` with ``"gpu_policy": "volcano-binpack"`` or
    ``"volcano-spread"``),
    and for the fgd policy the expected ``workload``: a list of
    ``{"weight": w, "gpus": n}`` or ``{"weight": w, "gpu_milli": m}`` classes,
    each optionally with the ``"cpu_milli"`` and ``"memory_mib"`` it asks
    (a node whose free CPU or memory cannot host a class strands all its free
    GPU for that class; nodes report them as allocatable ``cpu`` and
    ``memory``, pods with ``spec.nodeName`` count their requests).
    ``"reasons": False`` skips building each rejected node's reason (faster,
    for simulations). ``"hami_exact"``: ``"all"``, ``"none"`` (default) or
    rows of docs/compatibility.md such as ``"W1,W2"`` (or a list of them):
    decide as HAMi v2.10 does on those rows instead of as devshare does.
    """

    def __init__(self, config: Optional[Any] = None) -> None:
        scheduler: Mapping[str, str] = {}
        device_config = config
        if isinstance(config, Mapping):
            scheduler = config.get("scheduler", {})
            device_config = {k: v for k, v in config.items() if k != "scheduler"} or None
        workload = [(float(c.get("weight", 1.0)), int(c.get("gpus", 0)), int(c.get("gpu_milli", 0)),
                     int(c.get("cpu_milli", 0)), int(c.get("memory_mib", 0)))
                    for c in scheduler.get("workload", [])]
        self._impl = _devshare._Cluster(_config(device_config),
                                        scheduler.get("node_policy", "binpack"),
                                        scheduler.get("gpu_policy", "spread"), workload,
                                        bool(scheduler.get("reasons", True)),
                                        _hami_exact(scheduler.get("hami_exact", "none")))

    def add_node(self, node: Mapping[str, Any]) -> None:
        """Adds or replaces a Node (a dict); registers its devices from its annotations."""
        self._impl.add_node(_json(node))

    def update_node(self, node: Mapping[str, Any]) -> None:
        """Same as add_node: a node is replaced whole."""
        self._impl.add_node(_json(node))

    def remove_node(self, name: str) -> bool:
        """Removes a node; returns False when it was unknown."""
        return self._impl.remove_node(name)

    def add_pod(self, pod: Mapping[str, Any]) -> None:
        """Adds or updates a Pod (a dict). Pods with hami.io/vgpu-node hold devices;
        pods with a node (spec.nodeName or hami.io/vgpu-node) count their CPU and
        memory requests there."""
        self._impl.add_pod(_json(pod))

    def remove_pod(self, namespace: str, name: str) -> bool:
        """Removes a pod; returns False when the cluster held neither its devices
        nor its CPU and memory."""
        return self._impl.remove_pod(namespace, name)

    def set_quota(self, namespace: str, name: str, hard: Mapping[str, str]) -> None:
        """Sets a ResourceQuota's spec.hard (limits.nvidia.com/gpumem and friends)."""
        self._impl.set_quota(namespace, name, {k: str(v) for k, v in hard.items()})

    def filter(self, pod: Mapping[str, Any], nodes: Optional[Sequence[str]] = None,
               now: Optional[int] = None) -> FilterResult:
        """Where ``pod`` fits: the chosen node, its devices, the annotation patch,
        every rejected node's reason and every feasible node's score. ``nodes``
        restricts the candidates (default: every node); ``now`` is the Unix time
        written to hami.io/vgpu-time (default: the current time)."""
        return self._impl.filter(_json(pod), list(nodes or []),
                                 int(time.time()) if now is None else int(now))

    def fragmentation(self) -> dict:
        """The fragmentation of the cluster as the fgd policy measures it, for
        the cluster's ``workload`` (a default mix when none was given):
        ``{"free_gpus", "fragmented_gpus", "nodes": {name: {"free_gpus",
        "fragmented_gpus"}}}`` — of the free GPUs, the part the workload is
        expected not to be able to use (a node's free CPU or memory counts)."""
        return self._impl.fragmentation()

    def node_names(self) -> list[str]:
        """Node names in ascending order."""
        return self._impl.node_names()

    def node_devices(self, name: str) -> list[DeviceState]:
        """The devices of a node with their usage; KeyError for an unknown node."""
        return self._impl.node_devices(name)

    def __len__(self) -> int:
        return len(self._impl.node_names())

    def __repr__(self) -> str:
        return f"Cluster(nodes={len(self)}, pods={self._impl.pod_count()})"


def scenarios() -> list:
    """The names of the scenarios shipped with devshare."""
    return _devshare._builtin_scenarios()


def _openb_dir(given: Optional[str]) -> str:
    if given:
        return str(given)
    if os.environ.get("DEVSHARE_OPENB"):
        return os.environ["DEVSHARE_OPENB"]
    for candidate in ("../shared/data/openb", "shared/data/openb"):
        if os.path.exists(os.path.join(candidate, "openb_node_list_gpu_node.csv")):
            return candidate
    return ""


def simulate(scenario: Any = "default", seed: Any = 0, openb: Optional[str] = None) -> dict:
    """Runs a scenario on the simulated cluster and returns the results.

    ``scenario`` is the name of a shipped scenario (see ``scenarios()``), the
    path of a scenario file (YAML), or a dict with the same keys as a file.
    ``seed`` is a seed, a list of seeds, or None for the scenario's own.
    ``openb`` is the directory of the openb traces for scenarios that use
    them (default: $DEVSHARE_OPENB, ../shared/data/openb, shared/data/openb).

    Returns {"name", "description", "variants": [{"name", "runs": [report,
    one per seed]}]}; a report holds allocationPercent, gpuFree and
    gpuFragmented at the end, fragmentationCurve (a point per 10 % of the
    GPUs asked: demandPercent, allocationPercent, gpuFree, gpuFragmented),
    latencyP50Ms, latencyPercentilesMs (0..100 %), apiCalls by verb, pending
    and its reasons, and the other figures of devshare simulate's table. The same
    seed gives the same results. Errors: ValueError naming the key and line."""
    base_dir = ""
    if isinstance(scenario, Mapping):
        text, what = json.dumps(scenario), "scenario"
    elif isinstance(scenario, (str, os.PathLike)) and os.path.isfile(scenario):
        with open(scenario, encoding="utf-8") as f:
            text = f.read()
        what, base_dir = str(scenario), os.path.dirname(os.fspath(scenario))
    elif isinstance(scenario, str):
        text, what = _devshare._builtin_scenario(scenario), f"scenario {scenario}"
    else:
        raise TypeError("scenario must be a shipped scenario's name, a file path or a dict")
    if seed is None:
        seeds = None
    elif isinstance(seed, int):
        seeds = [seed]
    else:
        seeds = [int(s) for s in seed]
    return json.loads(_devshare._run_experiment(text, what, base_dir, _openb_dir(openb), seeds))


def hami_scheduler_pass(node: Mapping[str, Any], memory: dict, now: int,
                        key: str = "hami.io/node-handshake", zone_offset_seconds: int = 0,
                        hami_exact: Any = "none") -> dict:
    """One pass of HAMi's registration over one node (W4 and W16 fixed; W4 as
    HAMi with ``hami_exact`` "W4" or "all").

    ``node`` has ``handshake`` and ``registered`` (annotation values or None)
    and ``allocatable``; ``memory`` is a dict the pass updates in place.
    Returns {usable, refresh, write}, write being {key: value or None}."""
    return _devshare._hami_scheduler_pass(node.get("handshake"), node.get("registered"),
                                          int(node.get("allocatable", 0)), memory, key, now,
                                          zone_offset_seconds, _hami_exact(hami_exact))


def volcano_scheduler_pass(handshake: Optional[str], now: int,
                           key: str = "volcano.sh/node-vgpu-handshake",
                           zone_offset_seconds: int = 0) -> dict:
    """Volcano's scheduler-side handshake step: {usable, refresh, write}."""
    return _devshare._volcano_scheduler_pass(handshake, key, now, zone_offset_seconds)


def change_only_scheduler_pass(registered: Optional[str], allocatable: int,
                               previous: Optional[str] = None) -> dict:
    """The change-only protocol: live when registered and allocatable > 0; no writes."""
    return _devshare._change_only_scheduler_pass(registered, allocatable, previous)


def decide_node_lock(current: Optional[str], namespace: str, name: str, now: int,
                     holder: Optional[Mapping[str, Any]] = None, sighting: Optional[dict] = None,
                     timeout_seconds: int = 300, grace_seconds: int = 300) -> dict:
    """Whether pod namespace/name may take a node's hami.io/mutex.lock.

    ``holder`` describes the pod holding it: {"state": "unknown"|"gone"|"present",
    "bind_phase": "allocating"|..., "bind_time": unix seconds}. ``sighting`` (a
    dict kept per node) ages unreadable values. Returns {action, write, reason}
    with action one of set, reentrant, take_over, check_holder, held."""
    holder = holder or {}
    return _devshare._decide_lock(current, namespace, name, holder.get("state", "unknown"),
                                  holder.get("bind_phase", ""), holder.get("bind_time"),
                                  sighting if sighting is not None else {}, now,
                                  timeout_seconds, grace_seconds)


def decide_admission(review: Any, config: Optional[Any] = None, scheduler_name: str = "",
                     cluster: Optional[Cluster] = None) -> dict:
    """The webhook's AdmissionReview response (a dict) for an AdmissionReview
    request (a dict or JSON text). ``cluster`` supplies GPU quotas."""
    out = _devshare._decide_admission(_json(review), _config(config), scheduler_name,
                                      cluster._impl if cluster is not None else None)
    return json.loads(out)
