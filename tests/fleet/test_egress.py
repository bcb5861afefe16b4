# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An egress policy on the bed: a confined box keeps it through tx9_box's recreate, an upgrade through
playbooks/upgrade.yml and a move through playbooks/migrate.yml, proved after each by the same probes.

One box serves every test, in order: made on the first host on an older image (the loaded one with an
older tx9.version label) with `egress: {mode: allowlist, allow: [allowed.test], resolvers: [...]}`,
recreated, upgraded to the collection's image, then moved to the second host. Its outside is the
integration suite's (tests/integration/egress_outside.py): a web server and a logging DNS server from
the box image, started in the host's own engine on the proxy's outside network tx9-<box>-out. Each
probe runs in the agent with `docker exec` over SSH: allowed.test is reached through the proxy,
blocked.test gets the proxy's 403, and with `--noproxy '*'` nothing is reached at all.

The policy's resolver is the outside's DNS server on the first host. The outside network's subnet
comes from each engine's address pool (the bed gives every host a pool of its own), so no address can
be the same on both hosts, and Docker gives a fixed address only on a network with a subnet set by its
maker. On the second host the moved policy is therefore checked as it arrived (tx9_info, and the
proxy refusing blocked.test by its default deny, which needs no lookup), and then given again as it
arrived with one change, the resolver of that host's outside: a rule change, which recreates the proxy
alone.
"""


import os
import re
import sys
import uuid

import docker
import pytest

from conftest import REPO_ROOT, recaps

sys.path.append(os.path.join(REPO_ROOT, 'tests', 'integration'))
from egress_outside import LABELS as OUTSIDE_LABELS  # noqa: E402  pylint: disable=wrong-import-position
from egress_outside import Outside  # noqa: E402  pylint: disable=wrong-import-position

MIGRATE = os.path.join(REPO_ROOT, 'playbooks', 'migrate.yml')
UPGRADE = os.path.join(REPO_ROOT, 'playbooks', 'upgrade.yml')
CURRENT = 'tx9-box:0.1.0'
OLD_DOCKERFILE = 'FROM %s\nLABEL tx9.version=0.0.8\n' % CURRENT
CA = '/tmp/outside-ca.pem'
ALLOWED = ['allowed.test:443']
PASSPHRASE = uuid.uuid4().hex


def engine(host):
    """A Docker client on the bed host's own engine, through its socket in the host's mount namespace."""
    return docker.DockerClient(base_url='unix://' + host.ns_file('/run/docker.sock'), version='auto', timeout=120)


def policy(resolver, allow=('allowed.test',)):
    return dict(mode='allowlist', allow=list(allow), resolvers=[resolver])


def module_ok(fleet, module, host, args):
    result = fleet.module(module, host.name, args)[host.name]
    assert not result.get('failed'), result
    return result


def info(fleet, host, name):
    """tx9_info's view of the box on host, or None when it has none."""
    boxes = module_ok(fleet, 'tx9_info', host, dict(name=name))['boxes']
    return boxes[0] if boxes else None


def in_box(fleet, host, name, argv, user='agent', role='agent'):
    return fleet.ssh(host, ['docker', 'exec', '-u', user, 'tx9-%s-%s' % (name, role)] + list(argv))


def curl(fleet, host, name, url, *flags):
    return in_box(fleet, host, name, ['curl', '-sS', '--max-time', '10', '--cacert', CA] + list(flags) + [url])


def inspect(fleet, host, template, *refs, kind='container'):
    code, output = fleet.ssh(host, ['docker', kind, 'inspect', '--format', template] + list(refs))
    assert code == 0, output
    return output.split()


def confined_there(fleet, host, name):
    """The box on host has its three containers, an internal box network without the host's address,
    and its agent and Executor on that network alone."""
    box = info(fleet, host, name)
    assert box['state'] == 'running', box
    assert set(box['containers']) == {'agent', 'executor', 'egress'}, box['containers']
    assert all(c['state'] == 'running' for c in box['containers'].values()), box['containers']
    assert box['egress'] == dict(mode='allowlist', rules=1), box['egress']
    template = '{{.Internal}} {{index .Options "com.docker.network.bridge.inhibit_ipv4"}}'
    internal, inhibit = inspect(fleet, host, template, 'tx9-%s' % name, kind='network')
    assert (internal, inhibit) == ('true', 'true')
    for role in ('agent', 'executor'):
        networks = inspect(fleet, host, '{{range $n, $_ := .NetworkSettings.Networks}}{{$n}} {{end}}',
                           'tx9-%s-%s' % (name, role))
        assert networks == ['tx9-%s' % name], (role, networks)
    return box


