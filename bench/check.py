#!/usr/bin/env python3
"""Runs every Google Benchmark program of a build once, as briefly as it can.

    bench/check.py BUILD_DIR [--filter REGEX]

Each `BUILD_DIR/bench/*_bench` runs with `--benchmark_min_time=0` (one
iteration of each benchmark, its setup included) and JSON output. A benchmark
that reports an error (`state.SkipWithError`, so the figure it stands behind
measures nothing) fails the check, and so does a program that exits non-zero,
prints no JSON or runs no benchmark. No time is judged: this is what CI runs
so that every benchmark keeps compiling and measuring; `make bench` times them.

Prints one line per program and "bench: N passed, M failed" last (a benchmark
is one count); exits 1 on any failure.
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import time


def check_program(path, regex):
    """Returns (passed, failed, lines) for one benchmark program."""
    name = os.path.basename(path)
    cmd = [path, "--benchmark_min_time=0", "--benchmark_format=json"]
    if regex:
        cmd.append(f"--benchmark_filter={regex}")
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    took = time.monotonic() - start
    lines = []
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError as err:
        lines.append(f"FAIL {name}: exit {proc.returncode}, no JSON report ({err})")
        lines.append(proc.stderr.strip()[-2000:])
        return 0, 1, lines
    passed = failed = 0
    for bench in report.get("benchmarks", []):
        if bench.get("error_occurred"):
            failed += 1
            lines.append(f"FAIL {name} {bench.get('name')}: {bench.get('error_message', '')}")
        else:
            passed += 1
    if proc.returncode != 0:
        failed += 1
        lines.append(f"FAIL {name}: exit {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    if passed + failed == 0 and not regex:
        failed += 1
        lines.append(f"FAIL {name}: ran no benchmark")
    lines.insert(0, f"{name}: {passed} benchmarks ran, {failed} failed, {took:.1f} s")
    return passed, failed, lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir")
    parser.add_argument("--filter", default="", help="only benchmarks matching this regex")
    args = parser.parse_args()
    programs = sorted(p for p in glob.glob(os.path.join(args.build_dir, "bench", "*_bench"))
                      if os.access(p, os.X_OK))
    if not programs:
        print(f"bench: no *_bench program in {args.build_dir}/bench (configure it with -Dbench=enabled)")
        print("bench: 0 passed, 1 failed")
        return 1
    total_passed = total_failed = 0
    for program in programs:
        passed, failed, lines = check_program(program, args.filter)
        total_passed += passed
        total_failed += failed
        print("\n".join(line for line in lines if line), flush=True)
    print(f"bench: {total_passed} passed, {total_failed} failed")
    return 1 if total_failed else 0


if __name__ == "__main__":
    sys.exit(main())
