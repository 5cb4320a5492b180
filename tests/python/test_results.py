"""Results are typed objects named as in C++; those that used to be dicts keep
the dict: to_dict() is the old dict, they compare equal to it, and item access,
keys(), `in` and get() read it."""
import base64
import json
import warnings

import pytest

import devshare
from devshare import testing

NOW = 1787300439


def assert_dict_compatible(result, old):
    """`result` answers as the dict `old` did, read every way a script could."""
    assert result.to_dict() == old and type(result.to_dict()) is dict
    assert result == old and old == result and not (result != old)
    assert list(result.keys()) == list(old) and list(result) == list(old) and len(result) == len(old)
    assert list(result.items()) == list(old.items()) and list(result.values()) == list(old.values())
    for key, value in old.items():
        assert key in result and result[key] == value and result.get(key) == value
    assert "no-such-key" not in result and result.get("no-such-key", 7) == 7
    with pytest.raises(KeyError):
        result["no-such-key"]
    assert dict(result) == old
    with pytest.raises(TypeError):
        hash(result)  # as the dict was


def test_node_lock():
    lock = devshare.decode_node_lock("2026-08-01T14:00:00+08:00,ns,pod-a")
    assert type(lock) is devshare.NodeLock
    assert (lock.unix_seconds, lock.utc_offset_seconds, lock.has_owner) == (1785564000, 28800, True)
    assert (lock.pod_namespace, lock.pod_name) == ("ns", "pod-a")
    assert repr(lock) == ("NodeLock(unix_seconds=1785564000, utc_offset_seconds=28800, "
                          "pod_namespace='ns', pod_name='pod-a')")
    assert_dict_compatible(lock, {"unix_seconds": 1785564000, "utc_offset_seconds": 28800,
                                  "namespace": "ns", "name": "pod-a"})
    legacy = devshare.decode_node_lock("2026-08-01T06:00:00Z")
    assert not legacy.has_owner and legacy.pod_name is None and legacy["name"] is None
    assert legacy != lock
    with pytest.raises(AttributeError):
        lock.unix_seconds = 0


def test_handshake_and_weights():
    hs = devshare.decode_handshake("Requesting_2026.08.21 08:20:39")
    assert (hs.state, hs.dialect, hs.unix_seconds) == ("Requesting", "volcano", 1787300439)
    assert repr(hs) == "Handshake(state='Requesting', dialect='volcano', unix_seconds=1787300439)"
    assert_dict_compatible(hs, {"state": "Requesting", "dialect": "volcano", "unix_seconds": 1787300439})
    other = devshare.decode_handshake("Unknown")
    assert other.state == "Other" and other.unix_seconds is None and other["unix_seconds"] is None
    assert devshare.decode_handshake("Requesting_2026-08-21 08:20:39", 3600).unix_seconds == NOW - 3600
    w = devshare.decode_scoring_weights("memory=3, slot=1, core=0")
    assert (w.slot, w.core, w.memory) == (1, 0, 3)
    assert repr(w) == "ScoringWeights(slot=1, core=0, memory=3)"
    assert_dict_compatible(w, {"slot": 1, "core": 0, "memory": 3})
    assert w == devshare.decode_scoring_weights("slot=1,core=0,memory=3")


