# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Scheduled backups over real SSH: playbooks/backup.yml (the tx9_backup role) on every bed host.

Each host has one small box of its own. Archives are proved readable with plain tar and gpg on
the host, not with the collection's own reader; the passphrase comes from an Ansible Vault
variable, and no playbook output may show it.
"""


import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
import uuid

import pytest

from conftest import BIN, PLAYS, REPO_ROOT

PASSWORD = 'fleet backup pass phrase %s' % uuid.uuid4().hex[:8]
BACKUP_PLAYBOOK = os.path.join(REPO_ROOT, 'playbooks', 'backup.yml')
MARKER_PATH = '/data/home/agent/backup-marker'
ARCHIVE = re.compile(r'^(\S+)-\d{8}-\d{6}(?:-\d+)?\.tx9$')
TRUNCATE = os.path.join(PLAYS, 'tasks', 'truncate_archive.yml')


@pytest.fixture(scope='module')
def vault(fleet):
    """vault_tx9_backup_password in a Vault-encrypted vars file, and the vault's password file."""
    work = tempfile.mkdtemp(prefix='tx9-fleet-vault-')
    secret = os.path.join(work, 'vault-pass')
    with open(secret, 'w') as handle:
        handle.write('vault secret %s\n' % uuid.uuid4().hex)
    encrypted = subprocess.run([os.path.join(BIN, 'ansible-vault'), 'encrypt_string', '--vault-password-file', secret,
                                '--name', 'vault_tx9_backup_password', '--', PASSWORD], cwd=REPO_ROOT, env=fleet.env(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=True).stdout
    assert PASSWORD not in encrypted and '$ANSIBLE_VAULT' in encrypted
    variables = os.path.join(work, 'vault.yml')
    with open(variables, 'w') as handle:
        handle.write('---\n' + encrypted)
    yield ['-e', '@' + variables, '--vault-password-file', secret]
    shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope='module')
def boxes(fleet, controller_image):
    """One running box on each host (with a marker file in its /data), removed at the end."""
    fleet.prepare()
    prefix = 'bk%s-' % uuid.uuid4().hex[:6]
    names = dict((host.name, prefix + host.name) for host in fleet.hosts)
    try:
        fleet.playbook(os.path.join(PLAYS, 'boxes.yml'), '-e', 'box_prefix=%s' % prefix)
        for host in fleet.hosts:
            code, output = fleet.ssh(host, ['docker', 'exec', 'tx9-%s-agent' % names[host.name], 'sh', '-c',
                                            'printf "%s" "$1" > "$2"', 'sh', names[host.name], MARKER_PATH])
            assert code == 0, output
        yield names
    finally:
        fleet.playbook(os.path.join(PLAYS, 'boxes.yml'), '-e', 'box_prefix=%s' % prefix, '-e', 'box_state=absent',
                       check=False)
        for host in fleet.hosts:
            fleet.ssh(host, ['rm', '-rf', '/root/.tx9/drills'])


@pytest.fixture
def dest(fleet):
    """A fresh backup directory on every host, removed afterwards."""
    path = '/tmp/tx9-fleet-backups-%s' % uuid.uuid4().hex[:8]
    yield path
    for host in fleet.hosts:
        fleet.ssh(host, ['rm', '-rf', path])


def back_up(fleet, vault, dest, *extra, **kwargs):
    """playbooks/backup.yml on the bed's hosts; its output, which must never show the passphrase."""
    args = ['-e', 'tx9_hosts=%s' % kwargs.pop('hosts', 'fleet'), '-e', 'tx9_backup_dest=%s' % dest] + list(extra)
    output = fleet.playbook(BACKUP_PLAYBOOK, *(args + vault), **kwargs)
    assert PASSWORD not in output
    return output


def listing(fleet, host, dest):
    """{name: sha256} of every entry in dest on host (staging and work files included)."""
    code, output = fleet.ssh(host, ['sh', '-c', '[ -d "$1" ] || exit 0; cd "$1" && for f in * .[!.]*; do [ -e "$f" ] || continue; '
                                    'printf "%s %s\\n" "$(sha256sum "$f" 2>/dev/null | cut -d" " -f1)" "$f"; done',
                                    'sh', dest])
    assert code == 0, output
    return dict(reversed(line.split(' ', 1)) for line in output.splitlines() if line.strip())