def decisions(fleet, host, name):
    """The proxy's decision lines so far (its output), as {host: [(status, rule)]}."""
    code, output = fleet.ssh(host, ['docker', 'logs', 'tx9-%s-egress' % name])
    assert code == 0, output
    found = {}
    for match in re.finditer(r' method=CONNECT host=(\S+) port=443 status=(\S+) .* rule=(\S+) dst=', output):
        found.setdefault(match.group(1), []).append((match.group(2), match.group(3)))
    return found


def put_ca(fleet, host, name, pem):
    code, output = in_box(fleet, host, name, ['sh', '-c', 'printf "%s" "$1" > "$2" && chmod 644 "$2"', 'sh',
                                              pem.decode(), CA], user='root')
    assert code == 0, output


def probes_hold(fleet, host, name, outside):
    """The agent reaches allowed.test through the proxy, gets the proxy's 403 for blocked.test, reaches
    nothing without the proxy; the proxy logged both decisions with the rule that made them."""
    put_ca(fleet, host, name, outside.ca_pem)
    code, output = curl(fleet, host, name, 'https://allowed.test/ok')
    assert code == 0 and 'hello from outside allowed.test /ok' in output, output
    code, output = curl(fleet, host, name, 'https://blocked.test/ok')
    assert code != 0 and '403' in output, output
    for target in ('allowed.test', outside.server_ip):
        code, output = curl(fleet, host, name, 'https://%s/ok' % target, '--noproxy', '*', '--max-time', '5')
        assert code != 0, (target, output)
    assert not [r for r in outside.requests() if 'blocked.test' in r], outside.requests()
    seen = decisions(fleet, host, name)
    assert ('200', 'allowed.test:443') in seen.get('allowed.test', []), seen
    assert ('403', 'deny:default') in seen.get('blocked.test', []), seen


def out_network(name):
    return 'tx9-%s-out' % name


def volumes(fleet, host, *filters):
    code, output = fleet.ssh(host, ['docker', 'volume', 'ls', '-q'] + ['--filter=%s' % f for f in filters])
    assert code == 0, output
    return set(output.split())


@pytest.fixture(scope='module')
def confined(fleet, controller_image):
    """The confined box on the first host, on an older image, with its outside and the policy naming
    the outside's resolver. Box, outsides, the older image, the backups and the volumes the run left
    unused (anonymous ones of the box's containers) are removed at the end."""
    fleet.prepare()
    first, second = fleet.hosts
    tag = uuid.uuid4().hex[:6]
    run = dict(name='eg%s' % tag, older='tx9-box:0.0.8-eg%s' % tag, dest='/tmp/tx9-egress-%s' % tag,
               first=first, second=second, outsides={}, engines={})
    name = run['name']
    before = dict((host.name, volumes(fleet, host)) for host in fleet.hosts)
    try:
        for host in fleet.hosts:
            run['engines'][host.name] = client = engine(host)
            # Outsides an interrupted earlier run left (they would hold a network clear_boxes removes).
            stale = dict(label='tx9.test=%s' % OUTSIDE_LABELS['tx9.test'])
            for container in client.containers.list(all=True, filters=stale):
                container.remove(force=True, v=True)
        code, output = fleet.ssh(first, ['sh', '-c', 'printf "%s" "$1" | docker build -q -t "$2" -', 'sh',
                                         OLD_DOCKERFILE, run['older']], timeout=300)
        assert code == 0, output
        run['made'] = module_ok(fleet, 'tx9_box', first, dict(name=name, image=run['older'],
                                                              egress=dict(mode='allowlist', allow=['allowed.test'])))
        outside = run['outsides'][first.name] = Outside(run['engines'][first.name], CURRENT, 'tx9test-out-%s-a' % tag)
        outside.start(out_network(name))
        module_ok(fleet, 'tx9_box', first, dict(name=name, egress=policy(outside.dns_ip)))
        yield run
    finally:
        for outside in run['outsides'].values():
            outside.close()
        fleet.module('tx9_box', 'fleet', dict(name=name, state='absent'))
        fleet.ssh(first, ['docker', 'image', 'rm', run['older']], timeout=300)
        for host in fleet.hosts:
            fleet.ssh(host, ['rm', '-rf', run['dest']])
            left = sorted(volumes(fleet, host, 'dangling=true') - before[host.name])
            if left:
                fleet.ssh(host, ['docker', 'volume', 'rm'] + left, timeout=300)
        for client in run['engines'].values():
            client.close()


def test_a_confined_box_reaches_only_what_its_policy_allows_on_the_first_host(confined, fleet):
    first, name, outside = confined['first'], confined['name'], confined['outsides'][confined['first'].name]
    assert 'create the egress container tx9-%s-egress' % name in confined['made']['actions']
    box = confined_there(fleet, first, name)
    assert box['version'] == '0.0.8'
    assert box['desired']['egress'] == dict(mode='allowlist', allow=ALLOWED, resolvers=[outside.dns_ip])
    probes_hold(fleet, first, name, outside)


