"""The sandbox folder: everything a sandbox writes lives under it, and its state file says what runs.

    sandbox.json      the state: ports, the processes started (pid, binary), the kubeconfig
    kubeconfig        what `up` prints as KUBECONFIG=...
    pki/              the certificates, keys and token file (certs.py)
    etcd/             etcd's data
    kueue/            the manager's Configuration and the private view of its fixed paths
    manifests/        the Kueue CRDs and webhooks as installed here (for reading)
    logs/             one log per process

The state file is rewritten (atomically) after each process starts, so a `down` after an `up`
that died half-way still finds every process it must stop.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

STATE_FILE = "sandbox.json"
DIR_ENV = "KUEUE_POLICY_SANDBOX_DIR"


def default_dir() -> Path:
    """$KUEUE_POLICY_SANDBOX_DIR, else the user's cache folder (one sandbox per user by default)."""
    configured = os.environ.get(DIR_ENV)
    if configured:
        return Path(configured)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "kueue-policy" / "sandbox"


@dataclass
class ProcessRecord:
    """A server `up` started: enough for `down` to find it again and be sure it is ours."""

    name: str
    pid: int
    start_time: int   # clock ticks since boot, from /proc: a reused pid has another
    binary: str
    log: str


@dataclass
class SandboxState:
    ports: dict[str, int] = field(default_factory=dict)
    processes: list[ProcessRecord] = field(default_factory=list)
    kubeconfig: str = ""
    ready: bool = False
    tree: str | None = None

    def process(self, name: str) -> ProcessRecord | None:
        return next((record for record in self.processes if record.name == name), None)


@dataclass(frozen=True)
class Workdir:
    root: Path

    @property
    def state_file(self) -> Path:
        return self.root / STATE_FILE

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def etcd_data(self) -> Path:
        return self.root / "etcd"

    @property
    def kueue(self) -> Path:
        return self.root / "kueue"

    @property
    def manifests(self) -> Path:
        return self.root / "manifests"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"

    def is_sandbox(self) -> bool:
        return self.state_file.is_file()

    def create(self) -> None:
        for folder in (self.root, self.pki, self.etcd_data, self.kueue, self.manifests, self.logs):
            folder.mkdir(parents=True, exist_ok=True)
        # etcd refuses a data directory others can read.
        self.etcd_data.chmod(0o700)
        self.pki.chmod(0o700)

    def read_state(self) -> SandboxState:
        raw = json.loads(self.state_file.read_text(encoding="utf-8"))
        processes = [ProcessRecord(**record) for record in raw.pop("processes", [])]
        return SandboxState(processes=processes, **raw)

    def write_state(self, state: SandboxState) -> None:
        temporary = self.state_file.with_suffix(".tmp")
        temporary.write_text(json.dumps(asdict(state), indent=2, sort_keys=True) + "\n",
                             encoding="utf-8")
        temporary.replace(self.state_file)