def readable(fleet, host, path, box):
    """The archive decrypts with plain gpg and lists with plain tar, and holds the box's marker."""
    code, output = fleet.ssh(host, ['sh', '-c', 'umask 077; printf "%s" "$1" > /tmp/tx9-fleet-passphrase', 'sh', PASSWORD])
    assert code == 0, output
    script = ('set -eu -o pipefail; home=$(mktemp -d); trap \'rm -rf "$home" /tmp/tx9-fleet-passphrase\' EXIT; '
              'tar -xOf "$1" data.tar.gz.gpg | gpg --homedir "$home" --batch --quiet --pinentry-mode loopback '
              '--passphrase-file /tmp/tx9-fleet-passphrase --decrypt | tar -xzOf - "./${2#/data/}"')
    code, output = fleet.ssh(host, ['bash', '-c', script, 'bash', path, MARKER_PATH], timeout=300)
    return code == 0 and output == box


def box_view(fleet, host, box):
    listed = fleet.module('tx9_info', host.name, dict())[host.name]
    assert not listed.get('failed'), listed
    found = [item for item in listed['boxes'] if item['name'] == box]
    return found[0] if found else None


def test_every_box_of_every_host_is_backed_up_and_with_keep_last_2_the_two_newest_readable_archives_remain(
        fleet, boxes, vault, dest):
    runs = []
    while len(runs) < 3:
        before = dict((host.name, listing(fleet, host, dest)) for host in fleet.hosts)
        back_up(fleet, vault, dest, '-e', 'tx9_backup_keep_last=2')
        after = dict((host.name, listing(fleet, host, dest)) for host in fleet.hosts)
        runs.append(dict((name, sorted(set(after[name]) - set(before[name]))) for name in after))
        # Names carry the second; the next run must not land in the same one.
        time.sleep(1)
    for host in fleet.hosts:
        made = [run[host.name] for run in runs]
        # Each run wrote exactly one new archive on each host, of that host's own box.
        assert all(len(new) == 1 and ARCHIVE.match(new[0]).group(1) == boxes[host.name] for new in made), made
        remaining = listing(fleet, host, dest)
        assert sorted(remaining) == sorted([made[1][0], made[2][0]]), remaining
        for name in remaining:
            assert readable(fleet, host, '%s/%s' % (dest, name), boxes[host.name]), name
        assert box_view(fleet, host, boxes[host.name])['state'] == 'running'


def test_a_box_whose_backup_fails_keeps_its_earlier_archives_and_keeps_running_while_other_hosts_go_on(
        fleet, boxes, vault, dest):
    bad, good = fleet.hosts[0], fleet.hosts[1]
    back_up(fleet, vault, dest, '-e', 'tx9_backup_keep_last=1')
    earlier = dict((host.name, listing(fleet, host, dest)) for host in fleet.hosts)
    assert all(len(files) == 1 for files in earlier.values()), earlier
    time.sleep(1)
    link = '/data/home/agent/escape'
    code, output = fleet.ssh(bad, ['docker', 'exec', 'tx9-%s-agent' % boxes[bad.name], 'ln', '-s', '/etc/passwd', link])
    assert code == 0, output
    try:
        output = back_up(fleet, vault, dest, '-e', 'tx9_backup_keep_last=1', check=False)
    finally:
        fleet.ssh(bad, ['docker', 'exec', 'tx9-%s-agent' % boxes[bad.name], 'rm', '-f', link])
    # The failed box is named with its cause; the other host's box was still backed up.
    assert re.search(r'fatal: \[%s\].*1 of 1 box\(es\) failed: %s .*ARCHIVE_UNSAFE' % (bad.name, boxes[bad.name]),
                     output), output[-4000:]
    assert 'fatal: [%s]' % good.name not in output
    assert listing(fleet, bad, dest) == earlier[bad.name]
    assert readable(fleet, bad, '%s/%s' % (dest, list(earlier[bad.name])[0]), boxes[bad.name])
    replaced = listing(fleet, good, dest)
    assert len(replaced) == 1 and set(replaced) != set(earlier[good.name]), (earlier, replaced)
    view = box_view(fleet, bad, boxes[bad.name])
    assert view['state'] == 'running' and view['quiesced'] is False, view


