# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The readiness gate: when a box is ready, what the gate does on the way, and how it gives up."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box import readiness
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.tests.unit.box.box_kit import existing, inspected, make_spec

PUBLISHED = {'Ports': {'4788/tcp': [{'HostIp': '127.0.0.1', 'HostPort': '4788'}]}}


def gate(**options: Any) -> readiness.ReadinessGate:
    return readiness.ReadinessGate(None, 'dev', **options)


def test_an_executor_that_exits_before_its_port_is_published_fails_the_gate_with_not_ready(monkeypatch):
    spec = make_spec()
    exited = inspected(
        spec,
        'executor',
        running=False,
        NetworkSettings={'Ports': {}},
        State={'Running': False, 'Restarting': True, 'Status': 'restarting'},
    )
    objects = existing(spec, executor=exited)
    looks = []

    def reinspect(_client, _box):
        looks.append(1)
        return objects

    monkeypatch.setattr(readiness, 'BoxObjects', reinspect)
    monkeypatch.setattr(readiness.time, 'sleep', lambda _seconds: None)

    with pytest.raises(Tx9Error) as failure:
        gate(timeout=1).wait(objects, spec.token, waited=True)

    assert failure.value.cause == 'NOT_READY'
    assert 'Executor publishes no port (its container is restarting)' in str(failure.value)
    assert looks, 'the executor is looked at again while it has no port'


def crash_looping_gate(monkeypatch, restart_counts, wait_timeout=30, running=(), slept=None):
    """A gate whose Executor restarts as restart_counts say, one count per look; (its failure, the looks).

    running: the looks (counted from 0, the gate's first) that find it started again, its exit code cleared.
    slept: a list that gets the seconds of each pause the gate asks for (none passes).
    """
    spec = make_spec()
    counts = list(restart_counts)
    looks = []

    def executor_now():
        if len(looks) in running:
            state = {'Running': True, 'Restarting': False, 'Status': 'running', 'ExitCode': 0, 'OOMKilled': False}
        else:
            state = {'Running': False, 'Restarting': True, 'Status': 'restarting', 'ExitCode': 1, 'OOMKilled': False}
        return inspected(
            spec, 'executor', running=False, NetworkSettings={'Ports': {}}, RestartCount=counts[0], State=state
        )

    first = existing(spec, executor=executor_now())

    def reinspect(_client, _box):
        looks.append(1)
        if len(counts) > 1:
            counts.pop(0)
        return existing(spec, executor=executor_now())

    monkeypatch.setattr(readiness, 'BoxObjects', reinspect)
    monkeypatch.setattr(readiness.time, 'sleep', (slept if slept is not None else []).append)
    with pytest.raises(Tx9Error) as failure:
        gate(timeout=wait_timeout).wait(first, spec.token, waited=True)
    return failure.value, looks


def test_an_executor_that_keeps_exiting_fails_the_gate_at_once_naming_its_exits_and_exit_code(monkeypatch):
    slept = []
    failure, looks = crash_looping_gate(monkeypatch, [0, 1, 2, 3], slept=slept)

    assert failure.cause == 'NOT_READY'
    assert str(failure).startswith(
        'Box dev did not become ready: Executor exited 3 times while the gate waited '
        '(last exit code 1), so it will not start.'
    )
    assert 'within' not in str(failure)
    assert len(looks) == 3 and sum(slept) < 30, slept


def test_an_executor_found_running_again_after_its_exits_is_looked_at_once_more_to_name_its_exit_code(monkeypatch):
    failure, looks = crash_looping_gate(monkeypatch, [0, 1, 2, 3, 4], running=(3,))

    assert 'Executor exited 4 times while the gate waited (last exit code 1), so it will not start' in str(failure)
    assert 'exit code 0' not in str(failure)
    assert len(looks) == 4


def test_restarts_before_the_gate_began_do_not_count_against_it(monkeypatch):
    failure, looks = crash_looping_gate(monkeypatch, [7, 7, 8, 9], wait_timeout=1)

    assert 'did not become ready within 1 seconds: Executor publishes no port' in str(failure)
    assert failure.fix == (
        'Look at docker logs tx9-dev-executor and tx9-dev-agent, then run again (raise wait_timeout on a slow host).'
    )
    assert len(looks) > 3


def test_an_executor_killed_for_lack_of_memory_is_named_so():
    executor = {
        'RestartCount': 5,
        'State': {'Running': False, 'Restarting': True, 'Status': 'restarting', 'ExitCode': 137, 'OOMKilled': True},
    }
    assert readiness.exits_verdict(executor, 2) == (
        'Executor exited 3 times while the gate waited (last exit code 137, killed for lack of memory), '
        'so it will not start'
    )
    assert readiness.exits_verdict(executor, 3) is None


def test_without_wait_timeout_the_gate_waits_180_seconds():
    assert gate().timeout == gate(timeout=None).timeout == 180
    assert gate(timeout=5).timeout == 5


