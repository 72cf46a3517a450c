"""The TLS material of an embedded cluster's SASL_SSL listener: a CA and a broker keystore
Java can read, the host names a client verifies, files only their owner reads."""

from __future__ import annotations

import ipaddress
import stat
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives.serialization import pkcs12

from kafkalab.cluster.tls import CA_FILE, KEYSTORE_FILE, ensure_tls


def test_the_broker_certificate_is_signed_by_the_ca_and_names_the_host(tmp_path: Path) -> None:
    tls = ensure_tls(tmp_path / "tls")
    ca = x509.load_pem_x509_certificate(tls.ca_path.read_bytes())
    key, cert, chain = pkcs12.load_key_and_certificates(
        tls.keystore_path.read_bytes(), tls.keystore_password.encode())
    assert key is not None and cert is not None and [c.subject for c in chain] == [ca.subject]
    cert.verify_directly_issued_by(ca)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_the_keystore_is_private_and_reused_while_valid(tmp_path: Path) -> None:
    folder = tmp_path / "tls"
    first = ensure_tls(folder)
    assert stat.S_IMODE((folder / KEYSTORE_FILE).stat().st_mode) == 0o600
    assert stat.S_IMODE((folder / CA_FILE).stat().st_mode) == 0o644
    again = ensure_tls(folder)
    assert again == first and (folder / CA_FILE).read_bytes() == first.ca_path.read_bytes()


def test_a_lost_password_file_means_new_material(tmp_path: Path) -> None:
    folder = tmp_path / "tls"
    first = ensure_tls(folder)
    ca_before = first.ca_path.read_bytes()
    (folder / "broker.p12.pass").unlink()
    second = ensure_tls(folder)
    assert second.keystore_password != first.keystore_password
    assert second.ca_path.read_bytes() != ca_before
    pkcs12.load_key_and_certificates(second.keystore_path.read_bytes(),
                                     second.keystore_password.encode())
