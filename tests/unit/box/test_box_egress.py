# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The egress policy of a box: read, refused, normalised, kept, shown, rendered for Squid, and its log read back."""


import re

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box import egress
from ansible_collections.col_agents.tx9.plugins.module_utils._box.egress_rules import PRESETS, Rule, shown
from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import render_env
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

TOOLS_HOSTS = {
    'api.anthropic.com', 'api.openai.com', 'chatgpt.com', 'auth.openai.com', 'registry.npmjs.org', 'pypi.org',
    'files.pythonhosted.org', 'github.com', 'codeload.github.com', '*.githubusercontent.com',
}


def allowlist(*allow, **more):
    return egress.parse(dict(mode='allowlist', allow=list(allow), **more))


def refused(value):
    with pytest.raises(Tx9Error) as info:
        egress.parse(value)
    assert info.value.cause == 'EGRESS_POLICY_INVALID'
    assert info.value.fix
    return info.value


# ---- accepted forms ------------------------------------------------------------------------------

@pytest.mark.parametrize('value', [None, {}, dict(mode='open'), dict(mode='open', allow=None, deny=None, executor=None)])
def test_no_policy_an_empty_one_and_mode_open_are_the_open_policy(value):
    assert egress.parse(value) == egress.OPEN
    assert egress.parse(value).mode == 'open'


@pytest.mark.parametrize('entry, kind, target, ports, text', [
    ('api.anthropic.com', 'name', 'api.anthropic.com', (443,), 'api.anthropic.com:443'),
    ('API.Anthropic.COM', 'name', 'api.anthropic.com', (443,), 'api.anthropic.com:443'),
    ('xn--bcher-kva.test', 'name', 'xn--bcher-kva.test', (443,), 'xn--bcher-kva.test:443'),
    ('*.githubusercontent.com', 'domain', 'githubusercontent.com', (443,), '*.githubusercontent.com:443'),
    ('host.test:80', 'name', 'host.test', (80,), 'host.test:80'),
    ('host.test:443,80,443', 'name', 'host.test', (80, 443), 'host.test:80,443'),
    ('10.0.0.1', 'net', '10.0.0.1/32', (443,), '10.0.0.1:443'),
    ('10.0.0.1/32:8080', 'net', '10.0.0.1/32', (8080,), '10.0.0.1:8080'),
    ('10.0.0.0/8:8443', 'net', '10.0.0.0/8', (8443,), '10.0.0.0/8:8443'),
    ('[2001:db8::1]:443', 'net', '2001:db8::1/128', (443,), '[2001:db8::1]:443'),
    ('[2001:DB8:0::1]', 'net', '2001:db8::1/128', (443,), '[2001:db8::1]:443'),
    ('[2001:db8::/32]:80,443', 'net', '2001:db8::/32', (80, 443), '[2001:db8::/32]:80,443'),
    (dict(host='host.test', ports=[80, '8080']), 'name', 'host.test', (80, 8080), 'host.test:80,8080'),
    (dict(host='host.test'), 'name', 'host.test', (443,), 'host.test:443'),
    (dict(host='10.0.0.0/8:8443'), 'net', '10.0.0.0/8', (8443,), '10.0.0.0/8:8443'),
    (dict(host='[2001:db8::1]', ports=[22]), 'net', '2001:db8::1/128', (22,), '[2001:db8::1]:22'),
])
def test_every_entry_form_becomes_one_rule_with_443_unless_it_names_ports(entry, kind, target, ports, text):
    (rule,) = allowlist(entry).allow
    assert (rule.kind, rule.target, rule.ports, rule.preset) == (kind, target, ports, '')
    assert rule.text == rule.label == text


def test_an_explicitly_empty_allow_list_is_valid_and_lets_nothing_out():
    policy = allowlist()
    assert (policy.mode, policy.allow, policy.deny, policy.executor) == ('allowlist', (), (), None)
    assert egress.summary(policy) == dict(mode='allowlist', rules=0)


def test_deny_and_executor_lists_are_read_like_allow():
    policy = allowlist('*.example.test', deny=['bad.example.test', '10.0.0.0/8'], executor=['pkg.example.test'])
    assert [rule.text for rule in policy.deny] == ['bad.example.test:443', '10.0.0.0/8:443']
    assert [rule.text for rule in policy.executor] == ['pkg.example.test:443']


