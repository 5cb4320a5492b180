"""End-to-end checks of `devshare serve` against the stand-in API server.

Starts fake_apiserver.py (20 nodes of 8 GPUs) and `devshare serve`, then
checks every route: /readyz, /filter (placement; the reasons of every node
when none is kept; the first watch ended by a 410, so a relist), /bind
(lock, its PATCH first answered 429 with Retry-After; the Binding carrying
the placement), /prioritize (higher is better
under every node policy),
/webhook (AdmissionReview with the schedulerName patch), /metrics, and the
errors: 400 for malformed JSON, 404 for an unknown path, 405 for a wrong
method, 413 for a body over 1 MiB. Then the drift auditor (/debug/audit on
a serve whose grace is 0: a placement the stand-in's pods never show is a
pod gone from the API server, healed by a read that finds none) and who may
call what (a serve listening on 0.0.0.0 refuses the extender's routes there
and serves them on its loopback extender listener; one on 0.0.0.0 with a
client CA serves a client with a certificate of that CA and refuses one
without, or with another CA's; a non-loopback extender listener without a
client CA is refused at start). Prints "serve: N passed,
M failed".

Usage: python3 serve_check.py DEVSHARE [RESULTS]
"""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import tempfile
import time

from serve_stand_in import Checks, ServeStandIn, free_port


def pod(name: str, percent: int) -> dict:
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"containers": [{"name": "c", "resources": {"limits": {
                "nvidia.com/gpu": "1", "nvidia.com/gpumem-percentage": str(percent),
                "nvidia.com/gpucores": str(percent)}}}]}}


def audit_checks(devshare: str, check) -> None:
    with ServeStandIn(devshare, nodes=3, serve_args=["--audit-period", "0", "--audit-grace", "0"]) as serve:
        check("audit: serve with --audit-grace 0 turns ready", serve.wait_ready() == 200, serve.log_tail())
        status, body = serve.call("GET", "/debug/audit")
        first = json.loads(body) if status == 200 else {}
        check("audit: /debug/audit lists the API server afresh and finds the cache agrees",
              first.get("differences") == [] and first.get("list", {}).get("nodes") == 3
              and first["list"]["pages"] == 3 and first["list"].get("quotas") == 0
              and first["list"]["bytes"] > 0 and first.get("audits") == 1,
              body[:400])
        names = [f"node-{i:05d}" for i in range(3)]
        status, body = serve.call("POST", "/filter",
                                  json.dumps({"Pod": pod("ghost", 50), "Nodes": None, "NodeNames": names}).encode())
        check("audit: a pod is placed (reserved in the cache)", status == 200 and b'"NodeNames":["node-' in body, body[:200])
        status, body = serve.call("GET", "/debug/audit")
        found = json.loads(body) if status == 200 else {}
        gone = [d for d in found.get("differences", []) if d["kind"] == "pod-gone"]
        check("audit: the placed pod the API server does not have is a pod gone, confirmed and healed",
              len(gone) == 1 and gone[0]["object"] == "default/ghost" and gone[0]["confirmed"]
              and gone[0]["healed"] and "reservation" in gone[0]["detail"]
              and found["totals"]["pod-gone"] == 1, body[:600])
        deadline = time.time() + 10
        while time.time() < deadline:  # the heal's read is answered 404: the reservation goes
            status, body = serve.call("GET", "/debug/audit")
            if status == 200 and json.loads(body)["differences"] == []:
                break
            time.sleep(0.2)
        check("audit: after the heal the cache agrees again", json.loads(body).get("differences") == [], body[:400])
        text = serve.call("GET", "/metrics")[1].decode()
        check("audit: /metrics counts the difference and its heal",
              'devshare_audit_differences_total{kind="pod-gone"} 1' in text
              and 'devshare_audit_healed_total{kind="pod-gone"} 1' in text
              and re.search(r"^devshare_audits_total [3-9]", text, re.M) is not None, text[-1500:])
        check("audit: the log names the difference",
              "audit: pod-gone default/ghost" in serve.log_tail(20000), serve.log_tail())


