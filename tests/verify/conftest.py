"""Make this folder's helper modules (verify_crd_oracle, verify_strategies) importable whatever
pytest's import mode or the presence of __init__.py files elsewhere."""

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
