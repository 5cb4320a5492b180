"""devshare: the scheduling core for shared accelerators, from Python.

The real C++ core (not a re-implementation): HAMi/Volcano annotation codecs,
requests, the incremental cluster snapshot and Filter, the protocol state
machines (handshake, leases, node lock, admission), the sans-I/O scheduler
service (``Engine``) and the simulator (``simulate``). Kubernetes objects are
plain dicts shaped as the API server serves them.

Results are typed objects named as in C++ (``NodeLock``, ``RegistrationStep``,
``ClusterFragmentation``, ...) with read-only attributes and ``to_dict()``;
those that used to be dicts also answer ``r["key"]``, ``in``, ``keys()``,
``get()`` and compare equal to their old dict.

Errors: malformed annotations and objects raise ``DecodeError`` (a
``ValueError``); an invalid device config or option raises ``ConfigError``
(a ``ValueError``); valid input devshare does not evaluate (a DRA CEL
selector beyond its subset) raises ``UnsupportedError`` (a ``ValueError``).

Deprecated names (a ``DeprecationWarning``, then the same object):
``DeviceState`` is ``DeviceView``, ``Request`` is ``ContainerRequest``,
``decide_node_lock`` is ``decide_lock``.
"""

from __future__ import annotations

import json
import time
import warnings
from typing import Any, Mapping, Optional, Sequence, Union

from . import _devshare
from ._devshare import (
    AdmissionDecision,
    AnnotationWrite,
    BindReply,
    ClusterFragmentation,
    ConfigError,
    ContainerDevice,
    ContainerRequest,
    Counters,
    DecodeError,
    Device,
    DeviceView,
    ElectionDecision,
    Elector,
    EvictPod,
    ExperimentResults,
    FilterReply,
    FilterResult,
    FragmentationSample,
    Handshake,
    LeaseFollower,
    LockDecision,
    NodeFragmentation,
    NodeLock,
    NodeScore,
    NominatePod,
    PatchNode,
    PatchPod,
    PodEvent,
    PostBinding,
    PreemptionCandidate,
    PreemptionPlan,
    PreemptionReport,
    PreemptionVictim,
    QuotaReport,
    QuotaUse,
    RegistrationStep,
    Report,
    ScoringWeights,
    UnsupportedError,
    VariantResult,
    backoff_delay_ms,
)
from ._args import _config, _hami_exact, _json
from ._dra import dra_allocate, dra_explain, dra_normalize, dra_quantity_milli, dra_selector_matches
from ._simulate import openb_scenario, scenarios, simulate

__version__: str = _devshare.__version__

__all__ = [
    "AdmissionDecision",
    "AnnotationWrite",
    "BindReply",
    "Cluster",
    "ClusterFragmentation",
    "Command",
    "ConfigError",
    "ContainerDevice",
    "ContainerRequest",
    "Counters",
    "DecodeError",
    "Device",
    "DeviceView",
    "ElectionDecision",
    "Elector",
    "Engine",
    "EvictPod",
    "ExperimentResults",
    "FilterReply",
    "FilterResult",
    "FragmentationSample",
    "Handshake",
    "LeaseFollower",
    "LockDecision",
    "NodeFragmentation",
    "NodeLock",
    "NodeScore",
    "NominatePod",
    "PatchNode",
    "PatchPod",
    "PodEvent",
    "PostBinding",
    "PreemptionCandidate",
    "PreemptionPlan",
    "PreemptionReport",
    "PreemptionVictim",
    "QuotaReport",
    "QuotaUse",
    "RegistrationStep",
    "Report",
    "ScoringWeights",
    "UnsupportedError",
    "VariantResult",
    "backoff_delay_ms",
    "change_only_scheduler_pass",
    "container_requests",
    "decide_admission",
    "decide_lock",
    "decode_handshake",
    "decode_node_devices",
    "decode_node_lock",
    "decode_pod_devices",
    "decode_scoring_weights",
    "dra_allocate",
    "dra_explain",
    "dra_normalize",
    "dra_quantity_milli",
    "dra_selector_matches",
    "encode_node_devices",
    "encode_pod_devices",
    "hami_scheduler_pass",
    "openb_scenario",
    "scenarios",
    "simulate",
    "volcano_scheduler_pass",
    "decide_volcano_lock",
]

