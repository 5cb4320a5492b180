"""Counts the requests the API server answered, from its audit log (the JSON
lines control-plane.sh has kube-apiserver write): per user, verb and
resource, as the API server saw them — not as a client counts its own.

Usage: python3 audit_count.py AUDIT_LOG [USER]
  prints "USER VERB RESOURCE[/SUBRESOURCE] COUNT" lines, sorted; with USER,
  only that user's; exits 1 when the log cannot be read.
"""

from __future__ import annotations

import collections
import json
import sys


def count(path: str, only: str | None) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    with open(path, encoding="utf-8") as log:
        for line in log:
            event = json.loads(line)
            if event.get("stage") != "ResponseComplete":
                continue
            user = event.get("user", {}).get("username", "")
            if only is not None and user != only:
                continue
            ref = event.get("objectRef") or {}
            resource = ref.get("resource", event.get("requestURI", ""))
            if ref.get("subresource"):
                resource += "/" + ref["subresource"]
            counts[(user, event.get("verb", ""), resource)] += 1
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
