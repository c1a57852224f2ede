"""TLS key material for `producer_core.security`: CAs and client certificates from PEM files,
inline PEM, PEM or PKCS12 stores (Java names) or librdkafka's locations, read once into PEM
text; JKS is refused with what to use instead. Errors name the setting, never a secret.
"""

from __future__ import annotations

import os
import re
import ssl
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from producer_core.errors import ConfigError

JKS_ERROR = (
    "{key} {what} is a JKS store, which kbatch cannot read. Convert it to PKCS12 "
    "(keytool -importkeystore -srckeystore STORE.jks -destkeystore STORE.p12 "
    "-deststoretype PKCS12) and set {type_key}=PKCS12, or use PEM files "
    "(ssl.ca.location, ssl.certificate.location, ssl.key.location)."
)


def load_client_cert(context: ssl.SSLContext, cert_pem: str, key_pem: str,
                     password: str | None) -> None:
    """`load_cert_chain` reads files only: write a private (0600) temporary file, load it,
    remove it at once."""
    fd, name = tempfile.mkstemp(prefix="kbatch-cert-", suffix=".pem")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(cert_pem.rstrip() + "\n" + key_pem.rstrip() + "\n")
        context.load_cert_chain(name, password=password or None)
    except ssl.SSLError as exc:
        raise ConfigError(
            "The client certificate and key (ssl.certificate.location / ssl.key.location or "
            f"ssl.keystore.*) could not be loaded: {exc.reason or 'SSL error'}. Check that the "
            "key belongs to the certificate and that ssl.key.password is right."
        ) from None
    finally:
        os.unlink(name)


def tls_settings(props: Mapping[str, str]) -> dict[str, Any]:
    """SecurityConfig's TLS fields from the ssl.* properties (Java or librdkafka names)."""
    config: dict[str, Any] = {}
    algorithm = props.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
    if algorithm not in ("https", "", "none"):
        raise ConfigError(
            f"ssl.endpoint.identification.algorithm={algorithm!r} is not allowed: 'https' "
            "(verify the broker's host name, the default) or empty (do not verify).")
    config["check_hostname"] = algorithm == "https"
    verify = props.get("enable.ssl.certificate.verification", "true").strip().lower()
    if verify not in ("true", "false"):
        raise ConfigError("enable.ssl.certificate.verification must be true or false.")
    config["verify_certificate"] = verify == "true"
    config["ca_pem"] = _trusted(props)
    cert, key, password = _client_identity(props)
    if cert is not None:
        config.update(cert_pem=cert, key_pem=key, key_password=password)
    return config


def _read(key: str, path: str) -> bytes:
    try:
        return Path(path).expanduser().read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{key}={path!r}: no such file.") from None
    except OSError as exc:
        raise ConfigError(f"{key}={path!r} cannot be read: {exc.strerror or exc}.") from None


def _store_type(key: str, type_key: str, props: Mapping[str, str], data: bytes) -> str:
    """A store's type: as given, or recognised from its first bytes (Java's default, JKS,
    is refused either way)."""
    given = props.get(type_key, "").strip().upper()
    if data[:4] == b"\xfe\xed\xfe\xed" or given == "JKS":
        raise ConfigError(JKS_ERROR.format(key=key, what=repr(props[key]), type_key=type_key))
    if given in ("PEM", "PKCS12"):
        return given
    if given:
        raise ConfigError(f"{type_key}={props[type_key]!r} is not supported: use PEM or PKCS12.")
    return "PEM" if b"-----BEGIN" in data[:4096] else "PKCS12"


def _trusted(props: Mapping[str, str]) -> str | None:
    sources = [k for k in ("ssl.ca.location", "ssl.ca.pem", "ssl.truststore.location",
                           "ssl.truststore.certificates") if k in props]
    if len(sources) > 1:
        raise ConfigError(f"{' and '.join(sources)} both name trusted CAs; give one of them.")
    if not sources:
        return None
    key = sources[0]
    if key in ("ssl.ca.pem", "ssl.truststore.certificates"):
        return _pem_certificates(key, props[key].encode())
    data = _read(key, props[key])
    if key == "ssl.truststore.location" and _store_type(
            key, "ssl.truststore.type", props, data) == "PKCS12":
        _, certs = _pkcs12(key, data, props.get("ssl.truststore.password"), need_key=False)
        return certs
    return _pem_certificates(key, data)


def _pem_certificates(key: str, data: bytes) -> str:
    from cryptography import x509

    try:
        certs = x509.load_pem_x509_certificates(data)
    except ValueError:
        raise ConfigError(
            f"{key} holds no PEM certificate (-----BEGIN CERTIFICATE-----).") from None
    return "".join(_cert_pem(c) for c in certs)


