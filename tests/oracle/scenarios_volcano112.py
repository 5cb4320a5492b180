"""Seeded scenarios for the Volcano 1.12 oracle (volcano112/, compare_volcano112.py):
handshake sequences on volcano.sh/node-vgpu-handshake and the `hamivgpu` node lock.

Volcano reads the real clock, so a scenario gives ages, not times: the harness
renders each stamp as "now - age" when it calls Volcano (see volcano112/main.go).
Virtual times are multiples of 7 s, and a sequence spans at most 6 x 602 s, so no
stamp is ever read within 2 s of the 60 s expiry (56 and 63 s are the nearest ages),
in any of the zones below either (whole or half hours). Lock ages keep 10 s away
from the 5-minute expiry. The same seed always gives the same scenarios.
"""

from __future__ import annotations

import random

from scenarios import MEMORIES, SLOTS, TYPES

# Seconds east of UTC of the process Volcano runs in (its time.Local).
ZONES = [-8 * 3600, -5 * 3600, 3600, 5 * 3600 + 1800, 8 * 3600, 9 * 3600]
STEP_DT = [0, 7, 14, 28, 35, 49, 56, 63, 70, 91, 119, 602]
STAMP_AGES = [-28, -7, 0, 7, 28, 35, 56, 63, 91, 602]

# Values written by hand or by other programs, including what Go's time.Parse
# and Volcano's split on '_' make of unusual ones.
RAW_HANDSHAKES = [
    "", "Reported", "Unknown", "Requesting", "Requesting_", "Deleted", "Deleted_",
    "Requesting_2020.01.01 00:00:00", "Requesting_2099.01.01 00:00:00",
    "Requesting_2099.01.01 00:00:00_x", "Requesting_2099.01.01 00:00:00.5",
    "Requesting_2099.01.01 9:00:00", "Requesting_2099-01-01 00:00:00",
    "requesting_2099.01.01 00:00:00", "Requesting_2099.02.30 00:00:00",
    "Requesting_2099.01.01 24:00:00", "Requesting_2099.1.01 00:00:00",
    "xRequesting_2099.01.01 00:00:00", "Requesting_Deleted_2099.01.01 00:00:00",
    "Deleted_Requesting", "Reported_2099.01.01 00:00:00", "Requesting_2099.01.01 00:00:00 ",
    " Requesting_2099.01.01 00:00:00", "Requesting_0000.01.01 00:00:00",
    "Reported 2026-05-25 07:58:20.213111834 +0000 UTC",
]


def _register(rng: random.Random, sid: int, step: int) -> str:
    """A volcano.sh/node-vgpu-register value as Volcano's device plugin writes
    it (1-4 GPUs, some unhealthy), and in one of five a value Volcano or
    devshare reads otherwise (no device, no ':', a field missing or extra, a
    number that does not parse)."""
    r = rng.random()
    if r < 0.05:
        return rng.choice(["", ":", "::", "GPU-0,10,16384,NVIDIA-Tesla T4,true,hami-core"])
    parts = []
    for i in range(rng.randint(1, 4)):
        fields = [f"GPU-{sid}-{step}-{i}", str(rng.choice(SLOTS)), str(rng.choice(MEMORIES)),
                  rng.choice(TYPES), rng.choice(["true", "true", "true", "false"]),
                  rng.choice(["hami-core", "hami-core", "mps"])]
        if r > 0.85:
            k = rng.randrange(3)
            if k == 0:
                fields = fields[:rng.randint(1, 5)]
            elif k == 1:
                fields.append("extra")
            else:
                fields[rng.choice([1, 2, 4])] = rng.choice(["x", "-1", "1.5", "True"])
        parts.append(",".join(fields) + ":")
    return "".join(parts)


def _handshake(rng: random.Random) -> dict:
    r = rng.random()
    if r < 0.3:
        return {"kind": "reported", "age": rng.choice([0, 7, 28])}
    if r < 0.55:
        return {"kind": "requesting", "age": rng.choice(STAMP_AGES)}
    if r < 0.65:
        return {"kind": "deleted", "age": rng.choice(STAMP_AGES)}
    if r < 0.72:
        return {"kind": "absent"}
    return {"kind": "raw", "raw": rng.choice(RAW_HANDSHAKES)}


def handshake_scenario(seed: int, sid: int) -> dict:
    """One node through 1-6 observations of Volcano's scheduler, 0-602 s apart:
    before each the handshake is set (hami-dp's Reported, a scheduler's
    Requesting or Deleted stamp of some age, a raw value, none) or left as the
    previous observation wrote it, and the register annotation is changed (other
    GPUs, unhealthy ones, a malformed value, none) or kept; one scenario in four
    runs Volcano in a zone other than UTC."""
    rng = random.Random(f"volcano112-handshake:{seed}:{sid}")
    zone = rng.choice(ZONES) if rng.random() < 0.25 else 0
    steps = []
    for k in range(rng.randint(1, 6)):
        handshake = _handshake(rng) if k == 0 or rng.random() < 0.45 else None
        if k == 0 or rng.random() < 0.25:
            register = {"value": None if k and rng.random() < 0.15 else _register(rng, sid, k)}
        else:
            register = None
        steps.append({"dt": rng.choice(STEP_DT) if k else 0, "handshake": handshake, "register": register})
    return {"id": sid, "zone": zone, "steps": steps}


LOCK_AGES = [-60, 0, 10, 150, 290, 310, 590, 7200]
RAW_LOCKS = ["", "locked", "2026-13-01T00:00:00Z", "2020-12-01 00:00:00", "2020-12-01T00:00:00",
             "2020-12-01T00:00:00+0800", "2020-12-01T00:00:00z", "1796167354", "2020-12-01T24:00:00Z",
             "2020-12-01T00:00:00.Z", "2020-01-01T00:00:00Z", "2099-01-01T00:00:00+08:00"]


def node_lock_scenario(seed: int, sid: int) -> dict:
    """A node's `hamivgpu` lock as Volcano's scheduler finds it in Allocate: none,
    a time of some age written in UTC, in Volcano's zone, in another zone, with
    nanoseconds, in HAMi's "<time>,<ns>,<name>" form, or a raw value; and how long
    ago devshare first saw the value (its W6 fix ages unreadable ones)."""
    rng = random.Random(f"volcano112-lock:{seed}:{sid}")
    zone = rng.choice(ZONES) if rng.random() < 0.25 else 0
    r = rng.random()
    if r < 0.2:
        lock: dict = {"kind": "absent"}
    elif r < 0.8:
        lock = {"kind": "rfc3339", "age": rng.choice(LOCK_AGES),
                "format": rng.choice(["utc", "utc", "zone", "offset", "nano", "hami"])}
    else:
        lock = {"kind": "raw", "raw": rng.choice(RAW_LOCKS)}
    return {"id": sid, "zone": zone, "lock": lock, "seen_age": rng.choice([0, 100, 310, 3600])}