def test_a_recreate_without_the_option_keeps_the_policy(confined, fleet):
    first, name, outside = confined['first'], confined['name'], confined['outsides'][confined['first'].name]
    before = info(fleet, first, name)

    recreated = module_ok(fleet, 'tx9_box', first, dict(name=name, recreate=True))

    assert recreated['changed'] is True
    assert recreated['box']['egress'] == dict(mode='allowlist', rules=1)
    box = confined_there(fleet, first, name)
    assert box['containers']['agent']['id'] != before['containers']['agent']['id']
    assert box['desired']['egress'] == before['desired']['egress']
    probes_hold(fleet, first, name, outside)


def test_an_upgrade_through_upgrade_yml_keeps_the_policy_and_the_proxy_runs_the_new_image(confined, fleet):
    first, name, outside = confined['first'], confined['name'], confined['outsides'][confined['first'].name]
    before = info(fleet, first, name)
    current = inspect(fleet, first, '{{.Id}}', CURRENT, kind='image')[0]

    output = fleet.playbook(UPGRADE, '-e', 'tx9_hosts=%s' % first.name, '-e', 'tx9_upgrade_image=%s' % CURRENT,
                            '-e', 'tx9_upgrade_backup_dest=%s' % confined['dest'],
                            '-e', 'tx9_upgrade_backup_password=%s' % PASSPHRASE,
                            '-e', '{"tx9_upgrade_boxes": ["%s"]}' % name)

    assert recaps(output)[first.name]['failed'] == 0
    assert '%s: %s -> %s' % (name, confined['older'], CURRENT) in output
    box = confined_there(fleet, first, name)
    assert box['version'] == '0.1.0'
    assert set(c['image_id'] for c in box['containers'].values()) == {current}, box['containers']
    assert box['desired']['egress'] == before['desired']['egress']
    probes_hold(fleet, first, name, outside)


def test_a_move_through_migrate_yml_carries_the_policy_and_the_box_arrives_confined(confined, fleet, tmp_path):
    first, second, name = confined['first'], confined['second'], confined['name']
    outside = confined['outsides'][first.name]
    placement = tmp_path / 'placement.yml'
    placement.write_text('{"all": {"hosts": {"%s": {"tx9_boxes": [{"name": "%s"}]}}}}' % (second.name, name))

    output = fleet.playbook(MIGRATE, '-i', str(placement))

    assert recaps(output)[second.name]['failed'] == 0
    assert info(fleet, first, name)['state'] == 'stopped'
    box = confined_there(fleet, second, name)
    assert box['desired']['egress'] == dict(mode='allowlist', allow=ALLOWED, resolvers=[outside.dns_ip])
    # The proxy on the new host refuses by the moved rules before anything else is given: a name
    # that is not allowed is never looked up, so it needs no resolver.
    put_ca(fleet, second, name, outside.ca_pem)
    code, output = curl(fleet, second, name, 'https://blocked.test/ok')
    assert code != 0 and '403' in output, output
    assert ('403', 'deny:default') in decisions(fleet, second, name).get('blocked.test', [])
    code, output = curl(fleet, second, name, 'https://allowed.test/ok', '--noproxy', '*', '--max-time', '5')
    assert code != 0, output
    # The copy left behind is stopped: the first host's outside is no longer needed.
    confined['outsides'].pop(first.name).close()


def test_on_the_new_host_the_moved_policy_with_that_hosts_resolver_reaches_the_allowed_name_alone(confined, fleet):
    second, name = confined['second'], confined['name']
    arrived = info(fleet, second, name)
    kept = dict((role, arrived['containers'][role]['id']) for role in ('agent', 'executor'))
    outside = Outside(confined['engines'][second.name], CURRENT, 'tx9test-out-%s-b' % name)
    confined['outsides'][second.name] = outside
    outside.start(out_network(name))

    # The policy as it arrived, with one change: this host's resolver.
    moved = dict(arrived['desired']['egress'], resolvers=[outside.dns_ip])
    resolved = module_ok(fleet, 'tx9_box', second, dict(name=name, egress=moved))

    assert 'recreate the egress container tx9-%s-egress' % name in resolved['actions']
    box = confined_there(fleet, second, name)
    assert dict((role, box['containers'][role]['id']) for role in ('agent', 'executor')) == kept
    assert box['desired']['egress'] == dict(mode='allowlist', allow=ALLOWED, resolvers=[outside.dns_ip])
    probes_hold(fleet, second, name, outside)
