# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_doctor's host checks: containers and labels, the published endpoint, the version and the budgets."""

from __future__ import annotations

import threading
from typing import Any, cast

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._ops import doctor
from ansible_collections.col_agents.tx9.plugins.module_utils._version import COLLECTION_VERSION
from ansible_collections.col_agents.tx9.tests.unit.box.box_kit import FakeObjects
from ansible_collections.col_agents.tx9.tests.unit.mcp_stub import Behaviour, mcp_server

TOKEN = 'f' * 64


def container(role: str, running: bool = True, port: int | None = None,
              labels: dict[str, str | None] | None = None) -> dict[str, Any]:
    all_labels: dict[str, str | None] = {'tx9': '1', 'tx9.box': 'dev', 'tx9.role': role, 'tx9.version': COLLECTION_VERSION}
    all_labels.update(labels or {})
    ports = {'4788/tcp': [{'HostIp': '127.0.0.1', 'HostPort': str(port)}]} if port else {}
    return {'Id': role + '-id', 'Config': {'Labels': dict((k, v) for k, v in all_labels.items() if v is not None)},
            'State': {'Running': running, 'Restarting': False, 'Status': 'running' if running else 'exited'},
            'NetworkSettings': {'Ports': ports}}


def test_a_running_labelled_container_passes() -> None:
    assert doctor.container_check('dev', 'agent', container('agent')) == dict(
        name='agent container', ok=True, detail='running, labelled for box dev')


@pytest.mark.parametrize('attrs, words', [
    (None, 'tx9-dev-executor is missing'),
    (container('executor', running=False), 'stopped; start it'),
    (container('executor', labels={'tx9.role': 'agent'}), 'labels tx9.role'),
    (container('executor', labels={'tx9.box': 'other'}), 'labels tx9.box'),
    (container('executor', labels={'tx9.version': None}), 'labels tx9.version'),
])
def test_a_missing_stopped_or_mislabelled_container_fails_and_says_why(attrs: dict[str, Any] | None, words: str) -> None:
    result = doctor.container_check('dev', 'executor', attrs)
    assert result['name'] == 'executor container' and result['ok'] is False and words in result['detail']


def test_a_healthy_endpoint_passes_the_port_the_handshake_and_the_refusal() -> None:
    with mcp_server(Behaviour(TOKEN)) as (_host, port):
        checks = doctor.endpoint_checks(container('executor', port=port), TOKEN, None)
    assert [(c['name'], c['ok']) for c in checks] == [
        ('executor port', True), ('mcp handshake', True), ('mcp without token', True)]
    assert checks[1]['detail'] == 'initialize and notifications/initialized accepted by executor 1.5.9'


def test_an_executor_that_accepts_anyone_fails_only_the_refusal() -> None:
    with mcp_server(Behaviour(None)) as (_host, port):
        checks = doctor.endpoint_checks(container('executor', port=port), TOKEN, None)
    assert [(c['name'], c['ok']) for c in checks] == [
        ('executor port', True), ('mcp handshake', True), ('mcp without token', False)]


def test_a_stopped_executor_fails_all_three_endpoint_checks() -> None:
    checks = doctor.endpoint_checks(container('executor', running=False), TOKEN, None)
    assert [(c['name'], c['ok']) for c in checks] == [
        ('executor port', False), ('mcp handshake', False), ('mcp without token', False)]
    assert 'publishes no port' in checks[0]['detail']


def test_without_a_token_the_handshake_fails_and_never_sends_one() -> None:
    behaviour = Behaviour(TOKEN)
    with mcp_server(behaviour) as (_host, port):
        checks = doctor.endpoint_checks(container('executor', port=port), None, None)
    assert checks[1] == dict(name='mcp handshake', ok=False, detail='no box token in the state home or the containers')
    assert all(not authorized for _method, authorized, _session in behaviour.seen)


def test_containers_of_another_version_fail_the_version_check() -> None:
    good = doctor.version_check(dict(agent=container('agent'), executor=container('executor')))
    assert good == dict(name='image version', ok=True, detail=COLLECTION_VERSION)
    stale = doctor.version_check(dict(agent=container('agent', labels={'tx9.version': '0.0.9'}),
                                      executor=container('executor')))
    assert stale['ok'] is False and 'agent at 0.0.9' in stale['detail']


def test_a_version_named_by_the_caller_is_the_one_the_containers_must_carry() -> None:
    previous = dict(agent=container('agent', labels={'tx9.version': '0.0.8'}),
                    executor=container('executor', labels={'tx9.version': '0.0.8'}))
    assert doctor.version_check(previous, '0.0.8') == dict(name='image version', ok=True, detail='0.0.8')
    current = doctor.version_check(dict(agent=container('agent'), executor=container('executor')), '0.0.8')
    assert current['ok'] is False and current['detail'] == 'agent, executor at %s, %s, expected 0.0.8' % (
        COLLECTION_VERSION, COLLECTION_VERSION)


def volume(used: int | None, budget: int | None, status: str, exists: bool = True) -> dict[str, Any]:
    return dict(name='v', exists=exists, used_bytes=used, budget_bytes=budget, budget_status=status)