# A command the Engine emits; each names the API call to make, or the reply
# to send, and the API calls report back through Engine.api_result(id, ...).
Command = Union[PatchNode, PatchPod, PostBinding, FilterReply, BindReply, EvictPod, NominatePod,
                PodEvent]

# Old names, kept working: each warns (DeprecationWarning), then is the new one.
_DEPRECATED = {
    "DeviceState": ("DeviceView", DeviceView),
    "Request": ("ContainerRequest", ContainerRequest),
}


def __getattr__(name: str) -> Any:
    if name in _DEPRECATED:
        new, value = _DEPRECATED[name]
        warnings.warn(f"devshare.{name} is deprecated; use devshare.{new}", DeprecationWarning,
                      stacklevel=2)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def container_requests(container: Mapping[str, Any], config: Optional[Any] = None) -> dict[str, ContainerRequest]:
    """What a Kubernetes container (a dict) asks of each configured vendor,
    by HAMi's rules (limits, else requests; defaults; memory factor)."""
    pod = {"metadata": {"name": "container"}, "spec": {"containers": [container]}}
    return _devshare._container_requests(json.dumps(pod), _config(config))


def decode_node_lock(value: str) -> NodeLock:
    """Decodes hami.io/mutex.lock: unix_seconds, utc_offset_seconds, has_owner,
    pod_namespace and pod_name (None without an owner); as a dict (``lock["name"]``,
    ``to_dict()``): unix_seconds, utc_offset_seconds, namespace, name."""
    return _devshare._decode_node_lock(value)


def decode_handshake(value: str, zone_offset_seconds: int = 0) -> Handshake:
    """Decodes a HAMi or Volcano handshake value: state, dialect, unix_seconds."""
    return _devshare._decode_handshake(value, zone_offset_seconds)


def decode_scoring_weights(value: str) -> ScoringWeights:
    """Decodes hami.io/device-scoring-weights: slot, core, memory."""
    return _devshare._decode_scoring_weights(value)


