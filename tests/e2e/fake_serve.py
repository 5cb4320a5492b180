#!/usr/bin/env python3
"""A stand-in for `devshare serve` that checks the control plane's wiring, not
devshare: a scheduler extender over HTTP (filter keeps every node, bind creates
the Binding through the API server) and a mutating admission webhook over
HTTPS (adds the annotation devshare.test/mutated=true to each pod created).

    fake_serve.py --extender-port P --webhook-port Q

The API server, CA, serving and client certificates come from the control
plane's environment (control-plane.sh run exports them). Every request is
printed as one JSON line on stdout, so a test can see what was called.
"""
import argparse
import base64
import json
import os
import ssl
import sys
import threading
import urllib.parse
import urllib.request
from http.server import ThreadingHTTPServer

from json_http import JsonHandler


def api_context():
    ctx = ssl.create_default_context(cafile=os.environ["KUBE_CA"])
    ctx.load_cert_chain(os.environ["SERVE_CLIENT_CERT"], os.environ["SERVE_CLIENT_KEY"])
    return ctx


def log(kind, **fields):
    print(json.dumps({"call": kind, **fields}), flush=True)


class Handler(JsonHandler):  # calls are logged as JSON lines

    def do_POST(self):
        args = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        path = urllib.parse.urlsplit(self.path).path.rstrip("/")  # the API server adds ?timeout=
        if path.endswith("/filter"):
            names = args.get("NodeNames") or args.get("nodenames") or []
            pod = args.get("Pod") or args.get("pod") or {}
            log("filter", pod=pod.get("metadata", {}).get("name"), nodes=names)
            self.reply(200, {"NodeNames": names, "FailedNodes": {}, "Error": ""})
        elif path.endswith("/bind"):
            binding = {"apiVersion": "v1", "kind": "Binding",
                       "metadata": {"name": args["PodName"], "namespace": args["PodNamespace"],
                                    "uid": args["PodUID"]},
                       "target": {"apiVersion": "v1", "kind": "Node", "name": args["Node"]}}
            url = (f"{os.environ['KUBE_SERVER']}/api/v1/namespaces/{args['PodNamespace']}"
                   f"/pods/{args['PodName']}/binding")
            req = urllib.request.Request(url, data=json.dumps(binding).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
            error = ""
            try:
                urllib.request.urlopen(req, context=api_context(), timeout=10).read()
            except Exception as e:  # the extender reports it to kube-scheduler
                error = str(e)
            log("bind", pod=args["PodName"], node=args["Node"], error=error)
            self.reply(200, {"Error": error})
        elif path.endswith("/webhook"):
            request = args["request"]
            patch = [{"op": "add", "path": "/metadata/annotations", "value": {}}] \
                if not request["object"]["metadata"].get("annotations") else []
            patch.append({"op": "add", "path": "/metadata/annotations/devshare.test~1mutated",
                          "value": "true"})
            log("webhook", pod=request["object"]["metadata"].get("name"), operation=request["operation"])
            self.reply(200, {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                        "response": {"uid": request["uid"], "allowed": True, "patchType": "JSONPatch",
                                     "patch": base64.b64encode(json.dumps(patch).encode()).decode()}})
        else:
            self.reply(404, {"Error": f"unknown path {self.path}"})


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--extender-port", type=int, required=True)
    p.add_argument("--webhook-port", type=int, required=True)
    a = p.parse_args()
    extender = ThreadingHTTPServer(("127.0.0.1", a.extender_port), Handler)
    webhook = ThreadingHTTPServer(("127.0.0.1", a.webhook_port), Handler)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(os.environ["SERVE_CERT"], os.environ["SERVE_KEY"])
    webhook.socket = tls.wrap_socket(webhook.socket, server_side=True)
    threading.Thread(target=webhook.serve_forever, daemon=True).start()
    log("listening", extender=a.extender_port, webhook=a.webhook_port)
    try:
        extender.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
