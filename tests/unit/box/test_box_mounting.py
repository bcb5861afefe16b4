# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_mount's flow: what is refused before anything is inspected, and when the agent is recreated."""


import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box import host_mounts
from ansible_collections.col_agents.tx9.plugins.module_utils._box import limits as resources
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import LABEL_CONFIG, BoxSpec
from ansible_collections.col_agents.tx9.plugins.module_utils._box.steps import recreates_agent
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._ops import mount
from ansible_collections.col_agents.tx9.plugins.module_utils._ops.mount import MountRun

EXECUTOR_VALUES = dict(executor_web_base_url=None, executor_publish=None, executor_dns=[], executor_allowed_hosts=[])


class Untouchable:
    """A Docker client or state home that fails the test when anything asks it for anything."""

    def __getattr__(self, name):
        raise AssertionError('%s was used before the options were checked' % name)


def params(**changes):
    values = dict(name='dev', source='/srv/share', target='/mnt/share', read_only=False, require_mountpoint=False,
                  state='present')
    values.update(changes)
    return values


def refused(**changes):
    with pytest.raises(Tx9Error) as info:
        MountRun(Untouchable(), Untouchable(), params(**changes)).run()
    return info.value


@pytest.mark.parametrize('target', ['/data/x', '/mnt/../etc', '/mnt', 'relative'])
def test_an_invalid_target_is_refused_before_docker_or_the_state_home_is_touched(target):
    assert refused(target=target).cause == 'MOUNT_TARGET_INVALID'


@pytest.mark.parametrize('target', ['/data/x', '/mnt'])
def test_an_invalid_target_is_refused_for_state_absent_too(target):
    assert refused(target=target, state='absent', source=None).cause == 'MOUNT_TARGET_INVALID'


def test_an_invalid_box_name_is_refused_first():
    assert refused(name='Not A Box').cause == 'INVALID_NAME'


def test_a_relative_source_is_refused_as_an_invalid_argument():
    err = refused(source='srv/share')
    assert err.cause == 'INVALID_ARGUMENT' and 'source' in err.reason


def test_the_requested_mount_is_normalised():
    wanted = MountRun(None, None, params(target='/mnt//share/', read_only=True)).requested()
    assert (wanted['target'], wanted['read_only']) == ('/mnt/share', True)


def test_state_absent_needs_no_source():
    assert MountRun(None, None, params(state='absent', source=None)).requested() == dict(target='/mnt/share', source=None)


def spec(with_mounts=()):
    return BoxSpec('dev', 'tx9-box:0.1.0', 'sha256:image', '0.1.0', 'f' * 64, EXECUTOR_VALUES,
                   resources.defaults(8), with_mounts)


def agent(config_hash, running=True):
    return {'Id': 'agent-id', 'Config': {'Labels': {LABEL_CONFIG: config_hash}},
            'State': {'Running': running, 'Restarting': False, 'Status': 'running' if running else 'exited'}}


SHARE = host_mounts.new_mount('/srv/share', '/mnt/share', read_only=True)


def test_an_agent_already_carrying_the_mount_set_is_not_recreated():
    wanted = spec([SHARE])
    assert MountRun.agent_plan(agent(wanted.container('agent')[1]), wanted) == []


def test_a_running_agent_without_the_mount_is_recreated_and_started_again():
    assert MountRun.agent_plan(agent(spec().container('agent')[1]), spec([SHARE])) == [
        ('recreate', 'agent'), ('start', 'agent')]


def test_a_stopped_agent_is_recreated_and_stays_stopped():
    assert MountRun.agent_plan(agent(spec().container('agent')[1], running=False), spec([SHARE])) == [
        ('recreate', 'agent')]


def test_a_missing_agent_container_is_left_for_tx9_box_to_create():
    assert MountRun.agent_plan(None, None) == []


@pytest.mark.parametrize('plan, expected', [
    ([('recreate', 'agent'), ('start', 'agent')], True),
    ([('create', 'agent')], True),
    ([('recreate', 'executor'), ('update_limits', 'agent')], False),
    ([], False),
])
def test_only_plans_that_create_or_recreate_the_agent_check_the_mount_sources(plan, expected):
    assert recreates_agent(plan) is expected