def test_a_run_whose_new_archive_is_truncated_before_retention_removes_no_archive_and_keeps_the_box_running(
        fleet, boxes, vault, dest):
    host = fleet.hosts[0]
    box = boxes[host.name]
    back_up(fleet, vault, dest, '-e', 'tx9_backup_keep_last=1', hosts=host.name)
    (earlier, digest), = listing(fleet, host, dest).items()
    time.sleep(1)
    output = back_up(fleet, vault, dest, '-e', 'tx9_backup_keep_last=1', '-e', 'tx9_backup_after_write_tasks=%s' % TRUNCATE,
                     hosts=host.name, check=False)
    assert re.search(r'fatal: \[%s\].*1 of 1 box\(es\) failed: %s at \\?"Prove the newest archive readable, then '
                     r'apply retention\\?" \(ARCHIVE_CORRUPT: .*no archive was removed' % (host.name, box), output), output[-4000:]
    # The earlier archive is still there, byte for byte, and still reads; the cut one is kept for inspection.
    after = listing(fleet, host, dest)
    assert after[earlier] == digest and len(after) == 2, after
    assert readable(fleet, host, '%s/%s' % (dest, earlier), box)
    (cut,) = set(after) - {earlier}
    assert ARCHIVE.match(cut).group(1) == box and not readable(fleet, host, '%s/%s' % (dest, cut), box)
    view = box_view(fleet, host, box)
    assert view['state'] == 'running' and view['quiesced'] is False, view


def test_a_check_mode_run_names_what_it_would_do_and_writes_and_removes_nothing(fleet, boxes, vault, dest):
    back_up(fleet, vault, dest)
    earlier = dict((host.name, listing(fleet, host, dest)) for host in fleet.hosts)
    time.sleep(1)
    output = back_up(fleet, vault, dest, '-e', 'tx9_backup_keep_last=1', '-e', 'tx9_backup_drill=true', '--check')
    for host in fleet.hosts:
        assert listing(fleet, host, dest) == earlier[host.name]
        assert box_view(fleet, host, boxes[host.name] + '-drill') is None
        (older,) = earlier[host.name]
        assert '%s: would be backed up into %s, removing %s/%s (check mode)' % (
            boxes[host.name], dest, dest, older) in output, output[-3000:]
    assert 'failed=0' in output and 'fatal:' not in output

    # A listed box is backed up on the host that has it and skipped, said so, on the others.
    first, second = fleet.hosts[0].name, fleet.hosts[1].name
    output = back_up(fleet, vault, dest, '-e', '{"tx9_backup_boxes": ["%s"]}' % boxes[first], '--check')
    assert '%s: would be backed up into %s' % (boxes[first], dest) in output
    assert '%s: skipped, not on this host' % boxes[first] in output
    assert boxes[second] not in output

    # Given on the command line, the list is one string: it is split at its commas, never read letter by letter.
    output = back_up(fleet, vault, dest, '-e', 'tx9_backup_boxes=%s,%s' % (boxes[first], boxes[second]), '--check')
    for host in fleet.hosts:
        assert '%s: would be backed up into %s' % (boxes[host.name], dest) in output, output[-3000:]
    assert ': skipped, not on this host' in output and 'failed=0' in output


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b''):
            digest.update(chunk)
    return digest.hexdigest()


