"""Cluster.plan_preemption: which lower-priority pods a pod that fits nowhere
would evict, where, and what it would take (devshare/preemption.hpp)."""
import pytest

import devshare
from devshare import testing


def running(name, node, memory, priority, started=0, labels=None):
    pod = testing.pod(name, 1, memory=memory, on=node, devices=[[testing.use(node, 0, memory)]],
                      labels=labels)
    pod["spec"]["priority"] = priority
    pod["status"]["startTime"] = f"2026-11-28T10:00:{started:02d}Z"
    return pod


def urgent(memory, priority=100, policy=None):
    pod = testing.pod("urgent", 1, memory=memory)
    pod["spec"]["priority"] = priority
    if policy:
        pod["spec"]["preemptionPolicy"] = policy
    return pod


def cluster_of(pods):
    cluster = devshare.Cluster()
    cluster.add_node(testing.node("n1", 1, memory=40000))
    cluster.add_node(testing.node("n2", 1, memory=40000))
    for pod in pods:
        cluster.add_pod(pod)
    return cluster


def test_the_least_important_lower_priority_pods_go():
    pods = [running("old", "n1", 15000, 0, started=1), running("new", "n1", 15000, 0, started=2),
            running("peer", "n1", 10000, 100), running("n2-peer", "n2", 40000, 100)]
    plan = cluster_of(pods).plan_preemption(urgent(12000), pods, now=1787300439)
    assert plan.refused == ""
    assert plan.chosen.node == "n1"
    assert [v.name for v in plan.chosen.victims] == ["new"]
    assert plan.chosen.devices["NVIDIA"][0][0].usedmem == 12000
    assert plan.unresolvable == {"n2": "1/1 CardInsufficientMemory"}  # only an equal-priority pod
    assert plan.to_dict()["candidates"][0]["victims"][0] == {
        "namespace": "default", "name": "new", "uid": "uid-new", "priority": 0,
        "violates_budget": False}


def test_a_budget_steers_the_choice_and_bad_budgets_are_named():
    pods = [running("db", "n1", 40000, 0, labels={"app": "db"}), running("batch", "n2", 40000, 10)]
    budget = {"metadata": {"namespace": "default", "name": "db"},
              "spec": {"selector": {"matchLabels": {"app": "db"}}},
              "status": {"disruptionsAllowed": 0}}
    cluster = cluster_of(pods)
    assert cluster.plan_preemption(urgent(20000), pods).chosen.node == "n1"  # lower victim
    plan = cluster.plan_preemption(urgent(20000), pods, [budget])
    assert plan.chosen.node == "n2"
    assert plan.candidates[1].budget_violations == 1
    with pytest.raises(devshare.DecodeError, match="metadata.namespace"):
        cluster.plan_preemption(urgent(20000), pods, [{"metadata": {"name": "x"}}])


def test_refusals():
    pods = [running("low", "n1", 40000, 0)]
    cluster = cluster_of(pods)
    assert cluster.plan_preemption(urgent(20000, policy="Never"), pods).refused == \
        "its preemptionPolicy is Never"
    assert cluster.plan_preemption(urgent(1000), pods).refused == "it fits on n2 without preemption"


def test_the_engine_evicts_keeps_the_slice_and_places_the_preemptor():
    engine = devshare.Engine()
    engine.node_observed(testing.node("n1", 1, memory=40000), 1787300439000)
    for pod in (running("old", "n1", 20000, 0, started=1), running("new", "n1", 20000, 0, started=2)):
        engine.pod_observed(pod)
    pod = urgent(20000)
    engine.pod_observed(pod)
    assert engine.extender_preempt(pod, {"n1": []}, 1787300439000) == {"n1": ["uid-new"]}
    commands = engine.filter(1, pod, ["n1"], 1787300439000)
    evictions = [c for c in commands if isinstance(c, devshare.EvictPod)]
    assert [c.name for c in evictions] == ["new"]
    assert [c.node for c in commands if isinstance(c, devshare.NominatePod)] == ["n1"]
    assert {c.reason for c in commands if isinstance(c, devshare.PodEvent)} == {
        "Preempted", "Preempting"}
    reply = next(c for c in commands if isinstance(c, devshare.FilterReply))
    assert reply.nodes == [] and reply.failed["n1"].startswith("preempting: evicting default/new")
    assert engine.preemptions()["uid-urgent"]["victims"] == ["default/new"]
    assert engine.api_result(evictions[0].id, True, 1787300439000) == []
    assert engine.counters.preemption_victims == 1
    engine.pod_deleted("uid-new")
    placed = engine.filter(2, pod, ["n1"], 1787300440000)
    assert [c.nodes for c in placed if isinstance(c, devshare.FilterReply)] == [["n1"]]
    assert engine.counters.preemptions_placed == 1
    with pytest.raises(devshare.DecodeError):
        engine.budget_observed({"metadata": {"name": "x"}})


def test_an_engine_without_preemption_reports_plain_failures():
    engine = devshare.Engine(preemption=False)
    engine.node_observed(testing.node("n1", 1, memory=40000), 1787300439000)
    engine.pod_observed(running("low", "n1", 40000, 0))
    commands = engine.filter(1, urgent(20000), ["n1"], 1787300439000)
    assert [type(c) for c in commands] == [devshare.FilterReply]
    assert commands[0].failed and commands[0].unresolvable == {}
