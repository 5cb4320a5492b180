"""The simulator from Python: shipped scenarios, ``simulate`` and the openb
traces' runs (the C++ simulator of lib/sim)."""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, Optional

from . import _devshare
from ._devshare import ExperimentResults


def scenarios() -> list:
    """The names of the scenarios shipped with devshare."""
    return _devshare._builtin_scenarios()


def _openb_dirs(given: Optional[str]) -> tuple:
    """The openb traces' directory as told (``given``, else $DEVSHARE_OPENB),
    which replaces a scenario's openb.dir, and the one found nearby, for a
    scenario naming none."""
    told = str(given) if given else os.environ.get("DEVSHARE_OPENB", "")
    for candidate in ("../shared/data/openb", "shared/data/openb"):
        if os.path.exists(os.path.join(candidate, "openb_node_list_gpu_node.csv")):
            return told, candidate
    return told, ""


def _openb_dir(given: Optional[str]) -> str:
    """The openb traces' directory as told, else the one found nearby ("": none)."""
    told, nearby = _openb_dirs(given)
    return told or nearby


def simulate(scenario: Any = "default", seed: Any = 0, openb: Optional[str] = None) -> ExperimentResults:
    """Runs a scenario on the simulated cluster and returns the results.

    ``scenario`` is the name of a shipped scenario (see ``scenarios()``), the
    path of a scenario file (YAML), or a dict with the same keys as a file.
    ``seed`` is a seed, a list of seeds, or None for the scenario's own.
    ``openb`` is the directory of the openb traces for scenarios that use
    them (default: $DEVSHARE_OPENB, ../shared/data/openb, shared/data/openb).

    Returns the results: ``name``, ``description`` and ``variants``, each a
    VariantResult with its ``seeds`` and one Report per seed; a report holds
    allocation_percent, gpu_free and gpu_fragmented at the end,
    fragmentation_curve (a FragmentationSample per 10 % of the GPUs asked),
    latency_p50_ms, latency_percentiles (0..100 %), api_calls by verb,
    pending and its reasons, quotas (a QuotaReport per namespace and quota
    resource, when the scenario has quotas) and quota_warnings, preemption
    (a PreemptionReport: the high-priority pods' time to bind, victims, GPU
    memory freed beyond the request, evictions that did not help, work
    lost), and the
    other figures of devshare simulate's table. As a dict (``results["variants"]``, ``to_dict()``): the JSON of
    ``devshare simulate --json``, {"name", "description", "variants":
    [{"name", "runs": [{"seed", "allocationPercent", ...}]}]}. The same seed
    gives the same results. Errors: ValueError naming the key and line."""
    base_dir = ""
    if isinstance(scenario, Mapping):
        text, what = json.dumps(scenario), "scenario"
    elif isinstance(scenario, (str, os.PathLike)) and os.path.isfile(scenario):
        with open(scenario, encoding="utf-8") as f:
            text = f.read()
        what, base_dir = str(scenario), os.path.dirname(os.fspath(scenario))
    elif isinstance(scenario, str):
        text, what = _devshare._builtin_scenario(scenario), f"scenario {scenario}"
    else:
        raise TypeError("scenario must be a shipped scenario's name, a file path or a dict")
    if seed is None:
        seeds = None
    elif isinstance(seed, int):
        seeds = [seed]
    else:
        seeds = [int(s) for s in seed]
    told, nearby = _openb_dirs(openb)
    return _devshare._run_experiment(text, what, base_dir, told, nearby, seeds)


def openb_scenario(pods: str = "openb_pod_list_default.csv", seed: int = 0, demand: float = 1.3,
                   openb: Optional[str] = None,
                   nodes: str = "openb_node_list_gpu_node.csv") -> dict:
    """The nodes and pods of one openb run: the FGD paper's experiment as
    ``simulate`` runs it (``openb: {mode: inflate}``), pods sampled with
    replacement from the pod list ``pods`` with ``seed`` until they ask
    ``demand`` times the cluster's GPUs, in arrival order.

    ``pods`` and ``nodes`` are file names in the traces' directory ``openb``
    (found as ``simulate`` finds it) or paths. Returns {"nodes": [{name, gpus,
    gpu_memory_mib, model, cpu_milli, memory_mib}], "pods": [{name, gpus,
    gpu_milli, gpu_spec, cpu_milli, memory_mib, arrive_ms}]}. Errors:
    OSError for a file that cannot be read, ValueError naming the row of one
    that cannot be mapped."""
    directory = _openb_dir(openb)
    texts = []
    for name in (nodes, pods):
        path = name if os.path.isabs(name) or not directory else os.path.join(directory, name)
        with open(path, encoding="utf-8") as f:
            texts.append(f.read())
    return _devshare._openb_scenario(texts[0], texts[1], float(demand), int(seed))
