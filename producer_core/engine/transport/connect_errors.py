"""Why a connection to a broker failed, in words a user can act on.

A wrong password, an untrusted certificate, TLS spoken to a plaintext port or a SASL
mechanism the broker does not offer all surface from aiokafka and `ssl` as exceptions whose
text names the symptom, not the cause. `connection_problem` names the cause and the setting
to check. It returns None for "nothing answered" (refused, unreachable, timed out), which the
caller reports as an unreachable address.
"""

from __future__ import annotations

import asyncio
import ssl

from aiokafka import errors as kafka_errors

from producer_core.security import SecurityConfig

TLS_HINT = ("is this the broker's TLS listener? security.protocol={protocol} needs the port of "
            "an SSL or SASL_SSL listener")
CREDENTIALS_HINT = ("Check the user name and password (sasl.username / sasl.password, or "
                    "sasl.jaas.config) and sasl.mechanism; SCRAM users exist per mechanism.")


def connection_problem(exc: BaseException, security: SecurityConfig) -> str | None:
    """A one-sentence cause for a failed connection, or None if nothing answered."""
    protocol = security.protocol
    reason = _text(exc)
    if isinstance(exc, kafka_errors.SaslAuthenticationFailed) or (
            isinstance(exc, kafka_errors.BrokerResponseError) and exc.errno == 58):
        return f"authentication failed ({reason}). {CREDENTIALS_HINT}"
    if isinstance(exc, kafka_errors.UnsupportedSaslMechanismError):
        offered = (f" (it offers: {reason.split('Enabled mechanisms are:', 1)[1].strip()})"
                   if "Enabled mechanisms are:" in reason else "")
        return (f"the broker does not offer sasl.mechanism={security.mechanism} on this "
                f"listener{offered}. Set sasl.mechanism to one the listener enables "
                "(its sasl.enabled.mechanisms), or use a listener that offers it.")
    if isinstance(exc, kafka_errors.IllegalSaslStateError):
        return (f"the broker's listener does not use SASL ({reason}). Use the cluster's "
                "SASL_SSL or SASL_PLAINTEXT port, or security.protocol=SSL or PLAINTEXT.")
    if isinstance(exc, ssl.SSLCertVerificationError):
        verify = exc.verify_message or reason
        if "mismatch" in verify.lower():
            return (f"the broker's certificate does not name the host it was reached at "
                    f"({verify}). Connect with a name the certificate holds, or set "
                    "ssl.endpoint.identification.algorithm= (empty) to skip host name "
                    "verification.")
        return (f"the broker's certificate is not trusted ({verify}). Set ssl.ca.location "
                "(or ssl.truststore.location) to the CA that signed the broker's certificate.")
    if isinstance(exc, ssl.SSLError):
        if "CERTIFICATE_REQUIRED" in reason.upper() or "BAD_CERTIFICATE" in reason.upper():
            return (f"the broker refused the client certificate ({reason}). It wants mutual "
                    "TLS: set ssl.certificate.location and ssl.key.location (or "
                    "ssl.keystore.location) to a certificate its CA signed.")
        return f"the TLS handshake failed ({reason}): {TLS_HINT.format(protocol=protocol)}."
    if isinstance(exc, (ConnectionResetError, EOFError, asyncio.IncompleteReadError,
                        kafka_errors.KafkaConnectionError)):
        if security.tls and isinstance(exc, kafka_errors.KafkaConnectionError):
            # the handshake completed; with TLS 1.3 a refused client certificate shows here
            if security.cert_pem is None:
                return ("the broker closed the connection right after the TLS handshake: it "
                        "probably requires a client certificate (mutual TLS). Set "
                        "ssl.keystore.location (or ssl.certificate.location and "
                        "ssl.key.location).")
            return ("the broker closed the connection right after the TLS handshake: it "
                    "probably does not trust the client certificate (is it signed by a CA "
                    "in the broker's ssl.truststore?).")
        if security.tls:
            return (f"the broker closed the connection during the TLS handshake ({reason}): "
                    f"{TLS_HINT.format(protocol=protocol)}.")
        return (f"the broker closed the connection ({reason}). If this port is a TLS or SASL "
                f"listener, set security.protocol (now {protocol}) and the sasl.* / ssl.* "
                "settings, for example with --command-config client.properties.")
    if isinstance(exc, kafka_errors.KafkaError) and "Authentication" in type(exc).__name__:
        return f"authentication failed ({reason}). {CREDENTIALS_HINT}"
    return None


def _text(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason or exc.strerror or type(exc).__name__
    text = str(exc) or type(exc).__name__
    return text.rstrip(".")
