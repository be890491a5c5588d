"""A test PKI for loopback servers: one CA, server certificates for ``127.0.0.1``, client certificates per identity.

The API server authenticates a client certificate as the user of its Common Name in the groups of its
Organizations (Kubernetes docs, "Authenticating: X509 client certificates"), so each component and each person a
test plays gets a certificate of its own. Keys are ECDSA P-256 (``cryptography``), written as PEM files.
"""

from __future__ import annotations

import datetime
import ipaddress
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["CertificateAuthority", "KeyPair", "write_private_key"]

#: Names a loopback server answers to.
LOOPBACK_NAMES: tuple[str, ...] = ("localhost", "127.0.0.1")


@dataclass(frozen=True)
class KeyPair:
    """PEM files of a certificate and its private key."""

    cert: Path
    key: Path


def write_private_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey, path: Path) -> None:
    """Write ``key`` as unencrypted PKCS#8 PEM."""
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )


def _san(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


class CertificateAuthority:
    """A self-signed CA under ``directory`` (``ca.crt``) that issues server and client certificates there.

    Args:
        directory: where every file is written.
        name: the CA's Common Name.
        days: how long its certificates are valid.

    """

    def __init__(self, directory: Path, *, name: str = "test CA", days: int = 2) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._now = datetime.datetime.now(datetime.UTC)
        self._days = days
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        cert = (
            self._builder(self._name, self._key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )
        #: The CA certificate (PEM).
        self.cert: Path = directory / "ca.crt"
        self.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        #: Its private key (PEM), for a component that signs with the CA (kube-controller-manager).
        self.key: Path = directory / "ca.key"
        write_private_key(self._key, self.key)

    def _builder(self, subject: x509.Name, public_key: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self._name)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(self._now - datetime.timedelta(minutes=5))
            .not_valid_after(self._now + datetime.timedelta(days=self._days))
        )

    def _issue(
        self, stem: str, subject: x509.Name, *, usage: x509.ObjectIdentifier, sans: Sequence[str]
    ) -> KeyPair:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = self._builder(subject, key.public_key()).add_extension(
            x509.ExtendedKeyUsage([usage]), critical=False
        )
        if sans:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([_san(n) for n in sans]), critical=False
            )
        cert = builder.sign(self._key, hashes.SHA256())
        pair = KeyPair(cert=self.directory / f"{stem}.crt", key=self.directory / f"{stem}.key")
        pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        write_private_key(key, pair.key)
        return pair

    def server(self, stem: str, *, common_name: str, names: Sequence[str] = LOOPBACK_NAMES) -> KeyPair:
        """A serving certificate for ``names`` (DNS names or IP addresses), written as ``<stem>.crt/.key``."""
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        return self._issue(stem, subject, usage=ExtendedKeyUsageOID.SERVER_AUTH, sans=names)

    def client(self, stem: str, *, user: str, groups: Sequence[str] = ()) -> KeyPair:
        """A client certificate the API server reads as ``user`` in ``groups``, written as ``<stem>.crt/.key``."""
        attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
        # EKS user names (assumed-role ARNs) are longer than the 64 characters RFC 5280 suggests for a common
        # name; the API server reads any length, so the bound is not enforced (cryptography warns otherwise)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            common_name = x509.NameAttribute(NameOID.COMMON_NAME, user, _validate=False)
        subject = x509.Name([*attributes, common_name])
        return self._issue(stem, subject, usage=ExtendedKeyUsageOID.CLIENT_AUTH, sans=())
