"""Smoke test: the package imports and its extension answers."""
import devshare


def test_import_and_version():
    assert devshare.__version__ == "0.1.0"
    assert set(devshare.__all__) <= set(dir(devshare))
    assert issubclass(devshare.DecodeError, ValueError)
    assert issubclass(devshare.ConfigError, ValueError)
