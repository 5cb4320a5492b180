"""`devshare serve` against the stand-in API server (fake_apiserver.py): the
harness of the checks that need a running serve but no cluster
(serve_check.py, tests/deploy/check_observability.py).

    with ServeStandIn(devshare, nodes=3) as serve:
        if serve.wait_ready() == 200:
            status, body = serve.call("GET", "/metrics")

serve's output goes to a log file in a temporary directory (`log_tail()`);
leaving the block stops both processes (TERM, then KILL after 10 s), and
`returncode` is serve's exit status then.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from typing import Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))


class Checks:
    """Named checks, counted; each failure printed with its detail. `report`
    prints "<suite>: P passed, F failed", appends "<suite> P F" to the results
    file (when given) and returns the exit status."""

    def __init__(self) -> None:
        self.passed = self.failed = 0

    def __call__(self, name: str, ok: bool, detail: object = "") -> None:
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}")

    def report(self, suite: str, results: str) -> int:
        print(f"{suite}: {self.passed} passed, {self.failed} failed")
        if results:
            with open(results, "a") as f:
                f.write(f"{suite} {self.passed} {self.failed}\n")
        return 1 if self.failed else 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServeStandIn:
    def __init__(self, devshare: str, nodes: int, api_args: Sequence[str] = (),
                 serve_args: Sequence[str] = ("--node-policy", "binpack"),
                 listen_address: str = "127.0.0.1") -> None:
        self.api_port, self.port = free_port(), free_port()
        self.work = tempfile.mkdtemp()
        kubeconfig = os.path.join(self.work, "kubeconfig")
        with open(kubeconfig, "w", encoding="utf-8") as f:
            f.write(f"""apiVersion: v1
kind: Config
current-context: t
contexts: [{{name: t, context: {{cluster: t, user: t}}}}]
clusters: [{{name: t, cluster: {{server: "http://127.0.0.1:{self.api_port}"}}}}]
users: [{{name: t, user: {{}}}}]
""")
        self._log = open(os.path.join(self.work, "serve.log"), "wb")
        self._api = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_apiserver.py"),
                                      "--port", str(self.api_port), "--nodes", str(nodes), *api_args],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._serve = subprocess.Popen([devshare, "serve", "--kubeconfig", kubeconfig,
                                        "--listen", f"{listen_address}:{self.port}", *serve_args],
                                       stdout=self._log, stderr=subprocess.STDOUT)
        self.returncode: Optional[int] = None

    def __enter__(self) -> "ServeStandIn":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def call(self, method: str, path: str, body: Optional[bytes] = None,
             port: Optional[int] = None) -> tuple[int, bytes]:
        """One HTTP request to serve (on `port`, else its --listen port): (status, body);
        HTTP errors are answers too."""
        req = urllib.request.Request(f"http://127.0.0.1:{port or self.port}{path}", data=body, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=20) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def wait_ready(self, seconds: float = 30) -> int:
        """Polls /readyz until 200, serve exits or `seconds` pass; the last status (0: no answer)."""
        deadline = time.time() + seconds
        status = 0
        while time.time() < deadline and self._serve.poll() is None:
            try:
                status, _ = self.call("GET", "/readyz")
            except OSError:
                status = 0
            if status == 200:
                break
            time.sleep(0.2)
        return status

    def stop(self) -> None:
        for p in (self._serve, self._api):
            if p.poll() is None:
                p.terminate()
        for p in (self._serve, self._api):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.returncode = self._serve.returncode
        self._log.close()

    def log_tail(self, size: int = 2000) -> str:
        with open(self._log.name, errors="replace") as f:
            return f.read()[-size:]
