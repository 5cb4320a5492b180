"""`devshare serve` under hostile clients, on loopback.

Starts two serves against the stand-in API server (serve_stand_in.py), one on
plain HTTP and one on HTTPS (a certificate made with the openssl CLI), and
attacks them in turn while a well-behaved client (a process of its own per
serve, a new connection per request) sends GET /healthz and POST /filter every
50 ms:

  slow headers     SLOW_HEADERS connections (half as many over TLS), a
                   header byte every 2 s
  slow bodies      SLOW_BODIES connections, Content-Length 1,000,000 and a
                   body byte every 2 s; beside them KEPT_IDLE connections
                   (half over TLS) that sent one request and wait, kept alive
  idle             IDLE connections that send nothing (plain, then TLS)
  malformed TLS    garbage, a truncated ClientHello, plain HTTP to the TLS port
  oversized        a 1 MiB header line, 10,000 header fields, a 2 MiB body
                   (Content-Length) and a 2 MiB chunked body
  out of fds       the plain serve's RLIMIT_NOFILE lowered to 64 (prlimit),
                   then 60 connections (after the well-behaved clients stop)

Checks: every well-behaved request answered 200, each within 5 s; serve
closes each attacker by its deadline (header 10 s from the accept, request
and kept-alive idle 30 s); serve's RSS at the peak under 256 MiB over its
baseline (an idle connection costs about 1 KiB and a TLS connection past its
handshake about 75 KiB: the attacks peak near 70 MiB over); open descriptors
back to the baseline once the attackers are gone; out of descriptors, serve
uses under a fifth of a core and answers again once they are free. Prints
the well-behaved latency per phase (p50/p99/max), RSS and descriptors, and
"hostile: N passed, M failed". About 90 s.

Usage: python3 hostile_clients.py DEVSHARE [RESULTS]
"""

from __future__ import annotations

import http.client
import json
import os
import resource
import select
import selectors
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from typing import Callable, Optional

from serve_stand_in import Checks, ServeStandIn

SLOW_HEADERS = 1000
SLOW_BODIES = 200
KEPT_IDLE = 1000
IDLE = 10_000
MALFORMED = 200  # of each kind
OVERSIZED = 20  # of each kind
TRICKLE_SECONDS = 2.0
HEADER_TIMEOUT = 10.0  # HttpServerOptions defaults
READ_TIMEOUT = 30.0
MARGIN = 3.0
RSS_BOUND_MIB = 256
NAMES = [f"node-{i:05d}" for i in range(20)]
FILTER_BODY = json.dumps({"Pod": {
    "metadata": {"name": "p", "namespace": "default", "uid": "uid-p"},
    "spec": {"containers": [{"name": "c", "resources": {"limits": {
        "nvidia.com/gpu": "1", "nvidia.com/gpumem-percentage": "25",
        "nvidia.com/gpucores": "25"}}}]}}, "Nodes": None, "NodeNames": NAMES}).encode()


class NotReady(Exception):
    """A serve did not turn ready: no attack runs."""


def client_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


class TlsServeStandIn(ServeStandIn):
    """ServeStandIn over HTTPS (not verified): call() and wait_ready() speak TLS."""

    def call(self, method: str, path: str, body: Optional[bytes] = None) -> tuple[int, bytes]:
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=20, context=client_context())
        try:
            conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()


def well_behaved(port: int, tls: bool, out: str) -> None:
    """The well-behaved client: until SIGTERM, a request every 50 ms on a new
    connection, alternately /healthz and /filter; one line per request to
    `out`: start time, seconds taken, status (0: no answer), path."""
    stop = False

    def on_term(*_) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    context = client_context() if tls else None
    n = 0
    with open(out, "w", encoding="utf-8") as f:
        while not stop:
            path = "/healthz" if n % 2 == 0 else "/filter"
            n += 1
            start = time.time()
            status = 0
            try:
                conn = (http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=context) if tls
                        else http.client.HTTPConnection("127.0.0.1", port, timeout=10))
                if path == "/healthz":
                    conn.request("GET", path)
                else:
                    conn.request("POST", path, body=FILTER_BODY, headers={"Content-Type": "application/json"})
                r = conn.getresponse()
                r.read()
                status = r.status
                conn.close()
            except (OSError, http.client.HTTPException):
                status = 0
            f.write(f"{start:.6f} {time.time() - start:.6f} {status} {path}\n")
            f.flush()
            time.sleep(0.05)


