"""Kueue installed on the sandbox as its release installs it, wired to 127.0.0.1.

Kueue's release points its webhooks and its CRDs' conversion webhook at a Service
(`webhook-service` in Kueue's namespace), which this control plane cannot route to: no kubelet,
no kube-proxy. As Kueue's own integration tests do, every Service reference becomes a URL on
127.0.0.1 with the CA of the webhook's serving certificate; nothing else in the manifests
changes (rules, failure policies, namespace selectors are Kueue's).

The manager runs with the Kueue Configuration the compiled tree carries (its integrations,
`resources.deviceClassMappings`, fair sharing, ...): only where it listens, and how it gets its
certificates, are the sandbox's.
"""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from compiler.core import codes, yamlio
from compiler.core.errors import Diagnostic, InputError, SourcePosition
from compiler.evaluator import configuration_forms
from compiler.stages.kueue_config import default_configuration

KUEUE_NAMESPACE = "kueue-system"
# The kueueVersion whose default Configuration the sandbox's manager starts from when the tree
# ships none (the release `make sandbox` builds).
SANDBOX_KUEUE_VERSION = "0.19"
CONFIG_PATCH = Path("kueue-config") / "kueue-manager-config.patch.yaml"
# Kueue serves these from files at fixed paths when internal cert management is off. The
# visibility server (/visibility/tls.*) is switched off; the metrics one cannot be (main.go
# reads its certificate even when metrics are not served), so the manager sees one there
# through a private mount (lifecycle.py).
METRICS_CERT_DIR = "/etc/kueue/metrics/certs"
SANDBOX_FEATURE_GATES = {"VisibilityOnDemand": False}


@dataclass(frozen=True)
class Endpoints:
    """Where the manager listens."""

    webhook_port: int
    health_port: int

    @property
    def webhook_base(self) -> str:
        return f"https://127.0.0.1:{self.webhook_port}"


# The CRDs are megabytes of YAML (a job kind's CRD holds the whole pod template schema): libyaml
# reads them in a second where the pure-Python reader takes half a minute.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def documents(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as stream:
        return [doc for doc in yaml.load_all(stream, Loader=_LOADER) if isinstance(doc, dict)]


def _url_client_config(client_config: dict, endpoints: Endpoints, ca_pem: bytes) -> dict:
    service = client_config.get("service") or {}
    path = service.get("path", "/")
    return {"url": endpoints.webhook_base + path, "caBundle": base64.b64encode(ca_pem).decode()}


def crds(crd_file: Path, endpoints: Endpoints, ca_pem: bytes) -> list[dict]:
    """Kueue's CRDs, their conversion webhooks (where Kueue's release sets one) pointed here."""
    out = []
    for crd in documents(crd_file):
        crd = copy.deepcopy(crd)
        webhook = ((crd.get("spec") or {}).get("conversion") or {}).get("webhook")
        if webhook and "clientConfig" in webhook:
            webhook["clientConfig"] = _url_client_config(webhook["clientConfig"], endpoints, ca_pem)
        out.append(crd)
    return out


def webhook_configurations(webhook_file: Path, endpoints: Endpoints, ca_pem: bytes) -> list[dict]:
    """Kueue's validating and mutating webhook configurations, each webhook called here."""
    out = []
    for doc in documents(webhook_file):
        if doc.get("kind") not in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            continue   # the Service the release routes through
        doc = copy.deepcopy(doc)
        for webhook in doc.get("webhooks") or []:
            webhook["clientConfig"] = _url_client_config(webhook.get("clientConfig") or {}, endpoints, ca_pem)
        out.append(doc)
    return out


def tree_configuration(tree: Path | None) -> tuple[dict, str]:
    """The Kueue Configuration a compiled cluster folder carries, and where it came from.

    The compiler ships it as the kueue-config component's ConfigMap patch, read here as
    `evaluate` reads every form (configuration_forms); a tree without one runs Kueue's default
    Configuration, as a cluster installed from Kueue's release would."""
    patch = tree / CONFIG_PATCH if tree is not None else None
    if patch is None or not patch.is_file():
        return default_configuration(SANDBOX_KUEUE_VERSION) or {}, f"Kueue {SANDBOX_KUEUE_VERSION}'s default"
    where = SourcePosition(str(patch))
    try:
        doc = yamlio.load(patch.read_text(encoding="utf-8"))
    except yamlio.YamlError as error:
        raise InputError([Diagnostic(codes.EVAL_UNREADABLE, error.message,
                                     SourcePosition(str(patch), error.line, error.column))]) from None
    if not isinstance(doc, dict) or configuration_forms.embedded_text(doc) is None:
        raise InputError([Diagnostic(codes.EVAL_UNREADABLE,
                                     f"not a ConfigMap holding {configuration_forms.CONFIGMAP_KEY}", where)])
    return configuration_forms.unwrap(doc, where, str(patch)), str(patch)


def manager_configuration(base: dict, endpoints: Endpoints, cert_dir: Path) -> dict:
    """`base` with the sandbox's listening addresses and certificate handling."""
    configuration: dict[str, Any] = copy.deepcopy(base)
    configuration.setdefault("apiVersion", "config.kueue.x-k8s.io/v1beta2")
    configuration.setdefault("kind", "Configuration")
    configuration["namespace"] = KUEUE_NAMESPACE
    configuration["health"] = {"healthProbeBindAddress": f"127.0.0.1:{endpoints.health_port}"}
    configuration["metrics"] = {**(configuration.get("metrics") or {}), "bindAddress": "0"}
    configuration["webhook"] = {"host": "127.0.0.1", "port": endpoints.webhook_port,
                                "certDir": str(cert_dir)}
    configuration["leaderElection"] = {"leaderElect": False}
    configuration["internalCertManagement"] = {"enable": False}
    configuration["featureGates"] = {**(configuration.get("featureGates") or {}), **SANDBOX_FEATURE_GATES}
    return configuration
