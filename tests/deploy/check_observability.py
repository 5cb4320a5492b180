"""Checks of the Grafana dashboard and the Prometheus rules over `devshare serve`.

  promtool   `promtool check rules` on deploy/prometheus/devshare-rules.yaml;
             `promtool test rules` on tests/deploy/devshare-rules.test.yaml
             (each alert fires on its series and stays quiet on a healthy
             replica); every dashboard query, its Grafana variables replaced,
             parses as PromQL; the scrape below passes `promtool check metrics`.
             promtool comes with Debian's `prometheus` package: when it is
             missing this script installs it (apt-get), and when that fails
             these checks are reported as skipped, never as passed.
  serve      starts the stand-in API server (tests/e2e/fake_apiserver.py) and a
             real `devshare serve`, places and binds one pod, and scrapes
             /metrics: the GPU gauges hold the values the cluster implies, and
             every metric name in every PromQL expression of the dashboard and
             of the rules is exported (a histogram's _bucket, _sum and _count
             are its family's); an expression naming no devshare_ metric fails.

Prints "observability: N passed, M failed[, K skipped]" and exits 1 when a check
failed. With RESULTS, appends "observability P F S" to that file.

Usage: python3 tests/deploy/check_observability.py [--devshare PATH]
           [--dashboard JSON] [--rules YAML] [RESULTS]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
E2E = os.path.join(ROOT, "tests", "e2e")
sys.path.insert(0, E2E)
from serve_stand_in import ServeStandIn  # noqa: E402

METRIC = re.compile(r"(?<![A-Za-z0-9_:])devshare_[A-Za-z0-9_:]*")
STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
# Grafana's variables, replaced by values a query would see.
GRAFANA_VARS = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h", "job": ".*"}


class Checks:
    def __init__(self) -> None:
        self.passed = self.failed = self.skipped = 0

    def check(self, name: str, ok: bool, detail: object = "") -> bool:
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}")
        return ok

    def skip(self, name: str, reason: str) -> None:
        self.skipped += 1
        print(f"SKIP {name}: {reason}")


# ---- the expressions


def dashboard_exprs(dashboard: dict) -> list[tuple[str, str]]:
    """(where, PromQL) of every panel target and every query variable."""
    out: list[tuple[str, str]] = []

    def panels(items: list) -> None:
        for p in items:
            for t in p.get("targets", []):
                if t.get("expr"):
                    out.append((f"panel {p.get('title')!r} target {t.get('refId')}", t["expr"]))
            panels(p.get("panels", []))

    panels(dashboard.get("panels", []))
    for v in dashboard.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v.get("query")
            q = q.get("query", "") if isinstance(q, dict) else q or ""
            out.append((f"variable {v.get('name')!r}", q))
    return out


def rules_exprs(text: str) -> list[tuple[str, str]]:
    """(where, PromQL) of every rule's expr: in the YAML this file is written
    in (plain, quoted, or | and > block scalars), without a YAML library."""
    lines = text.splitlines()
    out: list[tuple[str, str]] = []
    name = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^(\s*)(?:- )?(alert|record):\s*(.*)$", line)
        if m:
            name = m.group(3).strip().strip("'\"")
        m = re.match(r"^(\s*)(?:- )?expr:\s*(.*)$", line)
        if not m:
            i += 1
            continue
        indent = len(m.group(1)) + (2 if line.lstrip().startswith("- ") else 0)
        value = m.group(2).split(" #")[0].strip() if not m.group(2).startswith(("'", '"')) else m.group(2).strip()
        raw = []
        i += 1
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
            raw.append(lines[i].rstrip())
            i += 1
        body = [b for b in raw if b.strip()]
        if value[:1] == "|":  # literal: the lines less their common indentation
            common = min((len(b) - len(b.lstrip()) for b in body), default=0)
            expr = "\n".join(b[common:] for b in body)
        elif value[:1] == ">":
            expr = " ".join(b.strip() for b in body)
        else:
            expr = " ".join([value] + [b.strip() for b in body])
            if expr[:1] in ("'", '"') and expr[-1:] == expr[:1]:
                expr = expr[1:-1].replace("''", "'") if expr[0] == "'" else json.loads(expr)
        out.append((f"rule {name}", expr.strip()))
    return out


def metric_names(expr: str) -> set[str]:
    """The devshare_ identifiers of a PromQL expression, outside string literals."""
    return set(METRIC.findall(STRING.sub('""', expr)))


def grafana_to_promql(expr: str) -> str:
    def var(m: re.Match) -> str:
        name = m.group(1) or m.group(2)
        return GRAFANA_VARS.get(name, m.group(0))

    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)", var, expr)


# ---- the scrape


def parse_exposition(text: str) -> tuple[dict[str, str], dict[str, str], dict[str, list[tuple[str, float]]]]:
    """Families (name -> type), their HELP, and samples (name -> [(labels, value)])."""
    types: dict[str, str] = {}
    helps: dict[str, str] = {}
    samples: dict[str, list[tuple[str, float]]] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind.strip()
        elif line.startswith("# HELP "):
            parts = line.split(" ", 3)
            helps[parts[2]] = parts[3] if len(parts) > 3 else ""
        elif line and not line.startswith("#"):
            m = re.match(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)", line)
            if m:
                samples.setdefault(m.group(1), []).append((m.group(2) or "", float(m.group(3))))
    return types, helps, samples


def family_of(name: str, types: dict[str, str]) -> str | None:
    """The family a queried series name belongs to, or None: a histogram is
    queried through _bucket, _sum and _count, a summary through itself, _sum
    and _count, any other type through its own name."""
    kind = types.get(name)
    if kind is not None and kind != "histogram":
        return name
    for suffix, kinds in (("_bucket", ("histogram",)), ("_sum", ("histogram", "summary")),
                          ("_count", ("histogram", "summary"))):
        if name.endswith(suffix) and types.get(name[: -len(suffix)]) in kinds:
            return name[: -len(suffix)]
    return None


def scrape_serve(devshare: str, checks: Checks) -> str | None:
    """Runs fake_apiserver.py (3 nodes of 8 GPUs of 81920 MiB, a gpumem quota
    of 100000 MiB in `default`) and `devshare serve`, places and binds one pod
    asking half a GPU, and returns /metrics."""
    text = None
    with ServeStandIn(devshare, nodes=3,
                      api_args=["--quota", "default/gpu:limits.nvidia.com/gpumem=100000"]) as serve:
        status = serve.wait_ready()
        if not checks.check("serve turns ready against the stand-in API server", status == 200, status):
            return None
        names = [f"node-{i:05d}" for i in range(3)]
        pod = {"metadata": {"name": "a", "namespace": "default", "uid": "uid-a"},
               "spec": {"containers": [{"name": "c", "resources": {"limits": {
                   "nvidia.com/gpu": "1", "nvidia.com/gpumem-percentage": "50", "nvidia.com/gpucores": "50"}}}]}}
        status, body = serve.call("POST", "/filter",
                                  json.dumps({"Pod": pod, "Nodes": None, "NodeNames": names}).encode())
        chosen = ((json.loads(body).get("NodeNames") or [""]) if status == 200 else [""])[0]
        checks.check("filter places the pod", bool(chosen), body[:200])
        status, body = serve.call("POST", "/bind", json.dumps(
            {"PodName": "a", "PodNamespace": "default", "PodUID": "uid-a", "Node": chosen}).encode())
        checks.check("bind binds the pod", status == 200 and json.loads(body) == {"Error": ""}, body)
        status, body = serve.call("GET", "/metrics")
        if checks.check("/metrics answers 200", status == 200, status):
            text = body.decode()
            checks.check("the quota's limit and what the pod holds of it are exported",
                         'devshare_quota_limit{namespace="default",resource="nvidia.com/gpumem"} 100000' in text
                         and 'devshare_quota_used{namespace="default",resource="nvidia.com/gpumem"} 40960' in text
                         and "devshare_quotas 1" in text, text[-1500:])
    if text is None or serve.returncode != 0:
        print(f"devshare serve exited {serve.returncode}; its log ends:\n{serve.log_tail()}")
    shutil.rmtree(serve.work, ignore_errors=True)
    return text


def check_gauges(checks: Checks, samples: dict[str, list[tuple[str, float]]]) -> None:
    """The cluster: 3 nodes x 8 GPUs x (10 slots, 81920 MiB, 100 cores); one
    pod holds 50 % of one GPU's cores and memory."""

    def value(name: str) -> float | None:
        s = samples.get(name)
        return s[0][1] if s and len(s) == 1 else None

    gpus, allocated, free = value("devshare_gpus"), value("devshare_gpu_allocated"), value("devshare_gpu_free")
    fragmented = value("devshare_gpu_fragmented")
    checks.check("devshare_gpus counts the 24 devices, as devshare_devices does",
                 gpus == 24 and value("devshare_devices") == 24, (gpus, value("devshare_devices")))
    checks.check("devshare_gpu_allocated is the half GPU the pod holds", allocated == 0.5, allocated)
    checks.check("devshare_gpu_memory_bytes is 24 x 81920 MiB",
                 value("devshare_gpu_memory_bytes") == 24 * 81920 * 2**20, value("devshare_gpu_memory_bytes"))
    checks.check("devshare_gpu_memory_allocated_bytes is the pod's 40960 MiB",
                 value("devshare_gpu_memory_allocated_bytes") == 40960 * 2**20,
                 value("devshare_gpu_memory_allocated_bytes"))
    checks.check("devshare_gpu_free is what is not allocated (every device healthy, slots free)",
                 free is not None and allocated is not None and gpus is not None
                 and abs(free + allocated - gpus) < 1e-6, (free, allocated, gpus))
    checks.check("devshare_gpu_fragmented is in [0, devshare_gpu_free] and counts the half-used GPU",
                 fragmented is not None and free is not None and 0 < fragmented <= free, (fragmented, free))
    checks.check("devshare_pods counts the placed pod", value("devshare_pods") == 1, value("devshare_pods"))


