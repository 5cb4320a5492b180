"""Fixtures for the tests of schedulers, device plugins and tools that read
HAMi's or Volcano's annotations: Kubernetes Node and Pod objects (dicts, as
the Kubernetes API returns them) whose device annotations are valid, and a
ready ``devshare.Cluster``, each in a line::

    from devshare.testing import cluster, node, pod, use

    c = cluster([node("gpu-1", gpus=2), node("gpu-2", gpus=2)],
                [pod("a", memory=30000, on="gpu-1", devices=[[use("gpu-1", 0, 30000)]])])
    assert c.filter(pod("b", memory=20000)).node == "gpu-1"

The annotation keys, formats and resource names are those of the device
configuration (NVIDIA of HAMi's default config unless ``config`` and
``vendor`` say otherwise; ``format="legacy"`` or ``"volcano"`` for the other
register formats), taken from the C++ fixtures of devshare/testing.hpp, so a
test reads exactly what a cluster would hold.

With pytest, installing devshare registers the fixture ``devshare_cluster``
(a factory: ``devshare_cluster(nodes, pods=(), config=None)``).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from . import Cluster, ContainerDevice, _config
from . import _devshare

__all__ = ["gpu_uuid", "use", "node", "pod", "cluster"]


def gpu_uuid(node: str, index: int) -> str:
    """The UUID ``node()`` gives GPU ``index`` of ``node``: ``GPU-<node>-<index>``."""
    return f"GPU-{node}-{index}"


def use(node: str, index: int, memory: int, cores: int = 0, type: str = "NVIDIA") -> ContainerDevice:
    """One device of an allocation: GPU ``index`` of ``node`` (as ``node()`` names it),
    ``memory`` MiB and ``cores`` percent of it."""
    return ContainerDevice(gpu_uuid(node, index), type, memory, cores)


def node(name: str, gpus: int = 0, memory: int = 40960, slots: int = 10, cores: int = 100,
         type: str = "NVIDIA A100-SXM4-40GB", *, format: Optional[str] = None,
         config: Optional[Any] = None, vendor: str = "NVIDIA", cpu: Optional[str] = None,
         node_memory: Optional[str] = None, annotations: Optional[Mapping[str, str]] = None,
         labels: Optional[Mapping[str, str]] = None) -> dict:
    """A Node with ``gpus`` GPUs of ``memory`` MiB, ``slots`` sharing each and ``cores``
    percent, registered through the vendor's annotation (its own format, or ``format``:
    "json", "legacy" or "volcano") with the allocatable count the kubelet reports;
    ``cpu`` and ``node_memory`` are allocatable quantities ("8", "64Gi"). Without GPUs
    it registers nothing (a CPU node). Errors: ConfigError, ValueError."""
    registered, allocatable = _devshare._fixture_node(
        name, int(gpus), int(memory), int(slots), int(cores), type, format or "",
        _config(config), vendor)
    if cpu is not None:
        allocatable["cpu"] = cpu
    if node_memory is not None:
        allocatable["memory"] = node_memory
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {**registered, **(annotations or {})},
                         "labels": dict(labels or {})},
            "status": {"allocatable": allocatable, "capacity": dict(allocatable)}}


def pod(name: str, gpus: int = 1, memory: Optional[int] = None, cores: Optional[int] = None,
        memory_percent: Optional[int] = None, *, namespace: str = "default",
        on: Optional[str] = None, devices: Optional[Sequence[Sequence[ContainerDevice]]] = None,
        config: Optional[Any] = None, vendor: str = "NVIDIA",
        annotations: Optional[Mapping[str, str]] = None,
        labels: Optional[Mapping[str, str]] = None) -> dict:
    """A Pod (UID ``uid-<name>``) whose one container asks ``gpus`` devices, with
    ``memory`` MiB, ``cores`` percent or ``memory_percent`` of each when given, by the
    vendor's resource names. With ``on`` and ``devices`` (one list per container of
    ``use()`` devices) it is bound there holding them, with the annotations the
    vendor's scheduler writes; else Pending. Errors: ConfigError, ValueError."""
    if (on is None) != (devices is None):
        raise ValueError("give on= and devices= together: a pod holds devices on a node")
    limits = _devshare._fixture_limits(
        int(gpus), -1 if memory is None else int(memory), -1 if cores is None else int(cores),
        -1 if memory_percent is None else int(memory_percent), _config(config), vendor)
    held = {} if on is None else _devshare._fixture_allocation(
        on, [list(c) for c in devices], _config(config), vendor)
    out = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                        "annotations": {**held, **(annotations or {})},
                        "labels": dict(labels or {})},
           "spec": {"containers": [{"name": "c0", "resources": {"limits": limits}}]},
           "status": {"phase": "Pending" if on is None else "Running"}}
    if on is not None:
        out["spec"]["nodeName"] = on
    return out


def cluster(nodes: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]] = (),
            config: Optional[Any] = None) -> Cluster:
    """A ``devshare.Cluster`` holding ``nodes`` and ``pods``. Errors: those of
    ``Cluster.add_node`` and ``add_pod`` (a fixture whose annotations do not decode)."""
    c = Cluster(config)
    for n in nodes:
        c.add_node(n)
    for p in pods:
        c.add_pod(p)
    return c


try:
    import pytest
except ImportError:  # pytest is optional: the functions above work without it
    pytest = None

if pytest is not None:
    @pytest.fixture
    def devshare_cluster():
        """A factory of ready clusters: ``devshare_cluster(nodes, pods=(), config=None)``."""
        return cluster
