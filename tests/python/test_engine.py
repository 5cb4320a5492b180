"""The Engine from Python (lib/engine): events in, typed commands out, as a
driver (devshare serve, the simulator) sees them."""
import json
import threading

import pytest

import devshare
from devshare import testing

T0 = 1787300439000  # 2026-08-21 08:20:39 UTC, in milliseconds
LOCK = "hami.io/mutex.lock"


def run_api_calls(engine, commands, now_ms, succeed=lambda command: True):
    """Performs every API call among `commands` (and those they lead to), as a
    driver does; returns the replies and every command seen, in order."""
    replies, seen, queue = [], [], list(commands)
    while queue:
        command = queue.pop(0)
        seen.append(command)
        if isinstance(command, (devshare.FilterReply, devshare.BindReply)):
            replies.append(command)
        else:
            queue.extend(engine.api_result(command.id, succeed(command), now_ms))
    return replies, seen


def registered_engine(make_node, **options):
    engine = devshare.Engine(**options)
    for name in ("n1", "n2"):
        assert engine.node_observed(make_node(name, 2), T0) == []  # change-only writes nothing
    return engine


def test_filter_then_bind_through_the_node_lock(make_node, make_pod):
    engine = devshare.Engine()
    n1 = make_node("n1", 2)
    n1["metadata"]["resourceVersion"] = "41"
    engine.node_observed(n1, T0)
    engine.node_observed(make_node("n2", 2), T0)
    pod = make_pod("p", mem=1000, cores=10)
    engine.pod_observed(pod)

    # Filter reserves and replies at once: kube-scheduler's cycle waits for no write.
    [reply] = engine.filter(7, pod, ["n1", "n2"], T0)
    assert reply.to_dict() == {"request": 7, "nodes": ["n1"], "failed": {}, "error": "",
                              "unresolvable": {}}
    used = {d.device.id: d.usedmem for d in engine.node_devices("n1")}
    assert sorted(used.values()) == [0, 1000]  # reserved
    cluster = devshare.Cluster()
    cluster.add_node(make_node("n1", 2))
    cluster.add_node(make_node("n2", 2))
    expected = cluster.filter(pod, now=T0 // 1000)

    # Bind takes the lock (at the version its watch saw the node free), then
    # posts the Binding, which carries the placement and the bind phase.
    replies, seen = run_api_calls(engine, engine.bind(8, "default", "p", "uid-p", "n1", T0 + 1000),
                                  T0 + 1000)
    assert [type(c).__name__ for c in seen] == ["PatchNode", "PostBinding", "BindReply"]
    lock, binding, done = seen
    assert lock.writes == [devshare.AnnotationWrite(LOCK, "2026-08-21T08:20:40Z,default,p")]
    assert lock.preconditions == [devshare.AnnotationWrite(LOCK, None)]
    assert lock.resource_version == "41"
    assert binding.annotations == {**expected.annotations, "hami.io/bind-phase": "allocating",
                                   "hami.io/bind-time": "1787300440"}
    assert replies == [done] and done.to_dict() == {"request": 8, "error": ""}
    assert {k: engine.counters.to_dict()[k] for k in ("node_patches", "pod_patches", "bindings")} == {
        "node_patches": 1, "pod_patches": 0, "bindings": 1}


def test_hami_pod_writes_patch_in_filter_and_before_the_binding(make_node, make_pod):
    engine = devshare.Engine(pod_writes="hami")
    assert not engine.ready(T0) and engine.next_wake_ms() == 0  # a pass is due at once
    engine.node_observed(make_node("n1", 2), T0)
    engine.node_observed(make_node("n2", 2), T0)
    assert engine.ready(T0) and engine.next_wake_ms() is None  # change-only: nothing periodic
    assert engine.node_names() == ["n1", "n2"]
    pod = make_pod("p", mem=1000, cores=10)
    engine.pod_observed(pod)

    # Filter reserves and patches the pod; the reply waits for the patch.
    [patch] = engine.filter(7, pod, ["n1", "n2"], T0)
    assert isinstance(patch, devshare.PatchPod)
    assert (patch.pod_namespace, patch.name) == ("default", "p")
    # The placement is the core's Filter on the same cluster.
    cluster = devshare.Cluster()
    cluster.add_node(make_node("n1", 2))
    cluster.add_node(make_node("n2", 2))
    expected = cluster.filter(pod, now=T0 // 1000)
    assert patch.annotations == expected.annotations
    assert patch.annotations["hami.io/vgpu-node"] == expected.node == "n1"
    used = {d.device.id: d.usedmem for d in engine.node_devices("n1")}
    assert sorted(used.values()) == [0, 1000]  # reserved before the reply
    [reply] = engine.api_result(patch.id, True, T0)
    assert isinstance(reply, devshare.FilterReply)
    assert reply.to_dict() == {"request": 7, "nodes": ["n1"], "failed": {}, "error": "",
                              "unresolvable": {}}

    # The watch brings the patched pod back; Bind takes the lock, marks the
    # bind phase, posts the Binding, then replies.
    pod["metadata"]["annotations"].update(patch.annotations)
    engine.pod_observed(pod)
    first = engine.bind(8, "default", "p", "uid-p", "n1", T0 + 1000)
    replies, seen = run_api_calls(engine, first, T0 + 1000)
    assert [type(c).__name__ for c in seen] == ["PatchNode", "PatchPod", "PostBinding", "BindReply"]
    lock, phase, binding, done = seen
    assert lock.node == "n1" and not lock.registration
    assert lock.writes == [devshare.AnnotationWrite(LOCK, "2026-08-21T08:20:40Z,default,p")]
    assert lock.preconditions == [devshare.AnnotationWrite(LOCK, None)]  # the lock was free
    assert phase.annotations == {"hami.io/bind-phase": "allocating", "hami.io/bind-time": "1787300440"}
    assert (binding.uid, binding.node, binding.annotations) == ("uid-p", "n1", {})
    assert replies == [done] and done.to_dict() == {"request": 8, "error": ""}
    assert len({lock.id, phase.id, binding.id, patch.id}) == 4

    assert engine.counters.to_dict() == {
        "filters": 1, "filters_refused": 0, "filters_placed": 1, "filters_unschedulable": 0,
        "binds": 1, "binds_failed": 0, "lock_contention": 0, "lock_retries": 0,
        "filters_around_locks": 0, "filters_held": 0, "filters_hold_expired": 0,
        "node_patches": 1, "pod_patches": 2, "bindings": 1,
        "registration_passes": 1, "registration_writes": 0, "nodes_dropped": 0,
        "preemptions": 0, "preemption_victims": 0, "evictions_failed": 0,
        "preemptions_placed": 0, "preemptions_abandoned": 0, "preemptions_refused": 0,
        "retries_requested": 0}
    assert engine.counters.filters_placed == 1
    assert engine.node_errors() == {} and engine.pod_errors() == {}


def test_unschedulable_and_prioritize(make_node, make_pod):
    engine = registered_engine(make_node)
    [reply] = engine.filter(1, make_pod("big", mem=9000), [], T0)
    assert reply.nodes == [] and reply.error == ""
    # No pod of lower priority to evict: no eviction helps anywhere.
    assert reply.failed == {}
    assert reply.unresolvable == {"n1": "2/2 CardInsufficientMemory",
                                  "n2": "2/2 CardInsufficientMemory"}
    assert engine.counters.filters_unschedulable == 1
    held = make_pod("held", mem=4000, cores=50, on="n2", devices=[[testing.use("n2", 0, 4000, 50)]])
    engine.pod_observed(held)
    scores = engine.prioritize(make_pod("p", mem=1000), ["n1", "n2"], T0)
    assert [s.node for s in scores] == ["n1", "n2"]
    assert {s.node: s.normalized for s in scores} == {"n1": 0.0, "n2": 100.0}  # binpack
    assert scores[1].to_dict()["normalized"] == 100.0


def test_not_ready_until_leading_and_registered(make_node, make_pod):
    engine = devshare.Engine(leadership="follow", hostname="host-1")
    assert engine.node_observed(make_node("n1", 1), T0) == []
    [refused] = engine.filter(3, make_pod("p"), ["n1"], T0)
    assert refused.error.startswith("not ready") and refused.nodes == []
    assert engine.counters.filters_refused == 1
    with pytest.raises(RuntimeError, match="not ready"):
        engine.prioritize(make_pod("p"), ["n1"], T0)
    assert engine.next_wake_ms() is None  # not leading: nothing to do
    lease = {"metadata": {"name": "kube-scheduler", "namespace": "kube-system", "resourceVersion": "1"},
             "spec": {"holderIdentity": "host-1_abc", "leaseDurationSeconds": 15}}
    assert engine.lease_observed(lease, T0) == []
    assert engine.ready(T0) and engine.node_names() == ["n1"]
    assert engine.next_wake_ms() == T0 + 15000  # when the Lease lapses unless renewed
    assert engine.tick(T0 + 15000) == []
    assert not engine.ready(T0 + 15000)
    assert engine.lease_observed(None, T0 + 16000) == []


def test_hami_registration_stamps_the_handshake_every_period(make_node):
    engine = devshare.Engine(registration="hami", register_period_ms=5000)
    [stamp] = engine.node_observed(make_node("n1", 1), T0)
    assert isinstance(stamp, devshare.PatchNode) and stamp.registration
    assert stamp.writes == [devshare.AnnotationWrite("hami.io/node-handshake", "Requesting_2026-08-21 08:20:39")]
    assert stamp.preconditions == []
    assert engine.next_wake_ms() == T0 + 5000
    assert engine.tick(T0 + 4999) == []
    [again] = engine.tick(T0 + 5000)
    assert again.writes[0].value == "Requesting_2026-08-21 08:20:44"
    assert engine.api_result(again.id, True, T0 + 5000) == []
    assert engine.counters.registration_passes == 2 and engine.counters.registration_writes == 2


def test_lock_held_by_another_pod(make_node, make_pod):
    engine = registered_engine(make_node, lock_retry="fixed", lock_retry_timeout_ms=250)
    other = make_pod("other")
    engine.pod_observed(other)  # the holder exists, so its lock is not dangling
    locked = make_node("n1", 2)
    locked["metadata"]["annotations"][LOCK] = "2026-08-21T08:20:30Z,default,other"
    engine.node_observed(locked, T0)
    pod = make_pod("p", mem=1000)
    engine.pod_observed(pod)
    [reply] = engine.filter(1, pod, ["n1"], T0)
    assert reply.nodes == ["n1"]
    assert engine.bind(2, "default", "p", "uid-p", "n1", T0) == []  # waits to retry
    assert engine.next_wake_ms() == T0 + 100
    assert engine.tick(T0 + 100) == [] and engine.next_wake_ms() == T0 + 200
    assert engine.counters.lock_retries == 2
    [failed] = engine.tick(T0 + 200)  # the next retry would pass the deadline
    assert isinstance(failed, devshare.BindReply) and failed.request == 2
    assert "waiting for node n1 to be unlocked" in failed.error
    assert engine.counters.binds_failed == 1 and engine.counters.lock_contention == 3
    assert [d.usedmem for d in engine.node_devices("n1")] == [0, 0]  # reservation released (W8)
    assert engine.next_wake_ms() is None


def test_failed_api_calls_release_what_they_held(make_node, make_pod):
    engine = registered_engine(make_node, pod_writes="hami")
    pod = make_pod("p", mem=1000)
    engine.pod_observed(pod)
    [patch] = engine.filter(1, pod, ["n1"], T0)
    [reply] = engine.api_result(patch.id, False, T0)
    assert reply.error == "patching the pod failed"
    assert [d.usedmem for d in engine.node_devices("n1")] == [0, 0]
    # Filtered again, the Binding fails: the lock is released, the phase failed.
    [patch] = engine.filter(3, pod, ["n1"], T0)
    engine.api_result(patch.id, True, T0)
    replies, seen = run_api_calls(engine, engine.bind(4, "default", "p", "uid-p", "n1", T0), T0,
                                  succeed=lambda c: not isinstance(c, devshare.PostBinding))
    assert [type(c).__name__ for c in seen] == [
        "PatchNode", "PatchPod", "PostBinding", "PatchNode", "PatchPod", "BindReply"]
    release, failed_phase = seen[3], seen[4]
    assert release.writes == [devshare.AnnotationWrite(LOCK, None)]
    assert failed_phase.annotations == {"hami.io/bind-phase": "failed"}
    assert replies[0].to_dict() == {"request": 4, "error": "binding failed"}
    assert [d.usedmem for d in engine.node_devices("n1")] == [0, 0]


def test_lock_free_binding_carries_the_assignment(make_node, make_pod):
    engine = registered_engine(make_node, bind_mode="lock-free")
    pod = make_pod("p", mem=1000)
    engine.pod_observed(pod)
    [reply] = engine.filter(1, pod, ["n2"], T0)
    assert reply.nodes == ["n2"]
    [binding] = engine.bind(2, "default", "p", "uid-p", "n2", T0)
    assert isinstance(binding, devshare.PostBinding)
    assert binding.annotations["hami.io/vgpu-node"] == "n2"
    assert (binding.annotations["hami.io/bind-phase"], binding.annotations["hami.io/bind-time"]) == (
        "allocating", str(T0 // 1000))
    [done] = engine.api_result(binding.id, True, T0)
    assert done.to_dict() == {"request": 2, "error": ""}
    assert engine.counters.to_dict()["node_patches"] == 0  # no lock


def test_errors_are_kept_and_options_checked(make_node, make_pod):
    engine = registered_engine(make_node)
    bad = make_node("n3", 1)
    bad["metadata"]["annotations"]["hami.io/node-nvidia-register"] = '[{"id":"GPU-a","devmem":"lots"}]'
    engine.node_observed(bad, T0)
    assert list(engine.node_errors()) == ["n3"] and "devmem" in engine.node_errors()["n3"]
    broken = make_pod("broken", annotations={"hami.io/vgpu-node": "n1",
                                             "hami.io/vgpu-devices-allocated": "GPU-a,NVIDIA,x,0:;"})
    engine.pod_observed(broken)
    assert list(engine.pod_errors()) == ["uid-broken"]
    engine.pod_deleted("uid-broken")
    engine.node_deleted("n3")
    assert engine.pod_errors() == {} and engine.node_errors() == {}
    with pytest.raises(devshare.DecodeError, match="metadata.name"):
        engine.node_observed({"metadata": {}}, T0)
    with pytest.raises(KeyError):
        engine.node_devices("n3")
    for option, value in (("registration", "legacy"), ("leadership", "elect"), ("bind_mode", "none"),
                          ("lock_retry", "always"), ("pod_writes", "annotations"),
                          ("register_period_ms", 0),
                          ("lock_retry_timeout_ms", -1)):
        with pytest.raises(devshare.ConfigError, match=option):
            devshare.Engine(**{option: value})
    with pytest.raises(devshare.ConfigError, match="defaultMemroy"):
        devshare.Engine({"nvidia": {"defaultMemroy": 1}})
    policy = devshare.Engine({"scheduler": {"node_policy": "best"}})
    policy.node_observed(make_node("n1", 1), T0)
    [reply] = policy.filter(1, make_pod("p"), [], T0)
    assert "unknown node policy" in reply.error


def test_commands_are_values(make_node, make_pod):
    engine = registered_engine(make_node, pod_writes="hami")
    pod = make_pod("p", mem=1000)
    [patch] = engine.filter(1, pod, ["n1"], T0)
    assert patch.to_dict() == {"id": patch.id, "pod_namespace": "default", "name": "p",
                               "annotations": patch.annotations}
    assert repr(patch).startswith(f"PatchPod(id={patch.id}, pod_namespace='default', name='p'")
    assert patch == patch and patch != patch.to_dict()  # a value, not a dict
    with pytest.raises(AttributeError):
        patch.name = "q"  # read-only
    write = devshare.AnnotationWrite("k", "v")
    assert write.to_dict() == {"key": "k", "value": "v"} and repr(write) == "AnnotationWrite(key='k', value='v')"
    assert write != devshare.AnnotationWrite("k")
    json.dumps(patch.to_dict())


def test_threads_share_one_engine(make_node, make_pod):
    engine = devshare.Engine()
    for name in ("n1", "n2"):
        engine.node_observed(make_node(name, 2, slots=50), T0)  # room for all 80 pods
    errors = []

    def place(k):
        try:
            for i in range(20):
                pod = make_pod(f"p{k}-{i}", mem=10)
                [reply] = engine.filter(k * 100 + i, pod, [], T0)
                assert reply.error == "" and reply.nodes
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=place, args=(k,), daemon=True) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads) and errors == []
    assert engine.counters.filters_placed == 80
    used = sum(d.usedmem for n in ("n1", "n2") for d in engine.node_devices(n))
    assert used == 80 * 10


def test_resource_quotas_bind_filter(make_node, make_pod):
    engine = registered_engine(make_node)
    engine.tick(T0)

    def quota(name, limit):
        return {"metadata": {"namespace": "default", "name": name, "resourceVersion": "1"},
                "spec": {"hard": {"limits.nvidia.com/gpumem": limit}}}

    engine.quota_observed(quota("team", "1500"))
    [reply] = engine.filter(1, make_pod("a", mem=1000), [], T0)
    assert reply.nodes
    engine.pod_observed(make_pod("a", mem=1000, on=reply.nodes[0],
                                 devices=[[testing.use(reply.nodes[0], 0, 1000)]]))
    assert [q.to_dict() for q in engine.quotas()] == [
        {"namespace": "default", "resource": "nvidia.com/gpumem", "limit": 1500, "used": 1000}]
    [refused] = engine.filter(2, make_pod("b", mem=1000), [], T0)
    assert refused.nodes == [] and "ResourceQuotaNotFit" in " ".join(refused.unresolvable.values())
    engine.quota_observed(quota("typo", "0.5"))  # not a whole number: recorded, "team" still binds
    assert list(engine.quota_errors()) == ["default/typo"]
    [still] = engine.filter(3, make_pod("b", mem=1000), [], T0)
    assert still.nodes == []
    engine.quota_deleted("default", "team")
    [placed] = engine.filter(4, make_pod("b", mem=1000), [], T0)
    assert placed.nodes
    with pytest.raises(devshare.DecodeError, match="metadata.namespace"):
        engine.quota_observed({"metadata": {"name": "q"}})
