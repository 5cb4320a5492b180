"""The offline openb bound (examples/python/openb_bound.py) against brute
force: on small clusters every assignment of the pods (each to a node or to
none) is tried, and the LP's bound must be at least the best of them; the
random baseline and the clairvoyant placement, placements, at most."""
import itertools
import pathlib
import random
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parents[2] / "examples" / "python"))
openb_bound = pytest.importorskip("openb_bound")  # needs highspy (scripts/python-requirements.txt)

MODELS = ("T4", "V100M16", "V100M32")


def node(name, gpus, cpu, mem, model="T4"):
    return {"name": name, "gpus": gpus, "model": model, "cpu_milli": cpu, "memory_mib": mem}


def pod(gpus, milli=1000, cpu=0, mem=0, spec=""):
    return {"gpus": gpus, "gpu_milli": milli, "gpu_spec": spec, "cpu_milli": cpu, "memory_mib": mem}


def packs(shares, bins):
    """Whether the shares (thousandths) fit `bins` GPUs, each summing to at most 1000."""
    room = [1000] * bins

    def place(i):
        if i == len(shares):
            return True
        tried = set()
        for b in range(bins):
            if room[b] >= shares[i] and room[b] not in tried:
                tried.add(room[b])
                room[b] -= shares[i]
                if place(i + 1):
                    return True
                room[b] += shares[i]
        return False

    return place(0)


def node_holds(n, on):
    shapes = [openb_bound.shape_of(p) for p in on]
    if sum(s.cpu_milli for s in shapes) > n["cpu_milli"]:
        return False
    if sum(s.memory_mib for s in shapes) > n["memory_mib"]:
        return False
    if any(not openb_bound.allowed(s, n["model"]) for s in shapes if s.gpus):
        return False
    whole = sum(s.gpus for s in shapes if s.gpus and not s.fractional)
    if whole > n["gpus"]:
        return False
    shares = sorted((s.milli for s in shapes if s.fractional), reverse=True)
    return packs(shares, n["gpus"] - whole)


def brute_force(nodes, pods):
    """The most GPUs any assignment of any subset of `pods` allocates."""
    best = 0.0
    for choice in itertools.product(range(len(nodes) + 1), repeat=len(pods)):
        if all(node_holds(n, [p for p, c in zip(pods, choice) if c == i + 1])
               for i, n in enumerate(nodes)):
            best = max(best, sum(openb_bound.shape_of(p).asked
                                 for p, c in zip(pods, choice) if c))
    return best


def random_case(rng):
    nodes = [node(f"n{i}", rng.choice((1, 2, 2, 4)), rng.choice((8000, 16000, 32000)),
                  rng.choice((32768, 65536)), rng.choice(MODELS)) for i in range(rng.choice((2, 3)))]
    pods = []
    for _ in range(6 if len(nodes) == 3 else 7):
        gpus = rng.choice((0, 1, 1, 1, 1, 2, 4))
        milli = rng.choice((250, 300, 450, 500, 600, 700, 1000)) if gpus == 1 else 1000
        spec = rng.choice(("", "", "", "T4", "V100M16|V100M32"))
        pods.append(pod(gpus, milli, rng.choice((0, 2000, 4000, 8000, 12000)),
                        rng.choice((0, 8192, 16384, 40000)), spec))
    return nodes, pods


def test_maximal_patterns_are_the_shares_no_gpu_can_add_to():
    # 600+300 leaves 100, 3x300 leaves 100: neither takes another share; 600
    # alone or 2x300 could.
    assert sorted(openb_bound.maximal_patterns([600, 300])) == [(0, 3), (1, 1)]
    assert openb_bound.maximal_patterns([1000 // 3 + 1]) == [(2,)]


def test_shares_are_packed_per_gpu():
    # Three 0.6 shares on two GPUs: two fit, one per GPU (1.2), though their
    # sum (1.8) is below the GPUs.
    nodes = [node("n0", 2, 16000, 65536)]
    pods = [pod(1, 600)] * 3
    assert brute_force(nodes, pods) == pytest.approx(1.2)
    assert openb_bound.upper_bound(nodes, pods).gpus == pytest.approx(1.2)


def test_gpu_types_and_node_sizes_bound():
    # A V100 pod has no V100 node; a 4-GPU pod no 4-GPU node: only the T4
    # pods count.
    nodes = [node("n0", 2, 16000, 65536, "T4"), node("n1", 2, 16000, 65536, "T4")]
    pods = [pod(1, spec="V100M16"), pod(4), pod(2, spec="T4"), pod(1)]
    assert brute_force(nodes, pods) == pytest.approx(3)
    assert openb_bound.upper_bound(nodes, pods).gpus == pytest.approx(3)


def test_bound_is_at_least_brute_force_and_random_at_most():
    rng = random.Random(40)
    tight = 0
    for case in range(25):
        nodes, pods = random_case(rng)
        best = brute_force(nodes, pods)
        bound = openb_bound.upper_bound(nodes, pods).gpus
        asked = sum(openb_bound.shape_of(p).asked for p in pods)
        assert best - 1e-6 <= bound <= min(asked, sum(n["gpus"] for n in nodes)) + 1e-6, case
        assert openb_bound.random_fill(nodes, pods, case) <= best + 1e-9, case
        assert openb_bound.clairvoyant_fill(nodes, pods) <= best + 1e-9, case
        tight += bound <= best + 1e-6
    # The relaxation is exact on most of these small cases (not all: a node's
    # CPU is shared out fractionally between pods).
    assert tight >= 15


def test_openb_scenario_is_the_runs_arrivals():
    import devshare
    if not devshare._simulate._openb_dir(None):
        pytest.skip("no openb traces (../shared/data/openb)")
    run = devshare.openb_scenario("openb_pod_list_gpushare40.csv", seed=3)
    assert run == devshare.openb_scenario("openb_pod_list_gpushare40.csv", seed=3)
    capacity = sum(n["gpus"] for n in run["nodes"])
    asked = [openb_bound.shape_of(p).asked for p in run["pods"]]
    # Pods arrive, one a second, until they ask 130 % of the GPUs.
    assert sum(asked[:-1]) < 1.3 * capacity <= sum(asked)
    assert [p["arrive_ms"] for p in run["pods"][:3]] == [0, 1000, 2000]
    assert (len(run["nodes"]), capacity) == (1213, 6212)
    with pytest.raises(OSError):
        devshare.openb_scenario("no-such-list.csv")


def test_where_free_splits_whole_gpus_and_the_largest_remainder():
    # 3 whole GPUs, 10 GPUs with 0.19 free (1.9), 4 with 0.3 free (1.2), 2 with 0.05.
    free = openb_bound.where_free({50: 2, 190: 10, 300: 4, 1000: 3})
    assert free == {"whole": 3.0, "top_share": 190, "top_share_gpus": pytest.approx(1.9),
                    "other_partial": pytest.approx(1.3)}
    assert openb_bound.where_free({1000: 2}) == {"whole": 2.0, "top_share": 0, "top_share_gpus": 0.0,
                                                 "other_partial": 0.0}
    row = {"list": "default", "fgd free": free, "fgd-largest-first free": openb_bound.where_free({190: 2})}
    table = openb_bound.free_markdown([row, dict(row)]).splitlines()
    assert table[2] == "| default | as they arrive | 6.2 | 3.0 | 0.19 (2) | 1.9 | 1.3 |"
    assert table[3] == "| default | largest first | 0.4 | 0.0 | 0.19 (2) | 0.4 | 0.0 |"