class Writer:
    """BoxWriter's calls, recorded; a created container is new-agent-id."""

    calls = []

    def __init__(self, client, spec):
        Writer.calls = []

    def remove_container(self, container_id):
        Writer.calls.append(('remove', container_id))

    def create_container(self, role):
        Writer.calls.append(('create', role))
        return 'new-agent-id'

    def start(self, container_id):
        Writer.calls.append(('start', container_id))


class Home:
    def __init__(self):
        self.written = []

    def write_box(self, box, state):
        self.written.append((box, state))


class Objects:
    def __init__(self, agent_attrs):
        self.containers = dict(agent=agent_attrs, executor=None)


def test_the_agent_is_recreated_and_started_again_before_the_mount_set_is_saved(monkeypatch):
    monkeypatch.setattr(mount, 'BoxWriter', Writer)
    home = Home()
    run = MountRun(None, home, params())

    run.apply([('recreate', 'agent'), ('start', 'agent'), ('persist', None)], Objects(agent('x')), spec(), {'K': 'v'})

    assert Writer.calls == [('remove', 'agent-id'), ('create', 'agent'), ('start', 'new-agent-id')]
    assert home.written == [('dev', {'K': 'v'})]


def test_without_an_agent_container_only_the_mount_set_is_saved(monkeypatch):
    monkeypatch.setattr(mount, 'BoxWriter', Writer)
    home = Home()

    MountRun(None, home, params()).apply([('persist', None)], Objects(None), None, {'K': 'v'})

    assert Writer.calls == [] and home.written == [('dev', {'K': 'v'})]


def test_a_recreated_running_agent_waits_at_the_readiness_gate_of_its_engine_and_reports_what_it_did(monkeypatch):
    class Gate:
        def __init__(self, client, box, docker_host, timeout, check_mode):
            self.settings = (box, docker_host, timeout, check_mode)
            self.actions = ['deliver the current token to the running agent']

        def wait(self, objects, token, waited):
            Gate.seen = (self.settings, token, waited)
            return False

    monkeypatch.setattr(mount, 'ReadinessGate', Gate)
    run = MountRun(None, None, params(wait_timeout=9), docker_host='tcp://engine:2375')
    run.actions = ['recreate the agent container tx9-dev-agent']

    run.wait_ready(Objects(agent('x')), 'f' * 64)

    assert Gate.seen == (('dev', 'tcp://engine:2375', 9, False), 'f' * 64, True)
    assert run.actions == ['recreate the agent container tx9-dev-agent', 'deliver the current token to the running agent']


def test_an_agent_a_lost_run_removed_is_created_again_and_started_when_executor_runs():
    executor = agent('executor-hash', running=True)
    assert MountRun.agent_plan(None, spec([SHARE]), executor) == [('create', 'agent'), ('start', 'agent')]


def test_an_agent_a_lost_run_removed_from_a_stopped_box_is_created_and_left_stopped():
    executor = agent('executor-hash', running=False)
    assert MountRun.agent_plan(None, spec([SHARE]), executor) == [('create', 'agent')]


def test_a_box_with_neither_container_gets_no_plan_of_its_own():
    assert MountRun.agent_plan(None, None, None) == []


def test_an_agent_a_lost_run_created_but_never_started_is_started_when_executor_runs():
    wanted = spec([SHARE])
    created = agent(wanted.container('agent')[1], running=False)
    created['State']['Status'] = 'created'
    assert MountRun.agent_plan(created, wanted, agent('executor-hash')) == [('start', 'agent')]
    assert MountRun.agent_plan(created, wanted, agent('executor-hash', running=False)) == []


def test_an_agent_stopped_with_its_box_stays_stopped_when_its_mounts_are_as_asked():
    wanted = spec([SHARE])
    stopped = agent(wanted.container('agent')[1], running=False)
    assert MountRun.agent_plan(stopped, wanted, agent('executor-hash')) == []
