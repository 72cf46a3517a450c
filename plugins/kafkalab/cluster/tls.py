"""TLS material for an embedded cluster's SASL_SSL listener: a throw-away CA and one broker
certificate signed by it, generated on this machine (no ``openssl``/``keytool`` needed).

Files under the folder given to :func:`ensure_tls` (``<lab>/cluster/tls/``):

| file | what | who reads it |
|---|---|---|
| ``ca.pem`` | the CA's certificate (PEM) | clients: ``ssl.ca.location`` / ``ssl_cafile`` |
| ``broker.p12`` | the brokers' key and certificate chain (PKCS#12, mode 0600) | the brokers' ``ssl.keystore.location`` |
| ``broker.p12.pass`` | the keystore's random password (mode 0600) | written into the nodes' properties files |

The broker certificate names ``127.0.0.1`` (IP SAN) and ``localhost`` (DNS SAN), so clients
verify the host name. The CA's key is never written: a new certificate means a new CA.
Material is reused while it has more than :data:`MIN_REMAINING_DAYS` days left.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from kafkalab.store import atomic_write, private_token

__all__ = ["CA_FILE", "KEYSTORE_FILE", "TlsMaterial", "ensure_tls"]

CA_FILE = "ca.pem"
KEYSTORE_FILE = "broker.p12"
_PASS_FILE = "broker.p12.pass"
VALID_DAYS = 30
"""How long a generated certificate is valid."""
MIN_REMAINING_DAYS = 2
"""Material with less left than this is generated again at the next start."""


@dataclass(frozen=True)
class TlsMaterial:
    """Where the brokers' keystore and the clients' CA are."""

    ca_path: Path
    keystore_path: Path
    keystore_password: str
    """The keystore's password: a lab-generated secret the brokers' config carries (never a
    user's credential)."""


def _still_valid(ca: Path) -> bool:
    from cryptography import x509

    try:
        cert = x509.load_pem_x509_certificate(ca.read_bytes())
    except (OSError, ValueError):
        return False
    left = cert.not_valid_after_utc - dt.datetime.now(dt.UTC)
    return left > dt.timedelta(days=MIN_REMAINING_DAYS)


def ensure_tls(folder: Path, host: str = "127.0.0.1") -> TlsMaterial:
    """The CA and broker keystore under ``folder``, generated when missing or about to expire.

    Args:
        folder: where the files go (created).
        host: the IP address the brokers advertise (the certificate's IP SAN).
    """
    ca_path, ks_path, pass_path = folder / CA_FILE, folder / KEYSTORE_FILE, folder / _PASS_FILE
    folder.mkdir(parents=True, exist_ok=True)
    kept = pass_path.is_file() and ks_path.is_file() and _still_valid(ca_path)
    password = private_token(pass_path, 24)
    if kept:
        return TlsMaterial(ca_path, ks_path, password)
    ca_pem, keystore = _generate(host, password)
    atomic_write(ks_path, keystore)  # 0600
    atomic_write(ca_path, ca_pem, mode=0o644)
    return TlsMaterial(ca_path, ks_path, password)


def _generate(host: str, password: str) -> tuple[bytes, bytes]:
    """``(CA certificate PEM, PKCS#12 keystore bytes)``: a fresh CA and a broker key and
    certificate for ``host`` signed by it (EC P-256, SHA-256)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    until = now + dt.timedelta(days=VALID_DAYS)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Kafka Latency Lab test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now).not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                     key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, key_cert_sign=True, crl_sign=True,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                       critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now).not_valid_after(until)
        .add_extension(x509.SubjectAlternativeName([
            x509.IPAddress(ipaddress.ip_address(host)), x509.DNSName("localhost")]),
            critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                       critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    keystore = pkcs12.serialize_key_and_certificates(
        b"broker", key, cert, [ca_cert],
        serialization.BestAvailableEncryption(password.encode("ascii")))
    return ca_cert.public_bytes(serialization.Encoding.PEM), keystore
