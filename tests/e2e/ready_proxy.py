"""A TCP forwarder to whichever backend answers its readiness path (/readyz)
with 200 — what a Kubernetes Service with a readiness probe does for the
devshare replicas.

Each new connection goes to the first backend that is ready at that moment
(bytes are forwarded untouched, so TLS passes through). Usage:
  python3 ready_proxy.py --listen 18443 --backend 127.0.0.1:18501 --backend 127.0.0.1:18502 \
    [--ready-path /readyz/admission] [--ca CA]
"""

from __future__ import annotations

import argparse
import socket
import ssl
import threading
import urllib.request


def ready(backend: str, path: str, context: ssl.SSLContext) -> bool:
    try:
        with urllib.request.urlopen(f"https://{backend}{path}", timeout=2, context=context) as r:
            return r.status == 200
    except Exception:  # noqa: BLE001 — any failure means not ready
        return False


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
    args = parser.parse_args()
    context = ssl.create_default_context(cafile=args.ca) if args.ca else ssl._create_unverified_context()
    context.check_hostname = False
    server = socket.create_server(("127.0.0.1", args.listen))
    print("listening", flush=True)
    while True:
        client, _ = server.accept()
        target = next((b for b in args.backend if ready(b, args.ready_path, context)), None)
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
