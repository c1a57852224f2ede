"""How kbatch reaches a secured cluster: TLS and SASL, from Java or librdkafka property names.

Users bring the client settings they already have (a Java `client.properties`, or librdkafka
properties), so both vocabularies are read and turned into one `SecurityConfig`. From it come
what each client needs: an `ssl.SSLContext` and SASL arguments for aiokafka (kbatch's own
engine, its metadata and topic-creation connections, and any AIOKafkaConsumer that reads a
topic back: `aiokafka_kwargs`), and librdkafka properties (`librdkafka_properties`).

Key material is read once, when the settings are built, into PEM text
(`producer_core.tls_material`): file errors show up before any broker is contacted, and the
settings can be sent to other machines (Spark).
Secrets (passwords, keys, tokens, JAAS lines) are never put into messages; `redact` hides
them wherever settings are shown or written.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import re
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from producer_core.errors import ConfigError
from producer_core.tls_material import load_client_cert, tls_settings

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
REDACTED = "[redacted]"

JAVA_KEYS = frozenset({
    "security.protocol", "sasl.mechanism", "sasl.jaas.config",
    "ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password",
    "ssl.truststore.certificates", "ssl.keystore.location", "ssl.keystore.type",
    "ssl.keystore.password", "ssl.keystore.key", "ssl.keystore.certificate.chain",
    "ssl.key.password", "ssl.endpoint.identification.algorithm",
    "sasl.kerberos.service.name",
})
LIBRDKAFKA_KEYS = frozenset({
    "sasl.mechanisms", "sasl.username", "sasl.password", "sasl.oauthbearer.config",
    "enable.sasl.oauthbearer.unsecure.jwt", "ssl.ca.location", "ssl.ca.pem",
    "ssl.certificate.location", "ssl.certificate.pem", "ssl.key.location", "ssl.key.pem",
    "enable.ssl.certificate.verification",
})
SECURITY_KEYS = JAVA_KEYS | LIBRDKAFKA_KEYS
"""Every property `build_security` understands (under either client's name)."""

_SECRET_WORDS = ("password", "secret", "jaas", "token", "credential")
_SECRET_KEYS = frozenset({"ssl.key.pem", "ssl.keystore.key", "sasl.oauthbearer.config"})

GSSAPI_ERROR = (
    "SASL mechanism GSSAPI (Kerberos) is not supported by kbatch. Use SCRAM-SHA-512 or "
    "SCRAM-SHA-256 (with security.protocol=SASL_SSL), PLAIN over SASL_SSL, or OAUTHBEARER, "
    "if the cluster offers one of them."
)
CLEAR_TEXT_WARNING = ("security.protocol=SASL_PLAINTEXT with sasl.mechanism=PLAIN sends the "
                      "password unencrypted; use SASL_SSL (or SCRAM) on a network you do not "
                      "trust.")


class _SaidOnce(logging.Filter):
    """aiokafka logs its clear-text warning once per connection, outside kbatch's output;
    kbatch says it once, as a settings warning (`CLEAR_TEXT_WARNING`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "Sending username and password in the clear"


logging.getLogger("aiokafka.conn").addFilter(_SaidOnce())


def is_secret(key: str) -> bool:
    """Whether a property's value must never be shown (passwords, keys, tokens, JAAS)."""
    lowered = key.lower()
    return lowered in _SECRET_KEYS or any(word in lowered for word in _SECRET_WORDS)


def redact(properties: Mapping[str, Any]) -> dict[str, Any]:
    """The same mapping with every secret value replaced by `[redacted]`."""
    return {k: REDACTED if is_secret(k) and v not in (None, "") else v
            for k, v in properties.items()}


def scrub(text: str, secrets: Mapping[str, Any]) -> str:
    """`text` with every secret value of `secrets` replaced (for messages of other libraries,
    which may echo a value they refused)."""
    for key, value in secrets.items():
        if is_secret(key) and isinstance(value, str) and len(value) >= 3:
            text = text.replace(value, REDACTED)
    return text


@dataclass(frozen=True)
class OAuthUnsecured:
    """An unsecured JWT (`alg: none`), as Kafka's test set-ups and default broker validator
    use: Java's OAuthBearerLoginModule `unsecuredLogin*` options or librdkafka's
    `sasl.oauthbearer.config` with `enable.sasl.oauthbearer.unsecure.jwt=true`."""

    principal: str
    principal_claim: str = "sub"
    scope: tuple[str, ...] = ()
    scope_claim: str = "scope"
    lifetime_s: int = 3600
    extensions: tuple[tuple[str, str], ...] = ()

    def token(self, now: float | None = None) -> str:
        issued = int(time.time() if now is None else now)
        claims: dict[str, Any] = {self.principal_claim: self.principal, "iat": issued,
                                  "exp": issued + self.lifetime_s}
        if self.scope:
            claims[self.scope_claim] = list(self.scope)
        return f"{_b64(json.dumps({'alg': 'none'}))}.{_b64(json.dumps(claims))}."

    def librdkafka_config(self) -> str:
        parts = [f"principal={self.principal}"]
        if self.principal_claim != "sub":
            parts.append(f"principalClaimName={self.principal_claim}")
        if self.scope:
            parts.append(f"scope={','.join(self.scope)}")
        if self.scope_claim != "scope":
            parts.append(f"scopeClaimName={self.scope_claim}")
        parts.append(f"lifeSeconds={self.lifetime_s}")
        parts.extend(f"extension_{k}={v}" for k, v in self.extensions)
        return " ".join(parts)


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()


@functools.cache
def _token_provider_class() -> type:
    """`UnsecuredTokenProvider`, defined on first use: it subclasses aiokafka's provider,
    and importing aiokafka for every settings lookup (each `--help`) costs ~0.1 s."""
    from aiokafka.abc import AbstractTokenProvider

    class UnsecuredTokenProvider(AbstractTokenProvider):
        """aiokafka's token provider for `OAuthUnsecured`: a fresh token per connection."""

        def __init__(self, oauth: OAuthUnsecured) -> None:
            self.oauth = oauth

        async def token(self) -> str:
            return self.oauth.token()

        def extensions(self) -> dict[str, str]:
            return dict(self.oauth.extensions)

    UnsecuredTokenProvider.__module__ = __name__
    UnsecuredTokenProvider.__qualname__ = "UnsecuredTokenProvider"
    return UnsecuredTokenProvider


def __getattr__(name: str) -> Any:
    """`from producer_core.security import UnsecuredTokenProvider` still works (PEP 562)."""
    if name == "UnsecuredTokenProvider":
        return _token_provider_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class SecurityConfig:
    """One cluster's TLS and SASL settings, normalised from either client's names."""

    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    oauth: OAuthUnsecured | None = None
    ca_pem: str | None = None  # None: the system's trusted CAs
    cert_pem: str | None = None  # client certificate chain (mTLS)
    key_pem: str | None = field(default=None, repr=False)
    key_password: str | None = field(default=None, repr=False)
    check_hostname: bool = True
    verify_certificate: bool = True
    warnings: tuple[str, ...] = ()

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def ssl_context(self) -> ssl.SSLContext | None:
        """A client TLS context (None without TLS); a bad key or certificate is a ConfigError."""
        if not self.tls:
            return None
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        try:
            if self.ca_pem is not None:
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                context.load_verify_locations(cadata=self.ca_pem)
        except ssl.SSLError as exc:
            raise ConfigError(f"The trusted CA certificates (ssl.ca.location or "
                              f"ssl.truststore.*) could not be loaded: {exc.reason or exc}."
                              ) from None
        context.check_hostname = self.check_hostname and self.verify_certificate
        if not self.verify_certificate:
            context.verify_mode = ssl.CERT_NONE
        if self.cert_pem is not None and self.key_pem is not None:
            load_client_cert(context, self.cert_pem, self.key_pem, self.key_password)
        return context

    def aiokafka_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for aiokafka's `create_conn`, `AIOKafkaConsumer`, etc."""
        kwargs: dict[str, Any] = {"security_protocol": self.protocol}
        if self.tls:
            kwargs["ssl_context"] = self.ssl_context()
        if self.sasl:
            kwargs["sasl_mechanism"] = self.mechanism
            if self.mechanism == "OAUTHBEARER":
                assert self.oauth is not None
                kwargs["sasl_oauth_token_provider"] = _token_provider_class()(self.oauth)
            else:
                kwargs["sasl_plain_username"] = self.username
                kwargs["sasl_plain_password"] = self.password
        return kwargs

    def librdkafka_properties(self) -> dict[str, str]:
        """The same security under librdkafka's property names."""
        props: dict[str, str] = {}
        if self.protocol == "PLAINTEXT":
            return props
        props["security.protocol"] = self.protocol.lower()
        if self.sasl:
            assert self.mechanism is not None
            props["sasl.mechanism"] = self.mechanism
            if self.mechanism == "OAUTHBEARER":
                assert self.oauth is not None
                props["enable.sasl.oauthbearer.unsecure.jwt"] = "true"
                props["sasl.oauthbearer.config"] = self.oauth.librdkafka_config()
            else:
                props["sasl.username"] = self.username or ""
                props["sasl.password"] = self.password or ""
        if self.tls:
            if self.ca_pem is not None:
                props["ssl.ca.pem"] = self.ca_pem
            if self.cert_pem is not None and self.key_pem is not None:
                props["ssl.certificate.pem"] = self.cert_pem
                props["ssl.key.pem"] = self.key_pem
                if self.key_password:
                    props["ssl.key.password"] = self.key_password
            props["ssl.endpoint.identification.algorithm"] = (
                "https" if self.check_hostname else "none")
            if not self.verify_certificate:
                props["enable.ssl.certificate.verification"] = "false"
        return props

    def java_properties(self) -> dict[str, str]:
        """The same security under the Java client's property names (mode kafka-java), key
        material inline as PEM (Kafka >= 2.7); a ConfigError for what Java cannot express."""
        props: dict[str, str] = {}
        if self.protocol == "PLAINTEXT":
            return props
        props["security.protocol"] = self.protocol
        if self.sasl:
            assert self.mechanism is not None
            if self.mechanism == "OAUTHBEARER":
                raise ConfigError(
                    "Mode kafka-java does not support sasl.mechanism=OAUTHBEARER yet (the Java "
                    "client refused kbatch's unsecured-token login); use PLAIN or SCRAM with "
                    "kafka-java, or OAUTHBEARER with the other modes.")
            props["sasl.mechanism"] = self.mechanism
            props["sasl.jaas.config"] = self._java_jaas()
        if self.tls:
            if not self.verify_certificate:
                raise ConfigError(
                    "Mode kafka-java cannot turn off broker certificate verification "
                    "(enable.ssl.certificate.verification=false): give the broker's CA with "
                    "ssl.truststore.location (PEM or PKCS12) or ssl.ca.location.")
            if self.ca_pem is not None:
                props["ssl.truststore.type"] = "PEM"
                props["ssl.truststore.certificates"] = self.ca_pem
            if self.cert_pem is not None and self.key_pem is not None:
                props["ssl.keystore.type"] = "PEM"
                props["ssl.keystore.certificate.chain"] = self.cert_pem
                props["ssl.keystore.key"] = self.key_pem
                if self.key_password:
                    props["ssl.key.password"] = self.key_password
            props["ssl.endpoint.identification.algorithm"] = (
                "https" if self.check_hostname else "")
        return props

    def _java_jaas(self) -> str:
        def quoted(text: str | None) -> str:
            return '"' + (text or "").replace("\\", "\\\\").replace('"', '\\"') + '"'
        options = [f"username={quoted(self.username)}", f"password={quoted(self.password)}"]
        module = ("org.apache.kafka.common.security.plain.PlainLoginModule"
                  if self.mechanism == "PLAIN"
                  else "org.apache.kafka.common.security.scram.ScramLoginModule")
        return f"{module} required {' '.join(options)};"

    def describe(self) -> str:
        """A short, secret-free description for messages ("SASL_SSL, SCRAM-SHA-512 as alice")."""
        text = self.protocol
        if self.sasl:
            who = self.username if self.mechanism != "OAUTHBEARER" else (
                self.oauth.principal if self.oauth else None)
            text += f", {self.mechanism}" + (f" as {who}" if who else "")
        return text


PLAINTEXT = SecurityConfig()


# ------------------------------------------------------------------ building
def build_security(props: Mapping[str, str]) -> SecurityConfig:
    """Read security properties (Java or librdkafka names) into a `SecurityConfig`.

    Errors are ConfigErrors naming the property, never showing a secret value.
    """
    props = {k: str(v) for k, v in props.items()}
    unknown = sorted(set(props) - SECURITY_KEYS)
    if unknown:
        raise ConfigError(f"Unknown security setting(s) {', '.join(unknown)}.")
    warnings: list[str] = []
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise ConfigError(f"security.protocol={props['security.protocol']!r} is not allowed. "
                          f"Allowed: {', '.join(PROTOCOLS)}.")
    tls = protocol in ("SSL", "SASL_SSL")
    sasl = protocol in ("SASL_PLAINTEXT", "SASL_SSL")
    config: dict[str, Any] = {"protocol": protocol}
    sasl_keys = sorted(k for k in props if k.startswith(("sasl.", "enable.sasl.")))
    ssl_keys = sorted(k for k in props if k.startswith(("ssl.", "enable.ssl.")))
    if sasl:
        config.update(_sasl(props))
    elif sasl_keys:
        warnings.append(f"{', '.join(sasl_keys)} ignored: security.protocol={protocol} does "
                        "not use SASL (use SASL_SSL or SASL_PLAINTEXT).")
    if tls:
        config.update(tls_settings(props))
    elif ssl_keys:
        warnings.append(f"{', '.join(ssl_keys)} ignored: security.protocol={protocol} does "
                        "not use TLS (use SSL or SASL_SSL).")
    if protocol == "SASL_PLAINTEXT" and config.get("mechanism") == "PLAIN":
        warnings.append(CLEAR_TEXT_WARNING)
    security = SecurityConfig(**config, warnings=tuple(warnings))
    security.ssl_context()  # load the key material now: a bad file is a usage error
    return security


def _one_of(props: Mapping[str, str], *keys: str) -> str | None:
    """The value given under any of several names (Java's, librdkafka's); they must agree."""
    given = {k: props[k] for k in keys if k in props}
    if len(set(given.values())) > 1:
        shown = " and ".join(given) if any(is_secret(k) for k in given) else " and ".join(
            f"{k}={v!r}" for k, v in given.items())
        raise ConfigError(f"{shown} disagree; give one of them.")
    return next(iter(given.values()), None)


def _sasl(props: Mapping[str, str]) -> dict[str, Any]:
    mechanism = _one_of(props, "sasl.mechanism", "sasl.mechanisms")
    mechanism = mechanism.strip().upper() if mechanism else None
    jaas = parse_jaas(props["sasl.jaas.config"]) if "sasl.jaas.config" in props else None
    if mechanism == "GSSAPI" or (jaas and jaas.module.endswith("Krb5LoginModule")):
        raise ConfigError(GSSAPI_ERROR)
    if mechanism is None:
        raise ConfigError(
            f"security.protocol={props.get('security.protocol')} needs sasl.mechanism: one of "
            f"{', '.join(MECHANISMS)}. (The clients' default, GSSAPI, is not supported by "
            "kbatch.)")
    if mechanism not in MECHANISMS:
        raise ConfigError(f"sasl.mechanism={mechanism!r} is not supported. Allowed: "
                          f"{', '.join(MECHANISMS)}.")
    if jaas is not None:
        expected = {"PLAIN": "PlainLoginModule", "OAUTHBEARER": "OAuthBearerLoginModule"}.get(
            mechanism, "ScramLoginModule")
        if jaas.module.rsplit(".", 1)[-1] != expected:
            raise ConfigError(
                f"sasl.jaas.config uses {jaas.module.rsplit('.', 1)[-1]}, but "
                f"sasl.mechanism={mechanism} needs {expected}.")
    if mechanism == "OAUTHBEARER":
        return {"mechanism": mechanism, "oauth": _oauth(props, jaas)}
    options = jaas.options if jaas else {}
    username = _one_of({**props, **({"sasl.jaas.config username": options["username"]}
                                    if "username" in options else {})},
                       "sasl.username", "sasl.jaas.config username")
    password = _one_of({**props, **({"sasl.jaas.config password": options["password"]}
                                    if "password" in options else {})},
                       "sasl.password", "sasl.jaas.config password")
    if not username or password is None:
        raise ConfigError(
            f"sasl.mechanism={mechanism} needs a user name and password: sasl.username and "
            "sasl.password, or sasl.jaas.config=org.apache.kafka.common.security."
            f"{'plain.PlainLoginModule' if mechanism == 'PLAIN' else 'scram.ScramLoginModule'}"
            ' required username="..." password="...";')
    return {"mechanism": mechanism, "username": username, "password": password}


def _oauth(props: Mapping[str, str], jaas: JaasConfig | None) -> OAuthUnsecured:
    if jaas is not None and "sasl.oauthbearer.config" in props:
        raise ConfigError("Give the OAUTHBEARER options either in sasl.jaas.config or in "
                          "sasl.oauthbearer.config, not both.")
    if jaas is not None:
        options = jaas.options
        claim = options.get("unsecuredLoginPrincipalClaimName", "sub")
        principal = options.get(f"unsecuredLoginStringClaim_{claim}")
        scope_claim = options.get("unsecuredLoginScopeClaimName", "scope")
        scope_text = options.get(f"unsecuredLoginListClaim_{scope_claim}", "")
        scope = tuple(s for s in scope_text[1:].split(scope_text[:1]) if s) if scope_text else ()
        lifetime = options.get("unsecuredLoginLifetimeSeconds", "3600")
        extensions = tuple((k.removeprefix("unsecuredLoginExtension_"), v)
                           for k, v in options.items()
                           if k.startswith("unsecuredLoginExtension_"))
        where = "sasl.jaas.config"
    elif "sasl.oauthbearer.config" in props:
        if props.get("enable.sasl.oauthbearer.unsecure.jwt", "false").lower() != "true":
            raise ConfigError(_OAUTH_ONLY_UNSECURED)
        options = dict(part.split("=", 1) for part in props["sasl.oauthbearer.config"].split()
                       if "=" in part)
        claim = options.get("principalClaimName", "sub")
        principal = options.get("principal")
        scope_claim = options.get("scopeClaimName", "scope")
        scope = tuple(s for s in options.get("scope", "").split(",") if s)
        lifetime = options.get("lifeSeconds", "3600")
        extensions = tuple((k.removeprefix("extension_"), v) for k, v in options.items()
                           if k.startswith("extension_"))
        where = "sasl.oauthbearer.config"
    else:
        raise ConfigError(_OAUTH_ONLY_UNSECURED)
    if not principal:
        raise ConfigError(f"sasl.mechanism=OAUTHBEARER: {where} names no principal "
                          "(unsecuredLoginStringClaim_sub=\"...\" in sasl.jaas.config, or "
                          "principal=... in sasl.oauthbearer.config).")
    if not lifetime.isdigit() or int(lifetime) < 1:
        raise ConfigError(f"sasl.mechanism=OAUTHBEARER: the token lifetime in {where} must be "
                          "a positive number of seconds.")
    return OAuthUnsecured(principal, claim, scope, scope_claim, int(lifetime), extensions)


_OAUTH_ONLY_UNSECURED = (
    "sasl.mechanism=OAUTHBEARER: kbatch supports unsecured tokens, as Kafka's own test set-ups "
    "use: sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
    'required unsecuredLoginStringClaim_sub="<principal>"; (Java names) or '
    "enable.sasl.oauthbearer.unsecure.jwt=true with sasl.oauthbearer.config=principal=<name> "
    "(librdkafka names). Token endpoints (OIDC) are not supported."
)


@dataclass(frozen=True)
class JaasConfig:
    """One login module line of `sasl.jaas.config`."""

    module: str
    options: dict[str, str]


_JAAS_HEAD = re.compile(r"\s*([A-Za-z_$][\w$.]*)\s+(required|requisite|sufficient|optional)\b")
_JAAS_OPTION = re.compile(r'\s*([A-Za-z_$][\w$.\-]*)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s;"]+)')


def parse_jaas(text: str) -> JaasConfig:
    """Parse `Module required key="value" ...;` (one module, as Kafka clients require).

    Errors describe the problem without quoting the text: it holds a password.
    """
    head = _JAAS_HEAD.match(text)
    if head is None:
        raise ConfigError(
            "sasl.jaas.config is malformed: expected '<LoginModule class> required "
            'key="value" ... ;\', for example org.apache.kafka.common.security.scram.'
            'ScramLoginModule required username="alice" password="...";')
    options: dict[str, str] = {}
    position = head.end()
    while True:
        match = _JAAS_OPTION.match(text, position)
        if match is None:
            break
        value = match.group(2)
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        options[match.group(1)] = value
        position = match.end()
    rest = text[position:].strip()
    if rest != ";":
        problem = ("it does not end with ';'" if not rest else
                   "it holds more than one login module" if rest.startswith(";") else
                   f"option {len(options) + 1} is not key=value or key=\"value\"")
        raise ConfigError(f"sasl.jaas.config is malformed: {problem}.")
    return JaasConfig(head.group(1), options)
