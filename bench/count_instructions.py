#!/usr/bin/env python3
"""Instructions per iteration of what each benchmark times, old build beside new.

Wall time on a shared 2-core machine varies by tens of percent between runs;
instruction counts do not. Each benchmark runs once (one iteration, or the
fixed count it declares) under valgrind's callgrind with collection on only
inside the functions it times, and the instructions collected are divided by
the calls to the first of them (one per iteration). Usage:

    bench/count_instructions.py OLD_BENCH_BUILD NEW_BENCH_BUILD [--only REGEX]

Both directories are `make bench` build directories (meson -Dbench=enabled,
release); an old one comes from a `git worktree add` of the old revision.
Prints one row per benchmark: old and new instructions per iteration and the
change in percent.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

# benchmark program, benchmark name, the functions it times (callgrind
# --toggle-collect patterns: collection is on while one of them runs). The
# first is called once per iteration: the calls to it are the divisor.
CASES = [
    ("filter_bench", "BM_Filter_100Nodes", ["devshare::Filter(*"]),
    ("filter_bench", "BM_Filter_1000Nodes", ["devshare::Filter(*"]),
    ("filter_bench", "BM_Filter_5000Nodes", ["devshare::Filter(*"]),
    ("filter_bench", "BM_Filter_5000NodesFgd", ["devshare::Filter(*"]),
    ("filter_bench", "BM_Filter_5000NodesFull", ["devshare::Filter(*"]),
    ("filter_bench", "BM_Filter_5000NodesTwoContainers", ["devshare::Filter(*"]),
    ("filter_bench", "BM_Fragmentation_5000Nodes", ["devshare::MeasureFragmentation(*"]),
    ("filter_bench", "BM_Extender_Filter5000Nodes",
     ["devshare::kube::DecodeExtenderArgs(*", "devshare::engine::Engine::Filter(*",
      "devshare::kube::EncodeFilterResult*"]),
    ("filter_bench", "BM_Extender_Filter5000NodesHamiWrites",
     ["devshare::kube::DecodeExtenderArgs(*", "devshare::engine::Engine::Filter(*",
      "devshare::engine::Engine::ApiResult(*", "devshare::kube::EncodeFilterResult*"]),
    ("filter_bench", "BM_Snapshot_AddRemovePod", ["devshare::ClusterSnapshot::RemovePod(*"]),
    ("codec_bench", "BM_Codec_DecodeNodeJson8Gpu", ["devshare::DecodeNodeDevices(*"]),
    ("codec_bench", "BM_Codec_DecodeNodeLegacy8Gpu", ["devshare::DecodeNodeDevices(*"]),
    ("codec_bench", "BM_Codec_DecodeNodeVolcano8Gpu", ["devshare::DecodeNodeDevices(*"]),
    ("codec_bench", "BM_Codec_DecodePodDevices4Containers", ["devshare::DecodePodDevices(*"]),
    ("codec_bench", "BM_Codec_DecodeNodeLock", ["devshare::DecodeNodeLock(*"]),
    ("codec_bench", "BM_Codec_DecodeHandshake", ["devshare::DecodeHandshake(*"]),
    ("sim_bench", "BM_Sim_Synthetic200Nodes", ["devshare::sim::Run(*"]),
    ("sim_bench", "BM_Sim_OpenbBinpack", ["devshare::sim::Run(*"]),
    ("sim_bench", "BM_Sim_OpenbFgd", ["devshare::sim::Run(*"]),
    ("dra_bench", "BM_DraAllocate_FromSnapshot", ["devshare::ClusterSnapshot::AllocateClaims(*"]),
    ("dra_bench", "BM_DraAllocate_FromSliceList", ["devshare::dra::Allocate(*"]),
    ("dra_bench", "BM_DraPlace_BinpackCold", ["devshare::dra::Placer::Place(*"]),
    ("dra_bench", "BM_DraPlace_FgdCold", ["devshare::dra::Placer::Place(*"]),
]


def glob_to_regex(pattern: str) -> re.Pattern:
    return re.compile(re.escape(pattern).replace(r"\*", ".*"))


def measure(build: str, program: str, benchmark: str, toggles: list[str]) -> float:
    """Instructions per iteration, or NaN when the benchmark did not run."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
        cmd += [f"--toggle-collect={t}" for t in toggles]
        cmd += [os.path.join(build, "bench", program), f"--benchmark_filter=^{benchmark}(/.*)?$",
                "--benchmark_min_time=0"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       cwd=os.path.dirname(os.path.abspath(__file__)) + "/..")
        names: dict[str, str] = {}  # callgrind's compressed "(id)" -> name
        matchers = [glob_to_regex(t) for t in toggles]
        total, calls, caller, callee = 0, 0, "", ""
        with open(out) as f:
            for line in f:
                m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
                if m:
                    kind, ident, name = m.groups()
                    if name:
                        names[ident] = name
                    if kind == "fn":
                        caller = names.get(ident, "")
                    else:
                        callee = names.get(ident, "")
                    continue
                if line.startswith("calls="):
                    into = matchers[0].fullmatch(callee)
                    from_inside = any(x.fullmatch(caller) for x in matchers)
                    if into and not from_inside:
                        calls += int(line.split("=")[1].split()[0])
                elif line.startswith("totals:"):
                    total = int(line.split()[1])
        return total / calls if calls else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--only", default="", help="benchmarks whose name matches this regex")
    args = parser.parse_args()
    print(f"{'benchmark':40} {'old':>14} {'new':>14} {'change':>8}")
    for program, benchmark, toggles in CASES:
        if args.only and not re.search(args.only, benchmark):
            continue
        old = measure(args.old, program, benchmark, toggles)
        new = measure(args.new, program, benchmark, toggles)
        change = (new / old - 1) * 100 if old == old and old else float("nan")
        print(f"{benchmark:40} {old:14,.0f} {new:14,.0f} {change:+7.1f}%", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
