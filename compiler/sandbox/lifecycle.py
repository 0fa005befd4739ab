"""`sandbox up`, `down` and `status`: the three servers started in order, and stopped for sure.

`up` starts etcd, then kube-apiserver on it, installs Kueue's CRDs (and the job kinds' CRDs),
starts Kueue's manager with the tree's Configuration, installs Kueue's webhooks once the manager
serves them, applies the compiled tree (server-side apply) and waits for every ClusterQueue to be
Active. Each step waits for the one before it: the manager exits at start-up when the CRDs it
watches are not yet established, and a webhook configuration installed before its server
answers makes every call it covers fail.

Any failure, or an interrupt, stops whatever `up` had started before it returns: an `up` that
fails leaves no process behind. `down` stops the servers (newest first) and removes the folder.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import yaml

from compiler.core import codes
from compiler.core.errors import Diagnostic, EnvironmentFailure, PolicyError, SourcePosition
from compiler.sandbox import kueue_setup, processes
from compiler.sandbox.apiclient import ApiClient, ApiError, condition, wait_for
from compiler.sandbox.artifacts import Artifacts, find_artifacts
from compiler.sandbox.certs import Pki, load_token, make_pki
from compiler.sandbox.workdir import ProcessRecord, SandboxState, Workdir

# Bounds on each wait; a cold start on a 2-core machine takes a few seconds for each step.
START_TIMEOUT = 60.0
ACTIVE_TIMEOUT = 60.0
FIELD_MANAGER = "kueue-policy"
PORT_NAMES = ("etcd-client", "etcd-peer", "apiserver", "kueue-webhook", "kueue-health")
# The admission plugin that refuses a Pod whose ServiceAccount does not exist: on a cluster the
# controller manager creates every namespace's `default` one; no controller manager runs here.
DISABLED_ADMISSION_PLUGINS = "ServiceAccount"
# From 1.36 the API server lets Kueue change a suspended Job's pod template (node selectors,
# tolerations: what admission to a flavor writes) only once the Job carries the JobSuspended
# condition, which kube-controller-manager's job controller sets. None runs here, so the API
# server keeps the rule from before those gates: suspended and never started.
APISERVER_FEATURE_GATES = "MutableSchedulingDirectivesForSuspendedJobs=false,MutablePodResourcesForSuspendedJobs=false"
SERVICE_CIDR = "10.0.0.0/24"
# The job kinds' CRDs are megabytes each (the whole pod template schema, again and again) and
# the API server takes about a second of CPU apiece to serve one; JobSet, the multi-pod-set kind
# the policies' declared workloads use, is installed unless asked otherwise.
DEFAULT_JOB_CRDS = ("jobsets.jobset.x-k8s.io",)   # kube-apiserver wants one; no Service traffic flows here


@dataclass(frozen=True)
class UpResult:
    kubeconfig: Path
    state: SandboxState
    seconds: float
    configuration_from: str


class SandboxFailed(EnvironmentFailure):
    """A server did not start or stopped; the message names its log."""


# --- ports, kubeconfig, kubectl ---------------------------------------------------------------

def _free_ports(count: int) -> list[int]:
    """Ports the kernel says are free now, all held open until every one is chosen (no repeats)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _kubeconfig(server: str, pki: Pki) -> dict:
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": "kueue-policy-sandbox",
        "clusters": [{"name": "kueue-policy-sandbox", "cluster": {
            "server": server,
            "certificate-authority-data": base64.b64encode(pki.ca_pem()).decode()}}],
        "users": [{"name": "sandbox-admin", "user": {"token": pki.token}}],
        "contexts": [{"name": "kueue-policy-sandbox", "context": {
            "cluster": "kueue-policy-sandbox", "user": "sandbox-admin"}}],
    }


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None,
            timeout: float = 120.0) -> subprocess.CompletedProcess:
    executable = shutil.which("kubectl")
    if executable is None:
        raise EnvironmentFailure("kubectl not found on PATH: the sandbox applies manifests with it")
    return subprocess.run([executable, "--kubeconfig", str(kubeconfig), *args], input=stdin,
                          capture_output=True, text=True, timeout=timeout)


