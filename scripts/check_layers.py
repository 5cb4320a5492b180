#!/usr/bin/env python3
"""Checks the include direction between devshare's libraries and between the
core's layers, and the size of the sources in lib/ (`make lint`).

    scripts/check_layers.py [REPO_ROOT]

Libraries (lib/<name>/, bindings/python): each includes only the libraries
LIBRARY_EDGES allows, and the core and the engine no I/O library's header
(Boost.Beast, Boost.Asio, OpenSSL, pybind11).

The core's layers, lowest first (CORE_LAYERS): a source or header of
lib/core/src/<layer>/, and a public header of lib/core/include/devshare/
(its layer in PUBLIC_HEADER_LAYERS), includes only headers of its own layer
or of a layer before it. lib/core/yaml/ is part of the base layer.

Sizes: no source or header in lib/ over MAX_LINES lines.

Prints each violation as FILE:LINE: what is wrong; exits 1 if any.
"""

from __future__ import annotations

import pathlib
import re
import sys

CORE_LAYERS = ["base", "k8s", "codec", "config", "protocol", "dra", "state", "sched",
               "admission", "testing"]

# lib/core/include/devshare/<name>.hpp -> its layer.
PUBLIC_HEADER_LAYERS = {
    "enum_names": "base", "export": "base", "status": "base", "time_range": "base",
    "version": "base",
    "objects": "k8s", "objects_json": "k8s", "lease_object": "k8s",
    "device": "codec", "annotations": "codec", "node_codec": "codec", "pod_codec": "codec",
    "vendor": "config", "request": "config", "hami_exact": "config", "workload": "config",
    "handshake": "protocol", "nodelock": "protocol", "lease": "protocol",
    "volcano_lock": "protocol",
    "dra": "dra", "dra_json": "dra", "dra_cel": "dra", "dra_pools": "dra", "dra_allocate": "dra",
    "snapshot": "state",
    "filter": "sched", "dra_place": "sched", "dra_gate": "sched", "preemption": "sched",
    "dra_preemption": "sched", "dra_extended": "sched",
    "admission": "admission",
    "testing": "testing",
}

# Which libraries each may include (its own always).
LIBRARY_EDGES = {
    "core": set(),
    "engine": {"core"},
    "kube": {"core", "engine"},
    "sim": {"core", "engine"},
    "cli": {"core", "engine", "kube", "sim"},
    "python": {"core", "engine", "sim"},
}
NO_IO_LIBRARIES = {"core", "engine"}
IO_HEADERS = re.compile(r"^(boost/beast|boost/asio|openssl/|pybind11/)")

MAX_LINES = 800

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".cc"}


def library_of(path: pathlib.PurePosixPath) -> str | None:
    parts = path.parts
    if parts[:2] == ("bindings", "python"):
        return "python"
    if parts[0] == "lib" and len(parts) > 2:
        return parts[1]
    return None


def core_layer_of_file(path: pathlib.PurePosixPath) -> str | None:
    """The layer of a file of lib/core, or None when it has none (not core)."""
    parts = path.parts
    if parts[:3] == ("lib", "core", "src") and len(parts) > 4:
        return parts[3]
    if parts[:3] == ("lib", "core", "yaml"):
        return "base"
    if parts[:4] == ("lib", "core", "include", "devshare") and len(parts) == 5:
        return PUBLIC_HEADER_LAYERS.get(path.stem)
    return None


def included_library(target: str, quote: str, includer_library: str) -> str | None:
    """The library a quoted include names, or None for a system header."""
    if target.startswith("devshare/"):
        rest = target[len("devshare/"):]
        sub = rest.split("/", 1)
        if len(sub) == 2 and sub[0] in LIBRARY_EDGES:
            return sub[0]
        return "core"
    if quote == '"':
        return includer_library  # a private header of its own library
    return None


def core_layer_of_include(target: str, root: pathlib.Path) -> str | None:
    """The layer of a header the core includes, or None for a system header."""
    if target.startswith("devshare/") and target.count("/") == 1:
        return PUBLIC_HEADER_LAYERS.get(pathlib.PurePosixPath(target).stem, "?")
    first = target.split("/", 1)[0]
    if first in CORE_LAYERS and (root / "lib/core/src" / target).exists():
        return first
    if (root / "lib/core/yaml" / target).exists():
        return "base"
    return None


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    problems: list[str] = []
    files = sorted(p for base in ("lib", "bindings/python") for p in (root / base).rglob("*")
                   if p.suffix in SOURCE_SUFFIXES and p.is_file())
    for file in files:
        rel = pathlib.PurePosixPath(file.relative_to(root).as_posix())
        library = library_of(rel)
        if library is None or library not in LIBRARY_EDGES:
            continue
        layer = core_layer_of_file(rel) if library == "core" else None
        if library == "core" and layer is None:
            problems.append(f"{rel}:1: no layer: put it under lib/core/src/<layer>/ or, for a "
                            "public header, in scripts/check_layers.py's PUBLIC_HEADER_LAYERS")
            continue
        lines = file.read_text(errors="replace").splitlines()
        if rel.parts[0] == "lib":
            if len(lines) > MAX_LINES:
                problems.append(f"{rel}:{len(lines)}: {len(lines)} lines, over {MAX_LINES}: split "
                                "it by concept")
        for number, text in enumerate(lines, 1):
            m = INCLUDE.match(text)
            if not m:
                continue
            quote, target = m.groups()
            where = f"{rel}:{number}"
            if library in NO_IO_LIBRARIES and IO_HEADERS.match(target):
                problems.append(f"{where}: {library} includes <{target}>, an I/O library's header")
            other = included_library(target, quote, library)
            if other is not None and other != library and other not in LIBRARY_EDGES[library]:
                problems.append(f"{where}: {library} includes {target} of {other} "
                                f"(allowed: {', '.join(sorted(LIBRARY_EDGES[library])) or 'none'})")
            if layer is None or other not in (None, "core"):
                continue
            included = core_layer_of_include(target, root)
            if included == "?":
                problems.append(f"{where}: {target} has no layer in PUBLIC_HEADER_LAYERS")
            elif included is not None and CORE_LAYERS.index(included) > CORE_LAYERS.index(layer):
                problems.append(f"{where}: the {layer} layer includes {target} of the {included} "
                                f"layer above it (the core's layers: {' < '.join(CORE_LAYERS)})")
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"check_layers: {len(files)} files, includes and sizes as the layers say")
    return 0


if __name__ == "__main__":
    sys.exit(main())