def _cert_pem(cert: Any) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding

    return cert.public_bytes(Encoding.PEM).decode()


def _pkcs12(key: str, data: bytes, password: str | None, need_key: bool
            ) -> tuple[Any, str]:
    """(private key or None, PEM certificates) of a PKCS12 store."""
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        store = pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError:
        raise ConfigError(
            f"{key} could not be opened as a PKCS12 store: the password (ssl.*store.password) "
            "is wrong, or it is not a PKCS12 file (set ssl.*store.type=PEM for a PEM file)."
        ) from None
    certs = [store.cert.certificate] if store.cert else []
    certs += [c.certificate for c in store.additional_certs]
    if need_key and store.key is None:
        raise ConfigError(f"{key} holds no private key; a key store needs the client's key.")
    if not certs:
        raise ConfigError(f"{key} holds no certificate.")
    return store.key, "".join(_cert_pem(c) for c in certs)


def _client_identity(props: Mapping[str, str]) -> tuple[str | None, str | None, str | None]:
    """(certificate chain PEM, private key PEM, key password) for mutual TLS, or Nones."""
    librdkafka = [k for k in ("ssl.certificate.location", "ssl.certificate.pem",
                              "ssl.key.location", "ssl.key.pem") if k in props]
    java = [k for k in ("ssl.keystore.location", "ssl.keystore.key",
                        "ssl.keystore.certificate.chain") if k in props]
    if librdkafka and java:
        raise ConfigError(f"{', '.join(librdkafka)} and {', '.join(java)} both name a client "
                          "certificate; give one of them.")
    password = props.get("ssl.key.password")
    if librdkafka:
        cert_key = next((k for k in ("ssl.certificate.location", "ssl.certificate.pem")
                         if k in props), None)
        key_key = next((k for k in ("ssl.key.location", "ssl.key.pem") if k in props), None)
        if cert_key is None or key_key is None:
            raise ConfigError("A client certificate needs both ssl.certificate.location and "
                              "ssl.key.location.")
        cert = (_read(cert_key, props[cert_key]) if cert_key.endswith("location")
                else props[cert_key].encode())
        key_data = (_read(key_key, props[key_key]) if key_key.endswith("location")
                    else props[key_key].encode())
        return _pem_certificates(cert_key, cert), _pem_key(key_key, key_data, password), password
    if "ssl.keystore.location" in props:
        key = "ssl.keystore.location"
        data = _read(key, props[key])
        if _store_type(key, "ssl.keystore.type", props, data) == "PKCS12":
            store_password = props.get("ssl.keystore.password")
            private, certs = _pkcs12(key, data, store_password, need_key=True)
            return certs, _encrypted_pem(private, password or store_password), (
                password or store_password)
        return _pem_certificates(key, data), _pem_key(key, data, password), password
    if java:
        if "ssl.keystore.key" not in props or "ssl.keystore.certificate.chain" not in props:
            raise ConfigError("An inline PEM key store needs both ssl.keystore.key and "
                              "ssl.keystore.certificate.chain.")
        return (_pem_certificates("ssl.keystore.certificate.chain",
                                  props["ssl.keystore.certificate.chain"].encode()),
                _pem_key("ssl.keystore.key", props["ssl.keystore.key"].encode(), password),
                password)
    return None, None, None


_KEY_BLOCK = re.compile(rb"-----BEGIN ([A-Z ]*PRIVATE KEY)-----.*?-----END \1-----", re.S)


def _pem_key(key: str, data: bytes, password: str | None) -> str:
    """The PEM private key block of `data`, checked against its password now."""
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    match = _KEY_BLOCK.search(data)
    if match is None:
        raise ConfigError(f"{key} holds no PEM private key (-----BEGIN PRIVATE KEY-----).")
    block = match.group(0)
    try:
        load_pem_private_key(block, password.encode() if password else None)
    except TypeError:
        raise ConfigError(f"The private key in {key} is encrypted: give ssl.key.password."
                          if not password else
                          f"The private key in {key} is not encrypted: drop ssl.key.password."
                          ) from None
    except ValueError:
        raise ConfigError(f"The private key in {key} could not be read: ssl.key.password is "
                          "wrong, or the key is damaged.") from None
    return block.decode()


def _encrypted_pem(private: Any, password: str | None) -> str:
    """A key taken out of a PKCS12 store, as PEM (encrypted with the store's password, so a
    temporary file never holds it in the clear)."""
    from cryptography.hazmat.primitives.serialization import (
        BestAvailableEncryption,
        Encoding,
        NoEncryption,
        PrivateFormat,
    )

    encryption = BestAvailableEncryption(password.encode()) if password else NoEncryption()
    return private.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, encryption).decode()