# ---- refusals ------------------------------------------------------------------------------------

@pytest.mark.parametrize('value, where, words', [
    ('open', 'egress=', 'not a mapping'),
    (['mode', 'open'], 'egress=', 'not a mapping'),
    (dict(mode='allowlist', allow='api.anthropic.com'), 'egress.allow=', 'not a list'),
    (dict(mode='allowlist', allow=[], deny='bad.test'), 'egress.deny=', 'not a list'),
    (dict(mode='allowlist', allow=['a.test'], executor='a.test'), 'egress.executor=', 'not a list'),
    (dict(mode='allowlist', allow=[], colour='blue'), 'egress.colour=', 'not an option'),
    (dict(mode='denylist', allow=[]), 'egress.mode=', 'neither open nor allowlist'),
    (dict(mode=True), 'egress.mode=', 'neither open nor allowlist'),
    (dict(mode='open', allow=['a.test']), 'egress.allow=', 'mode open'),
    (dict(mode='open', allow=[]), 'egress.allow=', 'mode open'),
    (dict(mode='open', deny=['a.test']), 'egress.deny=', 'mode open'),
    (dict(mode='open', executor=['a.test']), 'egress.executor=', 'mode open'),
    (dict(allow=['a.test']), 'egress.allow=', 'mode open'),
])
def test_a_malformed_policy_is_refused_naming_the_option(value, where, words):
    err = refused(value)
    assert where in err.reason and words in err.reason


def test_an_allowlist_without_allow_is_refused_and_asks_for_an_explicit_empty_list():
    err = refused(dict(mode='allowlist', deny=['a.test']))
    assert 'egress.allow' in err.reason and 'nothing out' in err.reason
    assert 'allow: []' in err.fix


@pytest.mark.parametrize('entry, words', [
    ('bad_name.test', 'a character other than'),
    ('-lead.test', 'starts or ends with "-"'),
    ('trail-.test', 'starts or ends with "-"'),
    ('a' * 64 + '.test', 'longer than 63'),
    (('a' * 63 + '.') * 4 + 'test', 'longer than 253'),
    ('a..test', 'empty label'), ('host.test.', 'empty label'), ('.host.test', 'empty label'),
    ('*', 'every name'),
    ('*.*.test', 'whole first label'),
    ('a.*.test', 'whole first label'),
    ('*test.com', 'whole first label'),
    ('foo*.test', 'whole first label'),
    ('host.123', 'all digits'),
    ('bücher.test', 'not plain ASCII'),
    ('host.test:0', 'from 1 to 65535'), ('host.test:65536', 'from 1 to 65535'),
    ('host.test:http', 'from 1 to 65535'), ('host.test:', 'from 1 to 65535'),
    ('host.test:8000-8100', 'ranges are not supported'),
    ('host.test:' + ','.join(str(port) for port in range(1, 34)), 'more than 32 ports'),
    ('10.0.0.1/8', 'host bits set'),
    ('[2001:db8::1/64]', 'host bits set'),
    ('300.1.1.1', 'not an IPv4 address'),
    ('1.2.3', 'not an IPv4 address'),
    ('10.0.0.0/33', 'not an IPv4 address'),
    ('2001:db8::1', 'must stand in brackets'),
    ('[2001:db8::1', 'never closed'),
    ('[2001:db8::1]443', 'only ports may follow'),
    ('[host.test]:443', 'only an IPv6 address stands in brackets'),
    ('[10.0.0.1]', 'not an IPv6 address'),
    ('[fe80::1%eth0]', 'only an IPv6 address stands in brackets'),
    ('x' * 301, 'longer than 300'),
    ('', 'not a host'), (443, 'not a host'), (None, 'not a host'), (['host.test'], 'not a host'),
    (' host.test', 'a space or a control character'), ('host.test\n', 'a space or a control character'),
    ('preset:nothing', 'no such preset'),
    ('preset:tools:443', 'carries its own ports'),
    (dict(host='host.test', port=443), 'not a key of an entry'),
    (dict(host='host.test:80', ports=[443]), 'ports twice'),
    (dict(host='host.test', ports=443), 'not a list'),
    (dict(host='host.test', ports=[]), 'names no port'),
    (dict(host='host.test', ports=[True]), 'from 1 to 65535'),
    (dict(ports=[443]), 'not a host'),
    (dict(host='preset:tools'), 'carries its own ports'),
])
def test_a_bad_entry_is_refused_naming_the_entry_why_and_what_to_write(entry, words):
    err = refused(dict(mode='allowlist', allow=['good.test', entry]))
    assert 'egress.allow[1]' in err.reason
    assert words in f'{err.reason} {err.fix}'
    if isinstance(entry, str):
        assert shown(entry) in err.reason or shown(entry.lower()) in err.reason


