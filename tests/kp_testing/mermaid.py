"""Rendering Mermaid source with mermaid-cli (`mmdc`) in the system's Chromium, as GitHub and
GitLab render the charts of REPORT.md and the pull request body.

`make test` installs mermaid-cli into the user's cache (MERMAID_CLI_DIR); an `mmdc` on PATH is
used otherwise. Chromium comes from the system's packages, so puppeteer's own download is never
needed.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
from pathlib import Path

from kp_testing.browser import CHROMIUM


def find_mmdc() -> str | None:
    folder = os.environ.get("MERMAID_CLI_DIR")
    candidates = [os.path.join(folder, "node_modules", ".bin", "mmdc")] if folder else []
    candidates += sorted(glob.glob(os.path.expanduser("~/.cache/kueue-policy/mermaid-cli-*/node_modules/.bin/mmdc")),
                         reverse=True)
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("mmdc")


def missing() -> str | None:
    """Why rendering cannot run here, or None."""
    if find_mmdc() is None:
        return "@mermaid-js/mermaid-cli (mmdc) is not installed (make mermaid needs npm)"
    if CHROMIUM is None:
        return "chromium is not installed (apt-get install chromium)"
    return None


def render(source: str, folder: Path, name: str = "chart") -> subprocess.CompletedProcess:
    """Render one chart to `folder/name.svg`; the completed process tells how it went."""
    config = folder / "puppeteer.json"
    config.write_text(json.dumps({"executablePath": CHROMIUM, "args": ["--no-sandbox", "--disable-gpu"]}))
    (folder / f"{name}.mmd").write_text(source)
    return subprocess.run([find_mmdc(), "--quiet", "-p", str(config), "-i", str(folder / f"{name}.mmd"),
                           "-o", str(folder / f"{name}.svg")], capture_output=True, text=True, timeout=300)
