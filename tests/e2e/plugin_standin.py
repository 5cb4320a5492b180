"""Stands in for HAMi's device plugins in the end-to-end test (there is no
kubelet): once a pod holding a node's lock (hami.io/mutex.lock) is bound to
that node, it does what the plugin does after Allocate — marks the pod
hami.io/bind-phase=success and releases the lock.

Usage: python3 plugin_standin.py SERVER CA CERT KEY [--allocate-delay SECONDS]
  (runs until killed). It watches the nodes, and serves every node at once
  as each node's own plugin would (a thread per lock being served): a lock
  is served as soon as its pod is bound, or --allocate-delay seconds after
  the lock was first seen (default 0), standing in for a slower plugin.

HAMi v2.10's device plugin does not answer the node handshake (its scheduler
alone writes it; spec §7), so neither does this stand-in.
"""

from __future__ import annotations

import concurrent.futures
import http.client
import json
import ssl
import sys
import threading
import time
import urllib.parse

LOCK = "hami.io/mutex.lock"


class Api:
    """One kept-alive connection per thread to the API server."""

    def __init__(self, server: str, ca: str, cert: str, key: str) -> None:
        self.url = urllib.parse.urlparse(server)
        self.context = ssl.create_default_context(cafile=ca)
        self.context.load_cert_chain(cert, key)
        self.local = threading.local()

    def connect(self, timeout: float | None = 10) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.url.hostname, self.url.port,
                                           context=self.context, timeout=timeout)

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        for attempt in (0, 1):  # once more on a connection the server closed
            conn = getattr(self.local, "conn", None) or self.connect()
            self.local.conn = conn
            try:
                conn.request(method, path, json.dumps(body) if body is not None else None,
                             {"Content-Type": "application/merge-patch+json",
                              "Accept": "application/json"})
                r = conn.getresponse()
                data = r.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                self.local.conn = None
                if attempt:
                    raise
                continue
            if r.status >= 300:
                raise RuntimeError(f"{method} {path}: HTTP {r.status}: {data[:200]!r}")
            return json.loads(data)
        raise AssertionError("unreachable")


def serve(api: Api, node: str, lock: str, first_seen: float, delay: float) -> None:
    """Completes Allocate for the pod holding `lock` on `node` once it is bound there."""
    parts = lock.split(",")
    if len(parts) != 3:
        return
    _, namespace, name = parts
    pod_path = f"/api/v1/namespaces/{namespace}/pods/{name}"
    deadline = time.monotonic() + 60
    while api.call("GET", pod_path)["spec"].get("nodeName") != node:
        if time.monotonic() > deadline:
            return  # never bound here: the scheduler releases or the lock expires
        time.sleep(0.05)
    time.sleep(max(0.0, first_seen + delay - time.monotonic()))
    api.call("PATCH", pod_path, {"metadata": {"annotations": {"hami.io/bind-phase": "success"}}})
    api.call("PATCH", f"/api/v1/nodes/{node}", {"metadata": {"annotations": {LOCK: None}}})
    print(f"allocated {namespace}/{name} on {node}", flush=True)


def main() -> None:
    server, ca, cert, key = sys.argv[1:5]
    options = sys.argv[5:]
    delay = 0.0
    if options[:1] == ["--allocate-delay"] and len(options) == 2:
        delay = float(options[1])
    elif options:
        sys.exit(__doc__)
    api = Api(server, ca, cert, key)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=64)
    serving: set[tuple[str, str]] = set()  # (node, lock) being served
    guard = threading.Lock()

    def start(node: str, lock: str) -> None:
        with guard:
            if (node, lock) in serving:
                return
            serving.add((node, lock))

        def run() -> None:
            try:
                serve(api, node, lock, time.monotonic(), delay)
            except Exception as e:  # noqa: BLE001 — keep standing in; the test checks the outcome
                print(f"plugin stand-in: {node}: {e}", flush=True)
            finally:
                with guard:
                    serving.discard((node, lock))
        pool.submit(run)

    def seen(node: dict) -> None:
        lock = node["metadata"].get("annotations", {}).get(LOCK)
        if lock:
            start(node["metadata"]["name"], lock)

    while True:
        try:
            listed = api.call("GET", "/api/v1/nodes")
            for node in listed["items"]:
                seen(node)
            conn = api.connect(timeout=None)
            conn.request("GET", "/api/v1/nodes?watch=1&allowWatchBookmarks=false&resourceVersion="
                         + listed["metadata"]["resourceVersion"])
            r = conn.getresponse()
            if r.status != 200:
                raise RuntimeError(f"watch: HTTP {r.status}")
            for line in r:
                event = json.loads(line)
                if event.get("type") in ("ADDED", "MODIFIED"):
                    seen(event["object"])
            conn.close()
        except Exception as e:  # noqa: BLE001 — list and watch again
            print(f"plugin stand-in: {e}", flush=True)
            time.sleep(0.5)


if __name__ == "__main__":
    main()
