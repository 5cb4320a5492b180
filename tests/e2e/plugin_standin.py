"""Stands in for HAMi's device plugins in the end-to-end test (there is no
kubelet): once a pod holding a node's lock (hami.io/mutex.lock) is bound to
that node, it does what the plugin does after Allocate — marks the pod
hami.io/bind-phase=success and releases the lock.

Usage: python3 plugin_standin.py SERVER CA CERT KEY   (runs until killed)
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
