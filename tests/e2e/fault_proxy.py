"""An HTTPS proxy between devshare serve replicas and the API server that
injects faults: HTTP 429 (with Retry-After) or 500 answers instead of
forwarding, and cut connections (streaming watches first of all).

It terminates TLS with its own certificate (a CA of its own signs it; the
replicas' kubeconfig names that CA) and forwards each client connection over
one TLS connection of its own to the API server, with the client certificate
of the listener the replica came in on: one listener per replica, so that
faults can be aimed at one replica and the API server's audit log names each
replica as its own user.

Usage:
  python3 fault_proxy.py --upstream https://127.0.0.1:6443 --upstream-ca CA \
      --cert PROXY.crt --key PROXY.key --control PORT \
      --listen NAME=PORT=CLIENT.crt=CLIENT.key [--listen ...]

Control (one line per TCP connection to 127.0.0.1:--control, one JSON answer):
  errors NAME|all STATUS FRACTION   answer STATUS (429 or 500) to FRACTION of
                                    the requests (0 stops; watches included)
  cut NAME|all [watches|all]        close the streaming watches (default) or
                                    every connection now
  stats                             counters per listener
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import ssl
import sys
import urllib.parse


class Listener:
    def __init__(self, name: str, port: int, cert: str, key: str, upstream_ca: str) -> None:
        self.name, self.port = name, port
        self.upstream_context = ssl.create_default_context(cafile=upstream_ca)
        self.upstream_context.load_cert_chain(cert, key)
        self.upstream_context.set_alpn_protocols(["http/1.1"])
        self.status = 0          # 0: forward everything
        self.fraction = 0.0
        self.watches: set[Connection] = set()
        self.connections: set[Connection] = set()
        self.counts = {"connections": 0, "requests": 0, "forwarded": 0, "injected_429": 0,
                       "injected_500": 0, "watches_cut": 0, "connections_cut": 0,
                       "upstream_errors": 0}


class Connection:
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    def cut(self) -> None:
        for w in (self.writer, self.upstream[1] if self.upstream else None):
            if w is not None:
                transport = w.transport
                if transport is not None:
                    transport.abort()


async def read_head(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ssl.SSLError):
        return None
    return head


def parse_headers(head: bytes) -> tuple[str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    return lines[0], headers


async def copy_body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    headers: dict[str, str], until_eof: bool) -> None:
    """Copies one message body (chunked, Content-Length, or to the end) as it comes."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        while True:
            size_line = await reader.readuntil(b"\r\n")
            writer.write(size_line)
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while True:  # trailers, then the empty line
                    line = await reader.readuntil(b"\r\n")
                    writer.write(line)
                    if line == b"\r\n":
                        break
                await writer.drain()
                return
            writer.write(await reader.readexactly(size + 2))
            await writer.drain()
    elif "content-length" in headers:
        left = int(headers["content-length"])
        while left > 0:
            data = await reader.read(min(left, 65536))
            if not data:
                raise ConnectionError("short body")
            writer.write(data)
            left -= len(data)
        await writer.drain()
    elif until_eof:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()


def fault_answer(status: int) -> bytes:
    reason = {429: "Too Many Requests", 500: "Internal Server Error"}[status]
    body = json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": f"injected by fault_proxy: {reason}",
                       "reason": "TooManyRequests" if status == 429 else "InternalError",
                       "code": status}).encode()
    extra = "Retry-After: 1\r\n" if status == 429 else ""
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n{extra}"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