def listener_checks(devshare: str, check) -> None:
    extender_port = free_port()
    with ServeStandIn(devshare, nodes=3, listen_address="0.0.0.0",
                      serve_args=["--extender-listen", f"127.0.0.1:{extender_port}"]) as serve:
        check("listeners: serve on 0.0.0.0 turns ready", serve.wait_ready() == 200, serve.log_tail())
        names = [f"node-{i:05d}" for i in range(3)]
        args = json.dumps({"Pod": pod("x", 50), "Nodes": None, "NodeNames": names}).encode()
        bind = json.dumps({"PodName": "x", "PodNamespace": "default", "PodUID": "uid-x",
                           "Node": "node-00000"}).encode()
        for route, body in [("/filter", args), ("/bind", bind), ("/prioritize", args)]:
            status, answer = serve.call("POST", route, body)
            check(f"listeners: {route} on the listener the network reaches is refused (403)",
                  status == 403 and b"extender listener" in answer, (status, answer[:200]))
        status, _ = serve.call("GET", "/debug/audit")
        check("listeners: /debug/audit there is refused (403)", status == 403, status)
        status, _ = serve.call("GET", "/healthz")
        check("listeners: /healthz is served there", status == 200, status)
        status, answer = serve.call("POST", "/filter", args, port=extender_port)
        check("listeners: /filter on the loopback extender listener is served",
              status == 200 and b'"NodeNames":["node-' in answer, (status, answer[:200]))
        status, answer = serve.call("POST", "/bind", bind, port=extender_port)
        check("listeners: /bind on the loopback extender listener is served",
              status == 200 and json.loads(answer) == {"Error": ""}, (status, answer[:200]))
    client_certificate_checks(devshare, check)
    refused = subprocess.run([devshare, "serve", "--kubeconfig", "/dev/null", "--listen", "127.0.0.1:0",
                              "--extender-listen", "0.0.0.0:0"], capture_output=True, text=True, timeout=20)
    check("listeners: a non-loopback extender listener without a client CA is refused at start",
          refused.returncode == 1 and "--extender-client-ca" in refused.stderr, refused.stderr)


def client_certificate_checks(devshare: str, check) -> None:
    """An extender listener the network reaches (0.0.0.0) with --extender-client-ca:
    a client with a certificate of that CA is served, one without is refused."""
    work = tempfile.mkdtemp()
    f = lambda name: os.path.join(work, name)  # noqa: E731
    def run(*args: str) -> None:
        subprocess.run(list(args), check=True, capture_output=True)
    for ca in ("ca", "other-ca"):
        run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f(f"{ca}.key"), "-out", f(f"{ca}.crt"), "-days", "1", "-subj", f"/CN={ca}")
    for name, ca, ext in (("serve", "ca", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth"),
                          ("client", "ca", "extendedKeyUsage=clientAuth"),
                          ("stranger", "other-ca", "extendedKeyUsage=clientAuth")):
        run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f(f"{name}.key"), "-out", f(f"{name}.csr"), "-subj", f"/CN={name}")
        with open(f(f"{name}.ext"), "w") as e:
            e.write(ext + "\n")
        run("openssl", "x509", "-req", "-in", f(f"{name}.csr"), "-CA", f(f"{ca}.crt"), "-CAkey", f(f"{ca}.key"),
            "-CAcreateserial", "-days", "1", "-extfile", f(f"{name}.ext"), "-out", f(f"{name}.crt"))
    port = free_port()
    with ServeStandIn(devshare, nodes=3, serve_args=[
            "--extender-listen", f"0.0.0.0:{port}", "--extender-client-ca", f("ca.crt"),
            "--tls-cert", f("serve.crt"), "--tls-key", f("serve.key")]) as serve:
        def healthz(cert: str | None) -> int:
            ctx = ssl.create_default_context(cafile=f("ca.crt"))
            if cert:
                ctx.load_cert_chain(f(f"{cert}.crt"), f(f"{cert}.key"))
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
                    with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                        tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                        answer = tls.recv(4096)
                return int(answer.split()[1]) if answer.startswith(b"HTTP/1.1") else 0
            except (OSError, ssl.SSLError):
                return 0

        deadline = time.time() + 30
        while healthz("client") != 200 and time.time() < deadline:
            time.sleep(0.2)
        check("client certificates: a client with a certificate of the CA is served",
              healthz("client") == 200, serve.log_tail())
        check("client certificates: a client without a certificate is refused", healthz(None) == 0)
        check("client certificates: a client with another CA's certificate is refused",
              healthz("stranger") == 0)


