"""cert-manager renews the webhook's serving certificate: the server presents the new one without a restart.

The Secret is mounted the way kubelet lays out a Secret volume (``tls.crt`` -> ``..data/tls.crt``, ``..data`` ->
a timestamped directory, swapped atomically on update). While a load of requests on new connections runs
against the real server (TLS on loopback, DynamoDB from moto), the certificate is rotated: every connection
opened a check interval after the swap presents the new certificate's serial, and no request fails.
"""

from __future__ import annotations

import datetime
import http.client
import ipaddress
import json
import os
import ssl
import threading
import time
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from webhook_server import (
    Certificates,
    WebhookProcess,
    create_table,
    kind_named,
    review,
    sso_user,
    webhook_config,
    workload,
)

from hyperpod_tenancy.webhook.server import CERT_RELOAD_ENV

#: The check interval the server runs with here (30 s in a cluster).
INTERVAL = 1.0
#: Load generator: threads, each sending requests on a new connection one after the other.
THREADS = 4


class _Secret:
    """A CA and a Secret volume directory laid out as kubelet's atomic writer does."""

    def __init__(self, root: Path) -> None:
        self.root = root
        now = datetime.datetime.now(datetime.UTC)
        self._ca_key = ec.generate_private_key(ec.SECP256R1())
        self._ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "rotation test CA")])
        ca = (
            x509.CertificateBuilder()
            .subject_name(self._ca_name)
            .issuer_name(self._ca_name)
            .public_key(self._ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .sign(self._ca_key, hashes.SHA256())
        )
        self.ca = root / "ca.pem"
        self.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        self.volume = root / "tls"
        self.volume.mkdir()
        for name in ("tls.crt", "tls.key"):
            (self.volume / name).symlink_to(f"..data/{name}")
        self.generation = 0

    def issue(self) -> int:
        """Write a new key pair in a new directory and swap ``..data`` to it; return the new serial."""
        now = datetime.datetime.now(datetime.UTC)
        key = ec.generate_private_key(ec.SECP256R1())
        serial = x509.random_serial_number()
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "posix-identity-webhook")]))
            .issuer_name(self._ca_name)
            .public_key(key.public_key())
            .serial_number(serial)
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
            .sign(self._ca_key, hashes.SHA256())
        )
        self.generation += 1
        data = self.volume / f"..2026_12_01_00_00_{self.generation:02d}.{os.getpid()}"
        data.mkdir()
        (data / "tls.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        (data / "tls.key").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        link = self.volume / "..data_tmp"
        link.symlink_to(data.name)
        link.replace(self.volume / "..data")  # rename(2): atomic, as kubelet's AtomicWriter does
        return serial

    def certificates(self) -> Certificates:
        return Certificates(ca=self.ca, cert=self.volume / "tls.crt", key=self.volume / "tls.key")


def _mutate_once(port: int, context: ssl.SSLContext, body: bytes) -> tuple[int, int]:
    """One AdmissionReview on a new connection: (HTTP status, serial of the certificate the server presented)."""
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=30)
    try:
        conn.request("POST", "/mutate", body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        assert conn.sock is not None
        der = conn.sock.getpeercert(binary_form=True)
        assert der is not None
        return response.status, x509.load_der_x509_certificate(der).serial_number
    finally:
        conn.close()


def test_a_renewed_certificate_is_served_within_one_check_without_a_failed_request(
    moto: str, tmp_path: Path
) -> None:
    secret = _Secret(tmp_path)
    old = secret.issue()
    config = tmp_path / "teams.json"
    config.write_text(json.dumps(webhook_config()))
    body = json.dumps(review(workload(kind_named("Job")), user=sso_user("alice"))).encode()
    context = ssl.create_default_context(cafile=str(secret.ca))
    env = {CERT_RELOAD_ENV: str(INTERVAL)}
    with WebhookProcess(
        certs=secret.certificates(), table=create_table(), config_path=config, env=env
    ) as server:
        seen: list[tuple[float, int, int]] = []  # (time the connection opened, status, serial)
        errors: list[BaseException] = []
        stop = threading.Event()

        def load() -> None:
            while not stop.is_set():
                started = time.monotonic()
                try:
                    status, serial = _mutate_once(server.port, context, body)
                except Exception as exc:
                    errors.append(exc)
                    continue
                seen.append((started, status, serial))

        threads = [threading.Thread(target=load) for _ in range(THREADS)]
        for thread in threads:
            thread.start()
        time.sleep(2)
        new = secret.issue()
        rotated = time.monotonic()
        time.sleep(INTERVAL * 4)
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    assert errors == [], errors[:3]
    assert {status for _, status, _ in seen} == {200}
    before = [s for t, _, s in seen if t < rotated]
    after = [(t - rotated, s) for t, _, s in seen if t >= rotated]
    assert before and set(before) == {old}
    first_new = min((t for t, s in after if s == new), default=float("inf"))
    # a check every INTERVAL, plus the scheduling slack of a loaded 2-core machine
    assert first_new <= INTERVAL * 2 + 0.5, first_new
    late = [t for t, s in after if s == old and t > INTERVAL * 2 + 0.5]
    assert late == [], f"connections still given the old certificate {late[:3]} s after the swap"
    assert len(after) >= 20, "the load kept going through the rotation"
