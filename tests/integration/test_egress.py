# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A box with an egress allowlist, on the real engine, against an outside of the test's own.

One confined box serves the tests, in order. Its proxy's outside network carries a web server
(allowed.test, blocked.test) and a DNS server that logs every query (egress_outside.py); the
policy names that DNS server as the proxy's resolver. The tests probe from the agent (as agent
and as root through sudo) and from Executor, widen the policy live, break the confinement on
purpose, stop the proxy, and finally open the box again.
"""


import io
import secrets
import tarfile

import pytest

from egress_outside import Outside

ALLOW = dict(mode='allowlist', allow=['allowed.test'])
CA = '/tmp/outside-ca.pem'


def container(client, box, role):
    return client.containers.get('tx9-%s-%s' % (box, role))


def run_in(client, box, role, argv, user='root'):
    """(exit code, output) of argv in one of the box's containers, with the container's own environment."""
    result = container(client, box, role).exec_run(argv, user=user)
    return result.exit_code, result.output.decode('utf-8', 'replace')


def curl(client, box, role, url, *flags, user='root', sudo=False):
    argv = ['curl', '-sS', '--max-time', '10', '--cacert', CA, *flags, url]
    return run_in(client, box, role, (['sudo'] + argv) if sudo else argv, user=user)


def put_ca(client, box, role, pem):
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode='w') as tar:
        info = tarfile.TarInfo('outside-ca.pem')
        info.size, info.mode = len(pem), 0o644
        tar.addfile(info, io.BytesIO(pem))
    assert container(client, box, role).put_archive('/tmp', data.getvalue())


def policy_with(outside, *allow):
    return dict(mode='allowlist', allow=list(allow), resolvers=[outside.dns_ip])


@pytest.fixture(scope='module')
def confined(built_image, playbooks, client, module_prefix):
    """The confined box, then its outside on the proxy's network and the policy naming its resolver."""
    name = module_prefix + '-eg'
    created = playbooks.module_ok('tx9_box', dict(name=name, egress=ALLOW))
    outside = Outside(client, built_image['tag'])
    try:
        outside.start('tx9-%s-out' % name)
        resolved = playbooks.module_ok('tx9_box', dict(name=name, egress=policy_with(outside, 'allowed.test')))
        for role in ('agent', 'executor'):
            put_ca(client, name, role, outside.ca_pem)
        yield dict(name=name, outside=outside, created=created, resolved=resolved)
    finally:
        outside.close()


def test_a_confined_box_has_its_proxy_its_internal_network_and_publishes_the_dashboard_through_the_proxy(
        confined, client):
    name, created = confined['name'], confined['created']
    assert created['box']['egress'] == dict(mode='allowlist', rules=1)
    assert set(created['box']['containers']) == {'agent', 'executor', 'egress'}
    network = client.networks.get('tx9-%s' % name).attrs
    assert network['Internal'] is True
    assert network['Options'].get('com.docker.network.bridge.inhibit_ipv4') == 'true'
    assert container(client, name, 'executor').attrs['NetworkSettings']['Ports'] in ({}, None) or not any(
        container(client, name, 'executor').attrs['NetworkSettings']['Ports'].values())
    assert created['box']['published']['port'] and created['box']['dashboard_url']
    proxy = container(client, name, 'egress').attrs
    assert proxy['HostConfig']['ReadonlyRootfs'] is True and proxy['HostConfig']['CapDrop'] == ['ALL']
    assert not [m for m in proxy['Mounts'] if m['Type'] == 'volume'], proxy['Mounts']
    assert 'create the egress container tx9-%s-egress' % name in created['actions']


def test_the_resolver_change_recreated_only_the_proxy(confined):
    actions = confined['resolved']['actions']
    assert 'recreate the egress container tx9-%s-egress' % confined['name'] in actions
    assert not [a for a in actions if 'agent container' in a or 'executor container' in a]


@pytest.mark.parametrize('user, sudo', [('agent', False), ('agent', True)])
def test_the_agent_reaches_an_allowed_name_through_the_proxy_as_itself_and_as_root(confined, client, user, sudo):
    code, output = curl(client, confined['name'], 'agent', 'https://allowed.test/ok', user=user, sudo=sudo)
    assert code == 0 and 'hello from outside allowed.test /ok' in output, output


