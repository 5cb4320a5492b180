import json

import pytest

import devshare


def register(node, gpus, mem=8000, slots=10, cores=100, type="NVIDIA A100-SXM4-40GB"):
    """A Node dict whose GPUs register through hami.io/node-nvidia-register."""
    devices = [devshare.Device(f"{node}-gpu{i}", index=i, count=slots, devmem=mem, devcore=cores,
                               type=type, health=True, mode="hami-core") for i in range(gpus)]
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node, "annotations": {
                "hami.io/node-nvidia-register": devshare.encode_node_devices(devices)}},
            "status": {"allocatable": {"nvidia.com/gpu": str(gpus * slots)}}}


def pod(name, gpus=1, mem=None, cores=None, pct=None, namespace="default", annotations=None):
    limits = {"nvidia.com/gpu": str(gpus)}
    if mem is not None:
        limits["nvidia.com/gpumem"] = str(mem)
    if cores is not None:
        limits["nvidia.com/gpucores"] = str(cores)
    if pct is not None:
        limits["nvidia.com/gpumem-percentage"] = str(pct)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                         "annotations": dict(annotations or {})},
            "spec": {"containers": [{"name": "main", "resources": {"limits": limits}}]},
            "status": {"phase": "Pending"}}


@pytest.fixture
def make_node():
    return register


@pytest.fixture
def make_pod():
    return pod
