#!/usr/bin/env python3
"""clang-tidy on sources, skipping each source whose exact input was found
clean before (scripts/lint.sh runs it).

Usage: clang_tidy_cached.py BUILD_DIR JOBS ANALYZER LOG SOURCE...

A source's key hashes everything its findings depend on: clang-tidy's
version, .clang-tidy, the analyzer mode, the source's compile command from
BUILD_DIR/compile_commands.json (without its output files) and the source
preprocessed by clang with that command, comments kept (every header it
reads with its contents, and the NOLINT comments). A source clang-tidy finds
clean leaves its key in the cache, $DEVSHARE_CACHE/lint (default
~/.cache/devshare/lint); a later run with the same key skips it. A source with
findings leaves nothing, so it is checked again on every run.

Findings go to LOG; exits 1 when a source has findings or cannot be checked.
"""

import concurrent.futures
import hashlib
import json
import os
import pathlib
import shlex
import subprocess
import sys

CLANG_TIDY = "clang-tidy-22"
CLANG = "clang++-14"


def compile_commands(build_dir):
    with open(os.path.join(build_dir, "compile_commands.json"), encoding="utf-8") as f:
        entries = json.load(f)
    by_source = {}
    for entry in entries:
        path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
        by_source[path] = entry
    return by_source


# Compiler launchers meson puts before the compiler when it finds them.
LAUNCHERS = ("ccache", "sccache")


def without_outputs(args):
    """The compile command's arguments without the compiler (and the launcher
    before it, if any), -c and the dependency and object files it writes."""
    first = 1
    while first < len(args) and os.path.basename(args[first - 1]) in LAUNCHERS:
        first += 1
    kept, skip = [], False
    for arg in args[first:]:
        if skip:
            skip = False
            continue
        if arg in ("-o", "-MF", "-MQ", "-MT"):
            skip = True
            continue
        if arg in ("-c", "-MD", "-MMD"):
            continue
        kept.append(arg)
    return kept


def key_of(source, entry, context):
    args = without_outputs(shlex.split(entry["command"]))
    preprocessed = subprocess.run(
        [CLANG, *args, "-E", "-C", "-Wno-unknown-warning-option", "-o", "-"],
        cwd=entry["directory"], capture_output=True, check=False)
    if preprocessed.returncode != 0:
        return None, preprocessed.stderr.decode(errors="replace")
    h = hashlib.sha256()
    for part in (context, source, " ".join(args)):
        h.update(part.encode())
        h.update(b"\0")
    h.update(preprocessed.stdout)
    return h.hexdigest(), ""


def check(source, entry, build_dir, analyzer, context, cache):
    """(source, clean, output, from_cache)"""
    key, error = key_of(source, entry, context)
    if key is None:
        return source, False, f"{source}: cannot preprocess it:\n{error}", False
    stamp = cache / key[:2] / key
    if stamp.exists():
        return source, True, "", True
    run = subprocess.run(
        [CLANG_TIDY, "-p", build_dir, "--quiet",
         "--extra-arg=-Xclang", "--extra-arg=-analyzer-config",
         "--extra-arg=-Xclang", f"--extra-arg=mode={analyzer}", source],
        capture_output=True, check=False)
    output = (run.stdout + run.stderr).decode(errors="replace")
    if run.returncode == 0:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.touch()
    return source, run.returncode == 0, output, False


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    build_dir, jobs, analyzer, log = sys.argv[1:5]
    sources = [os.path.abspath(s) for s in sys.argv[5:]]
    entries = compile_commands(build_dir)
    missing = [s for s in sources if s not in entries]
    if missing:
        sys.exit("lint: not in the build's compile commands: " + ", ".join(missing))
    version = subprocess.run([CLANG_TIDY, "--version"], capture_output=True, text=True,
                             check=True).stdout
    config = pathlib.Path(".clang-tidy").read_text(encoding="utf-8")
    context = "\0".join([version, config, analyzer])
    cache = pathlib.Path(os.environ.get("DEVSHARE_CACHE",
                                        pathlib.Path.home() / ".cache" / "devshare")) / "lint"
    failed, cached = [], 0
    with open(log, "w", encoding="utf-8") as out, \
         concurrent.futures.ThreadPoolExecutor(max_workers=int(jobs)) as pool:
        futures = [pool.submit(check, s, entries[s], build_dir, analyzer, context, cache)
                   for s in sources]
        for future in futures:
            source, clean, output, from_cache = future.result()
            out.write(output)
            cached += from_cache
            if not clean:
                failed.append(source)
    print(f"lint: clang-tidy: {len(sources) - len(failed)} of {len(sources)} sources clean, "
          f"{cached} of them from the cache ({cache})")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