def test_a_name_not_allowed_gets_the_proxys_refusal(confined, client):
    code, output = curl(client, confined['name'], 'agent', 'https://blocked.test/ok', user='agent')
    assert code != 0 and '403' in output, output
    code, output = curl(client, confined['name'], 'agent', 'http://blocked.test/ok', '-i', user='agent')
    assert '403' in output and 'Egress denied by box policy' in output, output
    assert not [r for r in confined['outside'].requests() if 'blocked.test' in r]


def test_tx9_logs_returns_the_allowed_and_the_denied_request_with_the_rule_that_decided(confined, playbooks):
    events = playbooks.module_ok('tx9_logs', dict(name=confined['name'], sources=['egress']))['events']
    assert events and all(event['source'] == 'egress' for event in events)
    allowed = [e for e in events if e['host'] == 'allowed.test' and e['decision'] == 'allowed']
    denied = [e for e in events if e['host'] == 'blocked.test' and e['decision'] == 'denied']
    assert allowed and allowed[-1]['rule'] == 'allowed.test:443' and allowed[-1]['level'] == 'info', events
    assert denied and denied[-1]['rule'] == 'deny:default' and denied[-1]['level'] == 'warning', events


@pytest.mark.parametrize('role', ['agent', 'executor'])
def test_there_is_no_direct_path_out_and_root_cannot_make_one(confined, client, role):
    name, outside = confined['name'], confined['outside']
    for host in ('allowed.test', outside.server_ip):
        code, output = curl(client, name, role, 'https://%s/ok' % host, '--noproxy', '*', '--max-time', '5')
        assert code != 0, output
    for argv in (['ip', 'route', 'add', '10.99.0.0/16', 'dev', 'eth0'], ['ip', 'link', 'set', 'eth0', 'down'],
                 ['ip', 'addr', 'add', '10.99.0.9/32', 'dev', 'eth0'],
                 ['iptables', '-I', 'OUTPUT', '-j', 'ACCEPT'], ['iptables-legacy', '-I', 'OUTPUT', '-j', 'ACCEPT']):
        code, output = run_in(client, name, role, argv)
        assert code != 0 and ('not permitted' in output or 'Permission denied' in output), (argv, output)


@pytest.mark.parametrize('role', ['agent', 'executor'])
def test_a_lookup_of_a_denied_name_never_reaches_the_outside_resolver(confined, client, role):
    name, outside = confined['name'], confined['outside']
    secret = 'x%s.blocked.test' % secrets.token_hex(6)
    code, output = run_in(client, name, role, ['getent', 'hosts', secret])
    assert code != 0, output
    ask = ('import socket, sys; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2); '
           'q = b"\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00" + b"".join('
           'bytes([len(p)]) + p.encode() for p in sys.argv[1].split(".")) + b"\\x00\\x00\\x01\\x00\\x01"\n'
           'for server in sys.argv[2:]:\n'
           '    try:\n        s.sendto(q, (server, 53)); s.recvfrom(512); print(server, "answered")\n'
           '    except OSError as exc:\n        print(server, "no answer", exc)\n')
    run_in(client, name, role, ['python3', '-c', ask, secret, outside.dns_ip, '127.0.0.11'])
    assert secret not in outside.queries()


def test_executor_reaches_what_the_box_allows_through_its_own_port(confined, client):
    code, output = curl(client, confined['name'], 'executor', 'https://allowed.test/ok')
    assert code == 0 and 'hello from outside' in output, output
    code, output = curl(client, confined['name'], 'executor', 'https://blocked.test/ok')
    assert code != 0 and '403' in output, output


def test_a_wider_policy_reaches_blocked_test_in_the_same_run_with_agent_and_executor_kept(
        confined, client, playbooks):
    name, outside = confined['name'], confined['outside']
    kept = {role: container(client, name, role).id for role in ('agent', 'executor')}
    proxy = container(client, name, 'egress').id
    wider = policy_with(outside, 'allowed.test', 'blocked.test')
    checked = playbooks.module_ok('tx9_box', dict(name=name, egress=wider), '--check', '--diff')
    assert checked['changed'] is True
    assert 'blocked.test:443' in checked['diff']['after']['egress']['allow']
    assert 'blocked.test:443' not in checked['diff']['before']['egress']['allow']
    assert container(client, name, 'egress').id == proxy
    assert curl(client, name, 'agent', 'https://blocked.test/ok', user='agent')[0] != 0
    widened = playbooks.module_ok('tx9_box', dict(name=name, egress=wider))
    assert widened['changed'] is True
    assert {role: container(client, name, role).id for role in ('agent', 'executor')} == kept
    code, output = curl(client, name, 'agent', 'https://blocked.test/ok', user='agent')
    assert code == 0 and 'hello from outside blocked.test /ok' in output, output
    again = playbooks.module_ok('tx9_box', dict(name=name, egress=wider))
    assert again['changed'] is False, again['actions']


