# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Executor exposure options: origin, publish address, DNS, allowed hosts and precedence."""


import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box import executor_config as config
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

DEFAULTS = dict(executor_web_base_url=None, executor_publish=None, executor_dns=[], executor_allowed_hosts=[])


def refused(call, *args):
    with pytest.raises(Tx9Error) as info:
        call(*args)
    assert info.value.cause == 'INVALID_ARGUMENT'
    return info.value


@pytest.mark.parametrize('url, host', [
    ('https://box.example.ts.net', 'box.example.ts.net'),
    ('http://box.example.net:8080', 'box.example.net'),
    ('https://10.0.0.5', '10.0.0.5'),
    ('https://[fd00::1]:8443', 'fd00::1'),
    ('https://box:65535', 'box'),
])
def test_an_http_or_https_origin_is_accepted_and_its_host_returned(url, host):
    assert config.parse_web_base_url(url) == (url, host)


@pytest.mark.parametrize('url', [
    'https://box.example.net/',
    'https://box.example.net/path',
    'ftp://box.example.net',
    'box.example.net',
    'https://',
    'https://box.example.net:0',
    'https://box.example.net:65536',
    'https://user@box.example.net',
    'https://box.example.net?x=1',
    '',
    None,
])
def test_anything_but_an_origin_is_refused_as_a_web_base_url(url):
    error = refused(config.parse_web_base_url, url)
    assert 'executor_web_base_url' in error.reason


def test_a_web_base_url_with_a_trailing_newline_is_refused():
    refused(config.parse_web_base_url, 'https://box.example.net\n')


@pytest.mark.parametrize('value, expected', [
    (None, ('0.0.0.0', '')),
    ('', ('0.0.0.0', '')),
    ('4788', ('0.0.0.0', '4788')),
    (4788, ('0.0.0.0', '4788')),
    ('127.0.0.1:4788', ('127.0.0.1', '4788')),
    ('100.64.1.2:1', ('100.64.1.2', '1')),
    (':65535', ('0.0.0.0', '65535')),
])
def test_publish_is_addr_and_port_or_a_port_alone_or_all_interfaces_by_default(value, expected):
    assert config.parse_publish(value) == expected


@pytest.mark.parametrize('value', ['localhost:4788', '::1:4788', '127.0.0.1', '127.0.0.1:', '127.0.0.1:0',
                                   '127.0.0.1:65536', '4788x', '300.1.1.1:80'])
def test_a_publish_value_without_an_ipv4_address_or_a_valid_port_is_refused(value):
    error = refused(config.parse_publish, value)
    assert 'executor_publish' in error.reason


def test_dns_servers_are_ipv4_addresses_kept_in_order_without_duplicates():
    assert config.parse_dns(['1.1.1.1', '9.9.9.9', '1.1.1.1']) == ['1.1.1.1', '9.9.9.9']
    assert config.parse_dns(None) == []


@pytest.mark.parametrize('value', ['dns.example.net', '2606:4700::1111', '1.1.1'])
def test_a_dns_server_that_is_not_an_ipv4_address_is_refused(value):
    refused(config.parse_dns, ['1.1.1.1', value])


def test_allowed_hosts_are_host_names_or_addresses_kept_in_order_without_duplicates():
    hosts = ['box.example.net', '10.0.0.1', 'fd00::1', 'box.example.net', 'box']
    assert config.parse_allowed_hosts(hosts) == ['box.example.net', '10.0.0.1', 'fd00::1', 'box']
    assert config.parse_allowed_hosts(None) == []


@pytest.mark.parametrize('value', ['box.example.net:8080', 'https://box', '-box', 'a,b', '', 'box_1', 'a' * 64])
def test_an_allowed_host_that_is_not_a_host_name_or_address_is_refused(value):
    refused(config.parse_allowed_hosts, [value])


def test_an_allowed_host_with_a_trailing_newline_is_refused():
    refused(config.parse_allowed_hosts, ['box.example.net\n'])


def test_resolve_without_options_or_state_gives_the_defaults():
    assert config.resolve({}, {}) == DEFAULTS


def test_resolve_prefers_given_options_over_the_persisted_state():
    persisted = {'TX9_EXECUTOR_PUBLISH': '127.0.0.1:4788', 'TX9_EXECUTOR_DNS': '1.1.1.1'}
    values = config.resolve({'executor_publish': '4789', 'executor_dns': ['9.9.9.9']}, persisted)
    assert values['executor_publish'] == '4789'
    assert values['executor_dns'] == ['9.9.9.9']


def test_resolve_falls_back_to_the_persisted_state_for_omitted_options():
    persisted = {
        'TX9_EXECUTOR_WEB_BASE_URL': 'https://box.example.net',
        'TX9_EXECUTOR_PUBLISH': '127.0.0.1:4788',
        'TX9_EXECUTOR_DNS': '1.1.1.1,9.9.9.9',
        'TX9_EXECUTOR_ALLOWED_HOSTS': 'box.example.net',
    }
    assert config.resolve({'executor_publish': None}, persisted) == dict(
        executor_web_base_url='https://box.example.net', executor_publish='127.0.0.1:4788',
        executor_dns=['1.1.1.1', '9.9.9.9'], executor_allowed_hosts=['box.example.net'])


def test_an_empty_list_given_clears_the_persisted_list():
    values = config.resolve({'executor_dns': []}, {'TX9_EXECUTOR_DNS': '1.1.1.1'})
    assert values['executor_dns'] == []


def test_resolve_validates_and_de_duplicates_the_given_values():
    assert config.resolve({'executor_dns': ['1.1.1.1', '1.1.1.1']}, {})['executor_dns'] == ['1.1.1.1']
    refused(config.resolve, {'executor_publish': 'nowhere:1'}, {})
    refused(config.resolve, {'executor_web_base_url': 'https://box/'}, {})


def test_clear_executor_config_returns_to_the_defaults_whatever_was_persisted():
    persisted = config.to_state(dict(DEFAULTS, executor_publish='127.0.0.1:4788', executor_dns=['1.1.1.1']))
    assert config.resolve({'clear_executor_config': True}, persisted) == DEFAULTS


def test_clear_executor_config_cannot_be_combined_with_executor_values():
    error = refused(config.resolve, {'clear_executor_config': True, 'executor_publish': '4788',
                                     'executor_dns': []}, {})
    assert 'executor_publish' in error.reason
    assert 'executor_dns' in error.reason


def test_to_state_joins_lists_and_stores_unset_values_as_empty_text():
    assert config.to_state(DEFAULTS) == {
        'TX9_EXECUTOR_WEB_BASE_URL': '', 'TX9_EXECUTOR_PUBLISH': '',
        'TX9_EXECUTOR_DNS': '', 'TX9_EXECUTOR_ALLOWED_HOSTS': ''}
    state = config.to_state(dict(DEFAULTS, executor_dns=['1.1.1.1', '9.9.9.9']))
    assert state['TX9_EXECUTOR_DNS'] == '1.1.1.1,9.9.9.9'


@pytest.mark.parametrize('params', [
    {},
    {'executor_web_base_url': 'https://box.example.ts.net', 'executor_publish': '127.0.0.1:4788',
     'executor_dns': ['1.1.1.1', '9.9.9.9'], 'executor_allowed_hosts': ['box.example.net', '10.0.0.1']},
    {'executor_publish': '4788', 'executor_allowed_hosts': ['box']},
])
def test_to_state_round_trips_through_resolve(params):
    values = config.resolve(params, {})
    assert config.resolve({}, config.to_state(values)) == values