def test_fetch_to_puts_a_private_copy_of_each_new_archive_on_the_controller_with_the_same_sha256(
        fleet, boxes, vault, dest):
    local = tempfile.mkdtemp(prefix='tx9-fleet-fetched-')
    try:
        # At -vvv every module's arguments are shown: the passphrase must still not be.
        output = back_up(fleet, vault, dest, '-e', 'tx9_backup_fetch_to=%s' % local, '-vvv')
        assert 'VALUE_SPECIFIED_IN_NO_LOG_PARAMETER' in output or 'censored' in output
        assert sorted(os.listdir(local)) == sorted(host.name for host in fleet.hosts)
        for host in fleet.hosts:
            remote = listing(fleet, host, dest)
            here = os.path.join(local, host.name)
            assert sorted(os.listdir(here)) == sorted(remote)
            assert stat.S_IMODE(os.stat(here).st_mode) == 0o700
            for name, digest in remote.items():
                copy = os.path.join(here, name)
                assert sha256_of(copy) == digest
                assert stat.S_IMODE(os.stat(copy).st_mode) == 0o600
                assert 'copied to %s' % copy in output
    finally:
        shutil.rmtree(local, ignore_errors=True)


def drill_events(fleet, host, throwaway, since):
    code, output = fleet.ssh(host, ['docker', 'events', '--since', str(since), '--until', str(int(time.time()) + 1),
                                    '--filter', 'type=container', '--filter', 'container=tx9-%s-agent' % throwaway,
                                    '--format', '{{.Action}}'])
    assert code == 0, output
    return output.split()


def test_a_drill_restores_the_newest_archive_into_a_throwaway_box_checks_it_removes_it_and_records_the_result(
        fleet, boxes, vault, dest):
    host = fleet.hosts[1]
    box = boxes[host.name]
    throwaway = box + '-drill'
    since = int(time.time()) - 1
    output = back_up(fleet, vault, dest, '-e', 'tx9_backup_drill=true', '-vvv', hosts=host.name)
    (newest,) = listing(fleet, host, dest)
    path = '%s/%s' % (dest, newest)

    code, raw = fleet.ssh(host, ['cat', '/root/.tx9/drills/%s.json' % box])
    assert code == 0, raw
    record = json.loads(raw)
    assert record['ok'] is True and record['failed_checks'] == [] and record['archive'] == path, record
    assert record['throwaway'] == throwaway and record['box'] == box and record['duration'] > 0
    code, metadata = fleet.ssh(host, ['tar', '-xOf', path, 'metadata.json'])
    assert code == 0 and json.loads(metadata)['payload_sha256'] == record['payload_sha256']
    code, mode = fleet.ssh(host, ['stat', '-c', '%a', '/root/.tx9/drills/%s.json' % box])
    assert (code, mode.strip()) == (0, '600')
    assert '%s: %s, verified; drill passed at %s' % (box, path, record['time']) in output

    # The throwaway box was really made and started, then removed with its volumes; the box is untouched.
    actions = drill_events(fleet, host, throwaway, since)
    assert 'create' in actions and 'start' in actions and 'destroy' in actions, actions
    code, objects = fleet.ssh(host, ['sh', '-c', 'docker ps -a --format "{{.Names}}"; docker volume ls -q; '
                                     'docker network ls --format "{{.Name}}"'])
    assert code == 0 and throwaway not in objects, objects
    assert box_view(fleet, host, throwaway) is None
    assert box_view(fleet, host, box)['state'] == 'running'

    # A later backup that is not drilled shows that it is untested.
    time.sleep(1)
    later = fleet.module('tx9_backup', host.name, dict(name=box, dest=dest, password=PASSWORD))[host.name]
    assert not later.get('failed'), later
    assert later['last_drill'] == record and later['last_drill']['archive'] != later['path']


def write_marker(fleet, host, box, marker):
    code, output = fleet.ssh(host, ['sh', '-c', 'umask 077; mkdir -p /root/.tx9/drills; printf "%s" "$1" > "$2"', 'sh',
                                    json.dumps(marker), '/root/.tx9/drills/%s.running' % box])
    assert code == 0, output


