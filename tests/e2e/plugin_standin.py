"""Stands in for HAMi's device plugins in the end-to-end test (there is no
kubelet): once a pod holding a node's lock (hami.io/mutex.lock) is bound to
that node, it does what the plugin does after Allocate — marks the pod
hami.io/bind-phase=success and releases the lock.

Usage: python3 plugin_standin.py SERVER CA CERT KEY [--allocate-delay SECONDS]
  (runs until killed). --allocate-delay: how long after it first sees a bound
  pod holding a lock it completes Allocate (default 0: at its next pass, every
  0.5 s), standing in for a slower or faster device plugin.

HAMi v2.10's device plugin does not answer the node handshake (its scheduler
alone writes it; spec §7), so neither does this stand-in.
"""

from __future__ import annotations

import json
import ssl
import sys
import time
import urllib.request

LOCK = "hami.io/mutex.lock"


def main() -> None:
    server, ca, cert, key = sys.argv[1:5]
    options = sys.argv[5:]
    delay = 0.0
    if options[:1] == ["--allocate-delay"] and len(options) == 2:
        delay = float(options[1])
    elif options:
        sys.exit(__doc__)
    seen: dict[tuple[str, str], float] = {}  # (node, pod) -> first seen bound with the lock
    context = ssl.create_default_context(cafile=ca)
    context.load_cert_chain(cert, key)

    def call(method: str, path: str, body: dict | None = None) -> dict:
        req = urllib.request.Request(server + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/merge-patch+json",
                                              "Accept": "application/json"})
        with urllib.request.urlopen(req, context=context, timeout=10) as r:
            return json.load(r)

    while True:
        try:
            for node in call("GET", "/api/v1/nodes")["items"]:
                lock = node["metadata"].get("annotations", {}).get(LOCK, "")
                parts = lock.split(",")
                if len(parts) != 3:
                    continue
                _, namespace, name = parts
                pod = call("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
                if pod["spec"].get("nodeName") != node["metadata"]["name"]:
                    continue
                first = seen.setdefault((node["metadata"]["name"], lock), time.monotonic())
                if time.monotonic() - first < delay:
                    continue
                del seen[(node["metadata"]["name"], lock)]
                call("PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}",
                     {"metadata": {"annotations": {"hami.io/bind-phase": "success"}}})
                call("PATCH", f"/api/v1/nodes/{node['metadata']['name']}",
                     {"metadata": {"annotations": {LOCK: None}}})
                print(f"allocated {namespace}/{name} on {node['metadata']['name']}", flush=True)
        except Exception as e:  # noqa: BLE001 — keep standing in; the test checks the outcome
            print(f"plugin stand-in: {e}", flush=True)
        time.sleep(0.5)


if __name__ == "__main__":
    main()
