# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A box's objects read from inspect results, its URLs, and what its containers should be."""


import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box import executor_config
from ansible_collections.col_agents.tx9.plugins.module_utils._box import limits as resources
from ansible_collections.col_agents.tx9.plugins.module_utils._box import objects as box

TOKEN = 'a' * 64
NO_EXECUTOR_OPTIONS = dict(executor_web_base_url=None, executor_publish=None, executor_dns=[], executor_allowed_hosts=[])


def container(running=True, status=None, restarting=False):
    return {'State': {'Running': running, 'Restarting': restarting, 'Status': status or ('running' if running else 'exited')}}


def executor(*bindings):
    return {'NetworkSettings': {'Ports': {box.PORT_KEY: [dict(HostIp=ip, HostPort=port) for ip, port in bindings] or None}}}


def spec(token=TOKEN, image_id='sha256:image', **executor_options):
    values = dict(NO_EXECUTOR_OPTIONS, **executor_options)
    return box.BoxSpec('dev', 'tx9-box:0.1.0', image_id, '0.1.0', token, values, resources.defaults(8))


@pytest.fixture(autouse=True)
def url_host(monkeypatch):
    monkeypatch.setenv('TX9_URL_HOST', 'host.example.net')


VOLUMES = dict(agent={}, executor={})


@pytest.mark.parametrize('agent, exe, expected', [
    (container(), container(), 'running'),
    (container(False), container(False), 'stopped'),
    (container(), container(False), 'crashed'),
    (container(), container(restarting=True), 'crashed'),
    (container(False, status='dead'), container(False), 'crashed'),
])
def test_the_box_state_follows_its_containers(agent, exe, expected):
    assert box.derive_state(dict(agent=agent, executor=exe), {}, VOLUMES) == expected


@pytest.mark.parametrize('containers, network, volumes', [
    (dict(agent=container(), executor=None), {}, VOLUMES),
    (dict(agent=container(), executor=container()), None, VOLUMES),
    (dict(agent=container(), executor=container()), {}, dict(agent={}, executor=None)),
])
def test_a_box_missing_any_object_is_partial(containers, network, volumes):
    assert box.derive_state(containers, network, volumes) == 'partial'


def test_the_published_binding_is_the_first_with_a_host_port():
    attrs = executor(('127.0.0.1', ''), ('10.0.0.2', '4788'), ('0.0.0.0', '4789'))
    assert box.published_binding(attrs) == ('10.0.0.2', '4788')


def test_a_binding_without_a_host_ip_is_on_all_interfaces():
    assert box.published_binding(executor(('', '32768'))) == ('0.0.0.0', '32768')


@pytest.mark.parametrize('attrs', [None, {}, {'NetworkSettings': None}, {'NetworkSettings': {'Ports': {}}}, executor()])
def test_an_unpublished_executor_has_no_binding(attrs):
    assert box.published_binding(attrs) == (None, None)


def test_env_value_finds_a_variable_and_keeps_equals_signs_in_its_value():
    attrs = {'Config': {'Env': ['PATH=/bin', 'OPTS=a=b', 'EMPTY=']}}
    assert box.env_value(attrs, 'OPTS') == 'a=b'
    assert box.env_value(attrs, 'EMPTY') == ''
    assert box.env_value(attrs, 'PAT') is None
    assert box.env_value(None, 'PATH') is None


def test_a_specific_address_is_its_own_url_host():
    assert executor_config.url_host_for('100.64.1.2') == '100.64.1.2'


@pytest.mark.parametrize('address', ['0.0.0.0', '::', '', None])
def test_tx9_url_host_names_a_port_published_on_all_interfaces(address):
    assert executor_config.url_host_for(address) == 'host.example.net'


def test_without_tx9_url_host_and_without_a_route_the_url_host_is_loopback(monkeypatch):
    monkeypatch.delenv('TX9_URL_HOST')
    monkeypatch.setattr(executor_config, 'outbound_ipv4', lambda: None)
    assert executor_config.url_host_for('0.0.0.0') == '127.0.0.1'


