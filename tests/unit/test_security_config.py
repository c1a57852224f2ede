"""Security properties under Java and librdkafka names -> one SecurityConfig, and back out
to aiokafka and librdkafka; errors name the setting and never show a secret."""

from __future__ import annotations

import base64
import json
import ssl

import pytest
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    PrivateFormat,
    load_pem_private_key,
    pkcs12,
)
from cryptography.x509 import load_pem_x509_certificate

from producer_core.brokers.kafka_security import make_ca, make_tls_files
from producer_core.config import build_settings
from producer_core.errors import ConfigError
from producer_core.security import (
    REDACTED,
    UnsecuredTokenProvider,
    build_security,
    is_secret,
    parse_jaas,
    redact,
)

SECRET = "s3cr3t-Pa55"
SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
              f'username="alice" password="{SECRET}";')


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return make_tls_files(tmp_path_factory.mktemp("tls"))


def test_plaintext_by_default():
    security = build_security({})
    assert security.protocol == "PLAINTEXT"
    assert security.aiokafka_kwargs() == {"security_protocol": "PLAINTEXT"}
    assert security.librdkafka_properties() == {}


@pytest.mark.parametrize("props", [
    {"sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": SCRAM_JAAS},
    {"sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "alice", "sasl.password": SECRET},
])
def test_java_and_librdkafka_names_mean_the_same(props):
    security = build_security({"security.protocol": "sasl_plaintext", **props})
    assert (security.protocol, security.mechanism, security.username, security.password) == (
        "SASL_PLAINTEXT", "SCRAM-SHA-512", "alice", SECRET)
    kwargs = security.aiokafka_kwargs()
    assert kwargs == {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-512",
                      "sasl_plain_username": "alice", "sasl_plain_password": SECRET}
    assert security.librdkafka_properties() == {
        "security.protocol": "sasl_plaintext", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice", "sasl.password": SECRET}
    assert SECRET not in repr(security)


def test_plain_jaas():
    security = build_security({
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                            'username="bob" password="p\\"w";'})
    assert (security.username, security.password) == ("bob", 'p"w')


def test_jaas_parsing_and_errors_without_the_secret():
    jaas = parse_jaas(SCRAM_JAAS)
    assert jaas.module.endswith("ScramLoginModule")
    assert jaas.options == {"username": "alice", "password": SECRET}
    for bad in (SCRAM_JAAS.rstrip(";"), "garbage " + SECRET, SCRAM_JAAS + " other required;",
                SCRAM_JAAS.replace('password="', 'password "')):
        with pytest.raises(ConfigError, match="sasl.jaas.config is malformed") as info:
            parse_jaas(bad)
        assert SECRET not in str(info.value)


def test_jaas_module_must_match_the_mechanism():
    with pytest.raises(ConfigError, match="uses ScramLoginModule, but sasl.mechanism=PLAIN"):
        build_security({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                        "sasl.jaas.config": SCRAM_JAAS})


def test_conflicting_names_are_refused_without_showing_secrets():
    with pytest.raises(ConfigError, match="disagree") as info:
        build_security({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
                        "sasl.jaas.config": SCRAM_JAAS, "sasl.password": "other"})
    assert SECRET not in str(info.value) and "other" not in str(info.value)


@pytest.mark.parametrize("props, message", [
    ({"security.protocol": "SASL_SSL"}, "needs sasl.mechanism"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"}, "GSSAPI .Kerberos. is not"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-1"}, "not supported"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}, "needs a user name"),
    ({"security.protocol": "TLS"}, "security.protocol='TLS' is not allowed"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}, "unsecured tokens"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
      "sasl.oauthbearer.config": "principal=a"}, "unsecured tokens"),
    ({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "http"},
     "not allowed"),
])
def test_clear_errors(props, message):
    with pytest.raises(ConfigError, match=message):
        build_security(props)


def test_kerberos_jaas_is_gssapi():
    with pytest.raises(ConfigError, match="GSSAPI"):
        build_security({"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI",
                        "sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule "
                                            "required useKeyTab=true;"})


def _claims(token: str) -> dict:
    header, payload, signature = token.split(".")
    decode = lambda part: json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))  # noqa: E731
    assert decode(header) == {"alg": "none"} and signature == ""
    return decode(payload)


