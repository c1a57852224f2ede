"""A secured Apache Kafka to try kbatch's TLS and SASL on: certificates, users, listeners.

`KafkaSecurity` writes what a secured `KafkaCluster` needs into one directory and hands the
cluster its hooks (`extra_listeners`, `server_properties`, `format_args`):

- a CA, a broker certificate for `localhost` and `127.0.0.1` (so host name verification
  passes, as it must by default), and a client certificate for mutual TLS, all PEM (Kafka 4
  reads PEM key stores), generated with `cryptography`;
- one user with a random password: a SCRAM-SHA-256 and -512 credential written at storage
  format time (`kafka-storage format --add-scram`), the same user for PLAIN (JAAS
  `user_<name>`), and OAUTHBEARER with unsecured tokens (Kafka's default validator);
- per secured listener its protocol, its SASL mechanisms and whether it requires a client
  certificate.

`client_properties` gives a ready client.properties for one listener (Java names), which
`kbatch ... --command-config` accepts. The cluster's own CLIENT listener stays PLAINTEXT.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from producer_core.security import MECHANISMS

USER = "kbatch"
OAUTH_PRINCIPAL = "kbatch"
_LOGIN = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "OAUTHBEARER": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
}


@dataclass(frozen=True)
class SecureListener:
    """One secured listener: its name, security protocol, SASL mechanisms, and whether
    clients must present a certificate (mutual TLS)."""

    name: str
    protocol: str
    mechanisms: tuple[str, ...] = MECHANISMS
    client_auth: bool = False


@dataclass(frozen=True)
class TlsFiles:
    ca: Path  # the CA certificate (what clients trust)
    server: Path  # the broker's private key and certificate chain
    client_cert: Path
    client_key: Path
    issuer: tuple[object, object] = field(default=(None, None), repr=False)  # CA key, cert

    def server_pem(self, path: Path, hosts: Sequence[str]) -> Path:
        """Another broker key store (key + chain), for other host names."""
        cert, key = issue(*self.issuer, hosts[0], server=True, hosts=hosts)
        return _write_private(path, key + cert)


def _write_private(path: Path, data: bytes) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return path


def make_ca(directory: Path, name: str = "kbatch lab CA") -> tuple[object, object, Path]:
    """A self-signed CA: (private key, certificate, path of its PEM certificate)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import Encoding
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False,
                                         False), critical=True)
            .sign(key, hashes.SHA256()))
    path = directory / f"{name.replace(' ', '-').lower()}.pem"
    path.write_bytes(cert.public_bytes(Encoding.PEM))
    return key, cert, path


def issue(ca_key: object, ca_cert: object, common_name: str, *, server: bool,
          hosts: Sequence[str] = ("localhost", "127.0.0.1")) -> tuple[bytes, bytes]:
    """(PEM certificate, PEM unencrypted PKCS8 key) signed by the CA."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
    )
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
               .issuer_name(ca_cert.subject)  # type: ignore[attr-defined]  # the CA's cert
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=30))
               .add_extension(x509.ExtendedKeyUsage(
                   [ExtendedKeyUsageOID.SERVER_AUTH if server else
                    ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
    if server:
        names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]  # the CA's key
    return (cert.public_bytes(Encoding.PEM),
            key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))


def make_tls_files(directory: Path) -> TlsFiles:
    """A CA, a broker certificate for localhost/127.0.0.1 and a client certificate."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert, ca_path = make_ca(directory)
    server_cert, server_key = issue(ca_key, ca_cert, "localhost", server=True)
    client_cert, client_key = issue(ca_key, ca_cert, USER, server=False)
    server = _write_private(directory / "broker.pem", server_key + server_cert)
    (directory / "client.crt").write_bytes(client_cert)
    key = _write_private(directory / "client.key", client_key)
    return TlsFiles(ca_path, server, directory / "client.crt", key, (ca_key, ca_cert))