def test_allowed_hosts_are_the_web_base_url_host_the_url_host_and_the_extras_without_duplicates():
    values = dict(NO_EXECUTOR_OPTIONS, executor_web_base_url='https://box.example.ts.net:8443',
                  executor_allowed_hosts=['box.example.ts.net', 'extra.example.net', 'host.example.net'])
    assert box.allowed_hosts(values, 'host.example.net') == ['box.example.ts.net', 'host.example.net', 'extra.example.net']


def test_executor_and_localhost_are_never_listed_as_allowed_hosts():
    values = dict(NO_EXECUTOR_OPTIONS, executor_allowed_hosts=['executor', 'localhost', '127.0.0.1', 'box'])
    assert box.allowed_hosts(values, '127.0.0.1') == ['box']
    assert box.allowed_hosts(NO_EXECUTOR_OPTIONS, '') == []


def test_the_dashboard_url_is_the_web_base_url_origin_with_a_slash():
    values = dict(NO_EXECUTOR_OPTIONS, executor_web_base_url='https://box.example.ts.net')
    assert box.dashboard_url(values, 'host.example.net', executor(('0.0.0.0', '4788'))) == 'https://box.example.ts.net/'
    assert box.dashboard_url(values, 'host.example.net', None) == 'https://box.example.ts.net/'


def test_the_dashboard_url_of_a_port_on_all_interfaces_uses_the_url_host():
    url = box.dashboard_url(NO_EXECUTOR_OPTIONS, 'host.example.net', executor(('0.0.0.0', '32768')))
    assert url == 'http://host.example.net:32768/'


def test_the_dashboard_url_of_a_port_on_one_address_uses_that_address():
    assert box.dashboard_url(NO_EXECUTOR_OPTIONS, 'x', executor(('127.0.0.1', '4788'))) == 'http://127.0.0.1:4788/'
    assert box.dashboard_url(NO_EXECUTOR_OPTIONS, 'fd00::1', executor(('', '4788'))) == 'http://[fd00::1]:4788/'


def test_an_unpublished_executor_has_no_dashboard_url():
    assert box.dashboard_url(NO_EXECUTOR_OPTIONS, 'host.example.net', executor()) is None
    assert box.dashboard_url(NO_EXECUTOR_OPTIONS, 'host.example.net', None) is None


@pytest.mark.parametrize('docker_host', [None, '', 'unix:///var/run/docker.sock'])
def test_a_port_on_all_interfaces_of_a_local_engine_is_probed_on_loopback(docker_host):
    assert box.probe_address(executor(('0.0.0.0', '32768')), docker_host) == ('127.0.0.1', '32768')


@pytest.mark.parametrize('docker_host, address', [
    ('tcp://docker.example.net:2376', 'docker.example.net'),
    ('tcp://10.0.0.9:2375', '10.0.0.9'),
    ('ssh://me@docker.example.net', 'docker.example.net'),
    ('ssh://me@docker.example.net:2222', 'docker.example.net'),
    ('tcp://[fd00::9]:2375', 'fd00::9'),
    ('ssh://me@[fd00::9]', 'fd00::9'),
])
def test_a_port_on_all_interfaces_of_a_remote_engine_is_probed_on_the_engine_host(docker_host, address):
    assert box.probe_address(executor(('0.0.0.0', '4788')), docker_host) == (address, '4788')


def test_a_port_on_one_address_is_probed_on_that_address():
    assert box.probe_address(executor(('10.0.0.2', '4788')), 'tcp://docker.example.net:2376') == ('10.0.0.2', '4788')


def test_the_config_hash_is_stable_for_the_same_inputs():
    for role in box.ROLES:
        assert spec().container(role) == spec().container(role)


@pytest.mark.parametrize('change', [
    dict(image_id='sha256:other'),
    dict(executor_publish='127.0.0.1:4788'),
    dict(executor_dns=['1.1.1.1']),
    dict(executor_allowed_hosts=['box.example.net']),
    dict(executor_web_base_url='https://box.example.ts.net'),
    dict(token='b' * 64),
])
def test_the_config_hash_changes_with_the_image_an_executor_option_or_the_token(change):
    assert spec(**change).container('executor')[1] != spec().container('executor')[1]


