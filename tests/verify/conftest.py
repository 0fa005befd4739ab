"""Make this folder's helper modules (verify_crd_oracle, verify_strategies, kueue_module)
importable whatever pytest's import mode or the presence of __init__.py files elsewhere, and
give this folder's tests Kueue's CRDs from the Kueue Go module the oracle builds against."""

import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from kueue_module import kueue_crd_dir as _module_crd_dir  # noqa: E402


@pytest.fixture(scope="session")
def kueue_crd_dir() -> Path:
    crds, reason = _module_crd_dir()
    if crds is None:
        pytest.skip(reason)
    return crds
