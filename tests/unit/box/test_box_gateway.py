# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_gateway's decisions: the confirmation, when nothing needs doing, and what check mode predicts."""


import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box import gateway
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error


def status(enabled, state, pid=None, quiesced=False):
    return {'quiesced': quiesced, 'gateway': {'enabled': enabled, 'state': state, 'pid': pid,
                                              'since': '2026-07-04T12:00:00.000Z' if pid else None, 'detail': ''}}


@pytest.mark.parametrize('confirm', [False, None, 'yes', 1])
def test_enabling_without_a_literal_true_confirmation_is_refused_before_anything_is_touched(confirm):
    switch = gateway.GatewaySwitch(None, None, dict(name='dev', state='enabled', confirm_single_writer=confirm))
    with pytest.raises(Tx9Error) as caught:
        switch.run()
    assert caught.value.cause == 'CONFIRMATION_REQUIRED' and 'confirm_single_writer' in caught.value.fix


def test_the_status_is_read_into_enabled_running_pid_and_since():
    assert gateway.gateway_view(status(True, 'running', 812)) == dict(
        enabled=True, running=True, state='running', pid=812, since='2026-07-04T12:00:00.000Z', detail='',
        quiesced=False)


def test_a_status_without_a_gateway_is_a_guest_failure():
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
def test_only_a_gateway_not_yet_as_asked_is_switched(enabled, state, wanted, settled):
    assert gateway.settled(gateway.gateway_view(status(enabled, state)), wanted) is settled


def test_check_mode_predicts_the_gateway_after_the_switch():
    before = gateway.gateway_view(status(False, 'disabled'))
    assert gateway.predicted(before, 'enabled') == dict(before, enabled=True, running=True, state='running')
    running = gateway.gateway_view(status(True, 'running', 812))
    assert gateway.predicted(running, 'disabled') == dict(running, enabled=False, running=False, state='disabled',
                                                          pid=None, since=None)
