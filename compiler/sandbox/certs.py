"""The sandbox's certificates: one CA, and the serving certificates signed by it.

kube-apiserver serves with one (so the kubeconfig verifies it instead of skipping TLS checks);
Kueue's webhook server serves with another, and the API server trusts it through the webhook
configurations' and CRDs' `caBundle`, as cert-manager or Kueue's internal cert management would
arrange on a cluster. Kueue's metrics server reads a certificate from a fixed path; it gets one
too. Keys are ECDSA P-256: quick to make, and every one of the three servers accepts them.
"""

from __future__ import annotations

import datetime
import ipaddress
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

LOOPBACK = ipaddress.IPv4Address("127.0.0.1")
VALIDITY = datetime.timedelta(days=30)


@dataclass(frozen=True)
class KeyPair:
    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    """Every credential file of one sandbox."""

    ca: KeyPair
    apiserver: KeyPair
    webhook: KeyPair
    service_account: KeyPair   # cert holds the public key (kube-apiserver reads a PEM public key)
    token_file: Path
    token: str

    def ca_pem(self) -> bytes:
        return self.ca.cert.read_bytes()


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _private_key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _write(path: Path, data: bytes, mode: int = 0o600) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(mode)


def _certificate(subject: str, issuer: x509.Name, public_key, signing_key, *, ca: bool,
                 dns: tuple[str, ...] = ()) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder()
               .subject_name(_name(subject)).issuer_name(issuer).public_key(public_key)
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + VALIDITY)
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                          content_commitment=False, key_encipherment=False,
                          data_encipherment=False, key_agreement=False, encipher_only=False,
                          decipher_only=False), critical=True)
    else:
        names = [x509.IPAddress(LOOPBACK)] + [x509.DNSName(name) for name in dns]
        builder = (builder
                   .add_extension(x509.SubjectAlternativeName(names), critical=False)
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                                  critical=False))
    return builder.sign(signing_key, hashes.SHA256())


def make_pki(folder: Path) -> Pki:
    """Write a fresh CA, the API server's and the webhook's serving pairs, the service-account
    signing pair and a token file holding one admin token, all under `folder`."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = _certificate("kueue-policy-sandbox-ca", _name("kueue-policy-sandbox-ca"),
                           ca_key.public_key(), ca_key, ca=True)
    ca = KeyPair(folder / "ca.crt", folder / "ca.key")
    _write(ca.cert, ca_cert.public_bytes(serialization.Encoding.PEM), 0o644)
    _write(ca.key, _private_key_pem(ca_key))

    def serving(name: str, dns: tuple[str, ...]) -> KeyPair:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _certificate(name, ca_cert.subject, key.public_key(), ca_key, ca=False, dns=dns)
        pair = KeyPair(folder / name / "tls.crt", folder / name / "tls.key")
        _write(pair.cert, cert.public_bytes(serialization.Encoding.PEM), 0o644)
        _write(pair.key, _private_key_pem(key))
        return pair

    apiserver = serving("apiserver", ("localhost", "kubernetes", "kubernetes.default",
                                      "kubernetes.default.svc"))
    webhook = serving("webhook", ("localhost",))

    sa_key = ec.generate_private_key(ec.SECP256R1())
    service_account = KeyPair(folder / "sa.pub", folder / "sa.key")
    _write(service_account.key, _private_key_pem(sa_key))
    _write(service_account.cert, sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo), 0o644)

    token = secrets.token_hex(24)
    token_file = folder / "tokens.csv"
    # token,user,uid,"group": the admin is in system:masters, which RBAC always allows.
    _write(token_file, f'{token},sandbox-admin,sandbox-admin,"system:masters"\n'.encode())
    return Pki(ca=ca, apiserver=apiserver, webhook=webhook, service_account=service_account,
               token_file=token_file, token=token)


def load_token(folder: Path) -> str:
    return (folder / "tokens.csv").read_text(encoding="utf-8").split(",", 1)[0]
