"""Annotation codecs from Python (spec/hami-behaviour.md §1)."""
import pytest

import devshare

SPEC_JSON = ('[{"id":"GPU-a","count":10,"devmem":32768,"devcore":100,"type":"NVIDIA-Tesla V100-PCIE-32GB",'
             '"mode":"hami-core","health":true},{"id":"GPU-b","index":1,"count":10,"devmem":32768,"devcore":100,'
             '"type":"NVIDIA-Tesla V100-PCIE-32GB","numa":1,"mode":"hami-core","health":true}]')


def test_node_json_round_trip_is_byte_exact():
    devices = devshare.decode_node_devices(SPEC_JSON)
    assert [d.id for d in devices] == ["GPU-a", "GPU-b"]
    assert devices[1].numa == 1 and devices[1].index == 1 and devices[0].health
    assert devshare.encode_node_devices(devices) == SPEC_JSON
    assert devshare.decode_node_devices(SPEC_JSON, format="json") == devices


@pytest.mark.parametrize("fmt,value", [
    ("legacy", "GPU-ebe7,10,7680,100,NVIDIA-Tesla P4,0,true,1,hami-core:"),
    ("volcano", "GPU-a,10,15360,Tesla-T4,true,hami-core:"),
])
def test_colon_formats(fmt, value):
    devices = devshare.decode_node_devices(value, format=fmt)
    assert devshare.encode_node_devices(devices, format=fmt) == value
    assert devshare.decode_node_devices(value) == devices  # auto-detected


def test_device_value_type():
    d = devshare.Device("GPU-x", count=4, devmem=1024, devcore=100, type="T4", health=True)
    assert d == devshare.Device("GPU-x", count=4, devmem=1024, devcore=100, type="T4", health=True)
    assert d != devshare.Device("GPU-y")
    assert "GPU-x" in repr(d)
    assert d.to_dict()["devmem"] == 1024


@pytest.mark.parametrize("value,fragment", [
    ('[{"id":"GPU-a","devmem":"lots"}]', "device[0].devmem"),
    ("GPU-1:", "malformed segment"),
    ("no separator", "missing device separator"),
])
def test_node_errors_are_decode_errors(value, fragment):
    with pytest.raises(devshare.DecodeError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        devshare.decode_node_devices(value)


def test_unknown_format_is_a_value_error():
    with pytest.raises(ValueError):
        devshare.decode_node_devices("[]", format="yaml")
    with pytest.raises(ValueError):
        devshare.encode_node_devices([], format="auto")


def test_pod_devices_keep_hamis_trailing_entry():
    containers = devshare.decode_pod_devices(";GPU-a,NVIDIA,1000,30:;;")
    assert [len(c) for c in containers] == [0, 1, 0, 0]
    assert containers[1][0] == devshare.ContainerDevice("GPU-a", "NVIDIA", 1000, 30)
    assert devshare.encode_pod_devices(containers[:3]) == ";GPU-a,NVIDIA,1000,30:;;"
    assert containers[1][0].to_dict() == {"uuid": "GPU-a", "type": "NVIDIA", "usedmem": 1000, "usedcores": 30}
    with pytest.raises(devshare.DecodeError, match="usedcores"):
        devshare.decode_pod_devices("GPU-a,NVIDIA,1000,x:;")


def test_small_annotations():
    lock = devshare.decode_node_lock("2026-08-01T14:00:00+08:00,ns,pod-a")
    assert lock == {"unix_seconds": 1785564000, "utc_offset_seconds": 28800, "namespace": "ns", "name": "pod-a"}
    assert devshare.decode_node_lock("2026-08-01T06:00:00Z")["name"] is None
    hs = devshare.decode_handshake("Requesting_2026.08.21 08:20:39")
    assert hs == {"state": "Requesting", "dialect": "volcano", "unix_seconds": 1787300439}
    assert devshare.decode_scoring_weights("memory=3, slot=1, core=0") == {"slot": 1, "core": 0, "memory": 3}
    for bad, call in [("lock", devshare.decode_node_lock), ("Requesting_x", devshare.decode_handshake),
                      ("slot=1", devshare.decode_scoring_weights)]:
        with pytest.raises(devshare.DecodeError):
            call(bad)