def test_registration_steps():
    memory = {"reported": 10, "registered": "[]", "cached": True}
    node = {"handshake": "Requesting_2026-08-21 08:19:00", "registered": "[]", "allocatable": 0}
    step = devshare.hami_scheduler_pass(node, memory, NOW)
    assert type(step) is devshare.RegistrationStep
    assert (step.usable, step.refresh) == (False, False)
    assert step.write == devshare.AnnotationWrite("hami.io/node-handshake", None)
    assert step.write.key == "hami.io/node-handshake" and step.write.value is None
    assert repr(step) == ("RegistrationStep(usable=False, refresh=False, write=AnnotationWrite("
                          "key='hami.io/node-handshake', value=None))")
    assert_dict_compatible(step, {"usable": False, "refresh": False,
                                  "write": {"hami.io/node-handshake": None}})
    volcano = devshare.volcano_scheduler_pass("Requesting_2026.08.21 08:19:00", NOW,
                                              registered="GPU-0,10,16384,NVIDIA-Tesla T4,true,hami-core:")
    assert volcano.write.value == "Deleted_2026.08.21 08:20:39"
    assert_dict_compatible(volcano, {"usable": False, "refresh": False, "write": {
        "volcano.sh/node-vgpu-handshake": "Deleted_2026.08.21 08:20:39"}})
    live = devshare.change_only_scheduler_pass("[]", 8)
    assert live.write is None and live.usable and live.refresh
    assert_dict_compatible(live, {"usable": True, "refresh": True, "write": {}})
    assert live != volcano and live == devshare.change_only_scheduler_pass("[]", 8)


def test_lock_decision_and_deprecated_name():
    free = devshare.decide_lock(None, "ns", "p", NOW)
    assert type(free) is devshare.LockDecision and free.action == "set"
    value = free.write.value
    assert free.write.key == "hami.io/mutex.lock" and value.endswith(",ns,p")
    assert_dict_compatible(free, {"action": "set", "write": {"hami.io/mutex.lock": value},
                                  "reason": free.reason})
    held = devshare.decide_lock(value, "ns", "q", NOW)
    assert held.action == "check_holder" and held.write is None and held["write"] == {}
    with pytest.warns(DeprecationWarning, match="decide_lock"):
        old = devshare.decide_node_lock(value, "ns", "q", NOW, holder={"state": "gone"})
    assert old == devshare.decide_lock(value, "ns", "q", NOW, holder={"state": "gone"})
    assert old.action == "take_over"


def test_election_decision():
    elector = devshare.Elector("host-2_xyz")
    decision = elector.try_acquire_or_renew(None, "s", "kube-system", 1000)
    assert type(decision) is devshare.ElectionDecision and decision.action == "create"
    assert json.loads(decision.lease)["spec"]["holderIdentity"] == "host-2_xyz"
    assert_dict_compatible(decision, {"action": "create", "lease": decision.lease})
    assert elector.write_result(True, 1000) == "started_leading"
    other = devshare.Elector("host-3_abc")
    none = other.try_acquire_or_renew(decision.lease, "s", "kube-system", 2000)
    assert none.action == "none" and none.lease is None
    assert repr(none) == "ElectionDecision(action='none', lease=None)"


def test_fragmentation(make_node, make_pod):
    cluster = devshare.Cluster({"scheduler": {"workload": [{"weight": 1, "gpus": 1}]}})
    cluster.add_node(make_node("a", 2))
    cluster.add_node(make_node("b", 1))
    held = make_pod("held", mem=4000, cores=50, on="a", devices=[[testing.use("a", 0, 4000, 50)]])
    cluster.add_pod(held)
    f = cluster.fragmentation()
    assert type(f) is devshare.ClusterFragmentation
    assert list(f.nodes) == ["a", "b"] and type(f.nodes["a"]) is devshare.NodeFragmentation
    a = f.nodes["a"]
    assert (a.node, a.free_gpus, a.fragmented_gpus) == ("a", 1.5, 0.5)  # whole-GPU class: half of GPU-a-0 lost
    assert a.to_dict() == {"node": "a", "free_gpus": 1.5, "fragmented_gpus": 0.5}
    assert (f.free_gpus, f.fragmented_gpus) == (2.5, 0.5)
    assert repr(f) == "ClusterFragmentation(free_gpus=2.5, fragmented_gpus=0.5, nodes=2)"
    assert_dict_compatible(f, {"free_gpus": 2.5, "fragmented_gpus": 0.5, "nodes": {
        "a": {"free_gpus": 1.5, "fragmented_gpus": 0.5}, "b": {"free_gpus": 1.0, "fragmented_gpus": 0.0}}})


