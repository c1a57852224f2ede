"""--fault SPEC parsing, the order faults run in, and the runner on synthetic time."""

from __future__ import annotations

import pytest

from producer_core.brokers.faults.runner import FaultRunner, plan_steps
from producer_core.brokers.faults.spec import FaultSpec, check_supported, parse_fault, parse_faults
from producer_core.errors import UsageError


def test_isolate_the_leader_of_a_partition_for_a_while():
    spec = parse_fault("at=10s isolate=leader:0 for=8s")
    assert spec == FaultSpec("isolate", "leader", 0, 10.0, 8.0, "at=10s isolate=leader:0 for=8s")
    assert spec.describe() == "isolate leader:0 at 10 s for 8 s"


@pytest.mark.parametrize("text, action, target, index, at, length", [
    ("pause=node:2", "pause", "node", 2, 0.0, None),
    ("kill=node:3 at=1500ms", "kill", "node", 3, 1.5, None),
    ("restart=node:3 at=2m", "restart", "node", 3, 120.0, None),
    ("  PAUSE=Node:1   for=0.5  ", "pause", "node", 1, 0.0, 0.5),
])
def test_actions_targets_and_durations(text, action, target, index, at, length):
    spec = parse_fault(text)
    assert (spec.action, spec.target, spec.index, spec.at_s, spec.for_s) == (
        action, target, index, at, length)


@pytest.mark.parametrize("text, says", [
    ("", "empty"),
    ("at=10s", "exactly one action"),
    ("pause=node:1 kill=node:2", "exactly one action"),
    ("pause=node:1 at=1s at=2s", "given twice"),
    ("pause=2", "names no target"),
    ("pause=node:0", "start at 1"),
    ("pause=broker:1", "names no target"),
    ("pause=node:1 at=soon", "not a duration"),
    ("pause=node:1 at=-1s", "not a duration"),
    ("pause=node:1 at=nan", "not a duration"),
    ("pause=node:1 for=0s", "longer than 0"),
    ("pause=node:1 at=9999999s", "longer than a week"),
    ("restart=node:1 for=3s", "takes no for="),
    ("pause=node:1 when=3s", "not known"),
    ("pause", "not key=value"),
])
def test_bad_specs_say_what_is_wrong_and_show_an_example(text, says):
    with pytest.raises(UsageError) as error:
        parse_fault(text)
    assert says in str(error.value)
    assert "Example: --fault 'at=10s isolate=leader:0 for=8s'" in str(error.value)


def test_which_broker_takes_which_fault():
    isolate, pause = parse_faults(["isolate=node:1", "pause=node:3"])
    check_supported([isolate, pause], "docker", None, 3)
    check_supported([pause], "kafka", None, 3)
    with pytest.raises(UsageError, match="isolate needs --broker docker"):
        check_supported([isolate], "kafka", None, 3)
    with pytest.raises(UsageError, match="cluster kbatch started itself"):
        check_supported([pause], "tansu", None, 3)
    with pytest.raises(UsageError, match="cluster kbatch started itself"):
        check_supported([pause], "docker", "127.0.0.1:9092", 3)
    with pytest.raises(UsageError, match="there is no node 3"):
        check_supported([pause], "docker", None, 1)
    check_supported([], "tansu", "127.0.0.1:9092", 1)  # no faults: nothing to refuse


def test_steps_run_in_time_order_ends_before_begins_at_the_same_time():
    faults = parse_faults(["at=10s isolate=node:1 for=8s", "at=18s pause=node:1 for=2s",
                           "at=5s kill=node:2", "at=5s restart=node:3 "])
    steps = [(s.at_s, s.begin, s.index) for s in plan_steps(faults)]
    assert steps == [(5.0, True, 2), (5.0, True, 3), (10.0, True, 0), (18.0, False, 0),
                     (18.0, True, 1), (20.0, False, 1)]


