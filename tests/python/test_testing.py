"""devshare.testing: the fixtures other projects' tests build on."""

import pytest

import devshare
from devshare import testing
from devshare.testing import cluster, node, pod, use


def test_a_node_registers_in_each_format():
    n = node("gpu-1", gpus=2, memory=40960)
    value = n["metadata"]["annotations"]["hami.io/node-nvidia-register"]
    devices = devshare.decode_node_devices(value, "json")
    assert [d.id for d in devices] == ["GPU-gpu-1-0", "GPU-gpu-1-1"]
    assert n["status"]["allocatable"]["nvidia.com/gpu"] == "20"
    legacy = node("gpu-2", gpus=1, memory=16384, slots=4, format="legacy")
    value = legacy["metadata"]["annotations"]["hami.io/node-nvidia-register"]
    assert not value.startswith("[") and devshare.decode_node_devices(value, "legacy")[0].count == 4
    volcano = node("v-1", gpus=2, memory=15360, config={"volcano": {}})
    value = volcano["metadata"]["annotations"]["volcano.sh/node-vgpu-register"]
    assert len(devshare.decode_node_devices(value, "volcano")) == 2
    assert cluster([volcano], config={"volcano": {}}).node_names() == ["v-1"]
    assert "annotations" in node("cpu-1")["metadata"] and not node("cpu-1")["metadata"]["annotations"]


def test_pods_ask_and_hold_by_the_vendor_names():
    p = pod("p", gpus=2, memory=8000, cores=30, namespace="team")
    assert p["spec"]["containers"][0]["resources"]["limits"] == {
        "nvidia.com/gpu": "2", "nvidia.com/gpumem": "8000", "nvidia.com/gpucores": "30"}
    assert (p["metadata"]["namespace"], p["metadata"]["uid"], p["status"]["phase"]) == ("team", "uid-p", "Pending")
    held = pod("h", memory=30000, on="gpu-1", devices=[[use("gpu-1", 0, 30000, 10)]])
    assert held["spec"]["nodeName"] == "gpu-1"
    assert held["metadata"]["annotations"]["hami.io/vgpu-node"] == "gpu-1"
    assert held["metadata"]["annotations"]["hami.io/vgpu-devices-allocated"] == "GPU-gpu-1-0,NVIDIA,30000,10:;"
    with pytest.raises(ValueError, match="on= and devices= together"):
        pod("x", on="gpu-1")


def test_a_ready_cluster_places_the_next_pod():
    c = cluster([node("gpu-1", gpus=1), node("gpu-2", gpus=1)],
                [pod("a", memory=30000, on="gpu-1", devices=[[use("gpu-1", 0, 30000)]])])
    assert c.node_devices("gpu-1")[0].usedmem == 30000
    assert c.filter(pod("b", memory=20000), now=1).node == "gpu-2"  # only GPU-gpu-2-0 has 20 GB free
    with pytest.raises(devshare.DecodeError):
        cluster([node("bad", annotations={"hami.io/node-nvidia-register": "x"}, gpus=0)])


def test_the_pytest_fixture(devshare_cluster):
    # Registered by devshare's pytest plugin (the pytest11 entry point).
    assert devshare_cluster([node("gpu-1", gpus=2)]).node_names() == ["gpu-1"]
