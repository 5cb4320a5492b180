"""Smoke test: the package imports and its extension answers."""
import pathlib
import re

import devshare

MESON_BUILD = pathlib.Path(__file__).resolve().parents[2] / "meson.build"


def test_import_and_version():
    # One version, written once: meson.build's project() version.
    version = re.search(r"version: '([^']+)'", MESON_BUILD.read_text()).group(1)
    assert devshare.__version__ == version
    assert set(devshare.__all__) <= set(dir(devshare))
    assert issubclass(devshare.DecodeError, ValueError)
    assert issubclass(devshare.ConfigError, ValueError)
