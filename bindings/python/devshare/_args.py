"""How the Python API's arguments become the extension's: objects as JSON
text, device configs as YAML text, HAMi-exact rows as the core names them."""

from __future__ import annotations

import json
from typing import Any, Optional


def _json(obj: Any) -> str:
    return obj if isinstance(obj, str) else json.dumps(obj)


def _config(config: Optional[Any]) -> Optional[str]:
    """A device config given as YAML text or a dict (JSON is YAML), or None."""
    if config is None:
        return None
    if isinstance(config, str):
        return config
    return json.dumps(dict(config))


def _hami_exact(rows: Any) -> str:
    """The ``hami_exact`` setting as the core parses it: a string, or a list of row names."""
    if isinstance(rows, str):
        return rows
    return ",".join(str(r) for r in rows)
