"""The soak's reports (soak_churn.py drives the soak): the line each minute, the
leak slopes of each replica process, the final checks, the summary and its
JSON. A mixin of soak_churn.Soak.
"""

from __future__ import annotations

import collections
import json

from soak_cluster import ENV, log, slope


class Report:
    """The reports of soak_churn.Soak."""

    def minute_report(self, minute: int, final: bool = False) -> None:
        with self.lock:
            pending = sum(1 for r in self.pods.values()
                          if r["created"] and r["bound"] is None and r["deleted"] is None)
            live = sum(1 for r in self.pods.values() if r["created"] and r["deleted"] is None)
            c = self.counts
            snap = self.snapshot
            used, total = snap.memory() if snap else (0, 1)
            rss = " ".join(f"{r.name}:{r.instances[-1]['samples'][-1][1] // 1024}MiB/"
                           f"{r.instances[-1]['samples'][-1][2]}fd"
                           for r in self.replicas if r.instances and r.instances[-1]["samples"])
            log(f"{'end' if final else f'minute {minute}'}: created {c['created']}, bound {c['bound']}, "
                f"deleted {c['deleted']}, live {live}, pending {pending}, create errors "
                f"{c['create_failed']}, GPU memory held {used * 100 // max(total, 1)}%, faults done "
                f"{sum(1 for f in self.faults if 'end' in f)}, max pending while fitting "
                f"{self.max_pending_fit:.0f} s, {rss}")

    def leaks(self, run_seconds: float) -> dict:
        out = {}
        long_run = run_seconds >= 1800
        for r in self.replicas:
            per = []
            for inst in r.instances:
                samples = [s for s in inst["samples"] if s[0] - inst["start"] >= 60]
                if not inst["samples"]:
                    continue
                rss_slope = slope([(s[0], s[1]) for s in samples])
                fd_slope = slope([(s[0], s[2]) for s in samples])
                first, last = inst["samples"][0], inst["samples"][-1]
                minutes = (last[0] - inst["start"]) / 60
                fd_growth = (last[2] - samples[0][2]) if samples else 0
                per.append({"pid": inst["pid"], "minutes": round(minutes, 1), "samples": len(samples),
                            "rss_kib_first": first[1], "rss_kib_last": last[1],
                            "rss_kib_max": max(s[1] for s in inst["samples"]),
                            "fds_first": first[2], "fds_last": last[2],
                            "rss_slope_kib_per_min": None if rss_slope is None else round(rss_slope, 1),
                            "fd_slope_per_min": None if fd_slope is None else round(fd_slope, 2),
                            "fd_growth": fd_growth})
            out[r.name] = per
        failures = []
        for name, per in out.items():
            for inst in per:
                if inst["fd_growth"] > 50:
                    failures.append(f"replica {name} pid {inst['pid']}: {inst['fd_growth']} more fds")
                if long_run and inst["minutes"] >= 20 and (inst["rss_slope_kib_per_min"] or 0) > 1024:
                    failures.append(f"replica {name} pid {inst['pid']}: RSS +{inst['rss_slope_kib_per_min']} KiB/min")
        return {"replicas": out, "failures": failures,
                "rule": "fail on fd growth > 50 per process" + (
                    ", or RSS > 1024 KiB/min over a process of >= 20 min" if long_run else
                    " (RSS reported only: a run under 30 min is too short to tell)")}

    def finish(self, run_seconds: float, plan: list) -> int:
        leaks = self.leaks(run_seconds)
        self.check("no replica exited of itself", not self.crashes,
                   f"{len(self.crashes)} exits: " + "; ".join(self.crashes[:3]) +
                   " (see logs/devshare-*.log)")
        self.check("no descriptor leak" + (" nor gross memory leak" if run_seconds >= 1800 else ""),
                   not leaks["failures"], "; ".join(leaks["failures"]))
        a = self.auditor
        if a["available"] is False or not a["last"]:
            self.check("drift auditor: no confirmed difference that was not injected", None,
                       "the replicas do not serve /debug/audit (or no devshare_audit_differences_total): not checked")
        else:
            self.check("drift auditor: no confirmed difference that was not injected",
                       not a["uninjected"], dict(a["uninjected"]).__repr__() if a["uninjected"] else
                       f"injected {dict(a['injected'])}")
        self.check("no pod refused because no replica answered the webhook",
                   self.counts["create_refused_by_webhook"] == 0 if ENV.get("SOAK_WEBHOOK_PORT") else None,
                   f"{self.counts['create_refused_by_webhook']} refused; "
                   f"{self.counts['create_refused_at_kill']} whose call went to a replica SIGKILLed (in "
                   f"flight, or before the Service's probes failed it) and "
                   f"{self.counts['create_refused_while_stopped']} sent while a replica was "
                   f"SIGSTOPped, not counted" if ENV.get("SOAK_WEBHOOK_PORT") else
                   "the webhook shares the leader's Service (no SOAK_WEBHOOK_PORT): not checked")
        self.check("every fault planned was injected",
                   len([f for f in self.faults if "end" in f]) == len(plan),
                   f"{len([f for f in self.faults if 'end' in f])} of {len(plan)}")
        with self.lock:
            c = self.counts
            summary = {
                "seed": self.seed, "minutes": round(run_seconds / 60, 2), "nodes": len(self.node_names),
                "rate_per_s": round(self.rate, 3), "lifetime_s": round(self.lifetime, 1),
                "pods": {"created": c["created"], "scheduled": c["bound"], "deleted": c["deleted"],
                         "refused_by_webhook": c["create_refused_by_webhook"],
                         "refused_at_kill": c["create_refused_at_kill"],
                         "refused_while_stopped": c["create_refused_while_stopped"],
                         "create_failed": c["create_failed"],
                         "create_failed_by_status": {k[len('create_failed_http_'):]: v for k, v in c.items()
                                                     if k.startswith("create_failed_http_")},
                         "gave_up": c["deleted_gave_up"], "deleted_with_node": c["deleted_node_gone"],
                         "pending_at_end": sum(1 for r in self.pods.values() if r["created"] and
                                               r["bound"] is None and r["deleted"] is None),
                         "not_moved_by_webhook": c["not_moved_by_webhook"]},
                "faults": [{k: (round(v, 1) if isinstance(v, float) and k not in ("start", "end") else v)
                            for k, v in f.items() if k not in ("names", "old_devices")} for f in self.faults],
                "faults_by_kind": dict(collections.Counter(f["kind"] for f in self.faults)),
                "checks": {"passed": self.passed, "failed": self.failed,
                           "failed_list": [x["check"] + (": " + x["detail"] if x["detail"] else "")
                                           for x in self.check_log if x["result"] == "failed"],
                           "skipped": [x["check"] + ": " + x["detail"] for x in self.check_log
                                       if x["result"] == "skipped"]},
                "over_allocations": len(self.over_seen), "over_allocated": sorted(self.over_seen)[:20],
                "recount_problems_seen": sorted(self.recount_problems)[:20],
                "lost_pods": sorted(self.lost),
                "max_pending_while_fits_s": round(self.max_pending_fit, 1),
                "pending_while_fits_over_30s": {n: round(s, 1) for n, s in self.pending_violations.items()},
                "stale_leader_writes": self.stale_writes[:50],
                "stale_leader_writes_total": len(self.stale_writes),
                "lease_handovers": self.handovers(),
                "writes_by_replica": {f"{w} {v} {r} {'ok' if ok else 'failed'}": n
                                      for (w, v, r, ok), n in sorted(self.writes.items())},
                "leaks": leaks,
                "dra": None if not self.dra else dict(self.dra.summary(), created=c["dra_created"],
                                                      scheduled=c["dra_bound"], not_gated=c["dra_not_gated"]),
                "auditor": {"available": a["available"], "injected": dict(a["injected"]),
                            "not_injected": dict(a["uninjected"]), "healed": dict(a["healed"]),
                            "audits_asked": a["samples"], "last_audit": a.get("last_audit"),
                            "notes": a["notes"]},
            }
        try:
            summary["fault_proxy"] = self.proxy("stats")
        except OSError:
            pass
        self.print_summary(summary)
        if ENV.get("SOAK_JSON"):
            with open(ENV["SOAK_JSON"], "w") as f:
                json.dump(summary, f, indent=1)
            log(f"summary written to {ENV['SOAK_JSON']}")
        print(f"e2e-soak: {self.passed} passed, {self.failed} failed", flush=True)
        return 0 if self.failed == 0 else 1

    def print_summary(self, s: dict) -> None:
        p = s["pods"]
        print("---- soak summary ----")
        print(f"minutes run          {s['minutes']} (seed {s['seed']}, {s['nodes']} nodes, "
              f"{s['rate_per_s']} pods/s, lifetime {s['lifetime_s']} s)")
        print(f"pods                 created {p['created']}, scheduled {p['scheduled']}, deleted {p['deleted']}, "
              f"create errors {p['create_failed']} {p['create_failed_by_status']} "
              f"({p['refused_by_webhook']} by an unanswered webhook, {p['refused_at_kill']} whose "
              f"webhook call went to the replica killed, {p['refused_while_stopped']} sent while "
              f"a replica was stopped), pending at end "
              f"{p['pending_at_end']}")
        print(f"faults               {s['faults_by_kind']}")
        for f in s["faults"]:
            print(f"  {f['kind']:18} probe bound in {f.get('probe_bound_s')} s; {'; '.join(f['notes'])}")
        print(f"checks               {s['checks']['passed']} passed, {s['checks']['failed']} failed, "
              f"{len(s['checks']['skipped'])} skipped")
        for x in s["checks"]["failed_list"]:
            print(f"  FAILED {x}")
        for x in s["checks"]["skipped"]:
            print(f"  SKIPPED {x}")
        print(f"over-allocations     {s['over_allocations']}")
        print(f"max pending while a node fits  {s['max_pending_while_fits_s']} s "
              f"({len(s['pending_while_fits_over_30s'])} pods over 30 s)")
        print(f"stale-leader writes  {s['stale_leader_writes_total']}")
        if s["dra"]:
            d = s["dra"]
            print(f"DRA                  {d['nodes']} nodes, pods created {d['created']}, scheduled "
                  f"{d['scheduled']} ({d['not_gated']} not gated by the webhook); devices over capacity "
                  f"{d['over_capacity']}, double allocations {d['double_allocations']}, pods split "
                  f"{d['split']}; max pending while its claims fit {d['max_pending_while_room_s']} s; "
                  f"claims collected {d['claims_collected']}; last recount {d['last_counts']}")
        print(f"Lease holders        {', '.join(s['lease_handovers'])}")
        for name, per in s["leaks"]["replicas"].items():
            for inst in per:
                print(f"replica {name} pid {inst['pid']:<7} {inst['minutes']} min: RSS {inst['rss_kib_first'] // 1024}"
                      f"->{inst['rss_kib_last'] // 1024} MiB, slope {inst['rss_slope_kib_per_min']} KiB/min; "
                      f"fds {inst['fds_first']}->{inst['fds_last']}, slope {inst['fd_slope_per_min']}/min")
        a = s["auditor"]
        print(f"auditor differences  injected {a['injected']}, not injected {a['not_injected']}"
              + ("" if a["available"] else " (auditor not available: not checked)"))
