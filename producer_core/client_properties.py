"""Client properties kbatch does not apply itself: the catalogue of the Java client's and
librdkafka's names, and the "did you mean" for a name neither knows.

Users arrive with one shared client file (Confluent Cloud's, MSK's) holding serializers,
DNS lookup, reconnect backoff, consumer group settings and so on. A name one of the real
clients knows does not change what kbatch measures: it is accepted, listed once as not used
by the mode, and passed on to the real client where it applies (mode kafka-java gets the
Java producer's, mode librdkafka librdkafka's producer properties). A name neither client
knows is a typo until shown otherwise: it is refused, with the closest known name.

The catalogues are copied from the clients' own sources, so they are facts, not guesses:
the Java names from ProducerConfig, ConsumerConfig, AdminClientConfig, CommonClientConfigs,
SaslConfigs and SslConfigs (apache/kafka trunk, commit 1eb7644349c), librdkafka's from its
CONFIGURATION.md (confluentinc/librdkafka master, commit 4c3b017c3; column C/P: producer
means P or *).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

JAVA_PRODUCER = frozenset({
    "batch.size", "bootstrap.servers", "buffer.memory", "client.dns.lookup", "client.id",
    "compression.gzip.level", "compression.lz4.level", "compression.type",
    "compression.zstd.level", "connections.max.idle.ms", "delivery.timeout.ms",
    "enable.idempotence", "enable.metrics.push", "interceptor.classes", "key.serializer",
    "linger.ms", "max.block.ms", "max.in.flight.requests.per.connection",
    "max.request.size", "metadata.cluster.check.enable", "metadata.max.age.ms",
    "metadata.max.idle.ms", "metric.reporters",
    "metrics.num.samples", "metrics.recording.level", "metrics.sample.window.ms",
    "partitioner.adaptive.partitioning.enable", "partitioner.availability.timeout.ms",
    "partitioner.class", "partitioner.ignore.keys", "receive.buffer.bytes",
    "reconnect.backoff.max.ms", "reconnect.backoff.ms", "request.timeout.ms",
    "retry.backoff.max.ms", "retry.backoff.ms", "send.buffer.bytes",
    "socket.connection.setup.timeout.max.ms", "socket.connection.setup.timeout.ms",
    "transaction.timeout.ms", "transactional.id", "value.serializer",
})

JAVA_CONSUMER = frozenset({
    "allow.auto.create.topics", "auto.commit.interval.ms", "auto.offset.reset",
    "bootstrap.servers", "check.crcs", "client.dns.lookup", "client.id", "client.rack",
    "connections.max.idle.ms", "enable.auto.commit", "enable.metrics.push",
    "exclude.internal.topics", "fetch.max.bytes", "fetch.max.wait.ms", "fetch.min.bytes",
    "group.id", "group.instance.id", "group.protocol", "group.remote.assignor",
    "heartbeat.interval.ms", "interceptor.classes", "internal.leave.group.on.close",
    "internal.throw.on.fetch.stable.offset.unsupported", "isolation.level",
    "key.deserializer", "max.partition.fetch.bytes", "max.poll.interval.ms",
    "max.poll.records", "metadata.max.age.ms", "metric.reporters", "metrics.num.samples",
    "metrics.recording.level", "metrics.sample.window.ms", "partition.assignment.strategy",
    "receive.buffer.bytes", "reconnect.backoff.max.ms", "reconnect.backoff.ms",
    "request.timeout.ms", "retry.backoff.max.ms", "retry.backoff.ms", "send.buffer.bytes",
    "session.timeout.ms", "socket.connection.setup.timeout.max.ms",
    "socket.connection.setup.timeout.ms", "value.deserializer",
})

JAVA_ADMIN = frozenset({
    "bootstrap.controllers", "bootstrap.servers", "client.dns.lookup", "client.id",
    "connections.max.idle.ms", "enable.metrics.push", "metadata.max.age.ms",
    "metadata.recovery.strategy", "metric.reporters", "metrics.num.samples",
    "metrics.recording.level", "metrics.sample.window.ms", "receive.buffer.bytes",
    "reconnect.backoff.max.ms", "reconnect.backoff.ms", "request.timeout.ms",
    "retry.backoff.max.ms", "retry.backoff.ms", "security.protocol", "send.buffer.bytes",
    "socket.connection.setup.timeout.max.ms", "socket.connection.setup.timeout.ms",
})

JAVA_SECURITY = frozenset({
    "sasl.client.callback.handler.class", "sasl.jaas.config", "sasl.kerberos.kinit.cmd",
    "sasl.kerberos.min.time.before.relogin", "sasl.kerberos.service.name",
    "sasl.kerberos.ticket.renew.jitter", "sasl.kerberos.ticket.renew.window.factor",
    "sasl.login.callback.handler.class", "sasl.login.class",
    "sasl.login.connect.timeout.ms", "sasl.login.read.timeout.ms",
    "sasl.login.refresh.buffer.seconds", "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter",
    "sasl.login.retry.backoff.max.ms", "sasl.login.retry.backoff.ms", "sasl.mechanism",
    "sasl.oauthbearer.clock.skew.seconds", "sasl.oauthbearer.expected.audience",
    "sasl.oauthbearer.expected.issuer", "sasl.oauthbearer.header.urlencode",
    "sasl.oauthbearer.jwks.endpoint.refresh.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", "sasl.oauthbearer.jwks.endpoint.url",
    "sasl.oauthbearer.scope.claim.name", "sasl.oauthbearer.sub.claim.name",
    "sasl.oauthbearer.token.endpoint.url", "security.protocol", "security.providers",
    "ssl.cipher.suites", "ssl.enabled.protocols", "ssl.endpoint.identification.algorithm",
    "ssl.engine.factory.class", "ssl.key.password", "ssl.keymanager.algorithm",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.keystore.location",
    "ssl.keystore.password", "ssl.keystore.type", "ssl.protocol", "ssl.provider",
    "ssl.secure.random.implementation", "ssl.trustmanager.algorithm",
    "ssl.truststore.certificates", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.truststore.type",
})

LIBRDKAFKA_PRODUCER = frozenset({
    "acks", "allow.auto.create.topics", "api.version.fallback.ms", "api.version.request",
    "api.version.request.timeout.ms", "background_event_cb", "batch.num.messages",
    "batch.size", "bootstrap.servers", "broker.address.family", "broker.address.ttl",
    "broker.version.fallback", "builtin.features", "client.dns.lookup", "client.id",
    "client.rack", "closesocket_cb", "compression.codec", "compression.level",
    "compression.type", "connect_cb", "connections.max.idle.ms", "debug",
    "default_topic_conf", "delivery.report.only.error", "delivery.timeout.ms", "dr_cb",
    "dr_msg_cb", "enable.gapless.guarantee", "enable.idempotence", "enable.metrics.push",
    "enable.random.seed", "enable.sasl.oauthbearer.unsecure.jwt",
    "enable.ssl.certificate.verification", "enabled_events", "error_cb",
    "https.ca.location", "https.ca.pem", "interceptors", "internal.termination.signal",
    "linger.ms", "log.connection.close", "log.queue", "log.thread.name", "log_cb",
    "log_level", "max.in.flight", "max.in.flight.requests.per.connection",
    "message.copy.max.bytes", "message.max.bytes", "message.send.max.retries",
    "message.timeout.ms", "metadata.broker.list", "metadata.max.age.ms",
    "metadata.recovery.rebootstrap.trigger.ms", "metadata.recovery.strategy",
    "msg_order_cmp", "oauthbearer_token_refresh_cb", "opaque", "open_cb", "partitioner",
    "partitioner_cb", "plugin.library.paths", "produce.offset.report",
    "queue.buffering.backpressure.threshold", "queue.buffering.max.kbytes",
    "queue.buffering.max.messages", "queue.buffering.max.ms", "queuing.strategy",
    "receive.message.max.bytes", "reconnect.backoff.jitter.ms", "reconnect.backoff.max.ms",
    "reconnect.backoff.ms", "request.required.acks", "request.timeout.ms", "resolve_cb",
    "retries", "retry.backoff.max.ms", "retry.backoff.ms", "sasl.kerberos.keytab",
    "sasl.kerberos.kinit.cmd", "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.principal", "sasl.kerberos.service.name", "sasl.mechanism",
    "sasl.mechanisms", "sasl.oauthbearer.assertion.algorithm",
    "sasl.oauthbearer.assertion.claim.aud", "sasl.oauthbearer.assertion.claim.exp.seconds",
    "sasl.oauthbearer.assertion.claim.iss", "sasl.oauthbearer.assertion.claim.jti.include",
    "sasl.oauthbearer.assertion.claim.nbf.seconds", "sasl.oauthbearer.assertion.claim.sub",
    "sasl.oauthbearer.assertion.file", "sasl.oauthbearer.assertion.jwt.template.file",
    "sasl.oauthbearer.assertion.private.key.file",
    "sasl.oauthbearer.assertion.private.key.passphrase",
    "sasl.oauthbearer.assertion.private.key.pem",
    "sasl.oauthbearer.client.credentials.client.id",
    "sasl.oauthbearer.client.credentials.client.secret", "sasl.oauthbearer.client.id",
    "sasl.oauthbearer.client.secret", "sasl.oauthbearer.config",
    "sasl.oauthbearer.extensions", "sasl.oauthbearer.grant.type",
    "sasl.oauthbearer.metadata.authentication.type", "sasl.oauthbearer.method",
    "sasl.oauthbearer.scope", "sasl.oauthbearer.sub.claim.name",
    "sasl.oauthbearer.token.endpoint.url", "sasl.password", "sasl.username",
    "security.protocol", "socket.blocking.max.ms", "socket.connection.setup.timeout.ms",
    "socket.keepalive.enable", "socket.max.fails", "socket.nagle.disable",
    "socket.receive.buffer.bytes", "socket.send.buffer.bytes", "socket.timeout.ms",
    "socket_cb", "ssl.ca.certificate.stores", "ssl.ca.location", "ssl.ca.pem",
    "ssl.certificate.location", "ssl.certificate.pem", "ssl.certificate.verify_cb",
    "ssl.cipher.suites", "ssl.crl.location", "ssl.curves.list",
    "ssl.endpoint.identification.algorithm", "ssl.engine.id", "ssl.engine.location",
    "ssl.key.location", "ssl.key.password", "ssl.key.pem", "ssl.keystore.location",
    "ssl.keystore.password", "ssl.providers", "ssl.sigalgs.list", "ssl_ca",
    "ssl_certificate", "ssl_engine_callback_data", "ssl_key", "statistics.interval.ms",
    "stats_cb", "sticky.partitioning.linger.ms", "throttle_cb", "topic.blacklist",
    "topic.metadata.propagation.max.ms", "topic.metadata.refresh.fast.cnt",
    "topic.metadata.refresh.fast.interval.ms", "topic.metadata.refresh.interval.ms",
    "topic.metadata.refresh.sparse", "transaction.timeout.ms", "transactional.id",
})

LIBRDKAFKA_CONSUMER = frozenset({
    "auto.commit.enable", "auto.commit.interval.ms", "auto.offset.reset", "check.crcs",
    "consume.callback.max.messages", "consume_cb", "coordinator.query.interval.ms",
    "enable.auto.commit", "enable.auto.offset.store", "enable.partition.eof",
    "fetch.error.backoff.ms", "fetch.max.bytes", "fetch.message.max.bytes",
    "fetch.min.bytes", "fetch.queue.backoff.ms", "fetch.wait.max.ms", "group.id",
    "group.instance.id", "group.protocol", "group.protocol.type", "group.remote.assignor",
    "heartbeat.interval.ms", "isolation.level", "max.partition.fetch.bytes",
    "max.poll.interval.ms", "max.poll.records", "offset.store.method", "offset.store.path",
    "offset.store.sync.interval.ms", "offset_commit_cb", "partition.assignment.strategy",
    "queued.max.messages.kbytes", "queued.min.messages", "rebalance_cb",
    "session.timeout.ms", "share.acknowledgement.mode",
})

CONFLUENT_TOOLING = frozenset({
    "schema.registry.url", "basic.auth.credentials.source", "basic.auth.user.info",
    "schema.registry.basic.auth.user.info", "schema.registry.basic.auth.credentials.source",
    "bearer.auth.credentials.source", "bearer.auth.token", "auto.register.schemas",
    "use.latest.version",
})
"""Schema Registry serde settings that Confluent's generated client files carry beside the
client's: read by serializers, which kbatch does not use."""