def _scheduler_args(config: Optional[Any]) -> tuple:
    """A Cluster's or Engine's ``config`` as the extension takes it: the device
    config (YAML text or None) and the ``scheduler`` section's options."""
    scheduler: Mapping[str, Any] = {}
    device_config = config
    if isinstance(config, Mapping):
        scheduler = config.get("scheduler", {})
        device_config = {k: v for k, v in config.items() if k != "scheduler"} or None
    workload = [(float(c.get("weight", 1.0)), int(c.get("gpus", 0)), int(c.get("gpu_milli", 0)),
                 int(c.get("cpu_milli", 0)), int(c.get("memory_mib", 0)))
                for c in scheduler.get("workload", [])]
    return (_config(device_config), scheduler.get("node_policy", "binpack"),
            scheduler.get("gpu_policy", "spread"), workload, bool(scheduler.get("reasons", True)),
            _hami_exact(scheduler.get("hami_exact", "none")))


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
        self._impl = _devshare._Cluster(*_scheduler_args(config))

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
        """Sets a ResourceQuota's spec.hard, replacing what it set before. As
        HAMi, the device limits are ``limits.<memory or core resource>``
        (``limits.nvidia.com/gpumem``, ``limits.nvidia.com/gpucores``); the
        tightest of a namespace's quotas wins. Raises DecodeError naming a
        device limit that is not a whole number (that limit is left out, the
        quota's others are set)."""
        self._impl.set_quota(namespace, name, {k: str(v) for k, v in hard.items()})

    def quotas(self) -> list[QuotaUse]:
        """Every device quota in force, by namespace then resource: the limit
        (the tightest) and what the namespace's placed pods use."""
        return self._impl.quotas()

    def filter(self, pod: Mapping[str, Any], nodes: Optional[Sequence[str]] = None,
               now: Optional[int] = None) -> FilterResult:
        """Where ``pod`` fits: the chosen node, its devices, the annotation patch,
        every rejected node's reason and every feasible node's score. ``nodes``
        restricts the candidates (default: every node); ``now`` is the Unix time
        written to hami.io/vgpu-time (default: the current time)."""
        return self._impl.filter(_json(pod), list(nodes or []),
                                 int(time.time()) if now is None else int(now))

    def plan_preemption(self, pod: Mapping[str, Any], pods: Sequence[Mapping[str, Any]],
                        budgets: Sequence[Mapping[str, Any]] = (),
                        nodes: Optional[Sequence[str]] = None,
                        now: Optional[int] = None) -> PreemptionPlan:
        """For a ``pod`` that fits on no node: on each node, the fewest pods of
        lower priority among ``pods`` (those bound, as added to this cluster)
        whose eviction lets it fit, the devices it would take there, and the
        nodes ranked as kube-scheduler ranks them (PodDisruptionBudgets among
        ``budgets`` counted as it counts them); ``chosen`` is the best. Nodes
        no eviction helps are in ``unresolvable`` with why; ``refused`` says
        why the pod may not preempt at all (preemptionPolicy Never, or it
        fits already). ``nodes`` and ``now`` as for ``filter``."""
        return self._impl.plan_preemption(
            _json(pod), [_json(p) for p in pods], [_json(b) for b in budgets],
            list(nodes or []), int(time.time()) if now is None else int(now))

    def fragmentation(self) -> ClusterFragmentation:
        """The fragmentation of the cluster as the fgd policy measures it, for
        the cluster's ``workload`` (a default mix when none was given): of the
        free GPUs, the part the workload is expected not to be able to use (a
        node's free CPU or memory counts). ``free_gpus``, ``fragmented_gpus``
        and ``nodes`` (name -> NodeFragmentation); as a dict: ``{"free_gpus",
        "fragmented_gpus", "nodes": {name: {"free_gpus", "fragmented_gpus"}}}``."""
        return self._impl.fragmentation()

    def add_resource_slice(self, slice: Any) -> None:
        """Adds or replaces a ResourceSlice (DRA, a dict or JSON text); the
        pools of the nodes it concerns are gathered again."""
        self._impl.add_resource_slice(_json(slice))

    def remove_resource_slice(self, name: str) -> bool:
        """Removes a ResourceSlice; returns False when it was unknown."""
        return self._impl.remove_resource_slice(name)

    def add_device_class(self, device_class: Any) -> None:
        """Adds or replaces a DeviceClass."""
        self._impl.add_device_class(_json(device_class))

    def remove_device_class(self, name: str) -> bool:
        """Removes a DeviceClass; returns False when it was unknown."""
        return self._impl.remove_device_class(name)

    def add_resource_claim(self, claim: Any) -> None:
        """Adds or replaces a ResourceClaim; what its ``status.allocation``
        holds is taken from the devices."""
        self._impl.add_resource_claim(_json(claim))

    def remove_resource_claim(self, namespace: str, name: str) -> bool:
        """Removes a ResourceClaim and frees what it held; False when unknown."""
        return self._impl.remove_resource_claim(namespace, name)

    def dra_place(self, claims: Sequence[Any], cpu_milli: int = 0, memory_bytes: int = 0,
                  policy: str = "fgd") -> Optional[dict]:
        """Where a pod with the (unallocated) ``claims`` and this CPU and memory
        goes under ``policy`` ("binpack", "spread" or "fgd", with the cluster's
        ``workload``), or None when no node fits: ``{"node", "allocations"
        (status.allocation of each claim, as dicts), "score", "feasible",
        "short_of_cpu_or_memory", "short_of_devices"}``. Nothing is recorded:
        add the claims with their allocation to hold the devices. Errors as
        ``dra_allocate``'s."""
        return self._impl.dra_place([_json(c) for c in claims], int(cpu_milli), int(memory_bytes),
                                    policy)

    def dra_fragmentation(self) -> ClusterFragmentation:
        """fgd's fragmentation of the DRA devices (every device of a node's
        usable pools one GPU), for the cluster's ``workload``, as
        ``fragmentation()`` reports it."""
        return self._impl.dra_fragmentation()

    def node_names(self) -> list[str]:
        """Node names in ascending order."""
        return self._impl.node_names()

    def node_devices(self, name: str) -> list[DeviceView]:
        """The devices of a node with their usage; KeyError for an unknown node."""
        return self._impl.node_devices(name)

    def __len__(self) -> int:
        return len(self._impl.node_names())

    def __repr__(self) -> str:
        return f"Cluster(nodes={len(self)}, pods={self._impl.pod_count()})"


