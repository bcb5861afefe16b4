# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning a box's changes from what exists, and how the steps read."""


import re

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box import reconcile as lifecycle
from ansible_collections.col_agents.tx9.plugins.module_utils._box import limits as resources
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import LABEL_CONFIG, BoxSpec

EXECUTOR_VALUES = dict(executor_web_base_url=None, executor_publish='127.0.0.1:4788', executor_dns=[],
                       executor_allowed_hosts=[])
START_BOTH = [('start', 'executor'), ('start', 'agent')]


class FakeObjects:
    """What BoxObjects reads from the daemon, as plain inspect-shaped dicts."""

    def __init__(self, network=None, volumes=None, containers=None, strays=None):
        self.network = network
        self.volumes = volumes or dict(agent=None, executor=None)
        self.containers = containers or dict(agent=None, executor=None)
        self.strays = strays or []


def make_spec(**resource_changes):
    return BoxSpec('dev', 'tx9-box:0.1.0', 'sha256:image', '0.1.0', 'f' * 64, EXECUTOR_VALUES,
                   dict(resources.defaults(8), **resource_changes))


def port_bindings(ports):
    return {'4788/tcp': [{'HostIp': ports[0], 'HostPort': ports[1]}]} if ports else None


def inspected(spec, role, running=True, **changes):
    limits = spec.limits(role)
    attrs = {
        'Id': '%s-id-0123456789' % role,
        'Image': spec.image_id,
        'Config': {'Labels': {LABEL_CONFIG: spec.container(role)[1]}},
        'HostConfig': {'NanoCpus': limits['NanoCpus'], 'Memory': limits['Memory'],
                       'PortBindings': port_bindings(spec.container(role)[0]['ports'])},
        'State': {'Running': running, 'Restarting': False, 'Status': 'running' if running else 'exited'},
    }
    attrs.update(changes)
    return attrs


def existing(spec, running=True, **containers):
    found = dict((role, inspected(spec, role, running)) for role in ('agent', 'executor'))
    found.update(containers)
    return FakeObjects(network={'Name': 'tx9-dev'}, volumes=dict(agent={}, executor={}), containers=found)


def plan(objects, spec, running=True, **params):
    return lifecycle.Reconciler(None, None, dict(params, state='present' if running else 'stopped')).plan(
        objects, spec, running)


def test_a_fresh_box_plans_network_volumes_executor_then_agent_and_starts_executor_first():
    assert plan(FakeObjects(), make_spec()) == [
        ('create_network', None), ('create_volume', 'agent'), ('create_volume', 'executor'),
        ('create', 'executor'), ('create', 'agent')] + START_BOTH


def test_a_fresh_box_planned_stopped_is_created_but_not_started():
    steps = plan(FakeObjects(), make_spec(), running=False)
    assert [s for s in steps if s[0] in ('start', 'stop')] == []
    assert ('create', 'agent') in steps


def test_an_unchanged_running_box_plans_nothing():
    spec = make_spec()
    assert plan(existing(spec), spec) == []


def test_an_unchanged_stopped_box_kept_stopped_plans_nothing():
    spec = make_spec()
    assert plan(existing(spec, running=False), spec, running=False) == []


def test_a_changed_memory_plans_a_live_limits_update_only():
    spec = make_spec(agent_memory=4 * 1024 ** 3)
    assert plan(existing(make_spec()), spec) == [('update_limits', 'agent')]


def test_changed_cpus_plan_a_live_limits_update_only():
    spec = make_spec(executor_cpus=resources.NANO)
    assert plan(existing(make_spec()), spec) == [('update_limits', 'executor')]


def test_a_changed_config_hash_label_plans_a_recreate_and_a_start():
    spec = make_spec()
    stale = inspected(spec, 'executor', Config={'Labels': {LABEL_CONFIG: 'older'}})
    assert plan(existing(spec, executor=stale), spec) == [('recreate', 'executor'), ('start', 'executor')]


def test_a_container_on_another_image_plans_a_recreate():
    spec = make_spec()
    old = inspected(spec, 'agent', Image='sha256:older')
    assert plan(existing(spec, agent=old), spec) == [('recreate', 'agent'), ('start', 'agent')]


def test_recreate_true_plans_both_containers_executor_first():
    spec = make_spec()
    assert plan(existing(spec), spec, recreate=True) == [('recreate', 'executor'), ('recreate', 'agent')] + START_BOTH


def test_a_stopped_box_with_state_present_plans_the_starts_executor_first():
    spec = make_spec()
    assert plan(existing(spec, running=False), spec) == START_BOTH


