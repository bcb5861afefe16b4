# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_gateway's decisions: the confirmation, when nothing needs doing, and what check mode predicts."""

from __future__ import annotations

from typing import Any, cast

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._ops import gateway
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error


def status(enabled: bool, state: str, pid: int | None = None, quiesced: bool = False) -> dict[str, Any]:
    return {'quiesced': quiesced, 'gateway': {'enabled': enabled, 'state': state, 'pid': pid,
                                              'since': '2026-07-04T12:00:00.000Z' if pid else None, 'detail': ''}}


@pytest.mark.parametrize('confirm', [False, None, 'yes', 1])
def test_enabling_without_a_literal_true_confirmation_is_refused_before_anything_is_touched(confirm: object) -> None:
    switch = gateway.GatewaySwitch(None, cast(StateHome, None), dict(name='dev', state='enabled', confirm_single_writer=confirm))
    with pytest.raises(Tx9Error) as caught:
        switch.run()
    assert caught.value.cause == 'CONFIRMATION_REQUIRED' and 'confirm_single_writer' in caught.value.fix


def test_the_status_is_read_into_enabled_running_pid_and_since() -> None:
    assert gateway.gateway_view(status(True, 'running', 812)) == dict(
        enabled=True, running=True, state='running', pid=812, since='2026-07-04T12:00:00.000Z', detail='',
        quiesced=False)


def test_a_status_without_a_gateway_is_a_guest_failure() -> None:
    with pytest.raises(Tx9Error) as caught:
        gateway.gateway_view({'healthy': False, 'detail': 'hb status exited -1: no such container'})
    assert caught.value.cause == 'GUEST_FAILED' and 'no such container' in caught.value.reason


@pytest.mark.parametrize('enabled, state, wanted, settled', [
    (True, 'running', 'enabled', True),
    (True, 'starting', 'enabled', True),
    (True, 'gave-up', 'enabled', False),
    (True, 'stopped', 'enabled', False),
    (False, 'disabled', 'enabled', False),
    (False, 'disabled', 'disabled', True),
    (True, 'stopped', 'disabled', False),
    (False, 'running', 'disabled', False),
    (False, 'restarting', 'disabled', False),
])
def test_only_a_gateway_not_yet_as_asked_is_switched(enabled: bool, state: str, wanted: str, settled: bool) -> None:
    assert gateway.settled(gateway.gateway_view(status(enabled, state)), wanted) is settled


def test_check_mode_predicts_the_gateway_after_the_switch() -> None:
    before = gateway.gateway_view(status(False, 'disabled'))
    assert gateway.predicted(before, 'enabled') == dict(before, enabled=True, running=True, state='running')
    running = gateway.gateway_view(status(True, 'running', 812))
    assert gateway.predicted(running, 'disabled') == dict(running, enabled=False, running=False, state='disabled',
                                                          pid=None, since=None)


class Guest:
    """hb in a box whose gateway starts as status says; gateway-disable stops it and sets the marker."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, before: dict[str, Any], disable_exit: int = 0) -> None:
        self.status = before
        self.calls: list[list[str]] = []
        self.disable_exit = disable_exit
        monkeypatch.setattr(gateway, 'guest_status', self.guest_status)
        monkeypatch.setattr(gateway, 'run_hb', self.run_hb)

    def guest_status(self, _client: Any, agent_id: str) -> dict[str, Any]:
        assert agent_id == 'agent-id'
        return self.status

    def run_hb(self, _client: Any, agent_id: str, args: list[str]) -> tuple[int, str]:
        assert agent_id == 'agent-id'
        self.calls.append(args)
        if self.disable_exit:
            return self.disable_exit, 'hb gateway-disable: cannot stop pid 812\n'
        self.status = status(False, 'disabled')
        return 0, ''


def test_disabling_a_running_gateway_stops_it_through_hb_and_reports_it_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    guest = Guest(monkeypatch, status(True, 'running', 812))
    changed, view = gateway.disable(None, 'dev', 'agent-id')
    assert guest.calls == [['gateway-disable']]
    assert changed is True and (view['enabled'], view['running'], view['state']) == (False, False, 'disabled')


def test_disabling_a_disabled_gateway_changes_nothing_and_runs_no_hb_command(monkeypatch: pytest.MonkeyPatch) -> None:
    guest = Guest(monkeypatch, status(False, 'disabled'))
    assert gateway.disable(None, 'dev', 'agent-id') == (False, gateway.gateway_view(status(False, 'disabled')))
    assert guest.calls == []


def test_disabling_in_check_mode_predicts_and_touches_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    guest = Guest(monkeypatch, status(True, 'running', 812))
    changed, view = gateway.disable(None, 'dev', 'agent-id', check_mode=True)
    assert changed is True and view['state'] == 'disabled' and view['pid'] is None and guest.calls == []


def test_a_gateway_hb_cannot_disable_is_a_guest_failure_in_hbs_words(monkeypatch: pytest.MonkeyPatch) -> None:
    Guest(monkeypatch, status(True, 'running', 812), disable_exit=1)
    with pytest.raises(Tx9Error) as caught:
        gateway.disable(None, 'dev', 'agent-id')
    assert caught.value.cause == 'GUEST_FAILED' and 'cannot stop pid 812' in caught.value.reason