@pytest.mark.parametrize("props", [
    {"sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
                         'required unsecuredLoginStringClaim_sub="svc" '
                         'unsecuredLoginListClaim_scope=",read,write" '
                         "unsecuredLoginLifetimeSeconds=60;"},
    {"enable.sasl.oauthbearer.unsecure.jwt": "true",
     "sasl.oauthbearer.config": "principal=svc scope=read,write lifeSeconds=60"},
])
def test_oauthbearer_unsecured_token(props):
    security = build_security({"security.protocol": "SASL_PLAINTEXT",
                               "sasl.mechanism": "OAUTHBEARER", **props})
    assert security.oauth is not None
    claims = _claims(security.oauth.token(now=1000))
    assert claims == {"sub": "svc", "iat": 1000, "exp": 1060, "scope": ["read", "write"]}
    provider = security.aiokafka_kwargs()["sasl_oauth_token_provider"]
    assert isinstance(provider, UnsecuredTokenProvider)
    assert security.librdkafka_properties()["sasl.oauthbearer.config"] == (
        "principal=svc scope=read,write lifeSeconds=60")
    assert security.librdkafka_properties()["enable.sasl.oauthbearer.unsecure.jwt"] == "true"


def test_tls_with_a_pem_ca_verifies_host_names_by_default(tls):
    for key in ("ssl.ca.location", "ssl.truststore.location"):
        security = build_security({"security.protocol": "SSL", key: str(tls.ca)})
        context = security.aiokafka_kwargs()["ssl_context"]
        assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
        assert "BEGIN CERTIFICATE" in security.ca_pem
        assert security.librdkafka_properties()["ssl.endpoint.identification.algorithm"] == (
            "https")


@pytest.mark.parametrize("value", ["", "none"])
def test_host_name_verification_off(tls, value):
    security = build_security({"security.protocol": "SSL", "ssl.ca.location": str(tls.ca),
                               "ssl.endpoint.identification.algorithm": value})
    context = security.ssl_context()
    assert not context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    assert security.librdkafka_properties()["ssl.endpoint.identification.algorithm"] == "none"


def test_mtls_from_librdkafka_and_java_pem_names(tls, tmp_path):
    keystore = tmp_path / "client-keystore.pem"
    keystore.write_bytes(tls.client_key.read_bytes() + tls.client_cert.read_bytes())
    for props in ({"ssl.certificate.location": str(tls.client_cert),
                   "ssl.key.location": str(tls.client_key)},
                  {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore)}):
        security = build_security({"security.protocol": "SSL", "ssl.ca.location": str(tls.ca),
                                   **props})
        assert "BEGIN CERTIFICATE" in security.cert_pem and "PRIVATE KEY" in security.key_pem
        librdkafka = security.librdkafka_properties()
        assert librdkafka["ssl.certificate.pem"] == security.cert_pem
        assert librdkafka["ssl.key.pem"] == security.key_pem


def test_encrypted_key_needs_the_right_password(tls, tmp_path):
    key = load_pem_private_key(tls.client_key.read_bytes(), None)
    encrypted = tmp_path / "enc.key"
    encrypted.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8,
                                            BestAvailableEncryption(SECRET.encode())))
    base = {"security.protocol": "SSL", "ssl.certificate.location": str(tls.client_cert),
            "ssl.key.location": str(encrypted)}
    security = build_security({**base, "ssl.key.password": SECRET})
    assert security.ssl_context() is not None
    assert security.librdkafka_properties()["ssl.key.password"] == SECRET
    with pytest.raises(ConfigError, match="encrypted: give ssl.key.password"):
        build_security(base)
    with pytest.raises(ConfigError, match="ssl.key.password is wrong") as info:
        build_security({**base, "ssl.key.password": "wrong-" + SECRET})
    assert SECRET not in str(info.value)


