# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bed proved: over real SSH, the host role prepares each host, boxes live on one host only,
and a box backed up on one host is imported on another."""


import os
import shutil
import socket
import subprocess
import tempfile
import uuid

import pytest

from conftest import PLAYS, bedlib, recaps

PASSWORD = 'fleet pass phrase'
MARKER = 'made on the first fleet host'


@pytest.fixture(scope='module')
def prepared(fleet):
    """The tx9_host role run twice over SSH on every host whose engine was stopped first (an earlier test
    module may have started it)."""
    for host in fleet.hosts:
        host.stop_engine()
        assert not host.engine_answers(), '%s: the engine still answers after being stopped' % host.name
    first = fleet.playbook(os.path.join(PLAYS, 'host.yml'))
    second = fleet.playbook(os.path.join(PLAYS, 'host.yml'))
    return dict(first=recaps(first), second=recaps(second), first_output=first)


@pytest.fixture(scope='module')
def loaded(fleet, prepared, controller_image):
    """The box image in every host engine, and no box left there by an interrupted earlier run."""
    fleet.clear_boxes()
    return fleet.bed.load_image()


@pytest.fixture
def box_name():
    return 'fl%s' % uuid.uuid4().hex[:6]


def engine_id(fleet, host):
    code, output = fleet.ssh(host, ['docker', 'info', '--format', '{{.ID}}'])
    assert code == 0, output
    return output.strip()


def box_names(result):
    assert not result.get('failed'), result
    return sorted(box['name'] for box in result['boxes'])


def test_the_host_role_over_ssh_starts_each_hosts_own_engine_and_a_second_run_changes_nothing(fleet, prepared):
    names = [host.name for host in fleet.hosts]
    for name in names:
        assert prepared['first'][name]['failed'] == 0 and prepared['first'][name]['unreachable'] == 0
        assert prepared['first'][name]['changed'] >= 1, prepared['first_output'][-3000:]
        assert prepared['second'][name]['changed'] == 0, prepared['second']
        assert prepared['second'][name]['failed'] == 0
    # Each host reached over SSH answers with its own name and its own engine.
    ids = set()
    for host in fleet.hosts:
        code, output = fleet.ssh(host, ['hostname'])
        assert (code, output.strip()) == (0, host.name)
        ids.add(engine_id(fleet, host))
    assert len(ids) == len(fleet.hosts)
    # None of them is the machine's own engine.
    machine = subprocess.run(['docker', 'info', '--format', '{{.ID}}'], stdout=subprocess.PIPE,
                             universal_newlines=True, check=False).stdout.strip()
    assert machine not in ids


def test_a_box_made_on_the_first_host_is_listed_on_that_host_only_and_is_then_removed(fleet, loaded, box_name):
    first = fleet.hosts[0].name
    try:
        made = fleet.module('tx9_box', first, dict(name=box_name))[first]
        assert made['changed'] is True and not made.get('failed'), made
        assert made['box']['state'] == 'running'

        listed = fleet.module('tx9_info', 'fleet', dict())
        assert set(listed) == set(host.name for host in fleet.hosts)
        assert box_name in box_names(listed[first])
        for other in fleet.hosts[1:]:
            assert box_name not in box_names(listed[other.name])
        code, output = fleet.ssh(fleet.hosts[1], ['docker', 'ps', '-a', '--format', '{{.Names}}'])
        assert code == 0 and box_name not in output
    finally:
        removed = fleet.module('tx9_box', first, dict(name=box_name, state='absent'))[first]
    assert removed['changed'] is True and not removed.get('failed'), removed
    after = fleet.module('tx9_info', first, dict())[first]
    assert box_name not in box_names(after)


def test_a_backup_made_on_one_host_and_moved_over_ssh_is_imported_with_its_files_on_another(fleet, loaded, box_name):
    source, target = fleet.hosts[0], fleet.hosts[1]
    imported_name = box_name + 'b'
    local = tempfile.mkdtemp(prefix='tx9-fleet-move-')
    try:
        made = fleet.module('tx9_box', source.name, dict(name=box_name))[source.name]
        assert not made.get('failed'), made
        code, output = fleet.ssh(source, ['docker', 'exec', 'tx9-%s-agent' % box_name, 'sh', '-c',
                                          'printf "%s" "$1" > /data/fleet-marker', 'sh', MARKER])
        assert code == 0, output

        backup = fleet.module('tx9_backup', source.name,
                              dict(name=box_name, dest='/tmp/tx9-fleet-backups', password=PASSWORD))[source.name]
        assert not backup.get('failed'), backup
        fleet.playbook(os.path.join(PLAYS, 'move.yml'), '-e', 'source=%s' % source.name,
                       '-e', 'target=%s' % target.name, '-e', 'src=%s' % backup['path'],
                       '-e', 'local_dir=%s' % local, '-e', 'dest=/tmp/tx9-fleet-moved.tx9')
        code, output = fleet.ssh(target, ['sha256sum', '/tmp/tx9-fleet-moved.tx9'])
        assert code == 0 and output.split()[0] == backup['sha256'], output

        result = fleet.module('tx9_import', target.name, dict(path='/tmp/tx9-fleet-moved.tx9', name=imported_name,
                                                              password=PASSWORD))[target.name]
        assert result['changed'] is True and not result.get('failed'), result
        code, output = fleet.ssh(target, ['docker', 'exec', 'tx9-%s-agent' % imported_name,
                                          'cat', '/data/fleet-marker'])
        assert (code, output) == (0, MARKER)
        assert imported_name in box_names(fleet.module('tx9_info', target.name, dict())[target.name])
        assert imported_name not in box_names(fleet.module('tx9_info', source.name, dict())[source.name])
    finally:
        fleet.module('tx9_box', source.name, dict(name=box_name, state='absent'))
        fleet.module('tx9_box', target.name, dict(name=imported_name, state='absent'))
        for host in (source, target):
            fleet.ssh(host, ['rm', '-rf', '/tmp/tx9-fleet-backups', '/tmp/tx9-fleet-moved.tx9'])
        shutil.rmtree(local, ignore_errors=True)


def test_a_container_on_a_bed_host_learns_at_once_that_an_outside_name_does_not_resolve(fleet, loaded):
    # The bed's resolver answers NXDOMAIN (getaddrinfo's EAI_NONAME, -2); without it the lookup from a
    # container's user network would wait out the resolver's timeouts and end in EAI_AGAIN (-3).
    host, network = fleet.hosts[0], 'tx9-fleet-dns-%s' % uuid.uuid4().hex[:6]
    lookup = ('import socket\ntry:\n    socket.getaddrinfo("integrations.sh", 443)\n    print("resolved")\n'
              'except socket.gaierror as exc:\n    print(exc.errno)\n')
    code, output = fleet.ssh(host, ['docker', 'network', 'create', network])
    assert code == 0, output
    try:
        code, output = fleet.ssh(host, ['docker', 'run', '--rm', '--network', network, '--entrypoint', 'python3',
                                        bedlib.IMAGE, '-c', lookup])
    finally:
        fleet.ssh(host, ['docker', 'network', 'rm', network])
    assert (code, output.strip()) == (0, str(socket.EAI_NONAME)), output