class Agent:
    """The agent's `hb status --json` reports, one per look, and the hb commands the gate ran."""

    def __init__(self, monkeypatch, *statuses, hb_code=0):
        self.statuses = list(statuses)
        self.ran: list[list[str]] = []
        self.delivered: list[str] = []
        monkeypatch.setattr(readiness, 'initialize', lambda *_args, **_kwargs: (200, None))
        monkeypatch.setattr(readiness, 'guest_status', lambda _client, _agent: self.statuses.pop(0))
        self.hb_code = hb_code
        monkeypatch.setattr(readiness, 'run_hb', self.run_hb)
        monkeypatch.setattr(readiness, 'deliver_token', lambda _client, _agent, token: self.delivered.append(token))
        monkeypatch.setattr(readiness.time, 'sleep', lambda _seconds: None)

    def run_hb(self, _client: Any, _agent_id: str, args: list[str]) -> tuple[int, str]:
        self.ran.append(args)
        return self.hb_code, ''


HEALTHY = dict(healthy=True, executor=dict(mcp_ok=True), wiring=dict(current=True))


def ready_box():
    spec = make_spec()
    return spec, existing(spec, executor=inspected(spec, 'executor', NetworkSettings=PUBLISHED))


def test_a_healthy_box_is_ready_at_the_first_look(monkeypatch):
    agent = Agent(monkeypatch, HEALTHY)
    spec, objects = ready_box()
    ready = gate()

    assert ready.wait(objects, spec.token, waited=False) is False
    assert (ready.actions, agent.ran, agent.delivered) == ([], [], [])
    assert ready.ready_status == HEALTHY, 'what the agent answered is kept for the rest of the run'


def test_a_gate_that_did_not_find_the_box_ready_keeps_no_status(monkeypatch):
    Agent(monkeypatch, dict(quiesced=True, quiesced_by='backup'))
    spec, objects = ready_box()
    ready = gate(check_mode=True)

    ready.wait(objects, spec.token, waited=False)

    assert ready.ready_status is None


def test_a_box_an_interrupted_backup_left_quiesced_is_resumed_only_if_the_backup_quiesced_it(monkeypatch):
    agent = Agent(monkeypatch, dict(quiesced=True, quiesced_by='backup'), HEALTHY)
    spec, objects = ready_box()
    ready = gate()

    ready.wait(objects, spec.token, waited=True)

    assert agent.ran == [['up', '--if-by', readiness.QUIESCED_BY_BACKUP]] and readiness.QUIESCED_BY_BACKUP == 'backup'
    assert ready.actions == ['resume the box after an interrupted backup']


def test_an_agent_that_holds_an_older_token_gets_the_boxs_once_then_is_rewired(monkeypatch):
    refused = dict(executor=dict(mcp_ok=False, detail='HTTP 401'))
    stale = dict(executor=dict(mcp_ok=True), wiring=dict(current=False, stale=['codex']))
    agent = Agent(monkeypatch, refused, stale, HEALTHY)
    spec, objects = ready_box()
    ready = gate()

    assert ready.wait(objects, spec.token, waited=True) is True

    assert agent.delivered == [spec.token] and agent.ran == [['wire-once']]
    assert ready.actions == ['deliver the current token to the running agent']


def test_in_check_mode_the_gate_changes_nothing_and_says_the_wiring_would_be_refreshed(monkeypatch):
    agent = Agent(monkeypatch, dict(quiesced=True, quiesced_by='backup'))
    spec, objects = ready_box()

    assert gate(check_mode=True).wait(objects, spec.token, waited=False) is True
    assert agent.ran == []


def test_an_agent_that_stays_unhealthy_fails_the_gate_with_what_it_reports(monkeypatch):
    unreachable = dict(executor=dict(mcp_ok=False, detail='connection refused'))
    Agent(monkeypatch, *[unreachable] * 50)
    spec, objects = ready_box()
    monkeypatch.setattr(readiness, 'BoxObjects', lambda _client, _box: objects)
    clock = itertools.count(0, 10)  # ten seconds a look
    monkeypatch.setattr(readiness.time, 'time', lambda: next(clock))

    with pytest.raises(Tx9Error) as failure:
        gate(timeout=15).wait(objects, spec.token, waited=True)

    assert str(failure.value).startswith(
        'Box dev did not become ready within 15 seconds: the agent reports: Executor is not reachable from the '
        'agent (connection refused).'
    )


@pytest.mark.parametrize(
    'status, words',
    [
        (dict(detail='hb: no such box'), 'hb: no such box'),
        (dict(executor=dict(mcp_ok=False)), 'Executor is not reachable from the agent (no detail)'),
        (
            dict(executor=dict(mcp_ok=True), wiring=dict(stale=['claude', 'hermes'])),
            'MCP wiring is stale for claude, hermes',
        ),
        (dict(executor=dict(mcp_ok=True)), 'unhealthy'),
    ],
)
def test_an_unhealthy_agent_is_named_by_what_it_reports(status, words):
    assert readiness.status_problem(status) == words


def test_the_gate_looks_often_while_executor_is_likely_starting_then_less_often():
    assert readiness.pause(0, True) == readiness.pause(9.9, False) == 0.25
    assert readiness.pause(10, True) == 1 and readiness.pause(30, False) == 0.5