def test_admission_decision():
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
              "request": {"uid": "u-1", "namespace": "t", "object": {
                  "metadata": {"name": "p"},
                  "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}
    d = devshare.decide_admission(review, scheduler_name="hami-scheduler")
    assert type(d) is devshare.AdmissionDecision
    assert (d.uid, d.allowed, d.code, d.message) == ("u-1", True, 0, "")
    ops = json.loads(d.patch)
    assert {"op": "add", "path": "/spec/schedulerName", "value": "hami-scheduler"} in ops
    old = json.loads(d.to_json())
    assert json.loads(base64.b64decode(old["response"]["patch"])) == ops
    assert_dict_compatible(d, old)
    denied = devshare.decide_admission({"request": {"uid": "u-2", "object": {"spec": {"containers": []}}}})
    assert (denied.allowed, denied.message, denied.patch) == (False, "pod has no containers", "")
    assert denied["response"]["status"]["message"] == denied.message


def test_simulation_results():
    small = {"name": "tiny", "description": "two policies", "end": "3m",
             "nodes": [{"count": 2, "gpus": 2, "model": "T4"}],
             "pods": [{"name": "job", "every": "10s", "gpus": 1, "gpu_milli": 500, "duration": "1m"}],
             "variants": [{"name": "binpack", "engine": {"policy": "binpack"}},
                          {"name": "spread", "engine": {"policy": "spread"}}]}
    results = devshare.simulate(small, seed=[4, 5])
    assert type(results) is devshare.ExperimentResults
    assert (results.name, results.description) == ("tiny", "two policies")
    assert [v.name for v in results.variants] == ["binpack", "spread"]
    old = json.loads(results.to_json())  # what simulate() returned before
    assert_dict_compatible(results, old)
    for variant, old_variant in zip(results.variants, old["variants"]):
        assert variant.seeds == [4, 5] and len(variant.reports) == 2
        assert variant.to_dict() == old_variant
        for report, run in zip(variant.reports, old_variant["runs"]):
            assert report.to_dict() == {k: v for k, v in run.items() if k != "seed"}
            assert (report.pods, report.bound, report.pending) == (run["pods"], run["bound"], run["pending"])
            assert report.latency_percentiles == run["latencyPercentilesMs"]
            assert report.api_calls == run["apiCalls"] and report.api_calls["binding"] >= report.bound
            assert [s.to_dict() for s in report.fragmentation_curve] == run["fragmentationCurve"]
            assert report.fragmentation_curve[0].demand_percent == 10
            assert report.free_by_share == {c["freeMilli"]: c["devices"] for c in run["freeByShare"]}
            assert sum(m * n for m, n in report.free_by_share.items()) / 1000 == pytest.approx(report.gpu_free)
    assert results.variants[0].reports[0] == results.variants[0].reports[0]
    assert results == devshare.simulate(small, seed=[4, 5])  # the same seeds, the same results
    assert repr(results) == "ExperimentResults(name='tiny', variants=['binpack', 'spread'])"


def test_one_name_per_type_and_deprecated_aliases(make_node):
    cluster = devshare.Cluster()
    cluster.add_node(make_node("n1", 1))
    view = cluster.node_devices("n1")[0]
    assert type(view) is devshare.DeviceView and repr(view).startswith("DeviceView(id='GPU-n1-0'")
    assert view.to_dict() == {"device": view.device.to_dict(), "used": 0, "usedmem": 0, "usedcores": 0,
                              "healthy": True}
    assert view == cluster.node_devices("n1")[0]
    r = devshare.container_requests({"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}})["NVIDIA"]
    assert type(r) is devshare.ContainerRequest and repr(r).startswith("ContainerRequest(nums=1")
    for old, new in (("DeviceState", devshare.DeviceView), ("Request", devshare.ContainerRequest)):
        with pytest.warns(DeprecationWarning, match=new.__name__):
            assert getattr(devshare, old) is new
        assert old not in devshare.__all__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from devshare import DeviceView  # noqa: F401  the new names do not warn
    with pytest.raises(AttributeError):
        devshare.NoSuchName