class Watch:
    """Samples a process's VmRSS and open descriptors every 100 ms."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.samples: list[tuple[float, int, int]] = []  # time, RSS KiB, fds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def rss_kib(self) -> int:
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def snapshot(self) -> tuple[int, int]:
        """RSS in KiB and open descriptors now; (0, 0) once the process is gone."""
        try:
            return self.rss_kib(), self.fds()
        except OSError:
            return 0, 0

    def open_files_limit(self) -> str:
        with open(f"/proc/{self.pid}/limits") as f:
            for line in f:
                if line.startswith("Max open files"):
                    return " ".join(line.split()[3:5])
        return "?"

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            try:
                self.samples.append((time.time(), self.rss_kib(), self.fds()))
            except OSError:
                return

    def peak(self, since: float, until: float) -> tuple[int, int]:
        inside = [(r, n) for t, r, n in self.samples if since <= t <= until] or [(0, 0)]
        return max(r for r, _ in inside), max(n for _, n in inside)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    return s


def server_closed(s) -> bool:
    """Reads what is there on a readable socket: True when the server has
    closed it (end of stream, a reset, a TLS alert or close_notify). Data is
    read and dropped: a TLS 1.3 session ticket, or an answer already counted."""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return True
    except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
        return False
    except (OSError, ssl.SSLError):
        return True


def wait_closed(socks: list, deadline: float, trickle: Optional[Callable[[object], None]] = None) -> list[float]:
    """Waits until the server has closed each socket, sending `trickle(sock)`
    every TRICKLE_SECONDS to those still open. Returns the seconds each took
    from the call (inf: still open at `deadline`); closes them all."""
    start = time.time()
    taken = [float("inf")] * len(socks)
    sel = selectors.DefaultSelector()
    for i, s in enumerate(socks):
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, i)
    open_count = len(socks)
    next_trickle = start + TRICKLE_SECONDS
    while open_count and time.time() < deadline:
        for key, _ in sel.select(timeout=0.1):
            i = key.data
            if server_closed(socks[i]):
                sel.unregister(socks[i])
                taken[i] = time.time() - start
                open_count -= 1
        if trickle is not None and time.time() >= next_trickle:
            next_trickle += TRICKLE_SECONDS
            for key in list(sel.get_map().values()):
                try:
                    trickle(key.fileobj)
                except (OSError, ssl.SSLError):
                    pass  # closed: the select above sees it
    sel.close()
    for s in socks:
        try:
            s.close()
        except OSError:
            pass
    return taken


def client_hello() -> bytes:
    """The bytes of a real TLS ClientHello (from a client that gets no answer)."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = client_context().wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def exchange(s, data: bytes, seconds: float = 15) -> bytes:
    """Sends `data` while reading (one thread: an SSL socket is not safe for
    a reader and a writer at once) and returns what the server answers
    before it closes; sending stops when the server stops reading."""
    s.setblocking(False)
    sent, reply = 0, b""
    deadline = time.time() + seconds
    while time.time() < deadline:
        writing = sent < len(data)
        readable, writable, _ = select.select([s], [s] if writing else [], [], 0.2)
        if readable or (isinstance(s, ssl.SSLSocket) and s.pending()):
            try:
                chunk = s.recv(65536)
                if not chunk:
                    break
                reply += chunk
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                pass
            except OSError:
                break
        if writable and writing:
            try:
                sent += s.send(data[sent:sent + 65536])
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                pass
            except OSError:
                sent = len(data)  # the server closed its side: read what it said
    s.close()
    return reply


