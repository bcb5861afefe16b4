# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A confined box: its containers' settings, its plan when its policy changes, and what proves it confined."""


from ansible_collections.col_agents.tx9.plugins.module_utils._box import confinement
from ansible_collections.col_agents.tx9.plugins.module_utils._box import reconcile as lifecycle
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import LABEL_EGRESS
from ansible_collections.col_agents.tx9.plugins.module_utils._box.steps import describe
from ansible_collections.col_agents.tx9.tests.unit.box.box_kit import existing, inspected, make_spec

ALLOW = dict(mode='allowlist', allow=['allowed.test'])
WIDER = dict(mode='allowlist', allow=['allowed.test', 'blocked.test'])


def plan(objects, spec, running=True):
    return lifecycle.Reconciler(None, None, dict(state='present' if running else 'stopped')).plan(
        objects, spec, running)


def confined_box(spec, running=True):
    """A confined box as the daemon shows it: internal network, the proxy and its outside network."""
    objects = existing(spec, running)
    objects.network = {'Name': 'tx9-dev', 'Internal': True}
    for attrs in objects.containers.values():
        attrs['Config']['Labels'][LABEL_EGRESS] = 'allowlist'
    objects.egress = inspected(spec, 'egress', running)
    objects.egress_network = {'Name': 'tx9-dev-out'}
    return objects


def test_an_open_box_has_two_containers_and_the_config_hashes_it_always_had():
    spec = make_spec()
    assert spec.roles == ('executor', 'agent') and spec.publisher == 'executor'
    assert make_spec(dict(mode='open')).container('agent')[1] == spec.container('agent')[1]
    settings = spec.container('agent')[0]
    assert 'cap_drop' not in settings and 'https_proxy' not in settings['environment']


def test_a_confined_box_reaches_out_only_through_its_proxy_which_publishes_the_dashboard():
    spec = make_spec(ALLOW)
    assert spec.roles == ('egress', 'executor', 'agent') and spec.publisher == 'egress'
    agent, executor, proxy = (spec.container(role)[0] for role in ('agent', 'executor', 'egress'))
    assert agent['environment']['https_proxy'] == 'http://egress:3128'
    assert executor['environment']['HTTPS_PROXY'] == 'http://egress:3129'
    assert 'egress' in agent['environment']['no_proxy'] and 'executor' in agent['environment']['NO_PROXY']
    assert agent['cap_drop'] == ['NET_RAW'] == executor['cap_drop']
    assert agent['dns_opt'] == ['timeout:1', 'attempts:1']
    assert executor['ports'] is None and proxy['ports'] == ['127.0.0.1', '4788']
    assert proxy['network'] == 'tx9-dev-out' and agent['network'] == 'tx9-dev'


def test_a_changed_rule_changes_only_the_proxys_config_hash():
    one, two = make_spec(ALLOW), make_spec(WIDER)
    assert one.container('agent')[1] == two.container('agent')[1]
    assert one.container('executor')[1] == two.container('executor')[1]
    assert one.container('egress')[1] != two.container('egress')[1]


def test_a_changed_rule_plans_the_proxy_alone_recreated_and_started():
    objects = confined_box(make_spec(ALLOW))
    assert plan(objects, make_spec(ALLOW)) == []
    assert plan(objects, make_spec(WIDER)) == [('recreate', 'egress'), ('start', 'egress')]


def test_an_open_box_confined_gets_a_new_internal_network_and_all_three_containers():
    steps = plan(existing(make_spec()), make_spec(ALLOW))
    assert steps == [
        ('replace_network', None), ('create_egress_network', None),
        ('create', 'egress'), ('create', 'executor'), ('create', 'agent'),
        ('start', 'egress'), ('start', 'executor'), ('start', 'agent')]


def test_a_confined_box_opened_loses_its_proxy_and_its_outside_network():
    steps = plan(confined_box(make_spec(ALLOW)), make_spec())
    assert steps[:2] == [('replace_network', None), ('remove_egress_network', None)]
    assert ('create', 'egress') not in steps and ('start', 'agent') in steps


def test_a_confined_box_stops_the_agent_first_and_its_proxy_last():
    steps = plan(confined_box(make_spec(ALLOW)), make_spec(ALLOW), running=False)
    assert steps == [('stop', 'agent'), ('stop', 'executor'), ('stop', 'egress')]


def test_a_confined_box_whose_proxy_is_missing_is_partial_and_gets_it_back():
    objects = confined_box(make_spec(ALLOW))
    objects.egress = None
    assert objects.state() == 'partial'
    assert plan(objects, make_spec(ALLOW)) == [('create', 'egress'), ('start', 'egress')]


def test_the_new_steps_read_as_words():
    assert describe(('create', 'egress'), 'dev') == 'create the egress container tx9-dev-egress'
    assert 'outside network' in describe(('create_egress_network', None), 'dev')
    assert 'every container' in describe(('replace_network', None), 'dev')


def test_a_box_network_that_is_not_internal_or_keeps_the_host_address_is_a_way_out():
    assert confinement.network_problems('dev', {'Internal': True, 'Options': dict(confinement.NETWORK_OPTIONS)}) == []
    problems = confinement.network_problems('dev', {'Internal': False, 'Options': {}})
    assert problems == ['the box network tx9-dev is not internal', 'the host keeps an address on the box network tx9-dev']


def test_a_container_on_another_network_or_with_raw_frames_is_a_way_out():
    good = {'NetworkSettings': {'Networks': {'tx9-dev': {}}}, 'HostConfig': {'CapDrop': ['NET_RAW']}}
    assert confinement.container_problems('dev', 'agent', good) == []
    bad = {'NetworkSettings': {'Networks': {'tx9-dev': {}, 'bridge': {}}}, 'HostConfig': {'CapDrop': None}}
    assert confinement.container_problems('dev', 'agent', bad) == [
        'tx9-dev-agent is also on bridge', 'tx9-dev-agent may send raw frames (NET_RAW is not dropped)']


def test_egress_open_names_every_way_out_and_how_to_close_them():
    error = confinement.refusal('dev', ['tx9-dev-agent is also on bridge'])
    assert error.cause == 'EGRESS_OPEN' and 'tx9-dev-agent is also on bridge' in error.reason
    assert 'recreate=true' in error.fix
