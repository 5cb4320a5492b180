"""A stand-in Kubernetes API server for load-testing `devshare serve`.

It serves what devshare's API client asks for, from memory: a NodeList of
N nodes with 8 GPUs each (HAMi's register annotation and allocatable
counts), an empty PodList, the ResourceQuotas given by --quota, watches that stay open without events, and 200
to every PATCH and Binding (the first --throttle PATCHes get 429 with
Retry-After, as API priority and fairness answers; the first --expire
watches end with a 410 ERROR event, as an expired resourceVersion does). No authentication, plain HTTP. It is not a
conformance model; the end-to-end test uses a real kube-apiserver.

Usage: python3 fake_apiserver.py --port 18080 --nodes 5000
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

from json_http import JsonHandler


def node(i: int) -> dict:
    name = f"node-{i:05d}"
    devices = [{"id": f"GPU-{i:05d}-{g}", "index": g, "count": 10, "devmem": 81920, "devcore": 100,
                "type": "NVIDIA-A100", "numa": g // 4, "mode": "hami-core", "health": True} for g in range(8)]
    return {"kind": "Node", "apiVersion": "v1",
            "metadata": {"name": name, "resourceVersion": "1", "labels": {"kubernetes.io/hostname": name},
                         "annotations": {"hami.io/node-nvidia-register": json.dumps(devices, separators=(",", ":"))}},
            "status": {"allocatable": {"cpu": "128", "memory": "1Ti", "pods": "110", "nvidia.com/gpu": "80"}}}


class Handler(JsonHandler):
    protocol_version = "HTTP/1.1"
    # A kept-alive connection answers as a real API server does: headers and
    # body leave together (the writes are buffered until the handler returns
    # or flushes) and at once (TCP_NODELAY). Unbuffered, the body written
    # after the headers waited for the client's delayed ACK (40 ms) under
    # Nagle's algorithm.
    wbufsize = -1
    disable_nagle_algorithm = True
    nodes: list = []
    quotas: list = []
    calls: dict = {}
    throttle = 0  # PATCHes still to answer with 429
    expire = 0    # watches still to end with a 410 ERROR event
    lock = threading.Lock()

    def count(self, what: str) -> None:
        with self.lock:
            self.calls[what] = self.calls.get(what, 0) + 1

    def do_GET(self) -> None:
        url = urlparse(self.path)
        query = parse_qs(url.query)
        if query.get("watch"):
            self.count("watch")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            with self.lock:
                expire = Handler.expire > 0
                Handler.expire -= 1 if expire else 0
            if expire:  # the version is too old: one ERROR event, then the stream ends
                event = json.dumps({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1",
                                    "status": "Failure", "reason": "Expired", "code": 410,
                                    "message": "too old resource version: 1 (2)"}}).encode() + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(event), event))
                return
            self.wfile.flush()
            deadline = time.time() + int(query.get("timeoutSeconds", ["300"])[0])
            try:
                while time.time() < deadline:
                    time.sleep(1)
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except OSError:
                pass
            return
        if url.path.startswith("/api/v1/nodes/"):
            self.count("get-node")
            name = url.path.rsplit("/", 1)[1]
            found = [n for n in self.nodes if n["metadata"]["name"] == name]
            if found:
                return self.reply(200, found[0])
            return self.reply(404, {"kind": "Status", "code": 404, "reason": "NotFound"})
        if url.path == "/api/v1/nodes":
            self.count("list-nodes")
            return self.reply(200, {"kind": "NodeList", "apiVersion": "v1",
                                    "metadata": {"resourceVersion": "1"}, "items": self.nodes})
        if url.path == "/api/v1/pods":
            self.count("list-pods")
            return self.reply(200, {"kind": "PodList", "apiVersion": "v1",
                                    "metadata": {"resourceVersion": "1"}, "items": []})
        if url.path == "/api/v1/resourcequotas":
            self.count("list-resourcequotas")
            return self.reply(200, {"kind": "ResourceQuotaList", "apiVersion": "v1",
                                    "metadata": {"resourceVersion": "1"}, "items": self.quotas})
        self.reply(404, {"kind": "Status", "code": 404, "reason": "NotFound"})

    def do_PATCH(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.count("patch")
        with self.lock:
            throttled = Handler.throttle > 0
            Handler.throttle -= 1 if throttled else 0
        if throttled:  # as API priority and fairness answers: plain text, Retry-After
            data = b"Too many requests, please try again later."
            self.send_response(429)
            self.send_header("Retry-After", "1")
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.reply(200, {})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.count("post")
        self.reply(201, {"kind": "Status", "status": "Success", "code": 201})


class Server(ThreadingHTTPServer):
    # A thread per connection. The listen backlog of socketserver's default
    # (5) overflowed when a client opened connections in a burst under load:
    # the SYNs dropped were sent again 1, 3 and 7 s later.
    request_queue_size = 1024
    daemon_threads = True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=18080)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--throttle", type=int, default=0, help="answer the first N PATCHes with 429")
    parser.add_argument("--expire", type=int, default=0, help="end the first N watches with a 410 ERROR event")
    parser.add_argument("--quota", action="append", default=[], metavar="NAMESPACE/NAME:KEY=VALUE",
                        help="serve a ResourceQuota with spec.hard {KEY: VALUE} (repeatable)")
    args = parser.parse_args()
    for i, quota in enumerate(args.quota):
        where, _, hard = quota.partition(":")
        namespace, _, name = where.partition("/")
        key, _, value = hard.partition("=")
        Handler.quotas.append({"kind": "ResourceQuota", "apiVersion": "v1",
                               "metadata": {"namespace": namespace, "name": name, "uid": f"quota-{i}",
                                            "resourceVersion": "1"},
                               "spec": {"hard": {key: value}}})
    Handler.throttle = args.throttle
    Handler.expire = args.expire
    Handler.nodes = [node(i) for i in range(args.nodes)]
    Server(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