class KafkaSecurity:
    """Certificates, a user and listener settings for a `KafkaCluster` (see module doc)."""

    def __init__(self, directory: Path, listeners: Sequence[SecureListener],
                 user: str = USER, password: str | None = None) -> None:
        self.directory = Path(directory)
        self.listeners = {listener.name: listener for listener in listeners}
        self.user = user
        self.password = password or secrets.token_urlsafe(18)
        self.tls = make_tls_files(self.directory / "tls")

    @property
    def extra_listeners(self) -> dict[str, str]:
        return {name: listener.protocol for name, listener in self.listeners.items()}

    @property
    def format_args(self) -> list[str]:
        """SCRAM credentials, created with the cluster's metadata."""
        return [arg for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512") for arg in (
            "--add-scram", f"{mechanism}=[name={self.user},password={self.password}]")]

    @property
    def server_properties(self) -> dict[str, str]:
        props = {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.tls.server),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.tls.ca),
        }
        for name, listener in self.listeners.items():
            prefix = f"listener.name.{name.lower()}."
            if listener.client_auth:
                props[prefix + "ssl.client.auth"] = "required"
            if not listener.protocol.startswith("SASL_"):
                continue
            props[prefix + "sasl.enabled.mechanisms"] = ",".join(listener.mechanisms)
            for mechanism in listener.mechanisms:
                props[f"{prefix}{mechanism.lower()}.sasl.jaas.config"] = self._server_jaas(
                    mechanism)
        return props

    def _server_jaas(self, mechanism: str) -> str:
        if mechanism == "PLAIN":
            return (f'{_LOGIN[mechanism]} required username="{self.user}" '
                    f'password="{self.password}" user_{self.user}="{self.password}";')
        if mechanism == "OAUTHBEARER":
            return (f"{_LOGIN[mechanism]} required "
                    f'unsecuredLoginStringClaim_sub="{OAUTH_PRINCIPAL}";')
        return f"{_LOGIN[mechanism]} required;"

    def client_properties(self, listener: str, bootstrap: str, mechanism: str | None = None,
                          client_cert: bool | None = None) -> dict[str, str]:
        """Java-named client properties for `listener` (its first mechanism by default)."""
        spec = self.listeners[listener]
        props = {"bootstrap.servers": bootstrap, "security.protocol": spec.protocol}
        if spec.protocol.startswith("SASL_"):
            mechanism = mechanism or spec.mechanisms[0]
            props["sasl.mechanism"] = mechanism
            if mechanism == "OAUTHBEARER":
                props["sasl.jaas.config"] = (f"{_LOGIN[mechanism]} required "
                                             f'unsecuredLoginStringClaim_sub="{OAUTH_PRINCIPAL}";')
            else:
                props["sasl.jaas.config"] = (f'{_LOGIN[mechanism]} required '
                                             f'username="{self.user}" '
                                             f'password="{self.password}";')
        if spec.protocol in ("SSL", "SASL_SSL"):
            props["ssl.truststore.type"] = "PEM"
            props["ssl.truststore.location"] = str(self.tls.ca)
            if client_cert if client_cert is not None else spec.client_auth:
                props["ssl.keystore.type"] = "PEM"
                props["ssl.keystore.location"] = str(self._client_keystore())
        return props

    def _client_keystore(self) -> Path:
        """The client's key and certificate in one PEM file (Java's PEM key store)."""
        path = self.directory / "tls" / "client-keystore.pem"
        if not path.exists():
            _write_private(path, self.tls.client_key.read_bytes()
                           + self.tls.client_cert.read_bytes())
        return path


def write_client_properties(path: Path, props: Mapping[str, str], comment: str = "") -> Path:
    """A client.properties file (readable by the owner only: it holds a password)."""
    lines = [f"# {line}" for line in comment.splitlines()]
    lines += [f"{key}={_escape(value)}" for key, value in props.items()]
    return _write_private(Path(path), ("\n".join(lines) + "\n").encode())


def _escape(value: str) -> str:
    """Escape a value for a .properties file (backslashes, and a leading blank)."""
    text = value.replace("\\", "\\\\").replace("\n", "\\n")
    return "\\" + text if text[:1] in (" ", "\t") else text


LAB_LISTENER = "SECURE"
LAB_PROTOCOLS = ("SSL", "SASL_SSL", "SASL_PLAINTEXT")
LAB_MECHANISM = "SCRAM-SHA-512"


class SecuredLab:
    """`kbatch lab up --broker kafka --security P`: one secured listener per node (P; SSL
    requires a client certificate, so the lab shows mutual TLS), every SASL mechanism on
    it, and a client.properties (SCRAM-SHA-512 for SASL) in `directory`, which is private
    (0700) and removed when the lab stops."""

    def __init__(self, protocol: str, directory: Path) -> None:
        self.protocol = protocol
        self.directory = Path(directory)
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.directory.chmod(0o700)
        self.security = KafkaSecurity(self.directory, [SecureListener(
            LAB_LISTENER, protocol, MECHANISMS, client_auth=protocol == "SSL")])
        self.client_properties_path = self.directory / "client.properties"

    @property
    def cluster_options(self) -> dict[str, object]:
        """For `KafkaCluster(...)`: the listener, its settings and the SCRAM users."""
        return {"extra_listeners": self.security.extra_listeners,
                "server_properties": self.security.server_properties,
                "format_args": self.security.format_args}

    def write_client_properties(self, bootstrap: str) -> Path:
        mechanism = LAB_MECHANISM if self.protocol.startswith("SASL_") else None
        return write_client_properties(
            self.client_properties_path,
            self.security.client_properties(LAB_LISTENER, bootstrap, mechanism),
            comment=f"kbatch lab ({self.protocol}): kbatch produce --command-config "
                    f"{self.client_properties_path}\nThe lab's SASL user is "
                    f"{self.security.user}; the listener also offers "
                    f"{', '.join(MECHANISMS)}.")

    def remove(self) -> None:
        import shutil

        shutil.rmtree(self.directory, ignore_errors=True)