def test_a_drill_never_touches_a_box_of_the_throwaways_name_unless_a_killed_drill_provably_made_it(
        fleet, boxes, vault, dest):
    host = fleet.hosts[0]
    box = boxes[host.name]
    throwaway = box + '-drill'
    back_up(fleet, vault, dest, hosts=host.name)
    args = dict(name=box, dest=dest, password=PASSWORD, fail_on_error=False)
    try:
        made = fleet.module('tx9_box', host.name, dict(name=throwaway))[host.name]
        assert not made.get('failed'), made
        code, created = fleet.ssh(host, ['docker', 'volume', 'inspect', '--format', '{{.CreatedAt}}',
                                         'tx9-%s-agent-data' % throwaway])
        assert code == 0, created

        # A box of that name that no drill made: refused, left running.
        refused = fleet.module('tx9_drill', host.name, args)[host.name]
        assert refused['drill']['ok'] is False and refused['drill']['cause'] == 'NAME_EXISTS', refused
        # A marker of a killed drill that started after the box was made does not make the box its.
        write_marker(fleet, host, box, dict(throwaway=throwaway, pid=999999, started=time.time()))
        refused = fleet.module('tx9_drill', host.name, args)[host.name]
        assert refused['drill']['cause'] == 'NAME_EXISTS', refused
        assert box_view(fleet, host, throwaway)['state'] == 'running'
        code, output = fleet.ssh(host, ['test', '-e', '/root/.tx9/drills/%s.running' % box])
        assert code != 0, 'the marker of the refused drill stayed'

        # A killed drill that started before the box was made made it: removed, then the drill passes.
        code, started = fleet.ssh(host, ['date', '-d', created.strip(), '+%s'])
        assert code == 0, started
        write_marker(fleet, host, box, dict(throwaway=throwaway, pid=999999, started=int(started) - 5))
        drilled = fleet.module('tx9_drill', host.name, args)[host.name]
        assert drilled['drill']['ok'] is True and not drilled.get('failed'), drilled
        assert box_view(fleet, host, throwaway) is None
    finally:
        fleet.module('tx9_box', host.name, dict(name=throwaway, state='absent'))


def test_a_drill_of_a_truncated_archive_is_recorded_as_failed_joins_the_last_backup_and_leaves_nothing(
        fleet, boxes, vault, dest):
    host = fleet.hosts[0]
    box = boxes[host.name]
    since = int(time.time()) - 1
    back_up(fleet, vault, dest, hosts=host.name)
    (newest,) = listing(fleet, host, dest)
    path = '%s/%s' % (dest, newest)
    code, output = fleet.ssh(host, ['sh', '-c', 'truncate -s $(( $(stat -c %s "$1") / 2 )) "$1"', 'sh', path])
    assert code == 0, output
    failed = fleet.module('tx9_drill', host.name, dict(name=box, path=path, password=PASSWORD))[host.name]
    assert failed.get('failed') and failed['cause'] == 'ARCHIVE_CORRUPT', failed
    record = failed['drill']
    assert record['ok'] is False and record['cause'] == 'ARCHIVE_CORRUPT' and record['archive'] == path, record
    # Nothing of the throwaway box was ever made, and tx9_info shows the last backup as not proved by a restore.
    assert drill_events(fleet, host, box + '-drill', since) == []
    code, objects = fleet.ssh(host, ['sh', '-c', 'docker ps -a --format "{{.Names}}"; docker volume ls -q; '
                                     'docker network ls --format "{{.Name}}"'])
    assert code == 0 and box + '-drill' not in objects, objects
    last = box_view(fleet, host, box)['last_backup']
    assert last['path'] == path and last['drill'] == record and last['drilled'] is False, last


def test_a_drill_that_cannot_import_records_the_failure_with_its_cause_and_leaves_nothing(fleet, boxes, vault, dest):
    host = fleet.hosts[1]
    box = boxes[host.name]
    back_up(fleet, vault, dest, hosts=host.name)
    failed = fleet.module('tx9_drill', host.name, dict(name=box, dest=dest, password='not the pass phrase'))[host.name]
    assert failed.get('failed') and failed['cause'] == 'BAD_PASSWORD', failed
    code, raw = fleet.ssh(host, ['cat', '/root/.tx9/drills/%s.json' % box])
    assert code == 0, raw
    record = json.loads(raw)
    assert record['ok'] is False and record['cause'] == 'BAD_PASSWORD' and record['archive'].startswith(dest + '/')
    assert box_view(fleet, host, box + '-drill') is None