def test_state_stopped_plans_the_agent_stop_before_the_executor_stop():
    spec = make_spec()
    assert plan(existing(spec), spec, running=False) == [('stop', 'agent'), ('stop', 'executor')]


def test_state_stopped_stops_a_restarting_container_too():
    spec = make_spec()
    restarting = inspected(spec, 'executor', running=False)
    restarting['State']['Restarting'] = True
    objects = existing(spec, running=False, executor=restarting)
    assert plan(objects, spec, running=False) == [('stop', 'executor')]


def test_a_missing_volume_and_a_stray_container_are_planned_before_the_containers():
    spec = make_spec()
    objects = existing(spec)
    objects.volumes['executor'] = None
    objects.strays = [{'Id': 'stray-0123456789abcdef'}]
    assert plan(objects, spec) == [('create_volume', 'executor'), ('remove_stray', 'stray-0123456789abcdef')]


@pytest.mark.parametrize('step, words', [
    (('persist', None), 'save the desired state'),
    (('create_network', None), 'create the network'),
    (('create_volume', 'agent'), 'create the agent volume'),
    (('remove_stray', '0123456789abcdef0123'), 'remove a stray container tx9-dev-agent-old'),
    (('create', 'executor'), 'create the executor container tx9-dev-executor'),
    (('recreate', 'agent'), 'recreate the agent container tx9-dev-agent'),
    (('update_limits', 'agent'), 'update the agent limits live'),
    (('start', 'executor'), 'start the executor container tx9-dev-executor'),
    (('stop', 'agent'), 'stop the agent container tx9-dev-agent'),
])
def test_each_step_is_described_in_words_naming_containers_by_name(step, words):
    strays = [{'Id': '0123456789abcdef0123', 'Names': ['/tx9-dev-agent-old']}]
    assert lifecycle.describe(step, 'dev', strays) == words


class RemovalObjects(FakeObjects):
    """A box with every object, and a stray container, as BoxObjects reports them."""

    names = dict(network='tx9-dev', agent_volume='tx9-dev-agent-data', executor_volume='tx9-dev-exec-data')

    def __init__(self):
        super().__init__(
            network={'Name': 'tx9-dev'},
            volumes=dict(agent={'Name': 'tx9-dev-agent-data'}, executor={'Name': 'tx9-dev-exec-data'}),
            containers=dict(agent={'Id': 'a' * 64, 'Name': '/tx9-dev-agent'},
                            executor={'Id': 'e' * 64, 'Name': '/tx9-dev-executor'}),
            strays=[{'Id': 's' * 64, 'Names': ['/tx9-dev-agent-old']}])

    def state(self):
        return 'running'


class NoStateHome:
    def box_file(self, box):
        return '/nonexistent/%s.env' % box

    def read_box(self, box):
        return {}


def test_the_actions_of_state_absent_name_containers_by_name_never_by_id(monkeypatch):
    reconciler = lifecycle.Reconciler(None, NoStateHome(), dict(name='dev', state='absent'), check_mode=True)
    reconciler.box = 'dev'
    monkeypatch.setattr(reconciler, 'desired_view', lambda *args: dict(state='running'))

    result = reconciler.absent(RemovalObjects())

    assert result['actions'] == [
        'remove container tx9-dev-agent-old', 'remove container tx9-dev-agent', 'remove container tx9-dev-executor',
        'remove network tx9-dev', 'remove volume tx9-dev-exec-data', 'remove volume tx9-dev-agent-data']
    ids = ('a' * 12, 'e' * 12, 's' * 12)
    assert not [action for action in result['actions'] if any(i in action for i in ids)]


def test_a_present_run_names_the_containers_it_creates_and_starts():
    steps = plan(FakeObjects(), make_spec())
    words = [lifecycle.describe(step, 'dev') for step in steps]
    assert 'create the executor container tx9-dev-executor' in words
    assert words[-1] == 'start the agent container tx9-dev-agent'


def test_a_minted_token_is_64_hex_characters_and_new_every_time():
    tokens = set(lifecycle.mint_token() for _index in range(20))
    assert len(tokens) == 20
    assert all(re.match(r'^[0-9a-f]{64}\Z', token) for token in tokens)


def test_a_stopped_executor_created_on_another_port_is_recreated_to_get_the_boxs_port_back():
    spec = make_spec()
    spec.executor_values = dict(spec.executor_values, executor_publish=None)
    spec.remembered_port = '32790'
    dynamic = inspected(spec, 'executor', running=False,
                        HostConfig=dict(inspected(spec, 'executor')['HostConfig'],
                                        PortBindings=port_bindings(['0.0.0.0', ''])))
    steps = plan(existing(spec, running=False, executor=dynamic), spec)
    assert ('recreate', 'executor') in steps and ('start', 'executor') in steps
    assert ('recreate', 'agent') not in steps