def test_a_volume_over_its_budget_only_warns_and_one_without_a_budget_passes() -> None:
    checks = doctor.budget_checks(dict(agent=volume(2048, 1024, 'over'), executor=volume(10, None, 'unlimited')))
    assert [(c['name'], c['ok'], c.get('state')) for c in checks] == [
        ('agent volume', True, 'warn'), ('executor volume', True, None)]
    assert checks[0]['detail'].startswith('2048 bytes used of a 1024-byte budget; over budget (advisory, never enforced)')
    assert checks[1]['detail'] == '10 bytes used (unlimited)'


def test_a_missing_volume_fails_its_check() -> None:
    checks = doctor.budget_checks(dict(agent=volume(None, None, 'unlimited', exists=False),
                                       executor=volume(None, None, 'unknown')))
    assert [(c['name'], c['ok']) for c in checks] == [('agent volume', False), ('executor volume', True)]


def test_a_stopped_agent_is_one_failed_box_check() -> None:
    assert doctor.guest_checks(None, container('agent', running=False)) == [
        dict(name='hb doctor', ok=False, detail='the agent container is not running, so hb doctor cannot run')]


def test_hb_doctor_runs_while_the_host_checks_do_and_its_checks_come_last(monkeypatch: pytest.MonkeyPatch) -> None:
    hb_doctor_started = threading.Event()

    def guest_checks(_client: Any, agent: dict[str, Any]) -> list[dict[str, Any]]:
        hb_doctor_started.set()
        return [doctor.check('hb tool node', True, '18.19.0 in %s' % agent['Id'])]

    def volume_usage(_client: Any) -> dict[str, int | None]:
        # Run one after the other, the host checks would wait for hb doctor in vain.
        assert hb_doctor_started.wait(10), 'hb doctor had not started while the host checks ran'
        return {}

    objects = FakeObjects(containers=dict(agent=container('agent'), executor=container('executor')))
    monkeypatch.setattr(doctor, 'existing_box', lambda _client, _name: objects)
    monkeypatch.setattr(doctor, 'box_secret', lambda _home, _objects: TOKEN)
    monkeypatch.setattr(doctor, 'endpoint_checks', lambda _executor, _token, _host: [doctor.check('executor port', True, '')])
    monkeypatch.setattr(doctor, 'volume_usage', volume_usage)
    monkeypatch.setattr(doctor, 'describe_box', lambda _client, _home, _box, _usage: dict(volumes=dict(
        agent=volume(10, None, 'unlimited'), executor=volume(10, None, 'unlimited'))))
    monkeypatch.setattr(doctor, 'guest_checks', guest_checks)
    result = doctor.Doctor(None, cast(StateHome, None), dict(name='dev')).run()  # the fakes never read a home
    assert result['ok'] is True
    assert [c['name'] for c in result['checks']] == [
        'agent container', 'executor container', 'executor port', 'image version', 'agent volume',
        'executor volume', 'hb tool node']
    assert result['checks'][-1]['detail'] == '18.19.0 in agent-id'


def test_a_box_over_its_budget_passes_the_doctor_with_a_warning_and_each_check_has_a_state(
        monkeypatch: pytest.MonkeyPatch) -> None:
    objects = FakeObjects(containers=dict(agent=container('agent'), executor=container('executor')))
    monkeypatch.setattr(doctor, 'existing_box', lambda _client, _name: objects)
    monkeypatch.setattr(doctor, 'box_secret', lambda _home, _objects: TOKEN)
    monkeypatch.setattr(doctor, 'endpoint_checks', lambda _executor, _token, _host: [doctor.check('executor port', True, '')])
    monkeypatch.setattr(doctor, 'volume_usage', lambda _client: {})
    monkeypatch.setattr(doctor, 'describe_box', lambda _client, _home, _box, _usage: dict(volumes=dict(
        agent=volume(2048, 1024, 'over'), executor=volume(10, None, 'unlimited'))))
    monkeypatch.setattr(doctor, 'guest_checks', lambda _client, _agent: [doctor.check('hb tool node', False, 'gone')])
    # fail_on_error off: the failed hb check is reported, the budget only warns.
    result = doctor.Doctor(None, cast(StateHome, None), dict(name='dev', fail_on_error=False)).run()
    assert result['failed_checks'] == ['hb tool node'] and result['warned_checks'] == ['agent volume']
    assert {c['name']: c['state'] for c in result['checks']}['agent volume'] == 'warn'
    assert {c['name']: c['state'] for c in result['checks']}['hb tool node'] == 'fail'
    assert {c['name']: c['state'] for c in result['checks']}['executor volume'] == 'pass'
    assert result['warnings'] == ['Box dev, agent volume: 2048 bytes used of a 1024-byte budget; over budget (advisory, '
                                  'never enforced): free space in the box or raise agent_volume_budget (over)']
    # With every other check passing, fail_on_error on does not fail the box for its budget.
    monkeypatch.setattr(doctor, 'guest_checks', lambda _client, _agent: [doctor.check('hb tool node', True, '')])
    passed = doctor.Doctor(None, cast(StateHome, None), dict(name='dev')).run()
    assert passed['ok'] is True and passed['failed_checks'] == [] and passed['warned_checks'] == ['agent volume']