# The cluster-scoped kinds `up` installs itself, by their API paths. They are created with plain
# POSTs: kubectl would first read the discovery documents of every CRD just installed, which
# takes it seconds.
_COLLECTIONS = {
    ("v1", "Namespace"): "/api/v1/namespaces",
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"):
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"):
        "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"):
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
}


def _create(client: ApiClient, objects: list[dict], what: str) -> None:
    for obj in objects:
        collection = _COLLECTIONS[(obj["apiVersion"], obj["kind"])]
        try:
            client.request("POST", collection, obj, timeout=60.0)
        except ApiError as error:
            raise SandboxFailed(f"installing {what} failed: {error}") from None


# --- the three servers ------------------------------------------------------------------------

def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


class _Servers:
    """The servers one `up` started, newest last, recorded in the state file as they start."""

    def __init__(self, workdir: Workdir, state: SandboxState) -> None:
        self.workdir, self.state = workdir, state
        self.started: list[processes.Started] = []

    def start(self, name: str, argv: list[str], binary: Path) -> processes.Started:
        log = self.workdir.log(name)
        server = processes.start(name, argv, log)
        self.started.append(server)
        self.state.processes.append(ProcessRecord(name=name, pid=server.pid, start_time=server.start_time,
                                                  binary=str(binary), log=str(log)))
        self.workdir.write_state(self.state)
        return server

    def failure(self) -> str | None:
        """A message naming the first server that has exited, with its log's last lines."""
        for server in self.started:
            code = processes.exited(server)
            if code is not None:
                log = self.workdir.log(server.name)
                return f"{server.name} exited ({code}); {log}:\n{_log_tail(log)}"
        return None

    def stop_all(self) -> None:
        for server in reversed(self.started):
            processes.stop(server)


def _http_ok(url: str) -> bool | None:
    try:
        with urllib.request.urlopen(url, timeout=2.0) as answer:
            return True if answer.status == 200 else None
    except (urllib.error.URLError, OSError):
        return None


def _start_etcd(servers: _Servers, artifacts: Artifacts, ports: dict[str, int]) -> str:
    client = f"http://127.0.0.1:{ports['etcd-client']}"
    peer = f"http://127.0.0.1:{ports['etcd-peer']}"
    servers.start("etcd", [
        str(artifacts.etcd), "--name=sandbox", f"--data-dir={servers.workdir.etcd_data}",
        f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=sandbox={peer}",
        # A throw-away data folder: durability is not worth an fsync per write.
        "--unsafe-no-fsync", "--log-level=warn"], artifacts.etcd)
    wait_for("etcd to answer /health", lambda: _http_ok(client + "/health"),
             timeout=START_TIMEOUT, failed=servers.failure)
    return client


def _start_apiserver(servers: _Servers, artifacts: Artifacts, ports: dict[str, int], etcd: str,
                     pki: Pki) -> ApiClient:
    generated = servers.workdir.pki / "apiserver-generated"
    generated.mkdir(exist_ok=True)
    servers.start("kube-apiserver", [
        str(artifacts.kube_apiserver), f"--etcd-servers={etcd}",
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
        f"--secure-port={ports['apiserver']}", f"--cert-dir={generated}",
        f"--tls-cert-file={pki.apiserver.cert}", f"--tls-private-key-file={pki.apiserver.key}",
        f"--token-auth-file={pki.token_file}", "--authorization-mode=RBAC",
        "--service-account-issuer=https://kubernetes.default.svc",
        f"--service-account-key-file={pki.service_account.cert}",
        f"--service-account-signing-key-file={pki.service_account.key}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        f"--disable-admission-plugins={DISABLED_ADMISSION_PLUGINS}",
        f"--feature-gates={APISERVER_FEATURE_GATES}"], artifacts.kube_apiserver)
    client = ApiClient(f"https://127.0.0.1:{ports['apiserver']}", pki.token, pki.ca.cert)
    wait_for("kube-apiserver to answer /readyz", lambda: True if client.ready() else None,
             timeout=START_TIMEOUT, failed=servers.failure)
    return client


