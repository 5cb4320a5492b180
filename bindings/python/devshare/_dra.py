"""Kubernetes DRA (resource.k8s.io/v1) from Python: allocation of claims on
a node as kube-scheduler's allocator or devshare's policies choose it, the
reasons device by device, CEL selectors, objects as devshare keeps them."""

from __future__ import annotations

import json
from typing import Any, Optional, Sequence

from . import _devshare
from ._args import _json


def dra_allocate(claims: Sequence[Any], node: Any, slices: Sequence[Any], classes: Sequence[Any],
                 allocated: Sequence[Any] = (), policy: str = "upstream",
                 fractional_capacity_range: bool = False) -> Optional[list[dict]]:
    """The allocation (``status.allocation`` as a dict) of each of ``claims`` on
    ``node``, or None when they do not all fit there. ``policy`` "upstream":
    as kube-scheduler v1.37's structured allocator chooses it, the first
    devices that fit in pool, slice and device order; "binpack" / "spread":
    devshare's order, the devices allocated claims use most / least first
    (whether the claims fit is the same in every policy).
    ``slices`` are every ResourceSlice of the cluster, ``classes`` the
    DeviceClasses, ``allocated`` the claims allocated already (what they hold
    is taken). Objects are dicts or JSON text as the API server serves them.
    Share IDs are derived from the claim's UID (upstream draws random ones).

    Errors: DecodeError for a malformed object, KeyError for a missing
    DeviceClass, ValueError for what upstream reports as an error (a CEL
    runtime error, "All" devices from an incomplete pool, ...),
    UnsupportedError for a selector devshare does not evaluate."""
    result = _devshare._dra_allocate([_json(c) for c in claims], _json(node),
                                     [_json(s) for s in slices], [_json(c) for c in classes],
                                     [_json(c) for c in allocated], policy,
                                     fractional_capacity_range)
    return None if result is None else [json.loads(a) for a in result]


def dra_explain(claim: Any, node: Any, slices: Sequence[Any], classes: Sequence[Any],
                allocated: Sequence[Any] = (), policy: str = "upstream",
                fractional_capacity_range: bool = False) -> dict:
    """Why ``claim`` does or does not fit ``node``, device by device: each of its
    requests (and firstAvailable alternatives) taken alone against every
    device the node sees, in the order ``policy`` tries them —
    ``{"devices": [{"device": "driver/pool/name", "request", "fits",
    "reason"}], "pools": [pools the node cannot use, and why]}``. The reasons:
    held by an allocated claim, not selected, a capacity short ("cores: needs
    50, 10 of 100 free"), a taint not tolerated, counters used up. Errors as
    ``dra_allocate``'s."""
    return _devshare._dra_explain(_json(claim), _json(node), [_json(s) for s in slices],
                                  [_json(c) for c in classes], [_json(c) for c in allocated],
                                  policy, fractional_capacity_range)


def dra_selector_matches(expression: str, slice: Any, device: str) -> bool:
    """Whether the CEL device selector ``expression`` selects the device named
    ``device`` of the ResourceSlice ``slice``, as Kubernetes evaluates it.

    Errors: DecodeError for a syntax error or a malformed slice, KeyError for
    no such device, UnsupportedError for CEL beyond what devshare evaluates,
    ValueError for a runtime error (a missing attribute, a type mismatch)."""
    return _devshare._dra_selector_matches(expression, _json(slice), device)


def dra_normalize(obj: Any) -> dict:
    """A ResourceSlice, DeviceClass, ResourceClaim or ResourceClaimTemplate (by
    its ``kind``) as devshare keeps it: decoded, with the API server's
    defaults applied, and encoded again. Raises DecodeError naming the field
    that is wrong."""
    text = _json(obj)
    kind = json.loads(text).get("kind", "") if isinstance(obj, str) else obj.get("kind", "")
    return json.loads(_devshare._dra_normalize(kind, text))


def dra_quantity_milli(text: str) -> int:
    """A Kubernetes quantity ("16Gi", "1500m", "2e3") in thousandths, exactly as
    devshare holds it; DecodeError for one finer than 1m or beyond ±9.2e15."""
    return _devshare._dra_quantity_milli(text)
