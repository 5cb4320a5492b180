import pytest

from devshare import testing


def register(node, gpus, mem=8000, slots=10, cores=100, type="NVIDIA A100-SXM4-40GB"):
    """A Node dict whose GPUs (GPU-<node>-<i>) register through hami.io/node-nvidia-register."""
    return testing.node(node, gpus, memory=mem, slots=slots, cores=cores, type=type)


def pod(name, gpus=1, mem=None, cores=None, pct=None, namespace="default", annotations=None,
        on=None, devices=None):
    """A Pod dict asking `gpus` GPUs; with `on` and `devices`, bound there holding them."""
    return testing.pod(name, gpus, memory=mem, cores=cores, memory_percent=pct, namespace=namespace,
                       annotations=annotations, on=on, devices=devices)


@pytest.fixture
def make_node():
    return register


@pytest.fixture
def make_pod():
    return pod