class Engine:
    """The scheduler service a deployment runs, sans I/O: the same code as
    ``devshare serve`` and the simulator (lib/engine).

    Events go in as calls (a node, pod or Lease observed, ``tick(now_ms)``,
    filter and bind requests, the outcome of the API calls it asked for);
    each call returns the commands it emitted, a list of ``PatchNode``,
    ``PatchPod``, ``PostBinding``, ``FilterReply`` and ``BindReply``. A
    driver performs each PatchNode/PatchPod/PostBinding and reports it with
    ``api_result(command.id, succeeded, now_ms)``, which may emit more; a
    reply answers the request of the same number. It reads no clock: every
    ``now_ms`` is the driver's time in milliseconds (Unix time for the
    annotations it writes), and ``next_wake_ms()`` says when ``tick`` next
    has work. Kubernetes objects are dicts (or JSON text).

    ``config`` is as for ``Cluster``: the device-config YAML (text or dict)
    with an optional ``scheduler`` section (node_policy, gpu_policy,
    workload, reasons, hami_exact). The options, as in EngineOptions:
    ``registration`` "change-only" (default), "hami" (a pass every
    ``register_period_ms``) or "volcano"; ``leadership`` "always" (default)
    or "follow" (leader while the Lease given to ``lease_observed`` is held
    by ``hostname``); ``bind_mode`` "node-lock" (default, HAMi's
    hami.io/mutex.lock, expiring after ``lock_timeout_seconds`` plus
    ``lock_grace_seconds`` for a holder still allocating) or "lock-free";
    ``lock_retry`` "release" (default: try again when the node's lock is
    seen released, the waiters of a node in turn), "once" (HAMi), "fixed"
    (every 100 ms) or "backoff" (jittered, seeded by ``seed``), until
    ``lock_retry_timeout_ms``;
    ``avoid_locked_nodes`` (default True) places a pod on a node no other
    bind holds the lock of when one fits (False: as HAMi); ``pod_writes``
    "binding" (default: Filter answers from memory and the Binding carries
    the placement and the bind phase) or "hami" (Filter PATCHes the
    placement and answers after it; Bind PATCHes the bind phase, then binds);
    ``api_qps`` the QPS of the client that executes the commands (0,
    default: unthrottled): ``filter`` then holds a request, answering it
    from a later call once a bind ends, while the binds in flight need
    ``bind_budget_ms`` of those writes, and refuses it after
    ``filter_hold_ms``;
    ``zone_offset_seconds`` the zone handshake stamps are written in;
    ``preemption`` (default True): a pod ``filter`` finds no room for evicts
    the fewest lower-priority pods it needs gone (EvictPod per victim, a
    NominatePod, PodEvents), the devices they free are kept for it, and its
    filters wait until they are gone; the preemption is given up when an
    eviction fails, when the victims are not gone within
    ``preemption_timeout_ms`` or the pod is not placed within
    ``preemption_hold_ms`` after.
    Errors: ConfigError for an invalid config or option.

    Safe to share between threads (calls are serialised); calls run without
    the GIL.
    """

    def __init__(self, config: Optional[Any] = None, *, registration: str = "change-only",
                 leadership: str = "always", hostname: str = "", bind_mode: str = "node-lock",
                 lock_retry: str = "release", lock_retry_timeout_ms: int = 28000,
                 avoid_locked_nodes: bool = True, pod_writes: str = "binding",
                 api_qps: float = 0, bind_budget_ms: int = 10000, filter_hold_ms: int = 10000,
                 lock_timeout_seconds: int = 300,
                 lock_grace_seconds: int = 300, seed: int = 0, register_period_ms: int = 15000,
                 zone_offset_seconds: int = 0, preemption: bool = True,
                 preemption_hold_ms: int = 60000, preemption_timeout_ms: int = 300000) -> None:
        self._impl = _devshare._Engine(*_scheduler_args(config), registration, leadership, hostname,
                                       bind_mode, lock_retry, int(lock_retry_timeout_ms),
                                       bool(avoid_locked_nodes), pod_writes, float(api_qps),
                                       int(bind_budget_ms), int(filter_hold_ms),
                                       int(lock_timeout_seconds), int(lock_grace_seconds),
                                       int(seed), int(register_period_ms), int(zone_offset_seconds),
                                       bool(preemption), int(preemption_hold_ms),
                                       int(preemption_timeout_ms))

    def node_observed(self, node: Mapping[str, Any], now_ms: int) -> list[Command]:
        """A Node added or changed (the whole object). A new node is registered
        at once; under the change-only and Volcano protocols every change is."""
        return self._impl.node_observed(_json(node), int(now_ms))

    def node_deleted(self, name: str) -> None:
        """A Node deleted."""
        self._impl.node_deleted(name)

    def pod_observed(self, pod: Mapping[str, Any]) -> None:
        """A Pod added or changed; pods with device annotations hold devices
        (see ``pod_errors`` for those that do not decode)."""
        self._impl.pod_observed(_json(pod))

    def pod_deleted(self, uid: str) -> None:
        """A Pod deleted, by UID."""
        self._impl.pod_deleted(uid)

    def lease_observed(self, lease: Optional[Mapping[str, Any]], now_ms: int) -> list[Command]:
        """A Lease event under ``leadership="follow"`` (the Lease, or None when
        deleted); gaining leadership runs a registration pass."""
        return self._impl.lease_observed(None if lease is None else _json(lease), int(now_ms))

    def tick(self, now_ms: int) -> list[Command]:
        """Time passing: a registration pass when one is due, node-lock
        retries whose wait is over, leadership lapsing."""
        return self._impl.tick(int(now_ms))

    def next_wake_ms(self) -> Optional[int]:
        """The earliest time ``tick`` has work (None: none until an event)."""
        return self._impl.next_wake_ms()

    def filter(self, request: int, pod: Mapping[str, Any], nodes: Sequence[str],
               now_ms: int) -> list[Command]:
        """The extender's filter for ``pod`` over ``nodes`` (every node when
        empty). When placed, a PatchPod writes the placement, and the
        FilterReply follows its api_result; otherwise the FilterReply comes at
        once (an error when not ready)."""
        return self._impl.filter(int(request), _json(pod), list(nodes), int(now_ms))

    def bind(self, request: int, pod_namespace: str, name: str, uid: str, node: str,
             now_ms: int) -> list[Command]:
        """The extender's bind of a filtered pod: the node lock (PatchNode),
        the bind phase (PatchPod), the Binding (PostBinding), then the
        BindReply; lock-free, the Binding alone. Any failure releases the lock
        and the reservation."""
        return self._impl.bind(int(request), pod_namespace, name, uid, node, int(now_ms))

    def prioritize(self, pod: Mapping[str, Any], nodes: Sequence[str], now_ms: int) -> list[NodeScore]:
        """The extender's prioritize: every feasible node among ``nodes`` with
        its score (``normalized``: 0..100, higher is better). No commands.
        Errors: RuntimeError when not ready; Filter's errors."""
        return self._impl.prioritize(_json(pod), list(nodes), int(now_ms))

    def api_result(self, id: int, succeeded: bool, now_ms: int) -> list[Command]:
        """The outcome of the PatchNode, PatchPod or PostBinding numbered ``id``
        (a 409 or a failed precondition is a failure)."""
        return self._impl.api_result(int(id), bool(succeeded), int(now_ms))

    def ready(self, now_ms: int) -> bool:
        """/readyz: leading, and a registration pass completed since."""
        return self._impl.ready(int(now_ms))

    @property
    def counters(self) -> Counters:
        """What the engine did so far (a copy)."""
        return self._impl.counters()

    def node_errors(self) -> dict[str, str]:
        """Nodes whose register annotation does not decode, with why."""
        return self._impl.node_errors()

    def pod_errors(self) -> dict[str, str]:
        """Pods (by UID) whose device annotations do not decode, with why."""
        return self._impl.pod_errors()

    def quota_observed(self, quota: Mapping[str, Any]) -> None:
        """A ResourceQuota added or changed: its device limits bind filter
        from the next call (see ``Cluster.set_quota``); a device limit that is
        not a whole number limits nothing and is in ``quota_errors``."""
        self._impl.quota_observed(_json(quota))

    def quota_deleted(self, namespace: str, name: str) -> None:
        """A ResourceQuota deleted: its limits no longer apply."""
        self._impl.quota_deleted(namespace, name)

    def quota_errors(self) -> dict[str, str]:
        """Quotas ("namespace/name") with a device limit that is not a whole
        number, with why."""
        return self._impl.quota_errors()

    def budget_observed(self, budget: Mapping[str, Any]) -> None:
        """A PodDisruptionBudget added or changed: preemption spares the pods
        whose eviction it does not allow. Errors: DecodeError."""
        self._impl.budget_observed(_json(budget))

    def budget_deleted(self, namespace: str, name: str) -> None:
        """A PodDisruptionBudget deleted."""
        self._impl.budget_deleted(namespace, name)

    def preemptions(self) -> dict[str, dict[str, Any]]:
        """The preemptions under way, by the preemptor's UID: {namespace,
        name, node, victims ("namespace/name" not yet gone), started_ms,
        victims_gone_ms}."""
        return self._impl.preemptions()

    def extender_preempt(self, pod: Mapping[str, Any],
                         proposed: Mapping[str, Sequence[str]],
                         now_ms: int) -> dict[str, list[str]]:
        """The extender's preempt verb: for each node kube-scheduler proposes
        with the victims it chose there (UIDs), the victims that make
        ``pod`` fit by devshare's Filter too; a node where no eviction helps
        is left out. Errors: RuntimeError when not ready."""
        answer = self._impl.extender_preempt(
            _json(pod), {node: (list(uids), 0) for node, uids in proposed.items()}, int(now_ms))
        return {node: uids for node, (uids, _) in answer.items()}

    def quotas(self) -> list[QuotaUse]:
        """Every device quota in force: limit and use, by namespace then resource."""
        return self._impl.quotas()

    def node_names(self) -> list[str]:
        """The registered nodes, in ascending order."""
        return self._impl.node_names()

    def node_devices(self, name: str) -> list[DeviceView]:
        """A registered node's devices with their usage (reservations
        included); KeyError for a node not registered."""
        return self._impl.node_devices(name)

    def __repr__(self) -> str:
        return f"Engine(nodes={len(self._impl.node_names())})"