def test_the_agent_config_hash_changes_with_the_image_only_so_a_new_token_never_recreates_the_agent():
    agent_hash = spec().container('agent')[1]
    assert spec(image_id='sha256:other').container('agent')[1] != agent_hash
    assert spec(token='b' * 64).container('agent')[1] == agent_hash
    assert spec(executor_publish='4788').container('agent')[1] == agent_hash


def test_both_containers_get_a_health_check_that_carries_no_token():
    for role in box.ROLES:
        settings, _hash = spec().container(role)
        check = settings['healthcheck']
        assert check['test'][0] == 'CMD' and check['retries'] >= 1
        assert spec().token not in repr(check)
    assert spec().container('agent')[0]['healthcheck']['test'][1:] == ['/opt/tx9/bin/hb', 'status', '--health']


def test_the_config_hash_never_contains_the_token():
    for token in ('0123456789abcdef' * 4, 'secret-token'):
        for role in box.ROLES:
            settings, config_hash = spec(token=token).container(role)
            assert token not in config_hash
            assert token in str(settings['environment'])


def test_the_config_hash_does_not_depend_on_the_limits():
    other = spec()
    other.resources = dict(other.resources, agent_memory=1024 ** 3, executor_cpus=resources.NANO)
    assert other.container('agent') == spec().container('agent')
    assert other.container('executor') == spec().container('executor')


def test_the_executor_settings_carry_the_publish_address_dns_and_allowed_hosts():
    settings = spec(executor_publish='127.0.0.1:4788', executor_dns=['1.1.1.1'],
                    executor_web_base_url='https://box.example.ts.net').container('executor')[0]
    assert settings['ports'] == ['127.0.0.1', '4788']
    assert settings['dns'] == ['1.1.1.1']
    assert settings['environment']['EXECUTOR_WEB_BASE_URL'] == 'https://box.example.ts.net'
    assert settings['environment']['TX9_EXECUTOR_ALLOWED_HOSTS'] == 'box.example.ts.net'


def test_the_url_host_of_a_box_published_on_all_interfaces_is_allowed():
    settings = spec().container('executor')[0]
    assert settings['environment']['TX9_EXECUTOR_ALLOWED_HOSTS'] == 'host.example.net'
    assert settings['ports'] == ['0.0.0.0', '']


def test_the_limits_allow_as_much_swap_as_memory():
    limits = spec().limits('agent')
    assert limits == dict(NanoCpus=4 * resources.NANO, Memory=8 * 1024 ** 3, MemorySwap=16 * 1024 ** 3)
    assert spec().limits('executor')['MemorySwap'] == 2 * spec().limits('executor')['Memory']


class InspectApi:
    """The listings and inspect calls of BoxObjects, over inspect-shaped dicts by name."""

    def __init__(self, containers):
        self.found = containers

    def networks(self, filters=None):
        return [dict(Name=name) for name in filters['name'] if not name.endswith('-out')]

    def volumes(self, filters=None):
        return {'Volumes': [dict(Name=name) for name in filters['name']]}

    def inspect_container(self, name):
        return self.found.get(name)

    def containers(self, all=False, filters=None):
        names = (filters or {}).get('name') or []
        return [dict(Id=self.found[name]['Id'], Names=['/' + name]) for name in names if name in self.found]


class InspectClient:
    def __init__(self, containers):
        self.api = InspectApi(containers)


def test_the_summary_names_the_image_id_each_container_runs():
    def attrs(role, image_id):
        return {'Id': '%s-id' % role, 'Image': image_id, 'Name': '/tx9-dev-%s' % role,
                'Config': {'Image': 'tx9-box:0.1.0', 'Labels': {'tx9.version': '0.1.0'}},
                'State': {'Running': True, 'Restarting': False, 'Status': 'running'}, 'NetworkSettings': {}}
    client = InspectClient({'tx9-dev-agent': attrs('agent', 'sha256:new'), 'tx9-dev-executor': attrs('executor', 'sha256:old')})

    summary = box.BoxObjects(client, 'dev').summary()

    assert summary['containers']['agent']['image_id'] == 'sha256:new'
    assert summary['containers']['executor']['image_id'] == 'sha256:old'


