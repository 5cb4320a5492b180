"""Requests, the cluster snapshot and Filter from Python (spec §3.3, §4, §5)."""
import json
import pathlib

import pytest

import devshare
from devshare import testing


def test_container_requests_follow_hamis_rules():
    r = devshare.container_requests({"name": "c", "resources": {"limits": {"nvidia.com/gpu": 2, "nvidia.com/gpumem": "3000"}}})
    assert r["NVIDIA"] == r["NVIDIA"]
    assert (r["NVIDIA"].nums, r["NVIDIA"].memreq, r["NVIDIA"].mem_percentage, r["NVIDIA"].coresreq) == (2, 3000, 101, 0)
    assert devshare.container_requests({"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1, "nvidia.com/gpumem": "16Gi"}}}) == {}
    only_count = devshare.container_requests({"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}})
    assert only_count["NVIDIA"].to_dict() == {"nums": 1, "memreq": 0, "mem_percentage": 100, "coresreq": 0}


def test_config_as_yaml_or_dict():
    yaml = "nvidia:\n  resourceCountName: example.com/gpu\n  defaultMemory: 2048\n"
    r = devshare.container_requests({"name": "c", "resources": {"limits": {"example.com/gpu": 1}}}, config=yaml)
    assert r["NVIDIA"].memreq == 2048
    r = devshare.container_requests({"name": "c", "resources": {"limits": {"example.com/gpu": 1}}},
                                    config={"nvidia": {"resourceCountName": "example.com/gpu"}})
    assert r["NVIDIA"].nums == 1
    with pytest.raises(devshare.ConfigError, match="defaultMemroy"):
        devshare.Cluster({"nvidia": {"defaultMemroy": 1}})


def test_filter_binpack_and_spread(make_node, make_pod):
    cluster = devshare.Cluster()
    cluster.add_node(make_node("node1", 2))
    cluster.add_node(make_node("node2", 2))
    # node2 more loaded: binpack prefers it, spread the other.
    held = make_pod("held", mem=6000, cores=75, on="node2", devices=[[testing.use("node2", 0, 6000, 75)]])
    cluster.add_pod(held)
    r = cluster.filter(make_pod("p", mem=1000, cores=10), now=1787300439)
    assert r.node == "node2"
    assert set(r.scores) == {"node1", "node2"}
    assert r.annotations["hami.io/vgpu-node"] == "node2"
    assert r.annotations["hami.io/vgpu-time"] == "1787300439"
    assert r.devices["NVIDIA"][0][0].uuid.startswith("GPU-node2-")
    spread = devshare.Cluster({"scheduler": {"node_policy": "spread"}})
    spread.add_node(make_node("node1", 2))
    spread.add_node(make_node("node2", 2))
    spread.add_pod(held)
    assert spread.filter(make_pod("p", mem=1000, cores=10)).node == "node1"


def test_rejections_carry_hamis_reasons(make_node, make_pod):
    cluster = devshare.Cluster()
    cluster.add_node(make_node("n1", 2, mem=4000))
    r = cluster.filter(make_pod("big", mem=9000))
    assert r.node is None
    assert r.failed == {"n1": "2/2 CardInsufficientMemory"}
    r = cluster.filter(make_pod("many", gpus=3, mem=100), nodes=["n1", "ghost"])
    assert r.failed == {"n1": "NodeInsufficientDevice", "ghost": "node unregistered"}


def test_pod_lifecycle_restores_usage(make_node, make_pod):
    cluster = devshare.Cluster()
    cluster.add_node(make_node("n1", 1))
    p = make_pod("p", mem=3000, cores=30)
    result = cluster.filter(p, now=1)
    p["metadata"]["annotations"].update(result.annotations)
    cluster.add_pod(p)
    state = cluster.node_devices("n1")[0]
    assert (state.used, state.usedmem, state.usedcores) == (1, 3000, 30)
    assert cluster.remove_pod("default", "p")
    assert not cluster.remove_pod("default", "p")
    state = cluster.node_devices("n1")[0]
    assert (state.used, state.usedmem, state.usedcores) == (0, 0, 0)
    with pytest.raises(KeyError):
        cluster.node_devices("ghost")
    assert cluster.remove_node("n1") and not cluster.remove_node("n1")


def test_update_node_and_quota(make_node, make_pod):
    cluster = devshare.Cluster()
    cluster.add_node(make_node("n1", 1))
    cluster.update_node(make_node("n1", 2))
    assert len(cluster.node_devices("n1")) == 2
    cluster.set_quota("default", "q", {"limits.nvidia.com/gpumem": "2000"})
    assert cluster.filter(make_pod("p", mem=3000)).failed == {"n1": "2/2 ResourceQuotaNotFit"}
    assert cluster.filter(make_pod("p2", mem=1000)).node == "n1"
    # A limit that is not a whole number limits nothing, and says so; the tighter quota holds.
    with pytest.raises(devshare.DecodeError, match=r'limits.nvidia.com/gpumem is "1.5", not a whole number'):
        cluster.set_quota("default", "typo", {"limits.nvidia.com/gpumem": "1.5"})
    assert cluster.filter(make_pod("p", mem=3000)).failed == {"n1": "2/2 ResourceQuotaNotFit"}


def test_bad_inputs_raise(make_node, make_pod):
    cluster = devshare.Cluster()
    with pytest.raises(devshare.DecodeError, match="metadata.name"):
        cluster.add_node({"metadata": {}})
    with pytest.raises(devshare.DecodeError):
        cluster.add_pod({"spec": {"containers": "nope"}})
    bad = make_pod("p", annotations={"hami.io/device-scoring-weights": "slot=1"})
    cluster.add_node(make_node("n1", 1))
    with pytest.raises(devshare.DecodeError, match="device-scoring-weights"):
        cluster.filter(bad)
    with pytest.raises(ValueError, match="unknown node policy"):
        devshare.Cluster({"scheduler": {"node_policy": "best"}}).filter(make_pod("q"))


def test_fgd_counts_cpu_and_memory(make_node, make_pod):
    cluster = devshare.Cluster({"scheduler": {"node_policy": "fgd", "gpu_policy": "fgd", "workload": [
        {"weight": 1, "gpus": 1, "cpu_milli": 4000, "memory_mib": 1024}]}})
    for name, cpu in (("node1", "8"), ("node2", "16")):
        node = make_node(name, 2)
        node["status"]["allocatable"].update({"cpu": cpu, "memory": "64Gi"})
        cluster.add_node(node)
    gpu_pod = make_pod("p", cores=100, pct=100)
    gpu_pod["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "5", "memory": "1Gi"}
    # On node1, 3 cores would be left: too few for the class, its other GPU stranded.
    assert cluster.filter(gpu_pod).node == "node2"
    # A pod without devices bound to node2 takes the cores that made the difference.
    cpu_pod = {"metadata": {"name": "cpu", "namespace": "default", "uid": "uid-cpu"},
               "spec": {"nodeName": "node2",
                        "containers": [{"name": "c", "resources": {"requests": {"cpu": "9"}}}]},
               "status": {"phase": "Running"}}
    cluster.add_pod(cpu_pod)
    assert cluster.filter(gpu_pod).node == "node1"
    assert cluster.remove_pod("default", "cpu")
    assert cluster.filter(gpu_pod).node == "node2"
    # Fragmentation for the same class: node2's 9 cores taken leave 7, still
    # enough; 13 taken would strand both of its GPUs.
    assert cluster.fragmentation() == {"free_gpus": 4.0, "fragmented_gpus": 0.0, "nodes": {
        "node1": {"free_gpus": 2.0, "fragmented_gpus": 0.0}, "node2": {"free_gpus": 2.0, "fragmented_gpus": 0.0}}}
    cpu_pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "13"
    cluster.add_pod(cpu_pod)
    frag = cluster.fragmentation()
    assert (frag["free_gpus"], frag["fragmented_gpus"]) == (4.0, 2.0)
    assert frag["nodes"]["node2"] == {"free_gpus": 2.0, "fragmented_gpus": 2.0}


def test_simulate_is_deterministic_and_compares_policies():
    small = {
        "name": "tiny", "end": "5m",
        "nodes": [{"count": 4, "gpus": 2, "model": "T4", "cpu": 32000, "memory": 131072}],
        "pods": [{"name": "job", "every": "5s", "gpus": 1, "gpu_milli": 500, "duration": "2m"}],
        "scheduler": {"retry_unschedulable": True},
        "variants": [{"name": "binpack", "engine": {"policy": "binpack"}},
                     {"name": "spread", "engine": {"policy": "spread"}}],
    }
    a = devshare.simulate(small, seed=3)
    assert a == devshare.simulate(small, seed=3)
    assert [v["name"] for v in a["variants"]] == ["binpack", "spread"]
    run = a["variants"][0]["runs"][0]
    assert run["seed"] == 3
    assert run["bound"] + run["pending"] == run["pods"] > 0
    assert len(run["latencyPercentilesMs"]) == 101
    assert 0 < run["allocationMeanPercent"] <= 100
    assert run["apiCalls"]["binding"] >= run["bound"]
    assert 0 <= run["gpuFragmented"] <= run["gpuFree"] <= run["gpuCapacity"]
    assert [p["demandPercent"] for p in run["fragmentationCurve"]][:3] == [10, 20, 30]
    two = devshare.simulate(small, seed=[1, 2])
    assert [r["seed"] for r in two["variants"][1]["runs"]] == [1, 2]


def test_simulate_runs_shipped_scenarios_and_files(tmp_path):
    assert {"default", "handshake-storm", "lock-storm", "failover", "openb"} <= set(devshare.scenarios())
    storm = devshare.simulate("lock-storm")
    by_name = {v["name"]: v["runs"][0] for v in storm["variants"]}
    assert by_name["lock-free"]["lockContention"] == 0
    assert by_name["fixed-100ms"]["lockRetries"] > by_name["backoff-jitter"]["lockRetries"]
    path = tmp_path / "one.yaml"
    path.write_text("nodes:\n  - {count: 2, gpus: 1}\npods:\n  - {count: 3, gpus: 1}\n")
    run = devshare.simulate(str(path))["variants"][0]["runs"][0]
    assert (run["bound"], run["pending"]) == (2, 1)
    path.write_text("nodes:\n  - {count: 2, gpus: 1}\nengine: {policy: best}\n")
    with pytest.raises(devshare.ConfigError, match=r"engine.policy: 'best' is not one of .*line 3"):
        devshare.simulate(str(path))
    with pytest.raises(KeyError, match="no scenario named"):
        devshare.simulate("best")


def test_simulate_keeps_teams_within_their_quotas():
    path = pathlib.Path(__file__).parents[2] / "examples" / "scenarios" / "quota-teams.yaml"
    report = devshare.simulate(str(path)).variants[0].reports[0]
    rows = {(q.namespace, q.resource): q for q in report.quotas}
    assert all(q.peak_used <= q.limit for q in report.quotas)
    team_a = rows[("team-a", "nvidia.com/gpumem")]
    assert (team_a.limit, team_a.peak_used) == (65536, 65536)
    assert team_a.pending == team_a.pending_quota == 8
    team_b = rows[("team-b", "nvidia.com/gpumem")]
    assert (team_b.bound, team_b.pending) == (16, 0)
    assert team_a.to_dict() == report.to_dict()["quotas"][0]
    assert report.quota_warnings == []
    half = {"nodes": [{"count": 1, "gpus": 2}], "pods": [{"namespace": "a", "count": 1}],
            "quotas": [{"namespace": "a", "hard": {"limits.nvidia.com/gpumem": "1.5"}}]}
    ignored = devshare.simulate(half).variants[0].reports[0]
    assert ignored.bound == 1 and "limits.nvidia.com/gpumem is \"1.5\"" in ignored.quota_warnings[0]
    with pytest.raises(devshare.ConfigError, match=r"quotas\[0\]\.namespace: required"):
        devshare.simulate({"nodes": [{"count": 1}], "quotas": [{"hard": {}}]})


def test_hami_exact_rows_follow_hamis_device_score(make_pod):
    # Model-named GPUs of 16384 and 4096 MiB, spread: devshare counts the
    # request's 2048 MiB and takes the big one; HAMi (W2) scores both 0 and
    # takes the last registered.
    devices = [devshare.Device(f"n1-gpu{i}", index=i, count=10, devmem=mem, devcore=100,
                               type="NVIDIA A100-SXM4-40GB", health=True, mode="hami-core")
               for i, mem in enumerate([16384, 4096])]
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "annotations": {
                "hami.io/node-nvidia-register": devshare.encode_node_devices(devices)}},
            "status": {"allocatable": {"nvidia.com/gpu": "20"}}}

    def choice(hami_exact):
        cluster = devshare.Cluster({"scheduler": {"hami_exact": hami_exact}})
        cluster.add_node(node)
        return cluster.filter(make_pod("p", mem=2048, cores=0)).devices["NVIDIA"][0][0].uuid

    assert choice("none") == "n1-gpu0"
    assert choice("W2") == "n1-gpu1"
    assert choice(["W1", "W2"]) == "n1-gpu1"
    assert choice("all") == "n1-gpu1"
    with pytest.raises(ValueError, match='unknown row "W9"'):
        devshare.Cluster({"scheduler": {"hami_exact": "W9"}})


def test_volcano_config_reads_and_writes_volcanos_annotations():
    cluster = devshare.Cluster({"volcano": {}, "scheduler": {"node_policy": "volcano", "gpu_policy": "volcano-binpack"}})
    register = "".join(f"GPU-{i},10,16384,NVIDIA-Tesla T4,true,hami-core:" for i in range(2))
    cluster.add_node({"metadata": {"name": "n1", "annotations": {"volcano.sh/node-vgpu-register": register}}})
    cluster.add_pod({"metadata": {"name": "held", "namespace": "default", "uid": "held",
                                  "annotations": {"volcano.sh/vgpu-node": "n1",
                                                  "volcano.sh/vgpu-ids-new": "GPU-1,NVIDIA,4096,0:"}},
                     "spec": {"nodeName": "n1", "containers": [{"name": "c"}]}, "status": {"phase": "Running"}})
    pod = {"metadata": {"name": "p", "namespace": "default", "uid": "p"},
           "spec": {"containers": [{"name": "c", "resources": {"limits": {
               "volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": "4096"}}}]}}
    r = cluster.filter(pod, now=7)
    assert r.node == "n1"
    # binpack: the device with the most memory used; score 100 x 8192/16384 after the pick.
    assert r.annotations["volcano.sh/vgpu-ids-new"] == "GPU-1,NVIDIA,4096,0:"
    assert r.annotations["volcano.sh/vgpu-node"] == "n1"
    assert r.scores == {"n1": 50.0}
    assert devshare.encode_pod_devices([[devshare.ContainerDevice("GPU-1", "NVIDIA", 1, 2)], []], "volcano") == \
        "GPU-1,NVIDIA,1,2:;"
    with pytest.raises(ValueError, match="cannot be configured beside"):
        devshare.Cluster({"volcano": {}, "nvidia": {"deviceSplitCount": 10}})


def test_normalized_scores_prefer_what_the_policy_prefers():
    for policy, best in (("binpack", "loaded"), ("spread", "empty")):
        cluster = devshare.Cluster({"scheduler": {"node_policy": policy}})
        for name in ("empty", "loaded"):
            devices = [{"id": f"GPU-{name}", "index": 0, "count": 10, "devmem": 8000, "devcore": 100,
                        "type": "NVIDIA", "numa": 0, "mode": "hami-core", "health": True}]
            cluster.add_node({"metadata": {"name": name, "annotations": {
                "hami.io/node-nvidia-register": json.dumps(devices)}}})
        cluster.add_pod({"metadata": {"name": "held", "namespace": "default", "uid": "held",
                                      "annotations": {"hami.io/vgpu-node": "loaded",
                                                      "hami.io/vgpu-devices-allocated": "GPU-loaded,NVIDIA,4000,50:;"}},
                         "spec": {"nodeName": "loaded", "containers": [{"name": "c"}]}, "status": {"phase": "Running"}})
        r = cluster.filter({"metadata": {"name": "p", "namespace": "default", "uid": "p"},
                            "spec": {"containers": [{"name": "c", "resources": {"limits": {
                                "nvidia.com/gpu": "1", "nvidia.com/gpumem": "1000"}}}]}})
        assert r.node == best
        assert r.normalized_scores[best] == 100
        assert min(r.normalized_scores.values()) == 0


def test_simulate_preemption_binds_the_inference_pods():
    results = devshare.simulate("preemption")
    by_name = {v.name: v.reports[0].preemption for v in results.variants}
    hami = by_name["hami-v2.10"]
    assert hami.preemptions == 0 and hami.high_priority_bound == 0
    for policy in ("binpack", "spread", "fgd"):
        p = by_name[policy]
        assert p.high_priority_bound == p.high_priority_pods == 60
        assert p.preemptions > 0 and p.victims >= p.preemptions
        assert p.evicted_not_helped == 0
        assert p.work_lost_gpu_seconds > 0
    assert by_name["fgd"].to_dict() == results.to_dict()["variants"][3]["runs"][0]["preemption"]
    with pytest.raises(devshare.ConfigError, match=r"pods\[0\]\.priority_class: no PriorityClass"):
        devshare.simulate({"nodes": [{"count": 1}], "pods": [{"priority_class": "gold"}]})
