"""A TCP forwarder to the backends that answer their readiness path (/readyz)
with 200 — what a Kubernetes Service with a readiness probe does for the
devshare replicas.

Each new connection goes to a backend that is ready at that moment, taken in
turn as a Service spreads its connections, so every replica keeps some (bytes
are forwarded untouched, so TLS passes through). By default a backend's
readiness is asked as each connection comes; with --probe-period it is
probed in the background as the kubelet does (every PERIOD s, a 1 s timeout,
out after --probe-failures failed probes in a row, back after one success),
so a replica that freezes still gets new connections until its probes fail.
Usage:
  python3 ready_proxy.py --listen 18443 --backend 127.0.0.1:18501 --backend 127.0.0.1:18502 \
    [--ready-path /readyz/admission] [--ca CA] [--probe-period 2 --probe-failures 3]
"""

from __future__ import annotations

import argparse
import socket
import ssl
import threading
import time
import urllib.request


def ready(backend: str, path: str, context: ssl.SSLContext, timeout: float = 2) -> bool:
    try:
        with urllib.request.urlopen(f"https://{backend}{path}", timeout=timeout, context=context) as r:
            return r.status == 200
    except Exception:  # noqa: BLE001 — any failure means not ready
        return False


class Prober:
    """Each backend's readiness as the kubelet's probe sees it: probed every
    `period` s in a thread of its own, not ready after `failures` failures in
    a row, ready again after one success."""

    def __init__(self, backends: list[str], path: str, context: ssl.SSLContext,
                 period: float, failures: int) -> None:
        self.state = {b: False for b in backends}
        for b in backends:
            threading.Thread(target=self._probe, args=(b, path, context, period, failures), daemon=True).start()

    def _probe(self, backend: str, path: str, context: ssl.SSLContext, period: float, failures: int) -> None:
        failed = 0
        while True:
            t0 = time.monotonic()
            if ready(backend, path, context, timeout=1):
                failed = 0
                self.state[backend] = True
            else:
                failed += 1
                if failed >= failures:
                    self.state[backend] = False
            time.sleep(max(0.0, period - (time.monotonic() - t0)))


def pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--backend", action="append", required=True)
    parser.add_argument("--ready-path", default="/readyz")
    parser.add_argument("--ca", default=None)
    parser.add_argument("--probe-period", type=float, default=0,
                        help="probe in the background every this many seconds (0: as each connection comes)")
    parser.add_argument("--probe-failures", type=int, default=3)
    args = parser.parse_args()
    context = ssl.create_default_context(cafile=args.ca) if args.ca else ssl._create_unverified_context()
    context.check_hostname = False
    prober = Prober(args.backend, args.ready_path, context, args.probe_period, args.probe_failures) \
        if args.probe_period > 0 else None
    server = socket.create_server(("127.0.0.1", args.listen))
    print("listening", flush=True)
    turn = 0
    while True:
        client, _ = server.accept()
        order = args.backend[turn:] + args.backend[:turn]
        turn = (turn + 1) % len(args.backend)
        target = next((b for b in order if (prober.state[b] if prober else ready(b, args.ready_path, context))),
                      None)
        if target is None:
            client.close()
            continue
        host, port = target.rsplit(":", 1)
        try:
            upstream = socket.create_connection((host, int(port)), timeout=5)
        except OSError:
            client.close()
            continue
        upstream.settimeout(None)
        threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()


if __name__ == "__main__":
    main()