JAVA_ALL = JAVA_PRODUCER | JAVA_CONSUMER | JAVA_ADMIN | JAVA_SECURITY
LIBRDKAFKA_ALL = LIBRDKAFKA_PRODUCER | LIBRDKAFKA_CONSUMER
KNOWN_ELSEWHERE = JAVA_ALL | LIBRDKAFKA_ALL | CONFLUENT_TOOLING

NOT_FOR_THE_JAVA_DRIVER = frozenset({
    "bootstrap.servers", "key.serializer", "value.serializer", "partitioner.class",
    "interceptor.classes", "metric.reporters", "transactional.id", "client.id",
})
"""Java producer properties the kafka-java driver sets itself (its byte-array serializers,
the cluster, kbatch's partitioner and transactions) and so never takes from a user file."""


def is_foreign(key: str) -> bool:
    """A property of the Java client (producer, consumer, admin), librdkafka or the
    Confluent serdes."""
    return key in KNOWN_ELSEWHERE


def librdkafka_producer_property(key: str) -> bool:
    """librdkafka has this property and a producer reads it (C/P is P or *)."""
    return key in LIBRDKAFKA_PRODUCER


def java_producer_passthrough(foreign: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The accepted foreign properties that the Java producer reads (mode kafka-java)."""
    return {key: value for key, value in foreign
            if key in JAVA_PRODUCER and key not in NOT_FOR_THE_JAVA_DRIVER}


def closest_name(key: str, known: Iterable[str]) -> str | None:
    """The known name `key` most likely misspells, if one is close enough."""
    matches = difflib.get_close_matches(key, sorted(set(known) | KNOWN_ELSEWHERE), n=1,
                                        cutoff=0.8)
    return matches[0] if matches else None


def unknown_property_message(key: str, known: Iterable[str]) -> str:
    """One short paragraph for a name kbatch, the Java client and librdkafka all lack."""
    guess = closest_name(key, known)
    hint = f" Did you mean {guess!r}?" if guess else ""
    return (f"Unknown setting {key!r}: neither a kbatch setting nor a property of the Java "
            f"client or librdkafka.{hint} `kbatch produce --help` lists kbatch's settings.")


def not_used_warning(mode: str, unused: Iterable[str], passed: Iterable[str] = (),
                     client: str = "") -> str | None:
    """The one line that names the accepted properties this mode does not apply."""
    unused, passed = sorted(set(unused)), sorted(set(passed))
    parts = []
    if passed:
        parts.append(f"passed on to {client}: {', '.join(passed)}")
    if unused:
        parts.append(f"not used by this mode ({mode}): {', '.join(unused)}")
    return "; ".join(parts) if parts else None