def hami_scheduler_pass(node: Mapping[str, Any], memory: dict, now: int,
                        key: str = "hami.io/node-handshake", zone_offset_seconds: int = 0,
                        hami_exact: Any = "none") -> RegistrationStep:
    """One pass of HAMi's registration over one node (W4 and W16 fixed; W4 as
    HAMi with ``hami_exact`` "W4" or "all").

    ``node`` has ``handshake`` and ``registered`` (annotation values or None)
    and ``allocatable``; ``memory`` is a dict the pass updates in place.
    Returns the step: usable, refresh and write (an AnnotationWrite or None);
    as a dict, {usable, refresh, write} with write {key: value or None} or {}."""
    return _devshare._hami_scheduler_pass(node.get("handshake"), node.get("registered"),
                                          int(node.get("allocatable", 0)), memory, key, now,
                                          zone_offset_seconds, _hami_exact(hami_exact))


def volcano_scheduler_pass(handshake: Optional[str], now: int,
                           key: str = "volcano.sh/node-vgpu-handshake",
                           zone_offset_seconds: int = 0, registered: Optional[str] = None,
                           read_utc: bool = False) -> RegistrationStep:
    """Volcano's scheduler-side handshake step (as Volcano v1.12.4's
    vgpu.NewGPUDevices): usable, refresh, write. ``registered`` is the node's
    volcano.sh/node-vgpu-register value (None: absent; without one that gives
    a device, nothing is written). ``read_utc`` (Volcano-exact W16) reads
    stamps as UTC whatever zone they are written in."""
    return _devshare._volcano_scheduler_pass(handshake, registered, key, now,
                                             zone_offset_seconds, read_utc)