@pytest.mark.parametrize('entry', [
    'host.test\nhttp_access allow all', 'host.test allow', 'host.test#', 'host.test"', 'host.test;', "host.test'",
    'host.test%0a', 'host.test\t', 'host.test\\', 'host.test/x', '[::1]\n', 'host.test:443\nacl x src all',
    dict(host='host.test all'), dict(host='host.test', ports=['443 all'])])
def test_an_entry_that_could_inject_squid_syntax_is_refused_at_parse(entry):
    err = refused(dict(mode='allowlist', allow=[entry]))
    assert 'egress.allow[0]' in err.reason


def test_more_than_256_entries_are_refused_before_any_is_read():
    err = refused(dict(mode='allowlist', allow=['not valid!'] * 257))
    assert 'egress.allow' in err.reason and '257 entries' in err.reason
    assert len(allowlist(*['host%d.test' % n for n in range(256)]).allow) == 256


def test_a_refusal_shows_a_huge_value_cut_short():
    err = refused(dict(mode='allowlist', allow=[dict(host='h.test', ports=list(range(10000)))]))
    assert len(err.reason) < 400


# ---- normalisation -------------------------------------------------------------------------------

@pytest.mark.parametrize('one, other', [
    (['b.test', 'a.test:443', 'a.test'], ['a.test', 'b.test']),
    (['h.test:80,443'], ['h.test:443', dict(host='h.test', ports=[80])]),
    (['H.Test'], ['h.test:443']),
    (['10.0.0.1'], ['10.0.0.1/32:443']),
    (['[2001:db8::1]'], ['[2001:0db8:0:0::1]:443']),
    (['*.x.test', 'a.test'], ['a.test', '*.x.test', 'a.test:443']),
])
def test_an_unchanged_policy_compares_and_hashes_equal_however_it_was_written(one, other):
    assert allowlist(*one) == allowlist(*other)
    assert len({allowlist(*one), allowlist(*other)}) == 1


def test_a_changed_port_or_list_is_a_different_policy():
    assert allowlist('a.test') != allowlist('a.test:8443')
    assert allowlist('a.test') != allowlist('a.test', deny=['b.test'])
    assert allowlist('a.test') != allowlist('a.test', executor=['a.test'])
    assert allowlist('a.test', executor=[]) != allowlist('a.test')


# ---- presets -------------------------------------------------------------------------------------

def test_the_tools_preset_expands_into_plain_rules_that_remember_the_preset():
    policy = allowlist('preset:tools')
    assert {rule.host for rule in policy.allow} == TOOLS_HOSTS == set(PRESETS['tools'])
    assert all(rule.preset == 'tools' and rule.ports == (443,) for rule in policy.allow)
    assert 'preset:tools/api.anthropic.com:443' in egress.diff_view(policy)['allow']


def test_a_host_given_directly_and_by_a_preset_stays_two_rules_with_their_sources():
    labels = egress.diff_view(allowlist('preset:tools', 'github.com'))['allow']
    assert 'github.com:443' in labels and 'preset:tools/github.com:443' in labels
    assert labels[0] == 'github.com:443'


def test_a_preset_written_twice_counts_once():
    assert allowlist('preset:tools', 'PRESET:TOOLS') == allowlist('preset:tools')


# ---- Executor's stricter list --------------------------------------------------------------------

