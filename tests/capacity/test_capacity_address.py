"""`capacity --address`: a malformed address is the flag's mistake (exit 1, the address and the
cause named), found before Dask sees it; no scheduler is needed to tell."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import lab_trace
from kp_testing import run_cli

from compiler.capacity.workers import checked_address
from compiler.core.errors import InputError


@pytest.mark.parametrize("address, cause", [
    ("foo", "no port"),
    ("tcp://127.0.0.1:notaport", "port 'notaport' is not a number"),
    ("", "no address"),
    ("inproc://x", "scheme 'inproc://' is not supported"),
    ("ucx://1.2.3.4:1", "scheme 'ucx://' is not supported"),
    ("tcp://127.0.0.1:0", "port 0 is not in 1-65535"),
    ("tcp://127.0.0.1:65536", "port 65536 is not in 1-65535"),
    ("tcp://::1:8786", "'::1' is not a host name or IP address (an IPv6 address is written in brackets"),
    ("tcp://:8786", "no host"),
])
def test_a_malformed_address_is_named_with_its_cause_and_exits_1(lab: Path, tmp_path: Path, address: str,
                                                                 cause: str) -> None:
    trace = lab_trace(tmp_path / "trace.csv", jobs=10)
    done = run_cli("capacity", str(lab), "--trace", str(trace), "--target", "p95-wait<=45m", "--address", address,
                   "--quiet")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert f"--address:1:1: error[KP920]: --address '{address}': {cause}" in done.stderr, done.stderr


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:8786", "tls://scheduler.example.com:8786",
                                     "tcp://[::1]:8786", "127.0.0.1:8786", "tcp://localhost:1", "tcp://h:65535"])
def test_the_addresses_dask_joins_are_taken_as_written(address: str) -> None:
    assert checked_address(address) == address


def test_tls_without_dask_tls_settings_is_named_not_a_traceback() -> None:
    """Dask's TLS connector raises a TypeError without a certificate authority configured."""
    pytest.importorskip("distributed", reason="the `distributed` extra is not installed")
    import dask
    from compiler.capacity.workers import DaskCluster

    with dask.config.set({"distributed.comm.tls.ca-file": None, "distributed.comm.tls.client.cert": None}):
        with pytest.raises(InputError, match=r"--address 'tls://127.0.0.1:8786': tls:// needs Dask's TLS settings"):
            DaskCluster(None, "tls://127.0.0.1:8786")  # type: ignore[arg-type]
