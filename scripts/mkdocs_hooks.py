"""MkDocs hook (mkdocs.yml): links from a page to repository files outside docs/.

The pages link to the sources, tests and READMEs they cite by relative path
(`../../tests/e2e/README.md`), which is right where the repository is browsed.
The site holds docs/ only, so each such link is checked here — its target must
exist in the repository, or the build warns, which --strict makes an error —
and shown on the site as its text. Links within docs/ are left to MkDocs'
own validation.
"""

from __future__ import annotations

import logging
import os
import re
from urllib.parse import urlsplit

log = logging.getLogger("mkdocs.hooks.repo_links")

# [text](target) on one line, images included; not reference-style links.
LINK = re.compile(r"!?\[([^\]]*)\]\(([^)\s]+)\)")


def on_page_markdown(markdown, page, config, files, **kwargs):
    docs_dir = os.path.abspath(config["docs_dir"])
    root = os.path.dirname(os.path.abspath(config["config_file_path"]))
    page_dir = os.path.dirname(os.path.join(docs_dir, page.file.src_path))

    def rewrite(m: re.Match) -> str:
        text, target = m.group(1), m.group(2)
        parts = urlsplit(target)
        if parts.scheme or parts.netloc or not parts.path or target.startswith("/"):
            return m.group(0)
        path = os.path.normpath(os.path.join(page_dir, parts.path))
        if path == docs_dir or path.startswith(docs_dir + os.sep):
            return m.group(0)
        if not path.startswith(root + os.sep) or not os.path.exists(path):
            log.warning(
                "Doc file '%s' contains a link '%s' to a repository file that does not exist",
                page.file.src_uri,
                target,
            )
        return text

    out, fenced = [], False
    for line in markdown.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            line = LINK.sub(rewrite, line)
        out.append(line)
    return "\n".join(out)
