#!/usr/bin/env python3
"""Checks the relative links of Markdown files outside docs/ (`make test-docs`).

    scripts/check_links.py README.md CONTRIBUTING.md

Every relative link ([text](path), ![alt](path), [name]: path) must point at
an existing file or directory, and its #anchor, when it has one, at a heading
of the target Markdown file (or of the file itself for a bare #anchor), as
GitHub makes heading anchors. Links in code blocks and code spans are not
links. Prints each broken link as FILE:LINE: LINK: why, and exits 1 if any;
MkDocs checks the links of docs/ (mkdocs.yml).
"""

from __future__ import annotations

import os
import re
import sys
from urllib.parse import unquote, urlsplit

INLINE = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
CODE_SPAN = re.compile(r"(`+).*?\1")
HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
HTML_ID = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def prose_lines(path: str):
    """(line number, text) of the lines outside fenced code blocks."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if not fenced:
                yield number, line.rstrip("\n")


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path: str) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for _, line in prose_lines(path):
        found.update(HTML_ID.findall(line))
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def check(path: str) -> list[str]:
    errors = []
    here = os.path.dirname(path)
    for number, line in prose_lines(path):
        prose = CODE_SPAN.sub("", line)
        targets = INLINE.findall(prose)
        m = REFERENCE.match(prose)
        if m:
            targets.append(m.group(1))
        for target in targets:
            parts = urlsplit(target)
            if parts.scheme or parts.netloc or target.startswith("/"):
                continue
            file = os.path.normpath(os.path.join(here, unquote(parts.path))) if parts.path else path
            if not os.path.exists(file):
                errors.append(f"{path}:{number}: {target}: {file} does not exist")
                continue
            if parts.fragment and file.endswith(".md") and os.path.isfile(file):
                if parts.fragment not in anchors(file):
                    errors.append(f"{path}:{number}: {target}: no heading of {file} has the anchor "
                                  f"#{parts.fragment}")
    return errors


def main(paths: list[str]) -> int:
    errors = [e for p in paths for e in check(p)]
    for e in errors:
        print(e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