@pytest.mark.parametrize('allow, executor', [
    (['a.test'], ['a.test']),
    (['a.test:80,443'], ['a.test:80']),
    (['*.a.test'], ['a.test', 'x.a.test', '*.b.a.test']),
    (['10.0.0.0/8:8443'], ['10.1.0.0/16:8443', '10.2.3.4:8443']),
    (['a.test:80', 'a.test:443'], ['a.test:80,443']),
    (['preset:tools'], ['registry.npmjs.org', 'objects.githubusercontent.com']),
    (['a.test'], []),
])
def test_an_executor_list_within_the_box_allow_list_is_accepted(allow, executor):
    assert allowlist(*allow, executor=executor).executor is not None


@pytest.mark.parametrize('allow, executor, words', [
    (['a.test'], ['a.test', 'evil.test'], 'evil.test on port 443'),
    (['a.test'], ['a.test:8443'], 'a.test on port 8443'),
    (['a.test'], ['*.a.test'], '*.a.test on port 443'),
    (['x.a.test'], ['a.test'], 'a.test on port 443'),
    (['10.0.0.0/8'], ['11.0.0.1'], '11.0.0.1 on port 443'),
    (['10.0.0.0/16'], ['10.0.0.0/8'], '10.0.0.0/8 on port 443'),
    (['10.0.0.0/8'], ['[::1]'], '[::1] on port 443'),
    (['a.test'], ['preset:tools'], 'preset:tools/'),
])
def test_an_executor_entry_the_box_may_not_reach_is_refused_naming_it(allow, executor, words):
    err = refused(dict(mode='allowlist', allow=allow, executor=executor))
    assert f'egress.executor[{len(executor) - 1}]' in err.reason
    assert words in err.reason and 'narrow' in err.reason
    assert 'allow' in err.fix


# ---- the state file and the views ----------------------------------------------------------------

def test_an_open_box_keeps_no_egress_key_in_its_state_file():
    state = egress.to_state(egress.OPEN)
    assert set(state) == set(egress.STATE_KEYS.values())
    assert render_env(state) == ''
    assert egress.from_state({}) == egress.OPEN


@pytest.mark.parametrize('policy', [
    allowlist(),
    allowlist('preset:tools', 'a.test:80,443', '*.b.test', '10.0.0.0/8:8443', '[2001:db8::/32]'),
    allowlist('a.test', deny=['bad.a.test', '10.0.0.0/8']),
    allowlist('preset:tools', executor=['preset:tools']),
    allowlist('a.test', executor=[]),
])
def test_a_policy_round_trips_through_the_state_file(policy):
    state = egress.to_state(policy)
    assert all('\n' not in value for value in state.values())
    assert egress.from_state(state) == policy


def test_the_state_file_keeps_entries_as_compact_json_and_presets_by_name():
    state = egress.to_state(allowlist('preset:tools', 'a.test:80', executor=[]))
    assert state == dict(TX9_EGRESS_MODE='allowlist', TX9_EGRESS_ALLOW='["a.test:80","preset:tools"]',
                         TX9_EGRESS_DENY='', TX9_EGRESS_EXECUTOR='[]', TX9_EGRESS_RESOLVERS='')


@pytest.mark.parametrize('persisted', [
    dict(TX9_EGRESS_MODE='allowlist', TX9_EGRESS_ALLOW='["a.test",'),
    dict(TX9_EGRESS_MODE='allowlist', TX9_EGRESS_ALLOW='["bad_name.test"]'),
    dict(TX9_EGRESS_MODE='allowlist'),
    dict(TX9_EGRESS_ALLOW='["a.test"]'),
    dict(TX9_EGRESS_MODE='sometimes', TX9_EGRESS_ALLOW='[]'),
])
def test_a_state_file_with_a_policy_tx9_cannot_read_is_a_state_home_error(persisted):
    with pytest.raises(Tx9Error) as info:
        egress.from_state(persisted, 'dev')
    assert info.value.cause == 'STATE_HOME'
    assert 'box dev' in info.value.reason and 'TX9_EGRESS_' in info.value.fix


def test_the_diff_view_names_the_mode_and_every_rule():
    assert egress.diff_view(egress.OPEN) == dict(mode='open')
    assert egress.diff_view(allowlist('a.test', deny=['10.0.0.0/8:22'])) == dict(
        mode='allowlist', allow=['a.test:443'], deny=['10.0.0.0/8:22'])
    assert egress.diff_view(allowlist('a.test', executor=[]))['executor'] == []


