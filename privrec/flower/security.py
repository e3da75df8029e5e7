"""Credentials of a secured Flower federation: a certificate authority, the SuperLink's TLS certificate,
and one SuperNode key pair per organisation.

* TLS: the SuperLink serves with ``superlink.crt`` (signed by ``ca.crt``, valid for the host names and
  addresses it is reached at); every SuperNode and the ``flwr`` CLI verify it against ``ca.crt``
  (``--root-certificates``), so a SuperLink without a certificate from that CA is refused.
* SuperNode authentication (Flower's CLI-managed mode, ``flower-superlink --enable-supernode-auth``): each
  SuperNode holds an EC private key (NIST P-384, OpenSSH format, ``flower-supernode
  --auth-supernode-private-key``), its public key is registered on the SuperLink with ``flwr supernode
  register``, and a SuperNode whose key is not registered is refused.

Written with ``cryptography`` (the library Flower itself reads them with); private keys are written
owner-only (0600). One folder per federation: ``ca.crt``/``ca.key`` (keep the CA key off the SuperLink in
a real deployment), ``superlink.crt``/``superlink.key``, ``supernode-K`` / ``supernode-K.pub``.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from privrec.errors import ParameterError

DAYS = 365


@dataclass(frozen=True)
class Credentials:
    folder: Path

    @property
    def ca(self) -> Path:
        return self.folder / "ca.crt"

    @property
    def certificate(self) -> Path:
        return self.folder / "superlink.crt"

    @property
    def key(self) -> Path:
        return self.folder / "superlink.key"

    def node_key(self, k: int) -> Path:
        return self.folder / f"supernode-{k}"

    def node_public(self, k: int) -> Path:
        return self.folder / f"supernode-{k}.pub"


def _write(path: Path, data: bytes, private: bool = False) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def _name(common: str):
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _alt_names(hosts: Sequence[str]):
    from cryptography import x509

    names = []
    for h in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(h.strip("[]"))))
        except ValueError:
            names.append(x509.DNSName(h))
    return x509.SubjectAlternativeName(names)


def certificate_authority(folder: Path, name: str = "privrec federation CA") -> None:
    """A self-signed CA (EC P-384), ``ca.crt`` and ``ca.key``, valid :data:`DAYS` days."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP384R1())
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(_name(name)).issuer_name(_name(name))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .sign(key, hashes.SHA256()))
    _write(folder / "ca.key", key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                serialization.NoEncryption()), private=True)
    _write(folder / "ca.crt", cert.public_bytes(serialization.Encoding.PEM))


def server_certificate(folder: Path, hosts: Sequence[str]) -> None:
    """``superlink.crt``/``superlink.key`` for ``hosts`` (names or addresses it is reached at), signed by
    the folder's CA."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    ca_cert = x509.load_pem_x509_certificate((folder / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((folder / "ca.key").read_bytes(), password=None)
    key = ec.generate_private_key(ec.SECP384R1())
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(_name(hosts[0])).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=DAYS))
            .add_extension(_alt_names(hosts), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256()))
    _write(folder / "superlink.key", key.private_bytes(serialization.Encoding.PEM,
                                                       serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()), private=True)
    _write(folder / "superlink.crt", cert.public_bytes(serialization.Encoding.PEM))


def node_keys(folder: Path, k: int) -> None:
    """SuperNode ``k``'s EC P-384 key pair in OpenSSH format (what ``flower-supernode`` and ``flwr supernode
    register`` read)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP384R1())
    _write(folder / f"supernode-{k}", key.private_bytes(serialization.Encoding.PEM,
                                                        serialization.PrivateFormat.OpenSSH,
                                                        serialization.NoEncryption()), private=True)
    _write(folder / f"supernode-{k}.pub", key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                                                        serialization.PublicFormat.OpenSSH)
           + f" supernode-{k}\n".encode())


def make_credentials(folder: str | Path, hosts: Sequence[str], n_nodes: int) -> Credentials:
    """A federation's credentials in ``folder`` (made if absent; existing files are never overwritten: a
    folder that already holds credentials is refused): the CA, the SuperLink's certificate for ``hosts``,
    ``n_nodes`` SuperNode key pairs."""
    folder = Path(folder)
    if not hosts:
        raise ParameterError("give the SuperLink's host names or addresses (--host), e.g. 127.0.0.1 or link.example.org")
    if n_nodes < 1:
        raise ParameterError(f"a federation needs at least one SuperNode, got {n_nodes}")
    if folder.exists() and any(folder.iterdir()):
        raise ParameterError(f"{folder} is not empty; credentials are made once into a new folder (never over "
                             "existing keys)")
    folder.mkdir(parents=True, exist_ok=True)
    certificate_authority(folder)
    server_certificate(folder, hosts)
    for k in range(n_nodes):
        node_keys(folder, k)
    return Credentials(folder)