def _crds_served(client: ApiClient, names: list[str]) -> bool | None:
    """True once every CRD is Established and its objects can be listed.

    Established comes first; the API server answers 429 "storage is (re)initializing" a while
    longer, until its watch cache for the new kind is filled."""
    for name in names:
        try:
            crd = client.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
            established = condition(crd, "Established")
            if not established or established.get("status") != "True":
                return None
            spec = crd["spec"]
            storage = next(v["name"] for v in spec["versions"] if v.get("storage"))
            client.get(f"/apis/{spec['group']}/{storage}/{spec['names']['plural']}?limit=1")
        except ApiError:
            return None
    return True


def _install_crds(servers: _Servers, client: ApiClient, artifacts: Artifacts,
                  endpoints: kueue_setup.Endpoints, pki: Pki, job_crds: tuple[str, ...]) -> None:
    crds = kueue_setup.crds(artifacts.kueue_crds, endpoints, pki.ca_pem())
    for path in artifacts.job_crd_files(job_crds):
        crds.extend(kueue_setup.documents(path))
    (servers.workdir.manifests / "crds.json").write_text(json.dumps(crds), encoding="utf-8")
    namespace = {"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": kueue_setup.KUEUE_NAMESPACE}}
    _create(client, [namespace, *crds], "Kueue's CRDs")
    names = [crd["metadata"]["name"] for crd in crds]
    wait_for("the CRDs to be served", lambda: _crds_served(client, names),
             timeout=START_TIMEOUT, failed=servers.failure)


def _manager_argv(artifacts: Artifacts, workdir: Workdir, config: Path, pki: Pki) -> list[str]:
    """Kueue's manager, seeing a metrics certificate at its fixed path through a private mount.

    In a mount namespace of its own, a tmpfs in the sandbox folder holds an overlay's upper
    layer over /etc: the manager reads /etc/kueue/metrics/certs/, while the machine's /etc is
    not written and the mounts end with the process."""
    unshare = shutil.which("unshare")
    if unshare is None:
        raise EnvironmentFailure("unshare (util-linux) not found: Kueue's manager needs a private "
                                 "mount for its fixed certificate path")
    view = workdir.kueue / "etc-view"
    view.mkdir(exist_ok=True)
    certs = "upper" + kueue_setup.METRICS_CERT_DIR.removeprefix("/etc")
    script = ('set -e; mount -t tmpfs -o size=4m tmpfs "$1"; mkdir -p "$1/%s" "$1/work"; '
              'cp "$2" "$3" "$1/%s/"; '
              'mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/upper,workdir=$1/work" /etc; '
              'shift 3; exec "$@"') % (certs, certs)
    namespace = ["--mount", "--propagation", "private"]
    if os.geteuid() != 0:   # a user namespace lets a non-root user mount in its own view
        namespace = ["--user", "--map-root-user", *namespace]
    return [unshare, *namespace, "--", "sh", "-c", script, "sh", str(view), str(pki.webhook.cert),
            str(pki.webhook.key), str(artifacts.kueue_manager), f"--config={config}",
            f"--kubeconfig={workdir.kubeconfig}"]


def _start_manager(servers: _Servers, artifacts: Artifacts, endpoints: kueue_setup.Endpoints,
                   pki: Pki, base: dict) -> None:
    configuration = kueue_setup.manager_configuration(base, endpoints, pki.webhook.cert.parent)
    config = servers.workdir.kueue / "controller_manager_config.yaml"
    config.write_text(yaml.safe_dump(configuration, sort_keys=False), encoding="utf-8")
    servers.start("kueue", _manager_argv(artifacts, servers.workdir, config, pki), artifacts.kueue_manager)
    wait_for("Kueue's manager to be ready",
             lambda: _http_ok(f"http://127.0.0.1:{endpoints.health_port}/readyz"),
             timeout=START_TIMEOUT, failed=servers.failure)