def test_the_summary_gives_the_mode_and_the_number_of_rules():
    assert egress.summary(egress.OPEN) == dict(mode='open', rules=0)
    assert egress.summary(allowlist('a.test', 'b.test', deny=['c.test'], executor=['a.test'])) == dict(
        mode='allowlist', rules=4)


# ---- the Squid configuration ---------------------------------------------------------------------

FULL = dict(mode='allowlist', allow=['allowed.test:80,443', '*.wild.test', '10.202.0.10:8080', '10.202.0.0/24:8443'],
            deny=['bad.wild.test', '10.202.0.99'], executor=['allowed.test'])
ACL = re.compile(r'acl (\S+) (\S+) (.*)')


def config(value=None, subnet='10.201.0.0/24', **more):
    return egress.squid_config(egress.parse(value or FULL), subnet, **more)


def acls(text):
    return {match[1]: (match[2], match[3].split(' ')) for match in map(ACL.fullmatch, text.splitlines()) if match}


def decisions(text):
    """(action, rule label) of every http_access line, in order."""
    defined = acls(text)
    found = []
    for line in text.splitlines():
        if line.startswith('http_access '):
            kind, values = defined[line.split(' ')[-1]]
            assert kind == 'annotate_transaction' and values[0].startswith('rule=')
            found.append((line.split(' ')[1], values[0][len('rule='):]))
    return found


def test_http_access_runs_client_deny_executor_box_and_default_deny_in_that_order():
    assert decisions(config()) == [
        ('deny', 'deny:client-not-in-box'),
        ('deny', 'deny/bad.wild.test:443'),
        ('deny', 'deny/10.202.0.99:443'),
        ('deny', 'deny/10.202.0.99:443'),
        ('allow', 'executor/allowed.test:443'),
        ('deny', 'deny:executor-default'),
        ('allow', '*.wild.test:443'),
        ('allow', 'allowed.test:80,443'),
        ('allow', '10.202.0.0/24:8443'),
        ('allow', '10.202.0.10:8080'),
        ('deny', 'deny:default'),
    ]


def test_executor_lines_match_only_executor_and_the_box_lines_everyone_in_the_box_network():
    text = config()
    lines = [line for line in text.splitlines() if line.startswith('http_access')]
    assert 'acl boxnet src 10.201.0.0/24' in text and 'acl from_executor myportname executor_proxy' in text
    assert 'http_port 3129 name=executor_proxy' in text
    assert all(line.split(' ')[2] == 'from_executor' for line in lines[4:6])
    assert not any('from_executor' in line for line in lines[6:])
    assert lines[0].split(' ')[2] == '!boxnet' and lines[-1].split(' ')[2] == 'all'


def test_without_an_executor_list_there_are_no_executor_lines():
    text = config(dict(mode='allowlist', allow=['a.test']))
    assert 'from_executor' not in text
    assert [label for _action, label in decisions(text)][1:] == ['a.test:443', 'deny:default']


def test_names_never_resolve_and_networks_are_looked_up_only_for_ip_literals_or_allowed_names():
    text = config()
    defined = acls(text)
    for name, (kind, values) in defined.items():
        if kind in ('dstdomain', 'dstdom_regex'):
            assert values[0] == '-n', name
    for line in text.splitlines():
        if line.startswith('http_access'):
            names = line.split(' ')[2:]
            for index, name in enumerate(names):
                if defined.get(name, ('',))[0] == 'dst':
                    assert names[0] == 'host_is_ip' or defined[names[0]][0] == 'dstdomain', line
                    assert index > 0


def test_a_wildcard_is_squids_dot_domain_and_a_name_is_exact():
    values = [values for kind, values in acls(config()).values() if kind == 'dstdomain']
    assert ['-n', '.wild.test'] in values and ['-n', 'allowed.test'] in values


def test_a_denied_network_also_stops_allowed_names_that_resolve_into_it():
    text = config()
    resolved = [line for line in text.splitlines() if line.startswith('http_access deny a_')]
    assert len(resolved) == 1
    assert acls(text)[resolved[0].split(' ')[2]][1] == ['-n', 'allowed.test', '.wild.test']


