#!/usr/bin/python3
"""What a kubelet and `kubectl apply` would do, for the chart test (chart.sh), on a
control plane without nodes that run pods. Debian's python3 with python3-yaml.

    kubelet_standin.py apply MANIFESTS.yaml
        Server-side applies every object of a multi-document YAML file (as
        `kubectl apply --server-side` does): created for real, not dry-run. Prints
        one line per object.

    kubelet_standin.py run-pod NAMESPACE/DEPLOYMENT POD-NAME DIR --image REF=EXECUTABLE ...
        Runs one pod of the Deployment's template on this machine, as a kubelet
        would: its containers' command and args verbatim, each container in a
        private mount and UTS namespace (hostname POD-NAME) whose root is an overlay
        of this machine's root, read-only when the container asks for a read-only
        root file system, with the pod's volumes mounted at their mountPaths
        (ConfigMaps and Secrets read from the API server), a token of the pod's
        ServiceAccount at /var/run/secrets/kubernetes.io/serviceaccount, the
        container's env (fieldRef metadata.name/namespace resolved) plus
        KUBERNETES_SERVICE_HOST/PORT, and the pod's runAsUser/runAsGroup. An image
        is a file put on PATH as the command's name (REF is the image reference the
        template names). Pods share this machine's network, as a pod's containers
        share theirs. Prints "CONTAINER PID" per container; logs go to
        DIR/<container>.log.

Talks to the API server with the admin client certificate of the environment
(KUBE_SERVER, KUBE_CA, KUBE_CLIENT_CERT, KUBE_CLIENT_KEY).
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import ssl
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

import yaml

# Where each kind the chart renders lives (group/version path, plural, namespaced).
RESOURCES = {
    ("v1", "ServiceAccount"): ("api/v1", "serviceaccounts", True),
    ("v1", "ConfigMap"): ("api/v1", "configmaps", True),
    ("v1", "Secret"): ("api/v1", "secrets", True),
    ("v1", "Service"): ("api/v1", "services", True),
    ("apps/v1", "Deployment"): ("apis/apps/v1", "deployments", True),
    ("batch/v1", "Job"): ("apis/batch/v1", "jobs", True),
    ("policy/v1", "PodDisruptionBudget"): ("apis/policy/v1", "poddisruptionbudgets", True),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): ("apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"):
        ("apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    ("rbac.authorization.k8s.io/v1", "Role"): ("apis/rbac.authorization.k8s.io/v1", "roles", True),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ("apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"):
        ("apis/admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", False),
}


def fail(message: str) -> None:
    print(f"kubelet_standin: {message}", file=sys.stderr)
    sys.exit(1)


def api(method: str, path: str, body: bytes | None = None, content_type: str = "application/json") -> dict:
    context = ssl.create_default_context(cafile=os.environ["KUBE_CA"])
    context.load_cert_chain(os.environ["KUBE_CLIENT_CERT"], os.environ["KUBE_CLIENT_KEY"])
    request = urllib.request.Request(os.environ["KUBE_SERVER"] + path, data=body, method=method,
                                     headers={"Accept": "application/json", "Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as response:
            return json.load(response)
    except urllib.error.HTTPError as e:
        fail(f"{method} {path}: HTTP {e.code}: {e.read()[:600].decode(errors='replace')}")
    raise AssertionError("unreachable")


def object_path(obj: dict) -> str:
    key = (obj.get("apiVersion"), obj.get("kind"))
    if key not in RESOURCES:
        fail(f"no REST path known for {key[1]} {key[0]} (add it to RESOURCES)")
    prefix, plural, namespaced = RESOURCES[key]
    meta = obj.get("metadata", {})
    if namespaced:
        if not meta.get("namespace"):
            fail(f"{key[1]} {meta.get('name')} has no namespace (render with --namespace)")
        return f"/{prefix}/namespaces/{meta['namespace']}/{plural}/{meta['name']}"
    return f"/{prefix}/{plural}/{meta['name']}"


def cmd_apply(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        objects = [o for o in yaml.safe_load_all(f) if o]
    for obj in objects:
        target = object_path(obj) + "?fieldManager=devshare-chart-test&force=true"
        applied = api("PATCH", target, json.dumps(obj).encode(), "application/apply-patch+yaml")
        print(f"applied {applied['kind']} {applied['metadata'].get('namespace', '-')}/{applied['metadata']['name']}")


def world_reachable(path: str) -> bool:
    """Whether any user can read `path` (and enter every directory above it)."""
    path = os.path.realpath(path)
    if not os.stat(path).st_mode & 0o004:
        return False
    parent = os.path.dirname(path)
    while parent != "/":
        if not os.stat(parent).st_mode & 0o001:
            return False
        parent = os.path.dirname(parent)
    return True


def resolve_env(container: dict, pod_name: str, namespace: str) -> dict[str, str]:
    env = {}
    for e in container.get("env", []):
        if "value" in e:
            env[e["name"]] = e["value"]
            continue
        field = e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
        if field == "metadata.name":
            env[e["name"]] = pod_name
        elif field == "metadata.namespace":
            env[e["name"]] = namespace
        else:
            fail(f"container {container['name']}: env {e['name']}: only values and metadata.name/namespace "
                 "field references are supported")
    return env


def write_volume(volume: dict, namespace: str, into: str) -> None:
    os.makedirs(into, exist_ok=True)
    if "configMap" in volume:
        data = api("GET", f"/api/v1/namespaces/{namespace}/configmaps/{volume['configMap']['name']}").get("data", {})
        files = {k: v.encode() for k, v in data.items()}
    elif "secret" in volume:
        data = api("GET", f"/api/v1/namespaces/{namespace}/secrets/{volume['secret']['secretName']}").get("data", {})
        files = {k: base64.b64decode(v) for k, v in data.items()}
    else:
        fail(f"volume {volume['name']}: only configMap and secret volumes are supported")
    for key, content in files.items():
        with open(os.path.join(into, key), "wb") as f:
            f.write(content)
        os.chmod(os.path.join(into, key), 0o644)  # the kubelet's default mode


def cmd_run_pod(deployment: str, pod_name: str, workdir: str, images: dict[str, str]) -> None:
    namespace, name = deployment.split("/", 1)
    spec = api("GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}")["spec"]["template"]["spec"]
    os.makedirs(workdir, exist_ok=True)
    # The ServiceAccount's token, as the kubelet projects it.
    account = spec.get("serviceAccountName", "default")
    token = api("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
                json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                            "spec": {"expirationSeconds": 3600}}).encode())["status"]["token"]
    sa_dir = os.path.join(workdir, "serviceaccount")
    os.makedirs(sa_dir, exist_ok=True)
    with open(os.environ["KUBE_CA"], "rb") as f:
        ca = f.read()
    for key, content in (("token", token.encode()), ("ca.crt", ca), ("namespace", namespace.encode())):
        with open(os.path.join(sa_dir, key), "wb") as f:
            f.write(content)
        os.chmod(os.path.join(sa_dir, key), 0o644)
    volumes = {}
    for v in spec.get("volumes", []):
        volumes[v["name"]] = os.path.join(workdir, "volumes", v["name"])
        write_volume(v, namespace, volumes[v["name"]])
    pod_security = spec.get("securityContext", {})
    server = urllib.parse.urlparse(os.environ["KUBE_SERVER"])
    for c in spec["containers"]:
        if c["image"] not in images:
            fail(f"container {c['name']}: no executable given for image {c['image']} (--image {c['image']}=PATH)")
        argv = list(c.get("command", [])) + list(c.get("args", []))
        if not argv:
            fail(f"container {c['name']}: no command (an image's entrypoint is not known here)")
        security = {**pod_security, **c.get("securityContext", {})}
        root = os.path.join(workdir, c["name"], "root")
        upper, work = os.path.join(workdir, c["name"], "upper"), os.path.join(workdir, c["name"], "work")
        for d in (root, upper, work):
            os.makedirs(d, exist_ok=True)
        q = shlex.quote
        steps = [f"mount -t overlay overlay -o lowerdir=/,upperdir={q(upper)},workdir={q(work)} {q(root)}"]
        for special in ("/proc", "/sys", "/dev"):
            steps.append(f"mount --rbind {special} {q(root + special)}")
        # The image's executable on PATH: a link, so that it finds its libraries
        # beside it ($ORIGIN) as it does here, or a copy when the container's user
        # could not reach it (a cache under root's home).
        binary = f"/usr/local/bin/{os.path.basename(argv[0])}"
        place = "ln -sf" if world_reachable(images[c["image"]]) else "cp"
        steps.append(f"{place} {q(images[c['image']])} {q(root + binary)}")
        mounts = [(m["mountPath"], volumes[m["name"]], m.get("readOnly", False)) for m in c.get("volumeMounts", [])]
        mounts.append(("/var/run/secrets/kubernetes.io/serviceaccount", sa_dir, True))
        for mount_path, source, read_only in mounts:
            # Symbolic links on the way (/var/run -> /run) resolved as inside the root,
            # whose lower layer is this machine's root.
            target = q(root + os.path.realpath(mount_path))
            steps += [f"mkdir -p {target}", f"mount --bind {q(source)} {target}"]
            if read_only:
                steps.append(f"mount -o remount,bind,ro {target}")
        if security.get("readOnlyRootFilesystem"):
            steps.append(f"mount -o remount,bind,ro {q(root)}")
        steps.append(f"hostname {q(pod_name)}")
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOSTNAME": pod_name,
               "KUBERNETES_SERVICE_HOST": server.hostname, "KUBERNETES_SERVICE_PORT": str(server.port),
               **resolve_env(c, pod_name, namespace)}
        user = ""
        if "runAsUser" in security:
            user = f"--userspec={security['runAsUser']}:{security.get('runAsGroup', security['runAsUser'])}"
        steps.append("exec chroot " + " ".join([user, q(root), "env", "-i",
                                                *(q(f"{k}={v}") for k, v in env.items()),
                                                *(q(binary if i == 0 else a) for i, a in enumerate(argv))]))
        log = open(os.path.join(workdir, f"{c['name']}.log"), "wb")
        process = subprocess.Popen(["unshare", "--mount", "--uts", "--propagation", "private", "sh", "-ec",
                                    "\n".join(steps)], stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        print(f"{c['name']} {process.pid}", flush=True)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "apply":
        cmd_apply(sys.argv[2])
    elif len(sys.argv) >= 5 and sys.argv[1] == "run-pod":
        images = {}
        rest = sys.argv[5:]
        while rest:
            if rest[0] != "--image" or len(rest) < 2 or "=" not in rest[1]:
                fail("usage: run-pod NAMESPACE/DEPLOYMENT POD-NAME DIR --image REF=EXECUTABLE ...")
            ref, path = rest[1].split("=", 1)
            images[ref] = os.path.abspath(path)
            rest = rest[2:]
        cmd_run_pod(sys.argv[2], sys.argv[3], sys.argv[4], images)
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