class ListingApi:
    """An engine whose name filters match within names, as Docker's do; it counts the calls it answers."""

    def __init__(self, networks=(), volumes=(), containers=None, labelled=()):
        self.listed_networks = [dict(Name=name, Labels=labels) for name, labels in networks]
        self.listed_volumes = [dict(Name=name, Labels=labels) for name, labels in volumes]
        self.found = containers or {}
        self.labelled = list(labelled)
        self.calls = []

    def _within(self, names, filters):
        return [name for name in names if any(wanted in name for wanted in filters['name'])]

    def networks(self, filters=None):
        self.calls.append('networks')
        names = self._within([n['Name'] for n in self.listed_networks], filters)
        return [n for n in self.listed_networks if n['Name'] in names]

    def volumes(self, filters=None):
        self.calls.append('volumes')
        names = self._within([v['Name'] for v in self.listed_volumes], filters)
        return {'Volumes': [v for v in self.listed_volumes if v['Name'] in names] or None}

    def containers(self, all=False, filters=None):
        self.calls.append('containers')
        if 'label' in filters:
            return self.labelled
        return [dict(Id=self.found[n]['Id'], Names=['/' + n]) for n in self._within(list(self.found), filters)]

    def inspect_container(self, name):
        self.calls.append('inspect ' + name)
        return self.found[name]


def owned(role=None):
    labels = {'tx9': '1', 'tx9.box': 'dev'}
    return dict(labels, **{'tx9.role': role}) if role else labels


def inspected_container(name, labels):
    return {'Id': name + '-id', 'Name': '/' + name, 'Config': {'Labels': labels}, 'State': {'Running': True}}


class ListingClient:
    def __init__(self, api):
        self.api = api


def test_a_box_is_read_from_one_listing_per_kind_and_an_inspect_of_each_of_its_containers():
    api = ListingApi(
        networks=[('tx9-dev', owned()), ('tx9-dev2', {})],
        volumes=[('tx9-dev-agent-data', owned('agent')), ('tx9-dev-exec-data', owned('executor')),
                 ('tx9-dev-agent-data-old', {})],
        containers={name: inspected_container(name, owned(role))
                    for role, name in (('agent', 'tx9-dev-agent'), ('executor', 'tx9-dev-executor'))},
    )

    objects = box.BoxObjects(ListingClient(api), 'dev')

    assert objects.network['Name'] == 'tx9-dev' and objects.egress_network is None
    assert {role: v['Name'] for role, v in objects.volumes.items()} == dict(
        agent='tx9-dev-agent-data', executor='tx9-dev-exec-data')
    assert objects.containers['agent']['Id'] == 'tx9-dev-agent-id' and objects.egress is None
    assert sorted(api.calls) == sorted(['networks', 'volumes', 'containers', 'containers',
                                        'inspect tx9-dev-agent', 'inspect tx9-dev-executor'])
    objects.check_ownership()


def test_an_object_whose_name_only_contains_a_box_name_is_not_the_box_s():
    api = ListingApi(networks=[('tx9-dev-outside', {})], volumes=[('tx9-dev-exec-data-copy', {})],
                     containers={'tx9-dev-agent-old': inspected_container('tx9-dev-agent-old', {})})

    objects = box.BoxObjects(ListingClient(api), 'dev')

    assert objects.network is None and objects.egress_network is None
    assert objects.volumes == dict(agent=None, executor=None)
    assert objects.containers == dict(agent=None, executor=None) and not objects.exists()


@pytest.mark.parametrize('kind', ['network', 'volume', 'container'])
def test_an_unlabelled_object_at_one_of_the_box_s_names_is_still_a_name_conflict(kind):
    api = ListingApi(
        networks=[('tx9-dev', {} if kind == 'network' else owned())],
        volumes=[('tx9-dev-agent-data', {} if kind == 'volume' else owned('agent'))],
        containers={'tx9-dev-agent': inspected_container('tx9-dev-agent', {} if kind == 'container' else owned('agent'))},
    )

    with pytest.raises(box.Tx9Error) as refused:
        box.BoxObjects(ListingClient(api), 'dev').check_ownership()

    assert refused.value.cause == 'NAME_CONFLICT' and kind in refused.value.reason