def _webhooks_effective(client: ApiClient) -> bool | None:
    """True once the API server calls Kueue's validating webhook.

    The API server picks up a new webhook configuration from its own watch, a moment after it
    is written; until then requests pass unchecked. A dry-run ResourceFlavor whose taint value
    only Kueue's webhook refuses tells which is the case, and writes nothing."""
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
              "metadata": {"name": "kueue-policy-sandbox-webhook-probe"},
              "spec": {"nodeTaints": [{"key": "probe", "value": "not a label value!",
                                       "effect": "NoSchedule"}]}}
    try:
        client.request("POST", "/apis/kueue.x-k8s.io/v1beta2/resourceflavors?dryRun=All", flavor)
    except ApiError as error:
        return True if error.status in (400, 403, 422) and "admission webhook" in str(error) else None
    return None


def _install_webhooks(servers: _Servers, client: ApiClient, artifacts: Artifacts,
                      endpoints: kueue_setup.Endpoints, pki: Pki) -> None:
    webhooks = kueue_setup.webhook_configurations(artifacts.kueue_webhooks, endpoints, pki.ca_pem())
    (servers.workdir.manifests / "webhooks.json").write_text(json.dumps(webhooks, indent=1), encoding="utf-8")
    _create(client, webhooks, "Kueue's webhooks")
    wait_for("the API server to call Kueue's webhooks", lambda: _webhooks_effective(client),
             timeout=START_TIMEOUT, failed=servers.failure)


def apply_tree(kubeconfig: Path, tree: Path) -> None:
    """Server-side apply of a compiled cluster folder (its kustomization when it has one)."""
    source = ["-k", str(tree)] if (tree / "kustomization.yaml").is_file() else ["-R", "-f", str(tree)]
    done = kubectl(kubeconfig, "apply", "--server-side", f"--field-manager={FIELD_MANAGER}", *source)
    if done.returncode != 0:
        raise PolicyError([Diagnostic(codes.LIVE_APPLY_REFUSED,
                                      f"the API server refused the tree: {done.stderr.strip()}",
                                      SourcePosition(str(tree)))])


def inactive_cluster_queues(client: ApiClient) -> list[str]:
    """'name: reason' for every ClusterQueue that is not Active (empty when all are)."""
    items = client.get("/apis/kueue.x-k8s.io/v1beta2/clusterqueues").get("items") or []
    inactive = []
    for queue in items:
        active = condition(queue, "Active")
        if not active or active.get("status") != "True":
            why = (active or {}).get("message") or "no Active condition yet"
            inactive.append(f"{queue['metadata']['name']}: {why}")
    return inactive


def wait_cluster_queues_active(client: ApiClient, timeout: float = ACTIVE_TIMEOUT) -> None:
    last: list[str] = []

    def probe() -> bool | None:
        nonlocal last
        last = inactive_cluster_queues(client)
        return True if not last else None

    try:
        wait_for("ClusterQueues to be Active", probe, timeout=timeout)
    except TimeoutError:
        raise PolicyError([Diagnostic(codes.LIVE_QUEUE_INACTIVE, f"ClusterQueue {line} (after {timeout:.0f} s)")
                           for line in last]) from None


# --- up, down, status -------------------------------------------------------------------------

