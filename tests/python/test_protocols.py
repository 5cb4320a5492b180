"""Protocol state machines from Python (spec §6, §7, §8, §3)."""
import base64
import json

import devshare

NOW = 1787300439


def test_hami_handshake_w4_does_not_flap():
    memory = {"reported": 10, "registered": "[]", "cached": True}
    node = {"handshake": "Requesting_2026-08-21 08:19:00", "registered": "[]", "allocatable": 0}
    first = devshare.hami_scheduler_pass(node, memory, NOW)
    assert first == {"usable": False, "refresh": False, "write": {"hami.io/node-handshake": None}}
    node["handshake"] = None
    for t in range(NOW, NOW + 300, 15):
        step = devshare.hami_scheduler_pass(node, memory, t)
        assert not step["usable"] and step["write"] == {}
    node["allocatable"] = 10
    back = devshare.hami_scheduler_pass(node, memory, NOW + 400)
    assert back["usable"] and back["refresh"]
    assert back["write"]["hami.io/node-handshake"].startswith("Requesting_")


def test_volcano_and_change_only():
    step = devshare.volcano_scheduler_pass("Requesting_2026.08.21 08:19:00", NOW,
                                           registered="GPU-0,10,16384,NVIDIA-Tesla T4,true,hami-core:")
    assert step["write"] == {"volcano.sh/node-vgpu-handshake": "Deleted_2026.08.21 08:20:39"}
    assert devshare.change_only_scheduler_pass("[]", 8) == {"usable": True, "refresh": True, "write": {}}
    assert not devshare.change_only_scheduler_pass("[]", 0)["usable"]
    # Without a register annotation Volcano writes nothing.
    assert devshare.volcano_scheduler_pass("Reported", NOW) == {"usable": False, "refresh": False,
                                                                "write": {}}


def test_volcano_lock():
    free = devshare.decide_volcano_lock(None, NOW)
    assert free["acquired"] and free["write"] == {"hamivgpu": "2026-08-21T08:20:39Z"}
    assert not devshare.decide_volcano_lock("2026-08-21T08:20:00Z", NOW)["acquired"]
    sighting: dict = {}
    assert not devshare.decide_volcano_lock("locked", NOW, sighting)["acquired"]
    assert devshare.decide_volcano_lock("locked", NOW + 301, sighting)["acquired"]
    assert not devshare.decide_volcano_lock("locked", NOW + 301, sighting, unreadable_expires=False)["acquired"]


def test_lease_follower_and_elector():
    lease = json.dumps({"metadata": {"name": "s", "namespace": "kube-system", "resourceVersion": "1"},
                        "spec": {"holderIdentity": "host-1_abc", "leaseDurationSeconds": 15}})
    follower = devshare.LeaseFollower("host-1")
    assert follower.observe(lease, 1000) == "started_leading"
    assert not follower.filter_allowed(1000)
    follower.registration_done(1001)
    assert follower.filter_allowed(1001)
    assert follower.tick(16001) == "stopped_leading"
    other = devshare.LeaseFollower("host-10")
    assert other.observe(lease, 1000) == "none"  # W9: no prefix match

    elector = devshare.Elector("host-2_xyz")
    decision = elector.try_acquire_or_renew(None, "s", "kube-system", 1000)
    assert decision["action"] == "create"
    assert json.loads(decision["lease"])["spec"]["holderIdentity"] == "host-2_xyz"
    assert elector.write_result(True, 1000) == "started_leading" and elector.leading
    assert devshare.backoff_delay_ms(0, 0.0) == 100.0 and devshare.backoff_delay_ms(4, 0.5) is None


def test_node_lock():
    free = devshare.decide_lock(None, "ns", "p", NOW)
    assert free["action"] == "set"
    value = free["write"]["hami.io/mutex.lock"]
    assert value.endswith(",ns,p")
    assert devshare.decide_lock(value, "ns", "p", NOW)["action"] == "reentrant"
    assert devshare.decide_lock(value, "ns", "q", NOW)["action"] == "check_holder"
    assert devshare.decide_lock(value, "ns", "q", NOW, holder={"state": "gone"})["action"] == "take_over"
    sighting = {}
    assert devshare.decide_lock("lock", "ns", "q", NOW, sighting=sighting)["action"] == "held"
    assert devshare.decide_lock("lock", "ns", "q", NOW + 301, sighting=sighting)["action"] == "take_over"


def test_admission_patch_applies():
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
              "request": {"uid": "u-1", "namespace": "t", "object": {
                  "metadata": {"name": "p"},
                  "spec": {"schedulerName": "default-scheduler",
                           "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}
    out = devshare.decide_admission(review, scheduler_name="hami-scheduler")
    response = out["response"]
    assert response["uid"] == "u-1" and response["allowed"]
    ops = json.loads(base64.b64decode(response["patch"]))
    assert {"op": "add", "path": "/spec/containers/0/resources/limits/nvidia.com~1gpucores", "value": "100"} in ops
    assert {"op": "add", "path": "/spec/schedulerName", "value": "hami-scheduler"} in ops
    denied = devshare.decide_admission(json.dumps({"request": {"uid": "u-2", "object": {"spec": {"containers": []}}}}))
    assert denied["response"]["allowed"] is False
    assert denied["response"]["status"]["message"] == "pod has no containers"
