"""Counts the requests the API server answered, from its audit log (the JSON
lines control-plane.sh has kube-apiserver write): per user, verb and
resource, as the API server saw them — not as a client counts its own.

Usage: python3 audit_count.py AUDIT_LOG [USER]
  prints "USER VERB RESOURCE[/SUBRESOURCE] COUNT" lines, sorted; with USER,
  only that user's; exits 1 when the log cannot be read. compare.sh and
  compare-replicas.sh read the log through its functions.
"""

from __future__ import annotations

import collections
import datetime
import glob
import json
import os
import sys
from typing import Iterator


def log_files(path: str) -> list[str]:
    """The audit log's files in time order: those kube-apiserver rotated away at
    100 MB (audit-<time>.log beside audit.log: their names sort by time), then
    the current one."""
    stem, ext = os.path.splitext(path)
    return sorted(glob.glob(glob.escape(stem) + "-*" + ext)) + [path]


def completed(path: str) -> Iterator[dict]:
    """Every request the API server answered (stage ResponseComplete), in log order,
    the rotated files included."""
    for name in log_files(path):
        with open(name, encoding="utf-8") as log:
            for line in log:
                event = json.loads(line)
                if event.get("stage") == "ResponseComplete":
                    yield event


def user_of(event: dict) -> str:
    return event.get("user", {}).get("username", "")


def resource_of(event: dict) -> str:
    """RESOURCE[/SUBRESOURCE], or the request URI when there is no object."""
    ref = event.get("objectRef") or {}
    resource = ref.get("resource", event.get("requestURI", ""))
    return resource + ("/" + ref["subresource"] if ref.get("subresource") else "")


def succeeded(event: dict) -> bool:
    return (event.get("responseStatus") or {}).get("code", 0) < 300


def seconds(stamp: str) -> float:
    """An audit timestamp (RFC 3339, UTC) as Unix seconds."""
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def count(path: str, only: str | None) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    for event in completed(path):
        user = user_of(event)
        if only is None or user == only:
            counts[(user, event.get("verb", ""), resource_of(event))] += 1
    return counts


def main() -> None:
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    try:
        counts = count(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else None)
    except (OSError, ValueError) as e:
        sys.exit(f"audit_count: {sys.argv[1]}: {e}")
    for (user, verb, resource), n in sorted(counts.items()):
        print(user, verb, resource, n)


if __name__ == "__main__":
    main()
