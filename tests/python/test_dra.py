"""Kubernetes DRA from Python: objects as dicts, the "upstream" allocation on
one node, CEL selectors, and the errors each kind of bad input raises."""

import pytest

import devshare

DRIVER = "hami-core-gpu.project-hami.io"
GI = 1024**3


def hami_gpu(minor: int, memory: int = 40 * GI) -> dict:
    """A GPU as github.com/Project-HAMi/k8s-dra-driver publishes it."""
    return {"name": f"hami-gpu-{minor}",
            "attributes": {"type": {"string": "hami-gpu"}, "minor": {"int": minor},
                           "cudaComputeCapability": {"version": "8.0.0"}},
            "capacity": {"cores": {"value": "100", "requestPolicy": {
                             "default": "100", "validRange": {"min": "0", "max": "100", "step": "1"}}},
                         "memory": {"value": str(memory), "requestPolicy": {
                             "default": str(memory),
                             "validRange": {"min": "1Mi", "max": str(memory), "step": "1Mi"}}}},
            "allowMultipleAllocations": True}


def node_slice(node: str, gpus: int) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-gpus"},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [hami_gpu(i) for i in range(gpus)]}}


CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
         "spec": {"selectors": [{"cel": {"expression":
                                         f"device.driver == '{DRIVER}' && "
                                         f"device.attributes['{DRIVER}'].type == 'hami-gpu'"}}]}}


def claim(name: str, cores: str, memory: str, selectors: tuple = ()) -> dict:
    exactly = {"deviceClassName": DRIVER, "capacity": {"requests": {"cores": cores, "memory": memory}}}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}


NODE = {"metadata": {"name": "node-a"}}


def test_shared_gpus_fill_in_device_order():
    slices = [node_slice("node-a", 2)]
    allocated = []
    chosen = []
    for i in range(5):
        c = claim(f"c{i}", "50", "20Gi")
        result = devshare.dra_allocate([c], NODE, slices, [CLASS], allocated)
        if result is None:
            chosen.append(None)
            continue
        allocation = result[0]
        device = allocation["devices"]["results"][0]
        chosen.append(device["device"])
        assert device["consumedCapacity"] == {"cores": "50", "memory": str(20 * GI)}
        assert device["shareID"]
        assert allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["node-a"]
        allocated.append({**c, "status": {"allocation": allocation}})
    assert chosen == ["hami-gpu-0", "hami-gpu-0", "hami-gpu-1", "hami-gpu-1", None]


def test_the_same_input_gives_the_same_share_ids():
    args = ([claim("c", "10", "1Gi")], NODE, [node_slice("node-a", 1)], [CLASS])
    assert devshare.dra_allocate(*args) == devshare.dra_allocate(*args)


def test_claim_selectors_and_errors():
    slices = [node_slice("node-a", 2)]
    pick_one = claim("c", "10", "1Gi", (f"device.attributes['{DRIVER}'].minor == 1",))
    result = devshare.dra_allocate([pick_one], NODE, slices, [CLASS])
    assert result[0]["devices"]["results"][0]["device"] == "hami-gpu-1"
    with pytest.raises(KeyError, match="could not retrieve device class"):
        devshare.dra_allocate([pick_one], NODE, slices, [])
    missing = claim("c", "10", "1Gi", (f"device.attributes['{DRIVER}'].vendor == 'x'",))
    with pytest.raises(ValueError, match="CEL runtime error"):
        devshare.dra_allocate([missing], NODE, slices, [CLASS])
    with pytest.raises(devshare.DecodeError, match="spec.devices.requests"):
        devshare.dra_allocate([{"metadata": {"name": "c"}, "spec": {"devices": {
            "requests": [{"name": "gpu"}]}}}], NODE, slices, [CLASS])


def test_selector_matches_as_kubernetes_evaluates():
    s = node_slice("node-a", 1)
    assert devshare.dra_selector_matches(CLASS["spec"]["selectors"][0]["cel"]["expression"], s, "hami-gpu-0")
    assert devshare.dra_selector_matches(
        f"device.capacity['{DRIVER}'].memory.compareTo(quantity('32Gi')) >= 0", s, "hami-gpu-0")
    assert not devshare.dra_selector_matches(
        f"device.attributes['{DRIVER}'].cudaComputeCapability.isGreaterThan(semver('9.0.0'))", s,
        "hami-gpu-0")
    with pytest.raises(devshare.DecodeError):
        devshare.dra_selector_matches("device.driver ==", s, "hami-gpu-0")
    with pytest.raises(KeyError):
        devshare.dra_selector_matches("true", s, "hami-gpu-9")


def test_quantities_are_exact_thousandths():
    assert devshare.dra_quantity_milli("16Gi") == 16 * GI * 1000
    assert devshare.dra_quantity_milli("1500m") == 1500
    with pytest.raises(devshare.DecodeError):
        devshare.dra_quantity_milli("1n")