def test_an_agent_attached_to_a_network_with_a_route_out_fails_the_gate_and_the_doctor_with_egress_open(
        confined, client, playbooks):
    name = confined['name']
    outside_network = client.networks.create('tx9test-route-out-%s' % secrets.token_hex(3), driver='bridge',
                                             labels={'tx9.test': 'egress-open'})
    try:
        outside_network.connect(container(client, name, 'agent'))
        gate = playbooks.module('tx9_box', dict(name=name))
        assert gate.get('failed') and gate['cause'] == 'EGRESS_OPEN', gate
        assert 'also on %s' % outside_network.name in gate['msg']
        doctor = playbooks.module('tx9_doctor', dict(name=name))
        assert doctor.get('failed') and doctor['cause'] == 'EGRESS_OPEN', doctor
    finally:
        outside_network.disconnect(container(client, name, 'agent'), force=True)
        outside_network.remove()
    assert playbooks.module_ok('tx9_box', dict(name=name))['changed'] is False


def test_a_stopped_proxy_leaves_the_box_with_no_way_out_and_a_run_starts_it_again(confined, client, playbooks):
    name = confined['name']
    container(client, name, 'egress').stop(timeout=5)
    code, output = curl(client, name, 'agent', 'https://allowed.test/ok', user='agent')
    assert code != 0, output
    started = playbooks.module_ok('tx9_box', dict(name=name))
    assert 'start the egress container tx9-%s-egress' % name in started['actions']
    assert curl(client, name, 'agent', 'https://allowed.test/ok', user='agent')[0] == 0


def test_a_recreate_keeps_the_policy_and_its_proxy(confined, client, playbooks):
    name = confined['name']
    recreated = playbooks.module_ok('tx9_box', dict(name=name, recreate=True))
    assert recreated['box']['egress'] == dict(mode='allowlist', rules=2)
    assert set(recreated['box']['containers']) == {'agent', 'executor', 'egress'}
    for role in ('agent', 'executor'):
        put_ca(client, name, role, confined['outside'].ca_pem)
    code, output = curl(client, name, 'agent', 'https://blocked.test/ok', user='agent')
    assert code == 0 and 'hello from outside blocked.test' in output, output
    assert curl(client, name, 'agent', 'https://other.test/ok', user='agent')[0] != 0


def test_an_import_given_the_policy_tx9_info_reports_makes_a_confined_box_as_a_move_does(
        confined, client, playbooks, tmp_path):
    name, outside = confined['name'], confined['outside']
    desired = playbooks.module_ok('tx9_info', dict(name=name))['boxes'][0]['desired']
    assert desired['egress'] == policy_with(outside, 'allowed.test:443', 'blocked.test:443')
    archive = playbooks.module_ok('tx9_backup', dict(name=name, dest=str(tmp_path), encrypt=False))['path']
    copy = name + '2'
    imported = playbooks.module_ok('tx9_import', dict(path=archive, name=copy, options=dict(egress=desired['egress'])))
    assert imported['changed'] is True
    assert client.networks.get('tx9-%s' % copy).attrs['Internal'] is True
    assert container(client, copy, 'egress').status == 'running'
    assert playbooks.module_ok('tx9_box', dict(name=copy, state='absent'))['changed'] is True


def test_an_opened_box_loses_its_proxy_and_outside_network_and_is_a_plain_box_again(confined, client, playbooks):
    name = confined['name']
    confined['outside'].close()
    opened = playbooks.module_ok('tx9_box', dict(name=name, egress=dict(mode='open')))
    assert opened['box']['egress'] == dict(mode='open', rules=0)
    assert set(opened['box']['containers']) == {'agent', 'executor'}
    assert not client.containers.list(all=True, filters={'name': 'tx9-%s-egress' % name})
    assert not client.networks.list(names=['tx9-%s-out' % name])
    assert client.networks.get('tx9-%s' % name).attrs['Internal'] is False
    assert playbooks.module_ok('tx9_box', dict(name=name))['changed'] is False