def test_a_remembered_port_is_no_reason_to_recreate_a_running_executor():
    spec = make_spec()
    spec.executor_values = dict(spec.executor_values, executor_publish=None)
    host_config = dict(inspected(spec, 'executor')['HostConfig'], PortBindings=port_bindings(['0.0.0.0', '']))
    running_dynamic = inspected(spec, 'executor', HostConfig=host_config)
    spec.remembered_port = '32790'
    assert plan(existing(spec, executor=running_dynamic), spec) == []


def test_the_diff_of_tx9_box_shows_memory_in_binary_units_not_bytes():
    persisted = resources.to_state(resources.resolve({'agent_memory': '3g', 'executor_volume_budget': '512m'}, {}, 8))
    persisted['TX9_IMAGE'] = 'tx9-box:0.1.0'

    class Live(FakeObjects):
        def live_resources(self):
            return {}

    view = lifecycle.Reconciler(None, None, dict(name='dev')).desired_view('running', persisted, Live())

    assert view['resources']['agent_memory'] == '3 GiB'
    assert view['resources']['executor_memory'] == '2 GiB'
    assert view['resources']['executor_volume_budget'] == '512 MiB'
    assert view['resources']['agent_volume_budget'] == 'unlimited'


def test_an_executor_that_exits_before_its_port_is_published_fails_the_gate_with_not_ready(monkeypatch):
    spec = make_spec()
    exited = inspected(spec, 'executor', running=False, NetworkSettings={'Ports': {}},
                       State={'Running': False, 'Restarting': True, 'Status': 'restarting'})
    objects = existing(spec, executor=exited)
    looks = []

    def reinspect(_client, _box):
        looks.append(1)
        return objects
    monkeypatch.setattr(lifecycle, 'BoxObjects', reinspect)
    monkeypatch.setattr(lifecycle.time, 'sleep', lambda _seconds: None)
    reconciler = lifecycle.Reconciler(None, None, dict(name='dev', state='present', wait_timeout=1))
    reconciler.box = 'dev'

    with pytest.raises(lifecycle.Tx9Error) as failure:
        reconciler.readiness_gate(objects, spec.token, waited=True)

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
        return inspected(spec, 'executor', running=False, NetworkSettings={'Ports': {}}, RestartCount=counts[0],
                         State=state)
    first = existing(spec, executor=executor_now())

    def reinspect(_client, _box):
        looks.append(1)
        if len(counts) > 1:
            counts.pop(0)
        return existing(spec, executor=executor_now())
    monkeypatch.setattr(lifecycle, 'BoxObjects', reinspect)
    monkeypatch.setattr(lifecycle.time, 'sleep', (slept if slept is not None else []).append)
    reconciler = lifecycle.Reconciler(None, None, dict(name='dev', state='present', wait_timeout=wait_timeout))
    reconciler.box = 'dev'
    with pytest.raises(lifecycle.Tx9Error) as failure:
        reconciler.readiness_gate(first, spec.token, waited=True)
    return failure.value, looks


def test_an_executor_that_keeps_exiting_fails_the_gate_at_once_naming_its_exits_and_exit_code(monkeypatch):
    slept = []
    failure, looks = crash_looping_gate(monkeypatch, [0, 1, 2, 3], slept=slept)

    assert failure.cause == 'NOT_READY'
    assert 'Executor exited 3 times while the gate waited (last exit code 1), so it will not start' in str(failure)
    assert 'within' not in str(failure)
    # At once: three looks and the pauses between them, far from the 30 s the gate could have waited.
    assert len(looks) == 3 and sum(slept) < 30, slept


def test_an_executor_found_running_again_after_its_exits_is_looked_at_once_more_to_name_its_exit_code(monkeypatch):
    failure, looks = crash_looping_gate(monkeypatch, [0, 1, 2, 3, 4], running=(3,))

    assert 'Executor exited 4 times while the gate waited (last exit code 1), so it will not start' in str(failure)
    assert 'exit code 0' not in str(failure)
    assert len(looks) == 4


def test_restarts_before_the_gate_began_do_not_count_against_it(monkeypatch):
    failure, looks = crash_looping_gate(monkeypatch, [7, 7, 8, 9], wait_timeout=1)

    assert 'did not become ready within 1 seconds: Executor publishes no port' in str(failure)
    assert len(looks) > 3
