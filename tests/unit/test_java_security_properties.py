"""The security a run was given, under the Java client's names (mode kafka-java)."""

from __future__ import annotations

import pytest

from producer_core.brokers.kafka_security import make_ca
from producer_core.errors import ConfigError
from producer_core.security import build_security


def test_scram_over_tls_becomes_a_jaas_line_and_an_inline_pem_truststore(tmp_path) -> None:
    _, _, ca = make_ca(tmp_path)
    security = build_security({
        "security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": 'al"ice', "sasl.password": "p\\w", "ssl.ca.location": str(ca)})
    props = security.java_properties()
    assert props["security.protocol"] == "SASL_SSL"
    assert props["sasl.mechanism"] == "SCRAM-SHA-512"
    assert props["sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="al\\"ice" password="p\\\\w";')
    assert props["ssl.truststore.type"] == "PEM"
    assert props["ssl.truststore.certificates"] == ca.read_text()
    assert props["ssl.endpoint.identification.algorithm"] == "https"


def test_plaintext_adds_nothing() -> None:
    assert build_security({}).java_properties() == {}


def test_oauthbearer_is_refused_with_what_to_use_instead() -> None:
    security = build_security({
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
        "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer."
                            'OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="a";'})
    with pytest.raises(ConfigError, match="use PLAIN or SCRAM with kafka-java"):
        security.java_properties()