def decide_volcano_lock(current: Optional[str], now: int, sighting: Optional[dict] = None,
                        timeout_seconds: int = 300, zone_offset_seconds: int = 0,
                        unreadable_expires: bool = True) -> dict:
    """Whether Volcano 1.12's scheduler may take a node's ``hamivgpu`` lock
    (an RFC 3339 time, no owner): {acquired, write: {key: value} or {},
    reason}. ``sighting`` (a dict kept per node) ages unreadable values (W6);
    ``unreadable_expires=False`` blocks on them forever, as Volcano."""
    return _devshare._decide_volcano_lock(current, sighting if sighting is not None else {}, now,
                                          timeout_seconds, zone_offset_seconds,
                                          unreadable_expires)


def change_only_scheduler_pass(registered: Optional[str], allocatable: int,
                               previous: Optional[str] = None) -> RegistrationStep:
    """The change-only protocol: live when registered and allocatable > 0; no writes."""
    return _devshare._change_only_scheduler_pass(registered, allocatable, previous)


def decide_lock(current: Optional[str], namespace: str, name: str, now: int,
                holder: Optional[Mapping[str, Any]] = None, sighting: Optional[dict] = None,
                timeout_seconds: int = 300, grace_seconds: int = 300) -> LockDecision:
    """Whether pod namespace/name may take a node's hami.io/mutex.lock.

    ``holder`` describes the pod holding it: {"state": "unknown"|"gone"|"present",
    "bind_phase": "allocating"|..., "bind_time": unix seconds}. ``sighting`` (a
    dict kept per node) ages unreadable values. Returns the decision: action
    (set, reentrant, take_over, check_holder or held), write (an
    AnnotationWrite or None) and reason; as a dict, {action, write, reason}
    with write {key: value or None} or {}."""
    holder = holder or {}
    return _devshare._decide_lock(current, namespace, name, holder.get("state", "unknown"),
                                  holder.get("bind_phase", ""), holder.get("bind_time"),
                                  sighting if sighting is not None else {}, now,
                                  timeout_seconds, grace_seconds)


def decide_node_lock(current: Optional[str], namespace: str, name: str, now: int,
                     holder: Optional[Mapping[str, Any]] = None, sighting: Optional[dict] = None,
                     timeout_seconds: int = 300, grace_seconds: int = 300) -> LockDecision:
    """Deprecated: decide_lock."""
    warnings.warn("devshare.decide_node_lock is deprecated; use devshare.decide_lock",
                  DeprecationWarning, stacklevel=2)
    return decide_lock(current, namespace, name, now, holder, sighting, timeout_seconds,
                       grace_seconds)


def decide_admission(review: Any, config: Optional[Any] = None, scheduler_name: str = "",
                     cluster: Optional[Cluster] = None) -> AdmissionDecision:
    """The webhook's decision on an AdmissionReview request (a dict or JSON
    text): uid, allowed, code, message and patch (the JSON Patch text). As a
    dict (``decision["response"]``, ``to_dict()``): the AdmissionReview
    response, whose ``to_json()`` is the text to answer with. ``cluster``
    supplies GPU quotas."""
    return _devshare._decide_admission(_json(review), _config(config), scheduler_name,
                                       cluster._impl if cluster is not None else None)