# ---- promtool


def find_promtool() -> tuple[str | None, str]:
    """promtool's path, installing Debian's prometheus package when it is
    missing; else None and why."""
    found = shutil.which("promtool") or ("/usr/bin/promtool" if os.access("/usr/bin/promtool", os.X_OK) else None)
    if found:
        return found, ""
    if shutil.which("apt-get") is None:
        return None, "promtool is missing and there is no apt-get to install it"
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        return None, "promtool is missing and installing the prometheus package needs root"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "--no-install-recommends", "prometheus"]
    print("promtool is missing: apt-get install prometheus", flush=True)
    r = subprocess.run(install, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        subprocess.run(["apt-get", "update"], env=env, capture_output=True, text=True)
        r = subprocess.run(install, env=env, capture_output=True, text=True)
    found = shutil.which("promtool") or ("/usr/bin/promtool" if os.access("/usr/bin/promtool", os.X_OK) else None)
    if found:
        return found, ""
    return None, f"promtool is missing and apt-get install prometheus failed: {(r.stderr or r.stdout).strip()[-300:]}"


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kwargs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devshare", default=os.path.join(ROOT, "build", "lib", "cli", "devshare"))
    parser.add_argument("--dashboard", default=os.path.join(ROOT, "deploy", "grafana", "devshare.json"))
    parser.add_argument("--rules", default=os.path.join(ROOT, "deploy", "prometheus", "devshare-rules.yaml"))
    parser.add_argument("--rules-test", default=os.path.join(HERE, "devshare-rules.test.yaml"))
    parser.add_argument("results", nargs="?", default="")
    args = parser.parse_args()
    checks = Checks()

    # The files.
    dashboard: dict = {}
    try:
        with open(args.dashboard) as f:
            dashboard = json.load(f)
        checks.check("the dashboard is valid JSON", True)
    except (OSError, ValueError) as e:
        checks.check("the dashboard is valid JSON", False, e)
    rules_text = ""
    try:
        with open(args.rules) as f:
            rules_text = f.read()
    except OSError as e:
        checks.check("the rules file reads", False, e)
    dash = dashboard_exprs(dashboard)
    rules = rules_exprs(rules_text)
    variables = {v.get("name"): v for v in dashboard.get("templating", {}).get("list", [])}
    ds = variables.get("datasource", {})
    checks.check("the dashboard has a prometheus datasource variable",
                 ds.get("type") == "datasource" and ds.get("query") == "prometheus", ds)
    stray: list = []

    def datasources(items: list) -> None:
        for p in items:
            for obj in [p] + p.get("targets", []):
                d = obj.get("datasource")
                if d is not None and (not isinstance(d, dict) or d.get("uid") != "${datasource}"):
                    stray.append(p.get("title"))
            datasources(p.get("panels", []))

    datasources(dashboard.get("panels", []))
    checks.check("every panel and target queries ${datasource}", not stray, stray)
    ids = []

    def collect(items: list) -> None:
        for p in items:
            ids.append(p.get("id"))
            collect(p.get("panels", []))

    collect(dashboard.get("panels", []))
    checks.check("panel ids are unique", len(ids) == len(set(ids)), ids)
    checks.check("the dashboard has queries", len(dash) > 0, len(dash))
    checks.check("the rules have expressions", len(rules) > 0, len(rules))

    # promtool.
    promtool, why = find_promtool()
    if promtool is None:
        for name in ("promtool check rules", "promtool counts the rules read here", "promtool test rules",
                     "dashboard queries parse as PromQL", "promtool check metrics"):
            checks.skip(name, why)
    else:
        r = run([promtool, "check", "rules", args.rules])
        checks.check("promtool check rules deploy/prometheus/devshare-rules.yaml", r.returncode == 0,
                     (r.stdout + r.stderr).strip())
        found = re.search(r"SUCCESS: (\d+) rules found", r.stdout)
        checks.check("every rule's expression was read from the rules file",
                     found is not None and int(found.group(1)) == len(rules),
                     (found.group(0) if found else r.stdout.strip(), len(rules)))
        with open(args.rules_test) as f:  # run on the rules checked here (--rules)
            test = f.read()
        listed = "  - ../../deploy/prometheus/devshare-rules.yaml\n"
        if checks.check("the rules test loads deploy/prometheus/devshare-rules.yaml", listed in test):
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "rules.test.yaml")
                with open(path, "w") as f:
                    f.write(test.replace(listed, f"  - {json.dumps(os.path.abspath(args.rules))}\n"))
                r = run([promtool, "test", "rules", path], cwd=tmp)
            checks.check("promtool test rules tests/deploy/devshare-rules.test.yaml", r.returncode == 0,
                         (r.stdout + r.stderr).strip()[-3000:])
        with tempfile.TemporaryDirectory() as tmp:  # the dashboard's queries as recording rules
            path = os.path.join(tmp, "dashboard-queries.yaml")
            with open(path, "w") as f:
                f.write("groups:\n  - name: dashboard\n    rules:\n")
                for i, (_, expr) in enumerate(e for e in dash if not e[0].startswith("variable")):
                    f.write(f"      - record: dashboard:query_{i}\n        expr: {json.dumps(grafana_to_promql(expr))}\n")
            r = run([promtool, "check", "rules", path])
            checks.check("every dashboard query parses as PromQL", r.returncode == 0, (r.stdout + r.stderr).strip())

    # The scrape.
    if not os.access(args.devshare, os.X_OK):
        checks.check("the devshare executable exists", False, f"{args.devshare} (build it: ninja -C build)")
        text = None
    else:
        text = scrape_serve(args.devshare, checks)
    if text is not None:
        types, helps, samples = parse_exposition(text)
        check_gauges(checks, samples)
        if promtool is not None:
            r = run([promtool, "check", "metrics"], input=text)
            checks.check("the scrape passes promtool check metrics", r.returncode == 0 and not r.stdout.strip()
                         and not r.stderr.strip(), (r.stdout + r.stderr).strip())
        for where, expr in dash + rules:
            names = metric_names(expr)
            missing = sorted(n for n in names if family_of(n, types) is None)
            empty = sorted(n for n in names if n not in missing and not samples.get(n))
            checks.check(f"{where} names devshare_ metrics that serve exports",
                         bool(names) and not missing and not empty,
                         f"no devshare_ metric in {expr!r}" if not names
                         else f"not exported: {missing}" if missing else f"no samples: {empty}")
        used = {family_of(n, types) for _, e in dash + rules for n in metric_names(e)} - {None}
        undocumented = sorted(f for f in used if not helps.get(f, "").strip())
        checks.check("every family the dashboard and rules use has a HELP text", not undocumented, undocumented)
        new = ["devshare_gpus", "devshare_gpu_allocated", "devshare_gpu_memory_bytes",
               "devshare_gpu_memory_allocated_bytes", "devshare_gpu_free", "devshare_gpu_fragmented"]
        unused = [n for n in new if n not in used]
        checks.check("the dashboard or the rules show every GPU gauge", not unused, unused)
    else:
        checks.check("the metric names of the dashboard and the rules were checked against a scrape", False,
                     "no scrape")

    skipped = f", {checks.skipped} skipped" if checks.skipped else ""
    print(f"observability: {checks.passed} passed, {checks.failed} failed{skipped}")
    if args.results:
        with open(args.results, "a") as f:
            f.write(f"observability {checks.passed} {checks.failed} {checks.skipped}\n")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