def test_every_deny_line_answers_with_the_egress_denied_page_and_every_marker_stands_last():
    text = config()
    defined = acls(text)
    for line in text.splitlines():
        if line.startswith('http_access'):
            marker = line.split(' ')[-1]
            assert defined[marker][0] == 'annotate_transaction'
            assert all(defined.get(name, ('',))[0] != 'annotate_transaction' for name in line.split(' ')[2:-1])
            if line.startswith('http_access deny'):
                assert f'deny_info ERR_EGRESS_DENIED {marker}' in text


def test_the_config_keeps_the_tested_settings_and_log_format():
    text = config(access_log='/data/egress/access.log')
    for line in ('http_port 3128 name=box_proxy', 'http_port 3129 name=executor_proxy', 'cache deny all', 'max_filedescriptors 4096',
                 'acl has_request has request', 'access_log stdio:/data/egress/access.log egress has_request',
                 'logformat egress %ts.%03tu client=%>a method=%rm host=%>rd port=%>rP status=%>Hs squid=%Ss/%Sh '
                 'err=%err_code rule=%{rule}note dst=%<a:%<p url=%ru bytes=%<st',
                 r'acl host_is_ip dstdom_regex -n ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ^\[.*\]$'):
        assert line in text.splitlines()
    assert 'access_log stdio:/dev/stdout egress has_request' in config()


def test_every_rendered_line_is_fixed_text_or_validated_rule_text():
    text = config(dict(mode='allowlist', allow=['preset:tools', '[2001:db8::/32]:80,443', '*.a.test'],
                       deny=['10.0.0.0/8'], executor=['preset:tools']))
    for line in text.splitlines():
        if line.startswith('#'):
            continue
        assert re.fullmatch(r'[ -~]+', line) and not re.search('["\'#;]', line), line
    for name, (kind, values) in acls(text).items():
        assert re.fullmatch(r'[a-z]+_[0-9]+|[a-z_]+', name)
        if re.fullmatch(r'[adnpr]_[0-9]+', name):
            assert all(re.fullmatch(r'[a-z0-9._:/,*=\[\]-]+|-n', value) for value in values), values


@pytest.mark.parametrize('rule', [
    Rule('name', 'x.test\nhttp_access allow all', (443,)),
    Rule('name', 'x.test all', (443,)),
    Rule('domain', 'x.test"', (443,)),
    Rule('name', 'x.test', (443,), preset='a b'),
])
def test_rule_text_that_did_not_come_from_parse_is_never_written_into_the_config(rule):
    with pytest.raises(ValueError):
        egress.squid_config(egress.Policy('allowlist', allow=(rule,)), '10.201.0.0/24')


@pytest.mark.parametrize('value, subnet, log', [
    (dict(mode='open'), '10.201.0.0/24', egress.ACCESS_LOG), (FULL, 'box', egress.ACCESS_LOG),
    (FULL, '10.201.0.0/24', 'access.log'), (FULL, '10.201.0.0/24', '/var/log/a b.log'),
])
def test_a_config_that_cannot_hold_is_refused_rather_than_written(value, subnet, log):
    with pytest.raises(ValueError):
        egress.squid_config(egress.parse(value), subnet, log)


def test_resolvers_become_the_proxys_name_servers_and_are_kept_in_the_state_file():
    policy = egress.parse(dict(mode='allowlist', allow=['a.test'], resolvers=['10.0.0.53', '10.0.0.53', ' 10.0.0.54']))
    assert policy.resolvers == ('10.0.0.53', '10.0.0.54')
    assert 'dns_nameservers 10.0.0.53 10.0.0.54' in egress.squid_config(policy, '10.201.0.0/24')
    assert egress.from_state(egress.to_state(policy)) == policy
    assert egress.diff_view(policy)['resolvers'] == ['10.0.0.53', '10.0.0.54']


@pytest.mark.parametrize('resolvers', [['dns.example'], [53], ['10.0.0.1'] * 9, '10.0.0.53'])
def test_a_resolver_that_is_not_an_address_is_refused_naming_it(resolvers):
    with pytest.raises(Tx9Error) as caught:
        egress.parse(dict(mode='allowlist', allow=['a.test'], resolvers=resolvers))
    assert caught.value.cause == 'EGRESS_POLICY_INVALID' and 'egress.resolvers' in caught.value.reason


# ---- the proxy's decisions -----------------------------------------------------------------------