@contextmanager
def _interrupts_raise() -> Iterator[None]:
    """SIGTERM and SIGHUP end `up` as Ctrl-C does, so its clean-up runs on every way out."""
    def interrupted(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = {signum: signal.signal(signum, interrupted) for signum in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _prepare(workdir: Workdir) -> None:
    if workdir.is_sandbox():
        if running(workdir):
            raise EnvironmentFailure(f"a sandbox already runs in {workdir.root}: "
                                     f"`kueue-policy sandbox down --dir {workdir.root}` first")
        shutil.rmtree(workdir.root)   # what a sandbox that died left behind
    elif workdir.root.exists() and any(workdir.root.iterdir()):
        raise EnvironmentFailure(f"{workdir.root} is not empty and holds no sandbox: choose another --dir")
    workdir.create()


def up(root: Path, tree: Path | None = None, *, job_crds: tuple[str, ...] = DEFAULT_JOB_CRDS,
       progress: Callable[[str], None] = lambda _: None) -> UpResult:
    """Start a sandbox in `root`; with `tree`, apply it and wait for its ClusterQueues.

    `job_crds` names the job kinds' CRDs to install beside Kueue's (CRD names, or "all")."""
    began = time.monotonic()
    artifacts = find_artifacts()
    artifacts.job_crd_files(job_crds)   # an unknown name fails before anything starts
    base, source = kueue_setup.tree_configuration(tree)   # and so does an unreadable Configuration
    if tree is not None and not tree.is_dir():
        raise ValueError(f"{tree}: no such compiled cluster folder")   # the CLI checks first
    workdir = Workdir(root.resolve())
    _prepare(workdir)
    state = SandboxState(ports=dict(zip(PORT_NAMES, _free_ports(len(PORT_NAMES)))),
                         kubeconfig=str(workdir.kubeconfig), tree=str(tree) if tree else None)
    workdir.write_state(state)
    servers = _Servers(workdir, state)
    endpoints = kueue_setup.Endpoints(state.ports["kueue-webhook"], state.ports["kueue-health"])
    try:
        with _interrupts_raise():
            pki = make_pki(workdir.pki)
            progress("etcd")
            etcd = _start_etcd(servers, artifacts, state.ports)
            progress("kube-apiserver")
            client = _start_apiserver(servers, artifacts, state.ports, etcd, pki)
            workdir.kubeconfig.write_text(yaml.safe_dump(_kubeconfig(client.server, pki)), encoding="utf-8")
            workdir.kubeconfig.chmod(0o600)
            progress("Kueue's CRDs")
            _install_crds(servers, client, artifacts, endpoints, pki, job_crds)
            progress("Kueue's manager")
            _start_manager(servers, artifacts, endpoints, pki, base)
            progress("Kueue's webhooks")
            _install_webhooks(servers, client, artifacts, endpoints, pki)
            if tree is not None:
                progress(f"applying {tree}")
                apply_tree(workdir.kubeconfig, tree)
                wait_cluster_queues_active(client)
    except TimeoutError as error:
        servers.stop_all()
        raise SandboxFailed(f"sandbox up: {error}") from None
    except BaseException:
        servers.stop_all()
        raise
    state.ready = True
    workdir.write_state(state)
    return UpResult(workdir.kubeconfig, state, time.monotonic() - began, source)


def _records(workdir: Workdir) -> list[processes.Started]:
    return [processes.Started(record.name, record.pid, record.start_time)
            for record in workdir.read_state().processes]


def running(workdir: Workdir) -> list[str]:
    """The names of the sandbox's servers that still run."""
    return [server.name for server in _records(workdir)
            if processes.is_running(server.pid, server.start_time)]


def down(root: Path) -> list[str]:
    """Stop the sandbox in `root` (newest server first) and remove its folder; the names stopped."""
    workdir = Workdir(root.resolve())
    if not workdir.is_sandbox():
        if workdir.root.exists() and any(workdir.root.iterdir()):
            raise EnvironmentFailure(f"{workdir.root} holds no sandbox (no {workdir.state_file.name}); "
                                     "nothing removed")
        return []
    servers = _records(workdir)
    stopped = [server.name for server in servers if processes.is_running(server.pid, server.start_time)]
    for server in reversed(servers):
        processes.stop(server)
    still = running(workdir)
    if still:
        raise EnvironmentFailure(f"could not stop {', '.join(still)}; {workdir.root} kept")
    shutil.rmtree(workdir.root)
    return stopped


@dataclass(frozen=True)
class Status:
    root: Path
    exists: bool
    ready: bool
    servers: dict[str, bool]
    ports: dict[str, int]
    kubeconfig: str


def status(root: Path) -> Status:
    workdir = Workdir(root.resolve())
    if not workdir.is_sandbox():
        return Status(workdir.root, False, False, {}, {}, "")
    state = workdir.read_state()
    alive = {server.name: processes.is_running(server.pid, server.start_time) for server in _records(workdir)}
    return Status(workdir.root, True, state.ready, alive, state.ports, state.kubeconfig)


def client_for(root: Path) -> ApiClient:
    """An API client for a running sandbox (tests and `status` use it)."""
    workdir = Workdir(root.resolve())
    state = workdir.read_state()
    return ApiClient(f"https://127.0.0.1:{state.ports['apiserver']}", load_token(workdir.pki),
                     workdir.pki / "ca.crt")