def cpu_seconds(pid: int) -> float:
    """The user and system CPU time of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    devshare = sys.argv[1]
    results = sys.argv[2] if len(sys.argv) > 2 else ""
    check = Checks()

    # Room for IDLE connections here and in serve, which inherits the limit.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = IDLE + 2000
    idle = IDLE
    if hard != resource.RLIM_INFINITY and hard < want:
        idle = max(1000, hard - 2000)
        print(f"RLIMIT_NOFILE hard limit {hard}: {idle} idle connections instead of {IDLE}")
        want = hard
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))

    work = tempfile.mkdtemp()
    cert, key = os.path.join(work, "tls.crt"), os.path.join(work, "tls.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    plain = ServeStandIn(devshare, nodes=20)
    tls = TlsServeStandIn(devshare, nodes=20,
                          serve_args=("--node-policy", "binpack", "--tls-cert", cert, "--tls-key", key))
    clients: list[tuple[subprocess.Popen, str]] = []
    phases: list[tuple[str, float, float]] = []
    watches: dict[str, Watch] = {}
    try:
        for name, serve in (("plain", plain), ("tls", tls)):
            status = serve.wait_ready()
            check(f"{name} serve is ready", status == 200, (status, serve.log_tail()))
        if check.failed:
            raise NotReady()
        for name, serve in (("plain", plain), ("tls", tls)):
            w = Watch(serve._serve.pid)
            watches[name] = w
            print(f"{name} serve: pid {w.pid}, open files limit {w.open_files_limit()}")
        for name, serve in (("plain", plain), ("tls", tls)):
            out = os.path.join(work, f"client-{name}.txt")
            clients.append((subprocess.Popen([sys.executable, os.path.abspath(__file__), "--client",
                                              str(serve.port), "1" if name == "tls" else "0", out]), out))
        time.sleep(2)  # the well-behaved clients alone
        baseline = {name: w.snapshot() for name, w in watches.items()}
        phases.append(("baseline", time.time() - 2, time.time()))

        def phase(label: str, run: Callable[[], None]) -> None:
            start = time.time()
            try:
                run()
            except (OSError, ssl.SSLError) as e:  # serve gone, or refusing
                check(f"the {label} attack ran to its end", False, repr(e))
            phases.append((label, start, time.time()))
            for name, serve in (("plain", plain), ("tls", tls)):
                check(f"{name} serve is running after the {label} attack", serve._serve.poll() is None,
                      serve.log_tail(500))

        # Slow headers: a request line and one header, then a byte every 2 s.
        def slow_headers() -> None:
            socks, kinds = [], []
            for _ in range(SLOW_HEADERS):
                s = connect(plain.port)
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                socks.append(s)
                kinds.append("plain")
            for _ in range(SLOW_HEADERS // 2):
                s = client_context().wrap_socket(connect(tls.port), server_hostname="localhost")
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                socks.append(s)
                kinds.append("tls")
            taken = wait_closed(socks, time.time() + HEADER_TIMEOUT + MARGIN, lambda s: s.send(b"a"))
            for kind in ("plain", "tls"):
                t = [x for x, k in zip(taken, kinds) if k == kind]
                check(f"{kind}: slow-header connections closed by the header timeout",
                      max(t) <= HEADER_TIMEOUT + MARGIN, f"{sum(x == float('inf') for x in t)} still open")
                print(f"  slow headers ({kind}, {len(t)}): closed after {min(t):.1f}–{max(t):.1f} s")

        phase("slow headers", slow_headers)

        # Slow bodies, and connections kept alive after one request.
        def slow_bodies() -> None:
            socks, kinds = [], []
            head = b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"
            for port, kind, wrap in ((plain.port, "plain", False), (tls.port, "tls", True)):
                for _ in range(SLOW_BODIES):
                    s = connect(port)
                    if wrap:
                        s = client_context().wrap_socket(s, server_hostname="localhost")
                    s.sendall(head)
                    socks.append(s)
                    kinds.append(f"{kind} body")
                for _ in range(KEPT_IDLE if kind == "plain" else KEPT_IDLE // 2):
                    s = connect(port)
                    if wrap:
                        s = client_context().wrap_socket(s, server_hostname="localhost")
                    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                    reply = b""
                    while b"\r\n\r\nok" not in reply:
                        chunk = s.recv(4096)
                        if not chunk:
                            break
                        reply += chunk
                    socks.append(s)
                    kinds.append(f"{kind} kept")
            # Trickled bytes go to the bodies only; the kept-alive ones stay quiet.
            body_socks = {id(s) for s, k in zip(socks, kinds) if k.endswith("body")}

            def trickle(s) -> None:
                if id(s) in body_socks:
                    s.send(b" ")

            taken = wait_closed(socks, time.time() + READ_TIMEOUT + MARGIN, trickle)
            for kind in ("plain body", "tls body", "plain kept", "tls kept"):
                t = [x for x, k in zip(taken, kinds) if k == kind]
                what = "slow-body" if kind.endswith("body") else "kept-alive idle"
                check(f"{kind.split()[0]}: {what} connections closed by the read timeout",
                      max(t) <= READ_TIMEOUT + MARGIN, f"{sum(x == float('inf') for x in t)} still open")
                print(f"  {what} ({kind.split()[0]}, {len(t)}): closed after {min(t):.1f}–{max(t):.1f} s")

        phase("slow bodies + kept-alive idle", slow_bodies)

        # Idle: connections that send nothing, first to the plain serve, then to TLS.
        def idle_connections(port: int, kind: str) -> None:
            socks = []
            start = time.time()
            for _ in range(idle):
                s = socket.socket()
                s.setblocking(False)
                s.connect_ex(("127.0.0.1", port))
                socks.append(s)
            opened = time.time() - start
            time.sleep(1.0)
            w = watches[kind]
            print(f"  idle ({kind}): {idle} connections opened in {opened:.1f} s; "
                  f"serve holds {w.fds()} descriptors")
            taken = wait_closed(socks, start + HEADER_TIMEOUT + MARGIN + opened)
            check(f"{kind}: idle connections closed by the header timeout",
                  max(taken) != float("inf"), f"{sum(x == float('inf') for x in taken)} still open")
            finite = [x for x in taken if x != float("inf")]
            if finite:
                print(f"  idle ({kind}): closed {min(finite):.1f}–{max(finite):.1f} s after the wait began")

        phase("10,000 idle (plain)", lambda: idle_connections(plain.port, "plain"))
        phase("10,000 idle (TLS)", lambda: idle_connections(tls.port, "tls"))

        # Malformed TLS: garbage, a truncated ClientHello, plain HTTP.
        def malformed_tls() -> None:
            hello = client_hello()
            kinds = {"garbage": bytes(range(256)) * 4, "truncated ClientHello": hello[: len(hello) // 2],
                     "plain HTTP": b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"}
            socks, labels = [], []
            for label, data in kinds.items():
                for _ in range(MALFORMED):
                    s = connect(tls.port)
                    s.sendall(data)
                    socks.append(s)
                    labels.append(label)
            taken = wait_closed(socks, time.time() + HEADER_TIMEOUT + MARGIN)
            for label in kinds:
                t = [x for x, k in zip(taken, labels) if k == label]
                bound = HEADER_TIMEOUT + MARGIN if label.startswith("truncated") else MARGIN
                check(f"tls: {label} connections closed within {bound:.0f} s", max(t) <= bound,
                      f"{sum(x == float('inf') for x in t)} still open, slowest {max(t):.1f} s")
                print(f"  {label} ({MALFORMED}): closed after {min(t):.2f}–{max(t):.2f} s")
            socks = [connect(plain.port) for _ in range(MALFORMED)]
            for s in socks:
                s.sendall(bytes(range(256)) * 4)
            taken = wait_closed(socks, time.time() + MARGIN)
            check("plain: garbage connections closed at once", max(taken) <= MARGIN, max(taken))

        phase("malformed TLS", malformed_tls)

        # Oversized header, fields and bodies: 431 and 413.
        def oversized() -> None:
            cases = {
                "a 1 MiB header line": (b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 20)
                                        + b"\r\n\r\n", b"HTTP/1.1 431"),
                "10,000 header fields": (b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
                                         + b"".join(b"X-F%d: v\r\n" % i for i in range(10_000)) + b"\r\n",
                                         b"HTTP/1.1 431"),
                "a 2 MiB body": (b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 2097152\r\n\r\n"
                                 + b" " * (2 << 20), b"HTTP/1.1 413"),
                "a 2 MiB chunked body": (b"POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                                         + (b"10000\r\n" + b" " * 0x10000 + b"\r\n") * 32 + b"0\r\n\r\n",
                                         b"HTTP/1.1 413"),
            }
            for port, kind, wrap in ((plain.port, "plain", False), (tls.port, "tls", True)):
                for label, (data, want) in cases.items():
                    answered = 0
                    for _ in range(OVERSIZED):
                        s = connect(port)
                        if wrap:
                            s = client_context().wrap_socket(s, server_hostname="localhost")
                        if exchange(s, data).startswith(want):
                            answered += 1
                    check(f"{kind}: {label} is answered {want[9:].decode()}", answered == OVERSIZED,
                          f"{answered} of {OVERSIZED}")

        phase("oversized", oversized)

        time.sleep(6)  # closing TLS connections wait up to 5 s for the client's close_notify
        phases.append(("after", time.time() - 2, time.time()))
        after = {name: w.snapshot() for name, w in watches.items()}

        # Out of descriptors: the plain serve's limit lowered to 64, then 60
        # connections. Accept fails with EMFILE and must pause, not spin.
        for p, _ in clients:
            p.terminate()
            p.wait()
        pid = plain._serve.pid
        socks = []
        try:
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (64, 64))
            for _ in range(60):
                s = socket.socket()
                s.setblocking(False)
                s.connect_ex(("127.0.0.1", plain.port))
                socks.append(s)
            time.sleep(1)
            before_cpu = cpu_seconds(pid)
            time.sleep(2)
            share = (cpu_seconds(pid) - before_cpu) / 2
            print(f"  out of descriptors (plain): serve {watches['plain'].fds()} descriptors, "
                  f"{share:.0%} of a core")
            check("plain: out of descriptors, serve waits rather than spins", share < 0.2, f"{share:.0%}")
        except OSError as e:  # serve gone
            check("plain: the out-of-descriptors attack ran to its end", False, repr(e))
        for s in socks:
            s.close()
        status = 0
        for _ in range(50):
            try:
                status, _ = plain.call("GET", "/healthz")
            except OSError:
                status = 0
            if status == 200:
                break
            time.sleep(0.1)
        check("plain: with descriptors free again, serve answers", status == 200, status)
    except NotReady:
        pass
    finally:
        for p, _ in clients:
            p.terminate()
        for p, _ in clients:
            p.wait()
        for w in watches.values():
            w.stop()
        for name, serve in (("plain", plain), ("tls", tls)):
            serve.stop()
            check(f"{name} serve stops cleanly on SIGTERM", serve.returncode == 0,
                  (serve.returncode, serve.log_tail(500)))

    if watches:
        print("\nRSS and descriptors of serve:")
        for name, w in watches.items():
            peak_rss, peak_fds = w.peak(0, float("inf"))
            base_rss, base_fds = baseline[name]
            after_rss, after_fds = after[name]
            print(f"  {name}: RSS {base_rss / 1024:.1f} MiB before, {peak_rss / 1024:.1f} MiB at the peak, "
                  f"{after_rss / 1024:.1f} MiB after; descriptors {base_fds} before, {peak_fds} at the peak, "
                  f"{after_fds} after")
            for label, start, end in phases:
                r, n = w.peak(start, end)
                print(f"    {label}: peak RSS {r / 1024:.1f} MiB, {n} descriptors")
            check(f"{name}: peak RSS under {RSS_BOUND_MIB} MiB over the baseline",
                  peak_rss - base_rss < RSS_BOUND_MIB * 1024, (base_rss, peak_rss))
            check(f"{name}: descriptors back to the baseline after the attacks",
                  after_fds <= base_fds + 5, (base_fds, after_fds))
            check(f"{name}: serve saw {idle} idle connections at once", peak_fds >= base_fds + idle,
                  (base_fds, peak_fds))
        print("\nWell-behaved client (a new connection per request), latency in ms:")
        for (p, out), name in zip(clients, ("plain", "tls")):
            records = []
            with open(out, encoding="utf-8") as f:
                for line in f:
                    start, taken, status, path = line.split()
                    records.append((float(start), float(taken), int(status), path))
            unanswered = [r for r in records if r[2] != 200]
            check(f"{name}: every well-behaved request answered 200", not unanswered and len(records) > 100,
                  f"{len(unanswered)} of {len(records)}: {unanswered[:5]}")
            for label, start, end in phases:
                inside = [r[1] * 1000 for r in records if start <= r[0] <= end]
                if inside:
                    print(f"  {name:5} {label:32} {len(inside):5} requests  p50 {percentile(inside, 0.5):7.1f}"
                          f"  p99 {percentile(inside, 0.99):7.1f}  max {max(inside):7.1f}")
            worst = max((r[1] for r in records), default=0)
            check(f"{name}: every well-behaved request answered within 5 s", worst < 5, worst)
    shutil.rmtree(work, ignore_errors=True)
    return check.report("hostile", results)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--client":
        well_behaved(int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4])
        sys.exit(0)
    sys.exit(main())
