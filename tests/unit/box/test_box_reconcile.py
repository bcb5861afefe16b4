# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning a box's changes from what exists, and how the steps read."""


import re

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box import limits as resources
from ansible_collections.col_agents.tx9.plugins.module_utils._box import drill_record
from ansible_collections.col_agents.tx9.plugins.module_utils._box import reconcile as lifecycle
from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import LABEL_CONFIG
from ansible_collections.col_agents.tx9.tests.unit.box.box_kit import (
    FakeObjects,
    existing,
    inspected,
    make_spec,
    port_bindings,
)

START_BOTH = [('start', 'executor'), ('start', 'agent')]


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
    (('mint_token', None), 'mint a new token'),
    (('deliver_token', 'agent'), 'deliver the new token to the running agent and rewire its tools'),
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
    path = '/nonexistent'

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


class Removals:
    """A BoxWriter that records what it would remove."""

    removed: list = []

    def __init__(self, client, spec):
        pass

    def remove(self, kind, ref):
        self.removed.append((kind, ref))


@pytest.mark.parametrize('keep_data', [False, True])
def test_removing_a_box_with_its_data_removes_its_drill_record_and_keep_data_keeps_it(monkeypatch, tmp_path, keep_data):
    home = StateHome(str(tmp_path))
    drill_record.write_drill(home, 'dev', {'ok': True, 'archive': '/backups/dev.tx9'})
    monkeypatch.setattr(lifecycle, 'BoxWriter', Removals)
    reconciler = lifecycle.Reconciler(None, home, dict(name='dev', state='absent', keep_data=keep_data))
    reconciler.box = 'dev'
    monkeypatch.setattr(reconciler, 'desired_view', lambda *args: dict(state='running'))

    result = reconciler.absent(RemovalObjects())

    assert (drill_record.read_drill(home, 'dev') is None) is not keep_data
    assert ('remove the drill record' in result['actions']) is not keep_data


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
    given = {'agent_memory': '3g', 'executor_volume_budget': '512m'}
    persisted = resources.to_state(resources.resolve(given, {}, lambda: 8))
    persisted['TX9_IMAGE'] = 'tx9-box:0.1.0'

    class Live(FakeObjects):
        def live_resources(self):
            return {}

    view = lifecycle.Reconciler(None, None, dict(name='dev')).desired_view('running', persisted, Live())

    assert view['resources']['agent_memory'] == '3 GiB'
    assert view['resources']['executor_memory'] == '2 GiB'
    assert view['resources']['executor_volume_budget'] == '512 MiB'
    assert view['resources']['agent_volume_budget'] == 'unlimited'


class Images:
    """The images of a host, as client.images.get finds them."""

    def __init__(self, *tags):
        self.tags = tags

    def get(self, ref):
        from docker.errors import ImageNotFound

        if ref not in self.tags:
            raise ImageNotFound(ref)
        return type('Image', (), dict(id='sha256:' + 'a' * 64, labels={}))()


class ImageClient:
    def __init__(self, *tags):
        self.images = Images(*tags)


def test_an_image_not_on_the_host_is_refused_with_image_missing_and_how_to_build_it():
    with pytest.raises(lifecycle.Tx9Error) as failure:
        lifecycle.require_image(ImageClient('tx9-box:0.1.0'), 'tx9-box:9.9.9')

    assert failure.value.cause == 'IMAGE_MISSING'
    assert failure.value.reason == 'The image tx9-box:9.9.9 is not on this host.'
    assert failure.value.fix == 'Build it first with col_agents.tx9.tx9_image (or playbooks/build-image.yml).'


def test_an_image_on_the_host_is_returned():
    assert lifecycle.require_image(ImageClient('tx9-box:0.1.0'), 'tx9-box:0.1.0').id.startswith('sha256:')


def test_what_the_readiness_gate_did_joins_the_runs_actions_even_when_it_fails(monkeypatch):
    class Gate:
        def __init__(self, client, box, docker_host, timeout, check_mode):
            assert (box, docker_host, timeout, check_mode) == ('dev', 'tcp://engine:2375', 7, False)
            self.actions = []
            self.ready_status = None

        def wait(self, objects, token, waited):
            self.actions.append('deliver the current token to the running agent')
            raise lifecycle.Tx9Error('not ready', 'NOT_READY', 'wait')

    monkeypatch.setattr(lifecycle, 'ReadinessGate', Gate)
    reconciler = lifecycle.Reconciler(None, None, dict(name='dev', wait_timeout=7), docker_host='tcp://engine:2375')
    reconciler.actions = ['start the agent container tx9-dev-agent']

    with pytest.raises(lifecycle.Tx9Error):
        reconciler.wait_ready(FakeObjects(), 'f' * 64, waited=True)

    assert reconciler.actions == [
        'start the agent container tx9-dev-agent', 'deliver the current token to the running agent']


class CountingEngine:
    """An engine that says how many CPUs it has (0: it does not say), and counts how often it was asked."""

    def __init__(self, cpus):
        self.cpus = cpus
        self.asked = 0

    def info(self):
        self.asked += 1
        return {'NCPU': self.cpus}


def test_a_run_asks_the_engine_for_its_cpu_count_once():
    engine = CountingEngine(4)
    run = lifecycle.Reconciler(engine, None, dict(name='dev'))
    assert [run.host_cpus(), run.host_cpus()] == [4, 4]
    assert engine.asked == 1


def test_a_run_asks_again_for_a_cpu_count_the_engine_did_not_give():
    engine = CountingEngine(0)
    run = lifecycle.Reconciler(engine, None, dict(name='dev'))
    run.host_cpus()
    run.host_cpus()
    assert engine.asked == 2


@pytest.mark.parametrize('plan_steps, check_mode, read_again', [
    ([], False, False),
    ([('persist', None)], False, False),
    ([('update_limits', 'agent')], True, False),
    ([('update_limits', 'agent')], False, True),
    ([('persist', None), ('start', 'agent')], False, True),
])
def test_the_box_is_read_again_after_a_plan_only_when_the_plan_changed_it_in_the_engine(
        monkeypatch, plan_steps, check_mode, read_again):
    reads = []
    monkeypatch.setattr(lifecycle, 'BoxObjects', lambda client, box: reads.append(box) or 'read again')
    run = lifecycle.Reconciler(None, None, dict(name='dev'), check_mode=check_mode)
    before = FakeObjects()

    after = run.objects_after(plan_steps, before)

    assert (after == 'read again') is read_again and (after is before) is not read_again
    assert reads == (['dev'] if read_again else [])