class Proxy:
    def __init__(self, upstream: str, listeners: list[Listener]) -> None:
        u = urllib.parse.urlparse(upstream)
        self.host, self.port = u.hostname, u.port or 443
        self.listeners = {l.name: l for l in listeners}

    async def handle(self, listener: Listener, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        conn = Connection(writer)
        listener.connections.add(conn)
        listener.counts["connections"] += 1
        try:
            await self.serve(listener, conn, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError, OSError,
                asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            listener.connections.discard(conn)
            listener.watches.discard(conn)
            conn.cut()

    async def serve(self, listener: Listener, conn: Connection, reader: asyncio.StreamReader,
                    writer: asyncio.StreamWriter) -> None:
        while True:
            head = await read_head(reader)
            if head is None:
                return
            request_line, headers = parse_headers(head)
            body = b""
            if "content-length" in headers:
                body = await reader.readexactly(int(headers["content-length"]))
            elif "chunked" in headers.get("transfer-encoding", "").lower():
                raise ValueError("chunked request bodies are not supported")
            listener.counts["requests"] += 1
            if listener.status and random.random() < listener.fraction:
                listener.counts[f"injected_{listener.status}"] += 1
                writer.write(fault_answer(listener.status))
                await writer.drain()
                continue
            if conn.upstream is None:
                try:
                    conn.upstream = await asyncio.wait_for(asyncio.open_connection(
                        self.host, self.port, ssl=listener.upstream_context,
                        server_hostname=self.host), 10)
                except (OSError, asyncio.TimeoutError, ssl.SSLError):
                    listener.counts["upstream_errors"] += 1
                    return  # as an API server that is not there: the connection closes
            up_reader, up_writer = conn.upstream
            up_writer.write(head + body)
            await up_writer.drain()
            response = await read_head(up_reader)
            if response is None:
                listener.counts["upstream_errors"] += 1
                return
            status_line, response_headers = parse_headers(response)
            listener.counts["forwarded"] += 1
            method, target = request_line.split(" ")[:2]
            query = urllib.parse.parse_qs(urllib.parse.urlparse(target).query)
            watch = query.get("watch", [""])[0] in ("1", "true")
            if watch:
                listener.watches.add(conn)
            writer.write(response)
            code = int(status_line.split(" ")[1])
            no_body = method == "HEAD" or code in (204, 304) or 100 <= code < 200
            closing = "close" in response_headers.get("connection", "").lower() or \
                "close" in headers.get("connection", "").lower()
            if not no_body:
                await copy_body(up_reader, writer, response_headers, until_eof=True)
            else:
                await writer.drain()
            listener.watches.discard(conn)
            if closing or ("content-length" not in response_headers and
                           "chunked" not in response_headers.get("transfer-encoding", "").lower()
                           and not no_body):
                return

    async def control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            words = (await reader.readline()).decode().split()
            answer = self.command(words)
        except Exception as e:  # noqa: BLE001 — answer the error
            answer = {"error": str(e)}
        writer.write((json.dumps(answer) + "\n").encode())
        await writer.drain()
        writer.close()

    def targets(self, name: str) -> list[Listener]:
        if name == "all":
            return list(self.listeners.values())
        return [self.listeners[name]]

    def command(self, words: list[str]) -> dict:
        if words[:1] == ["errors"] and len(words) == 4:
            status, fraction = int(words[2]), float(words[3])
            if status not in (429, 500):
                raise ValueError("status 429 or 500")
            for l in self.targets(words[1]):
                l.status, l.fraction = (status, fraction) if fraction > 0 else (0, 0.0)
            return {"ok": True}
        if words[:1] == ["cut"] and len(words) in (2, 3):
            which = words[2] if len(words) == 3 else "watches"
            cut = 0
            for l in self.targets(words[1]):
                victims = list(l.watches if which == "watches" else l.connections)
                for c in victims:
                    c.cut()
                l.counts["watches_cut" if which == "watches" else "connections_cut"] += len(victims)
                cut += len(victims)
            return {"ok": True, "cut": cut}
        if words == ["stats"]:
            return {l.name: dict(l.counts, status=l.status, fraction=l.fraction,
                                 open=len(l.connections), watching=len(l.watches))
                    for l in self.listeners.values()}
        raise ValueError(f"unknown command {' '.join(words)!r}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--upstream-ca", required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--control", type=int, required=True)
    parser.add_argument("--listen", action="append", required=True,
                        help="NAME=PORT=CLIENT_CERT=CLIENT_KEY")
    args = parser.parse_args()
    listeners = []
    for spec in args.listen:
        name, port, cert, key = spec.split("=", 3)
        listeners.append(Listener(name, int(port), cert, key, args.upstream_ca))
    proxy = Proxy(args.upstream, listeners)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(args.cert, args.key)
    server_context.set_alpn_protocols(["http/1.1"])
    servers = []
    for l in listeners:
        servers.append(await asyncio.start_server(
            lambda r, w, l=l: proxy.handle(l, r, w), "127.0.0.1", l.port, ssl=server_context,
            limit=1 << 20))
    servers.append(await asyncio.start_server(proxy.control, "127.0.0.1", args.control))
    print("listening", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