def test_normalize_applies_the_api_servers_defaults():
    c = devshare.dra_normalize({"kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "n"},
                                "spec": {"devices": {"requests": [
                                    {"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}}})
    assert c["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"] == "ExactCount"
    assert c["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1
    with pytest.raises(ValueError, match="kind must be"):
        devshare.dra_normalize({"kind": "Pod", "metadata": {"name": "p"}})


def test_binpack_fills_the_used_gpu_first():
    slices = [node_slice("node-a", 2)]
    first = claim("first", "10", "1Gi", (f"device.attributes['{DRIVER}'].minor == 1",))
    held = [{**first, "status": {"allocation": devshare.dra_allocate(
        [first], NODE, slices, [CLASS])[0]}}]
    c = claim("c", "10", "1Gi")
    pick = {policy: devshare.dra_allocate([c], NODE, slices, [CLASS], held, policy)[0]
            ["devices"]["results"][0]["device"] for policy in ("upstream", "binpack", "spread")}
    assert pick == {"upstream": "hami-gpu-0", "binpack": "hami-gpu-1", "spread": "hami-gpu-0"}
    with pytest.raises(ValueError, match="policy must be"):
        devshare.dra_allocate([c], NODE, slices, [CLASS], held, "fgd")


def test_explain_names_the_capacity_short():
    slices = [node_slice("node-a", 2)]
    big = claim("big", "90", "1Gi", (f"device.attributes['{DRIVER}'].minor == 0",))
    held = [{**big, "status": {"allocation": devshare.dra_allocate([big], NODE, slices, [CLASS])[0]}}]
    e = devshare.dra_explain(claim("c", "50", "1Gi"), NODE, slices, [CLASS], held)
    assert e["pools"] == []
    assert [(d["device"].rsplit("/", 1)[1], d["fits"], d["reason"]) for d in e["devices"]] == [
        ("hami-gpu-0", False, "cores: needs 50, 10 of 100 free"), ("hami-gpu-1", True, "")]


def dra_cluster(workload=None) -> devshare.Cluster:
    cluster = devshare.Cluster({"scheduler": {"workload": workload}} if workload else None)
    cluster.add_device_class(CLASS)
    for name in ("node-a", "node-b"):
        cluster.add_node({"metadata": {"name": name},
                          "status": {"allocatable": {"cpu": "8", "memory": "64Gi"}}})
        cluster.add_resource_slice(node_slice(name, 2))
    return cluster


def place_and_hold(cluster: devshare.Cluster, c: dict, policy: str) -> str:
    placed = cluster.dra_place([c], policy=policy)
    assert placed is not None
    held = dict(c, status={"allocation": placed["allocations"][0]})
    cluster.add_resource_claim(held)
    return f"{placed['node']}/{placed['allocations'][0]['devices']['results'][0]['device']}"


def test_cluster_places_claims_by_policy_and_holds_them():
    packed, spread = dra_cluster(), dra_cluster()
    packed_at = [place_and_hold(packed, claim(f"c{i}", "30", "4Gi"), "binpack") for i in range(4)]
    spread_at = [place_and_hold(spread, claim(f"c{i}", "30", "4Gi"), "spread") for i in range(4)]
    assert packed_at == ["node-a/hami-gpu-0"] * 3 + ["node-a/hami-gpu-1"]
    assert spread_at == ["node-a/hami-gpu-0", "node-b/hami-gpu-0",
                         "node-a/hami-gpu-1", "node-b/hami-gpu-1"]
    # Removing the claims frees their shares: the next one opens gpu-0 again.
    for i in range(4):
        assert packed.remove_resource_claim("default", f"c{i}")
    assert not packed.remove_resource_claim("default", "c0")
    assert place_and_hold(packed, claim("again", "90", "4Gi"), "binpack") == "node-a/hami-gpu-0"


def test_cluster_fgd_keeps_whole_gpus_and_measures_fragmentation():
    cluster = dra_cluster([{"weight": 1, "gpus": 1}, {"weight": 1, "gpu_milli": 400}])
    place_and_hold(cluster, claim("first", "60", "4Gi"), "fgd")
    before = cluster.dra_fragmentation()
    assert before.free_gpus == pytest.approx(3.4, abs=1e-6)
    assert place_and_hold(cluster, claim("second", "40", "4Gi"), "fgd") == "node-a/hami-gpu-0"
    assert cluster.dra_fragmentation().fragmented_gpus < before.fragmented_gpus
    assert cluster.dra_place([claim("big", "10", "4Gi")], cpu_milli=9000) is None
    with pytest.raises(ValueError, match="binpack, spread or fgd"):
        cluster.dra_place([claim("x", "10", "1Gi")], policy="upstream")