def test_pkcs12_truststore_and_keystore(tls, tmp_path):
    ca = load_pem_x509_certificate(tls.ca.read_bytes())
    client = load_pem_x509_certificate(tls.client_cert.read_bytes())
    key = load_pem_private_key(tls.client_key.read_bytes(), None)
    truststore = tmp_path / "trust.p12"
    truststore.write_bytes(pkcs12.serialize_java_truststore(
        [pkcs12.PKCS12Certificate(ca, b"ca")], BestAvailableEncryption(b"trustpw")))
    keystore = tmp_path / "key.p12"
    keystore.write_bytes(pkcs12.serialize_key_and_certificates(
        b"client", key, client, None, BestAvailableEncryption(SECRET.encode())))
    props = {"security.protocol": "SSL", "ssl.truststore.location": str(truststore),
             "ssl.truststore.type": "PKCS12", "ssl.truststore.password": "trustpw",
             "ssl.keystore.location": str(keystore), "ssl.keystore.password": SECRET}
    security = build_security(props)  # keystore type recognised from the content
    assert security.ca_pem.count("BEGIN CERTIFICATE") == 1
    assert security.key_password == SECRET and "ENCRYPTED PRIVATE KEY" in security.key_pem
    assert security.ssl_context() is not None
    with pytest.raises(ConfigError, match="could not be opened as a PKCS12") as info:
        build_security({**props, "ssl.keystore.password": "nope"})
    assert SECRET not in str(info.value)


def test_jks_is_refused_with_what_to_use_instead(tmp_path):
    store = tmp_path / "trust.jks"
    store.write_bytes(b"\xfe\xed\xfe\xed" + b"\0" * 60)
    for props in ({"ssl.truststore.location": str(store)},
                  {"ssl.truststore.location": str(store), "ssl.truststore.type": "JKS"}):
        with pytest.raises(ConfigError, match="JKS store") as info:
            build_security({"security.protocol": "SSL", **props})
        assert "PKCS12" in str(info.value) and "keytool" in str(info.value)


def test_file_errors(tmp_path, tls):
    with pytest.raises(ConfigError, match="ssl.ca.location=.* no such file"):
        build_security({"security.protocol": "SSL", "ssl.ca.location": str(tmp_path / "x")})
    not_pem = tmp_path / "ca.txt"
    not_pem.write_text("hello")
    with pytest.raises(ConfigError, match="holds no PEM certificate"):
        build_security({"security.protocol": "SSL", "ssl.ca.location": str(not_pem)})
    with pytest.raises(ConfigError, match="needs both ssl.certificate.location"):
        build_security({"security.protocol": "SSL", "ssl.key.location": str(tls.client_key)})
    other_key = make_tls_files(tmp_path / "other").client_key
    with pytest.raises(ConfigError, match="key belongs to the certificate"):
        build_security({"security.protocol": "SSL",
                        "ssl.certificate.location": str(tls.client_cert),
                        "ssl.key.location": str(other_key)})


def test_security_settings_of_another_protocol_are_a_warning(tls):
    security = build_security({"ssl.ca.location": str(tls.ca), "sasl.username": "x"})
    assert security.protocol == "PLAINTEXT"
    assert any("ssl.ca.location ignored" in w for w in security.warnings)
    assert any("sasl.username ignored" in w for w in security.warnings)


def test_redaction():
    for key in ("sasl.password", "sasl.jaas.config", "ssl.key.password",
                "ssl.keystore.password", "ssl.truststore.password", "ssl.keystore.key",
                "ssl.key.pem", "sasl.oauthbearer.config", "sasl.oauthbearer.client.secret",
                "sasl.oauthbearer.token"):
        assert is_secret(key), key
    for key in ("sasl.username", "ssl.ca.location", "security.protocol", "linger.ms"):
        assert not is_secret(key), key
    assert redact({"sasl.password": SECRET, "sasl.username": "a"}) == {
        "sasl.password": REDACTED, "sasl.username": "a"}


def test_settings_carry_security_and_results_redact_it(tls):
    settings = build_settings([("security.protocol", "SASL_SSL"),
                               ("sasl.mechanism", "SCRAM-SHA-256"),
                               ("sasl.jaas.config", SCRAM_JAAS),
                               ("ssl.ca.location", str(tls.ca)), ("linger.ms", "7")])
    assert settings.security.mechanism == "SCRAM-SHA-256"
    shown = settings.as_dict()
    assert shown["linger.ms"] == 7 and shown["sasl.jaas.config"] == REDACTED
    assert shown["ssl.ca.location"] == str(tls.ca)
    assert SECRET not in json.dumps(shown)
    renamed = settings.with_topic_suffix("-x")
    assert renamed.security == settings.security


def test_a_second_ca_does_not_verify_the_first(tmp_path, tls):
    _, _, other = make_ca(tmp_path, "other CA")
    security = build_security({"security.protocol": "SSL", "ssl.ca.location": str(other)})
    assert tls.ca.read_text() not in security.ca_pem