# The lines of the proof in /work/notes/egress-facts.md section 4, whose timestamp (and, from the third on, the
# fields elided there as "...") are filled in here as the logformat prints them.
T = '1764763200.123'
ALLOWED = (f'{T} client=10.201.0.20 method=CONNECT host=allowed.test port=443 status=200 squid=TCP_TUNNEL/HIER_DIRECT'
           ' err=- rule=allowed.test:443 dst=10.202.0.10:443 url=allowed.test:443 bytes=2154')
DENIED_PORT = (f'{T} client=10.201.0.20 method=CONNECT host=allowed.test port=8443 status=403 '
               'squid=TCP_DENIED/HIER_NONE err=ERR_EGRESS_DENIED rule=deny:default dst=-:- url=allowed.test:8443 '
               'bytes=-')
WILD = (f'{T} client=10.201.0.20 method=CONNECT host=wild.test port=443 status=200 squid=TCP_TUNNEL/HIER_DIRECT '
        'err=- rule=.wild.test:443 dst=10.202.0.10:443 url=wild.test:443 bytes=2154')
IP_GET = (f'{T} client=10.201.0.20 method=GET host=10.202.0.10 port=8080 status=200 squid=TCP_MISS/HIER_DIRECT '
          'err=- rule=10.202.0.10:8080 dst=10.202.0.10:8080 url=http://10.202.0.10:8080/ bytes=311')
OUTSIDER = (f'{T} client=10.203.0.4 method=CONNECT host=allowed.test port=443 status=403 squid=TCP_DENIED/HIER_NONE '
            'err=ERR_EGRESS_DENIED rule=deny:client-not-in-box dst=-:- url=allowed.test:443 bytes=0')


@pytest.mark.parametrize('line, expected', [
    (ALLOWED, dict(client='10.201.0.20', method='CONNECT', host='allowed.test', port=443, status=200,
                   decision='allowed', rule='allowed.test:443', bytes=2154)),
    (DENIED_PORT, dict(client='10.201.0.20', method='CONNECT', host='allowed.test', port=8443, status=403,
                       decision='denied', rule='deny:default', bytes=0)),
    (WILD, dict(client='10.201.0.20', method='CONNECT', host='wild.test', port=443, status=200,
                decision='allowed', rule='.wild.test:443', bytes=2154)),
    (IP_GET, dict(client='10.201.0.20', method='GET', host='10.202.0.10', port=8080, status=200,
                  decision='allowed', rule='10.202.0.10:8080', bytes=311)),
    (OUTSIDER + '\n', dict(client='10.203.0.4', method='CONNECT', host='allowed.test', port=443, status=403,
                           decision='denied', rule='deny:client-not-in-box', bytes=0)),
])
def test_a_decision_line_is_read_into_its_fields(line, expected):
    assert egress.parse_decision(line) == dict(time='2025-12-03T12:00:00.123Z', **expected)


def test_a_squid_refusal_without_a_rule_is_still_denied():
    line = DENIED_PORT.replace('rule=deny:default', 'rule=-')
    assert egress.parse_decision(line)['decision'] == 'denied'
    assert egress.parse_decision(line)['rule'] is None


@pytest.mark.parametrize('line', [
    '', 'garbage', '2026/12/03 10:00:00| Accepting HTTP Socket connections at conn3 local=[::]:3128',
    ALLOWED.replace(T, 'yesterday'), ALLOWED.replace(' status=200', ''), ALLOWED.replace('bytes=2154', 'bytes=x'),
    ALLOWED + ' ' + 'x' * 70000,
])
def test_a_line_that_is_not_a_decision_is_none(line):
    assert egress.parse_decision(line) is None


def test_the_option_value_gives_the_policy_back_as_the_egress_option_takes_it():
    policy = egress.parse(dict(mode='allowlist', allow=['preset:tools', 'a.test:80'], deny=['b.a.test'],
                               executor=['a.test:80'], resolvers=['10.0.0.53']))
    value = egress.option_value(policy)
    assert value == dict(mode='allowlist', allow=['a.test:80', 'preset:tools'], deny=['b.a.test:443'],
                         executor=['a.test:80'], resolvers=['10.0.0.53'])
    assert egress.parse(value) == policy
    assert egress.option_value(egress.OPEN) == dict(mode='open')