def main() -> int:
    devshare = sys.argv[1]
    results = sys.argv[2] if len(sys.argv) > 2 else ""
    serve = ServeStandIn(devshare, nodes=20, api_args=["--throttle", "1", "--expire", "1"])
    call, port = serve.call, serve.port
    check = Checks()

    try:
        status = serve.wait_ready()
        check("readyz turns 200 once the cache is synced", status == 200, status)
        status, _ = call("GET", "/readyz/admission")
        check("readyz/admission is 200 once the cache is synced", status == 200, status)
        status, _ = call("POST", "/readyz/admission")
        check("readyz/admission answers only GET", status == 405, status)
        names = [f"node-{i:05d}" for i in range(20)]
        status, body = call("POST", "/filter",
                            json.dumps({"Pod": pod("a", 50), "Nodes": None, "NodeNames": names}).encode())
        result = json.loads(body) if status == 200 else {}
        check("filter places the pod on one node", status == 200 and len(result.get("NodeNames") or []) == 1, body[:200])
        chosen = (result.get("NodeNames") or [""])[0]
        check("a placed pod's result leaves the candidates not chosen out of FailedNodes",
              result.get("FailedNodes") == {}, result.get("FailedNodes"))
        nine = pod("nine", 50)
        nine["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "9"
        status, body = call("POST", "/filter",
                            json.dumps({"Pod": nine, "Nodes": None, "NodeNames": names}).encode())
        unplaced = json.loads(body) if status == 200 else {}
        # No pod of lower priority to evict: no eviction helps on any node.
        check("an unschedulable pod's result gives every candidate's reason, unresolvable",
              unplaced.get("NodeNames") == [] and unplaced.get("FailedNodes") == {}
              and sorted(unplaced.get("FailedAndUnresolvableNodes", {})) == names,
              body[:300])
        # The preempt verb: a node no eviction helps is left out; one the pod
        # fits once the proposed victims are gone passes as proposed.
        proposal = {names[0]: {"Pods": [], "NumPDBViolations": 0}}
        status, body = call("POST", "/preempt",
                            json.dumps({"Pod": nine, "NodeNameToMetaVictims": proposal}).encode())
        check("preempt leaves out a node no eviction helps",
              status == 200 and json.loads(body) == {"NodeNameToMetaVictims": {}}, body[:200])
        status, body = call("POST", "/preempt",
                            json.dumps({"Pod": pod("c", 10), "NodeNameToMetaVictims": proposal}).encode())
        check("preempt passes a node the pod fits on as proposed",
              status == 200 and json.loads(body) == {"NodeNameToMetaVictims": proposal}, body[:200])
        status, body = call("POST", "/preempt", json.dumps(
            {"Pod": nine, "NodeNameToMetaVictims": {names[0]: {"Pods": [{}]}}}).encode())
        check("preempt names what is wrong in a request (400)",
              status == 400 and b"has no UID" in body, body[:200])
        status, body = call("POST", "/bind", json.dumps(
            {"PodName": "a", "PodNamespace": "default", "PodUID": "uid-a", "Node": chosen}).encode())
        check("bind locks the node, marks the pod and posts the Binding",
              status == 200 and json.loads(body) == {"Error": ""}, body)
        status, body = call("POST", "/prioritize",
                            json.dumps({"Pod": pod("b", 25), "Nodes": None, "NodeNames": names[:3]}).encode())
        scores = json.loads(body) if status == 200 else []
        check("prioritize scores the nodes 0..10",
              status == 200 and all(0 <= s["Score"] <= 10 for s in scores) and len(scores) == 3, body)
        # Higher is better under every node policy (the pod's annotation overrides
        # the serve's binpack): `chosen` holds pod a, the other two are empty.
        for policy, gpu_policy, loaded_first in [("binpack", "spread", True), ("spread", "spread", False),
                                                 ("fgd", "fgd", True), ("volcano", "binpack", True)]:
            p = pod(f"rank-{policy}", 25)
            p["metadata"]["annotations"] = {"hami.io/node-scheduler-policy": policy,
                                            "hami.io/gpu-scheduler-policy": gpu_policy}
            status, body = call("POST", "/prioritize",
                                json.dumps({"Pod": p, "Nodes": None, "NodeNames": names[:3]}).encode())
            ranked = {s["Host"]: s["Score"] for s in json.loads(body)} if status == 200 else {}
            others = [ranked.get(n) for n in names[:3] if n != chosen]
            want = ranked.get(chosen) == 10 and others == [0, 0] if loaded_first else \
                ranked.get(chosen) == 0 and others == [10, 10]
            check(f"prioritize under the {policy} node policy ranks the node it prefers first", want, body)
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                  "request": {"uid": "r1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                              "operation": "CREATE", "namespace": "default",
                              "object": {**pod("c", 10), "spec": {**pod("c", 10)["spec"],
                                                                  "schedulerName": "default-scheduler"}}}}
        status, body = call("POST", "/webhook", json.dumps(review).encode())
        response = json.loads(body).get("response", {}) if status == 200 else {}
        patch = base64.b64decode(response.get("patch", "")).decode() if response.get("patch") else ""
        check("webhook answers the review with the schedulerName patch",
              response.get("uid") == "r1" and response.get("allowed") is True and "devshare-scheduler" in patch, body)
        status, body = call("GET", "/metrics")
        text = body.decode()
        check("metrics count the Filter and the API calls",
              status == 200 and 'devshare_filter_duration_seconds_count{outcome="placed"} 1' in text
              and 'devshare_api_requests_total{verb="binding",code="201"} 1' in text, text[:400])
        check("a watch ended by a 410 ERROR event was followed by a relist (4 lists: nodes twice, pods, "
              "quotas)", 'devshare_api_requests_total{verb="list",code="200"} 4' in text, text[-800:])
        reuses = re.search(r"^devshare_api_connection_reuses_total (\d+)$", text, re.M)
        check("API requests reuse kept-alive connections (the stand-in keeps them alive)",
              reuses is not None and int(reuses.group(1)) > 0, text[-800:])
        check("a 429 with Retry-After was retried (the Bind above still locked the node)",
              'devshare_api_requests_total{verb="patch-node",code="429"} 1' in text
              and 'devshare_api_requests_total{verb="patch-node",code="200"}' in text, text[-800:])
        status, body = call("POST", "/filter", b"{not json")
        check("malformed JSON is a 400 with the reason", status == 400 and b"not JSON" in body, (status, body))
        status, _ = call("GET", "/nothing")
        check("an unknown path is a 404", status == 404, status)
        status, _ = call("GET", "/filter")
        check("a wrong method is a 405", status == 405, status)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:  # the answer comes before the body
            s.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n{")
            reply = s.recv(4096)
        check("a body over 1 MiB is a 413", reply.startswith(b"HTTP/1.1 413"), reply[:100])
    finally:
        serve.stop()
        check("serve stops cleanly on SIGTERM", serve.returncode == 0, (serve.returncode, serve.log_tail()))
    audit_checks(devshare, check)
    listener_checks(devshare, check)
    return check.report("serve", results)


if __name__ == "__main__":
    sys.exit(main())