class FakeNodes:
    """Records the operations; node 2 leads every partition."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def leader_of(self, partition, topic_hint):
        self.calls.append(("leader_of", partition))
        return 2

    def __getattr__(self, name):
        return lambda node: self.calls.append((name, node))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_runner_acts_records_times_and_undoes_what_is_active_at_close():
    clock, nodes = Clock(), FakeNodes()
    runner = FaultRunner(parse_faults(["at=1s isolate=leader:0 for=2s", "at=2s pause=node:3"]),
                         nodes, clock=clock)
    runner.started = clock()
    for step in plan_steps(runner.faults):  # walk the plan on synthetic time
        clock.now = 100.0 + step.at_s
        runner._do(step)
    assert nodes.calls == [("leader_of", 0), ("isolate_node", 2), ("pause_node", 3),
                           ("heal_node", 2)]
    isolate, pause = runner.report()
    assert (isolate["node"], isolate["began_s"], isolate["ended_s"]) == (2, 1.0, 3.0)
    assert (pause["node"], pause["began_s"], pause["ended_s"]) == (3, 2.0, None)
    assert runner.during(0.0, 0.5) == []
    assert runner.during(2.5, 2.6) == ["isolate node 2 (leader of p0)", "pause node 3"]
    assert runner.during(3.5, 4.0) == ["pause node 3"]
    clock.now = 110.0
    runner.close()  # the pause is still on: closing resumes the node
    assert nodes.calls[-1] == ("unpause_node", 3)
    assert runner.report()[1]["undone_at_close"] is True
    assert runner.report()[1]["ended_s"] == 10.0


def test_a_fault_that_fails_is_recorded_and_the_run_goes_on():
    class NoLeader(FakeNodes):
        def leader_of(self, partition, topic_hint):
            return None

    runner = FaultRunner(parse_faults(["isolate=leader:4 for=1s"]), NoLeader(), "t",
                         clock=Clock())
    runner.started = 100.0
    for step in plan_steps(runner.faults):
        runner._do(step)
    (record,) = runner.report()
    assert "no leader of partition 4" in record["error"] and record["node"] is None


def test_the_schedule_counts_from_the_run_start_once_known():
    clock = Clock()
    runner = FaultRunner(parse_faults(["at=5s pause=node:1"]), FakeNodes(), clock=clock)
    runner.started = 100.0
    clock.now = 103.0
    runner.align_to_run(0.5)  # the run started 0.5 s ago, 2.5 s after the cluster was ready
    assert runner.elapsed() == pytest.approx(0.5)
    runner.align_to_run(0.0)  # only the first report counts
    assert runner.elapsed() == pytest.approx(0.5)


def test_a_fault_whose_time_never_came_says_so():
    runner = FaultRunner(parse_faults(["at=100s kill=node:1"]), FakeNodes(), clock=Clock())
    runner.start()
    runner.close()
    (record,) = runner.report()
    assert record["began_s"] is None and record["node"] is None
    assert record["error"] == "not begun: the run ended before its time came"


def test_interval_lines_name_the_faults_active_in_their_own_interval(monkeypatch):
    from cli.render.container_facts import fault_note
    from producer_core.brokers.faults import runner as runner_module

    clock = Clock()
    runner = FaultRunner(parse_faults(["at=5s isolate=node:2 for=8s"]), FakeNodes(),
                         clock=clock)
    runner.started = 100.0
    runner.align_to_run(0.0)
    clock.now = 105.003
    runner._do(plan_steps(runner.faults)[0])
    clock.now = 105.05  # the 4-5 s line is printed a little after 5 s
    monkeypatch.setattr(runner_module, "_CURRENT", runner)
    assert fault_note({"start_s": 4.0, "end_s": 5.0}) == ""
    assert fault_note({"start_s": 5.0, "end_s": 6.0}) == "  FAULT: isolate node 2"
    monkeypatch.setattr(runner_module, "_CURRENT", None)
    assert fault_note({"start_s": 5.0, "end_s": 6.0}) == ""


def test_a_fault_whose_time_never_came_is_said_on_screen():
    """Issue 49: it was in the results only; the user saw nothing."""
    said: list[str] = []
    runner = FaultRunner(parse_faults(["at=100s kill=node:1"]), FakeNodes(), clock=Clock(),
                         log=said.append)
    runner.start()
    runner.close()
    assert said == ["fault: at=100s kill=node:1 was never applied: the runs ended before "
                    "100 s"]


@pytest.mark.parametrize("text, partitions, duration, says", [
    ("kill=leader:4", 4, 10.0, "there is no partition 4"),
    ("kill=leader:1", 1, 10.0, "has partition 0, so there is no partition 1"),
    ("at=10s kill=node:1", 4, 10.0, "at=10s is not before the runs end"),
    ("at=1m pause=node:2", 4, 30.0, "at=60s is not before the runs end"),
])
def test_a_fault_that_could_never_apply_to_the_run_is_refused(text, partitions, duration,
                                                              says):
    from producer_core.brokers.faults.spec import check_against_run

    with pytest.raises(UsageError, match=says):
        check_against_run([parse_fault(text)], partitions, duration)


def test_faults_that_apply_and_runs_ended_by_count_pass():
    from producer_core.brokers.faults.spec import check_against_run

    check_against_run(parse_faults(["kill=leader:3 at=9s"]), 4, 10.0)
    check_against_run(parse_faults(["kill=node:1 at=99s"]), 4, None)  # --messages
