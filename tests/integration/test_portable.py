# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Portable boxes through real playbooks, the real engine, real gpg and real tar: tx9_backup and tx9_import.

One source box (a tree of every kind of file, a 50 MB random file, a Hermes
session database written during the test) serves the check-mode, same-second,
SIGKILL and round-trip tests, in that order; the round trip deletes it at the
end. Archives made with plain tar and gpg, damaged archives and the unsafe
corpus need no source box.
"""


import datetime
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._archive import envelope as archive
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import metadata as archive_metadata
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarheader import shown
from ansible_collections.col_agents.tx9.tests.processes import alive, kill_tree
from conftest import BIN, PLAYS, REPO_ROOT, box_token, lock_held, succeeded
from portable_kit import (
    BIG_FILE_SIZE, CreateEvents, EngineOverTcp, HERMES_PYTHON, HOME, MAKE_TREE, READ_HERMES_DB, WRITE_HERMES_DB, cli_tx9,
    flipped, gpg_decrypt, gpg_symmetric, hb_status, import_each, in_box, in_box_ok, listing,
    make_home_tree, nothing_left, placeholder_names, plain_tool_tx9, read_members, rewrap, sha256_file, tx9_names,
    unsafe_corpus_and_refusals, write_container)

PASSWORD = 'c\u00f6rrect horse \u2603 battery staple'
TREE = HOME + '/workspace/rt'
# Where every backup leaves things out by design, relative to TREE.
LEFT_OUT = ('node_modules', 'pkg/__pycache__', 'pkg/mod.pyc', '.cache', '.venv')
HERMES_MESSAGES = 200
# Paths of the home the box rewrites or re-arms on its own after an import (wiring, token, markers, logs).
REWRITTEN = ('.claude/.claude.json', '.codex/config.toml', '.hermes/config.yaml', '.hermes-box-wired', '.hermes/.update_check',
             '.hermes/state.db')
NOT_COMPARED = ('.config/hermes-box', '.codex/tmp', '.hermes/tmp', '.hermes/logs', 'workspace/rt')
# PID, lock and process files every backup leaves out.
RUNTIME_FILES = ('gateway.pid', 'cron.pid', 'gateway.lock', 'processes.json')


def agent_running(client, box):
    container = client.containers.get('tx9-%s-agent' % box)
    return container.status == 'running'


# Fixtures.

@pytest.fixture(scope='module')
def workdir():
    path = tempfile.mkdtemp(prefix='tx9-it-portable-')
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope='module')
def source_box(built_image, playbooks, client, module_prefix):
    """A running box whose ~/workspace/rt holds every kind of file, a 50 MB random one among them."""
    name = module_prefix + '-src'
    result = playbooks.module('tx9_box', dict(name=name))
    succeeded(result, 'creating the source box')
    in_box_ok(client, name, ['python3', '-c', MAKE_TREE, TREE, str(BIG_FILE_SIZE)])
    yield dict(name=name)
    playbooks.module_ok('tx9_box', dict(name=name, state='absent'))


@pytest.fixture(scope='module')
def plain_archive(workdir, module_prefix):
    """An encrypted .tx9 made with tar, gpg and a hand-written metadata.json from a tree built on this host."""
    root = os.path.join(workdir, 'plain-root')
    files = make_home_tree(root)
    work = os.path.join(workdir, 'plain-work')
    os.makedirs(work)
    path = os.path.join(workdir, 'plain.tx9')
    metadata = plain_tool_tx9(path, root, PASSWORD, module_prefix + '-plain', work)
    return dict(path=path, root=root, files=files, metadata=metadata)


# Check mode.

def test_backup_in_check_mode_writes_nothing_and_leaves_the_box_running(source_box, playbooks, client, workdir):
    dest = os.path.join(workdir, 'check-dest')
    result = playbooks.module('tx9_backup', dict(name=source_box['name'], dest=dest, password=PASSWORD), '--check')
    succeeded(result, 'tx9_backup --check')
    assert result['changed'] is True and result['path'] is None
    assert not os.path.exists(dest)
    assert hb_status(client, source_box['name'])['quiesced'] is False


def test_a_backup_asked_to_disable_the_gateway_stops_it_first_and_keeps_it_disabled_and_check_mode_only_predicts(
        source_box, playbooks, client, workdir):
    box = source_box['name']
    marker = '/data/home/agent/.config/hermes-box/gateway-disabled'
    # A new box's gateway starts disabled; without its marker it counts as enabled (it cannot run here).
    in_box_ok(client, box, ['rm', '-f', marker])
    assert hb_status(client, box)['gateway']['enabled'] is True
    dest = os.path.join(workdir, 'gateway-dest')
    args = dict(name=box, dest=dest, encrypt=False, disable_gateway=True)

    checked = playbooks.module('tx9_backup', args, '--check')
    succeeded(checked, 'tx9_backup disable_gateway --check')
    assert (checked['gateway']['enabled'], checked['gateway']['state']) == (False, 'disabled')
    assert hb_status(client, box)['gateway']['enabled'] is True and not os.path.exists(dest)

    result = playbooks.module('tx9_backup', args)
    succeeded(result, 'tx9_backup disable_gateway')
    assert result['changed'] is True and os.path.isfile(result['path']) and result['quiesced'] is False
    assert (result['gateway']['enabled'], result['gateway']['running']) == (False, False)
    status = hb_status(client, box)
    assert status['gateway']['enabled'] is False and status['quiesced'] is False
    os.unlink(result['path'])


def test_import_in_check_mode_validates_everything_and_creates_nothing(plain_archive, playbooks, client, state_home,
                                                                       module_prefix):
    name = module_prefix + '-chk'
    result = playbooks.module('tx9_import', dict(path=plain_archive['path'], name=name, password=PASSWORD), '--check')
    succeeded(result, 'tx9_import --check')
    assert result['changed'] is True
    assert result['members'] >= 10
    assert nothing_left(client, state_home, name) == {}
    wrong = playbooks.module('tx9_import', dict(path=plain_archive['path'], name=name, password='not it'), '--check')
    assert wrong.get('failed') is True and wrong.get('cause') == 'BAD_PASSWORD', wrong
    assert 'passphrase does not decrypt' in wrong['msg'], wrong['msg']
    assert nothing_left(client, state_home, name) == {}


# Interop: archives made with plain tools import.

def test_an_archive_made_with_plain_tar_and_gpg_imports_and_arrives_quiesced_with_the_gateway_disabled(
        plain_archive, playbooks, client, module_prefix):
    name = module_prefix + '-plain'
    result = playbooks.module('tx9_import', dict(path=plain_archive['path'], password=PASSWORD))
    try:
        succeeded(result, 'importing the plain tar+gpg archive')
        assert result['box']['name'] == name
        workspace = listing(client, name, HOME + '/workspace')
        for rel, (data, mode) in plain_archive['files'].items():
            entry = workspace[os.path.relpath(rel, 'workspace')]
            assert entry['type'] == 'file' and entry['mode'] == '%04o' % mode, (rel, entry)
            assert entry['size'] == len(data) and (entry['uid'], entry['gid']) == (1001, 1001), (rel, entry)
        assert workspace['main-link'] == dict(type='symlink', target='proj/src/main.py', mode='0777', uid=1001, gid=1001)
        assert workspace['run-hard.sh']['hardlinks'] == ['proj/run.sh', 'run-hard.sh']
        # The tree had no markers: import armed both.
        assert in_box(client, name, ['test', '-e', HOME + '/.config/hermes-box/gateway-disabled'])[0] == 0
        assert hb_status(client, name)['quiesced'] is True
        assert result['box']['quiesced'] is True and result['box']['gateway_disabled'] is True
    finally:
        playbooks.module_ok('tx9_box', dict(name=name, state='absent'))


def test_an_archive_in_the_original_tx9_cli_shape_imports(built_image, playbooks, client, workdir, module_prefix):
    name = module_prefix + '-cli'
    path = os.path.join(workdir, 'from-the-cli.tx9')
    cli_tx9(path, name, PASSWORD, workdir)
    members = read_members(path)
    assert [(member_name, mode) for member_name, mode, _data in members] == [('metadata.json', 0o600), ('data.tar.gz.gpg', 0o600)]
    assert 'payload_sha256' not in json.loads(members[0][2].decode('utf-8'))
    result = playbooks.module('tx9_import', dict(path=path, password=PASSWORD))
    try:
        succeeded(result, 'importing the tx9 CLI archive')
        assert result['box']['name'] == name
        assert in_box_ok(client, name, ['cat', HOME + '/workspace/from-the-cli.md']) == 'made by the tx9 CLI\n'
        assert in_box_ok(client, name, ['readlink', HOME + '/workspace/tool-link']).strip() == 'tool'
        assert in_box_ok(client, name, ['stat', '-c', '%a %u', HOME + '/workspace/tool']).strip() == '755 1001'
        assert hb_status(client, name)['quiesced'] is True
    finally:
        playbooks.module_ok('tx9_box', dict(name=name, state='absent'))


# Wrong password and damage.

# Each damage and what its refusal must say: gpg's integrity check (MDC), the recorded checksum, or the gzip trailer.
DAMAGE_CASES = ('wrong-password', 'flipped-ciphertext', 'flipped-ciphertext-near-the-end', 'flipped-payload-original-metadata',
                'truncated-gzip', 'flipped-gzip-crc')
DAMAGE_SAYS = {'wrong-password': 'passphrase', 'flipped-ciphertext': 'integrity check', 'flipped-ciphertext-near-the-end': 'integrity check',
               'flipped-payload-original-metadata': 'SHA-256', 'truncated-gzip': 'gzip', 'flipped-gzip-crc': 'gzip'}


def unencrypted_tx9(path, box, data):
    """A .tx9 around an unencrypted payload, its metadata matching the payload's bytes (so only the gzip can fail)."""
    metadata = archive_metadata.new_metadata(box, 'tx9-box:0.1.0', False, hashlib.sha256(data).hexdigest(), len(data))
    write_container(path, [('metadata.json', json.dumps(metadata).encode('utf-8')), ('data.tar.gz', data)])


@pytest.fixture(scope='module')
def damaged_results(plain_archive, playbooks, workdir, module_prefix):
    """Every wrong-password and damaged import, run in one playbook run: {case: dict(name, cause, result)}."""
    stored = read_members(plain_archive['path'])[1][2]
    plain_gz = subprocess.run(['tar', '-cz', '--numeric-owner', '-f', '-', '-C', plain_archive['root'], '.'],
                              check=True, stdout=subprocess.PIPE).stdout
    damaged = os.path.join(workdir, 'damaged')
    os.makedirs(damaged)
    cases, imports = {}, []
    for number, case in enumerate(DAMAGE_CASES):
        name = '%s-bad%d' % (module_prefix, number)
        path = os.path.join(damaged, case + '.tx9')
        password, cause = PASSWORD, 'ARCHIVE_CORRUPT'
        if case == 'wrong-password':
            path, password, cause = plain_archive['path'], 'not the passphrase', 'BAD_PASSWORD'
        elif case == 'flipped-ciphertext':
            # The container checks out (size and SHA-256 follow the flip); OpenPGP's integrity check must catch it.
            rewrap(plain_archive['path'], path, flipped(stored, len(stored) // 2), fix_metadata=True)
        elif case == 'flipped-ciphertext-near-the-end':
            rewrap(plain_archive['path'], path, flipped(stored, len(stored) - 30), fix_metadata=True)
        elif case == 'flipped-payload-original-metadata':
            rewrap(plain_archive['path'], path, flipped(stored, len(stored) // 2), fix_metadata=False)
        elif case == 'truncated-gzip':
            unencrypted_tx9(path, name, plain_gz[:-8])
        else:
            unencrypted_tx9(path, name, flipped(plain_gz, len(plain_gz) - 6))
        imports.append(dict(path=path, name=name, password=password))
        cases[case] = dict(name=name, cause=cause)
    results = import_each(playbooks, imports)
    assert len(results) == len(DAMAGE_CASES)
    for case, result in zip(DAMAGE_CASES, results):
        cases[case]['result'] = result
    return cases


@pytest.mark.parametrize('case', DAMAGE_CASES)
def test_a_wrong_password_or_one_flipped_byte_is_refused_and_leaves_nothing(damaged_results, client, state_home, case):
    info = damaged_results[case]
    result = info['result']
    assert result.get('failed') is True, result
    assert result.get('cause') == info['cause'], (result.get('cause'), result.get('msg'))
    assert DAMAGE_SAYS[case] in result['msg'], result['msg']
    assert nothing_left(client, state_home, info['name']) == {}


# The unsafe corpus.

def test_every_archive_of_the_unsafe_corpus_is_refused_in_one_run_naming_its_member_before_any_object_is_made(
        built_image, playbooks, client, state_home, workdir, module_prefix):
    corpus_dir = os.path.join(workdir, 'corpus')
    os.makedirs(corpus_dir)
    cases = unsafe_corpus_and_refusals('/tmp/%s-outside' % module_prefix)
    encrypted_too = ('absolute-name', 'dot-dot-name', 'symlink-chain-escape', 'hardlink-to-escaping-symlink')
    cases += [(case[0] + '-encrypted',) + case[1:] for case in cases if case[0] in encrypted_too]
    imports, expected = [], []
    for number, (case, rule, data, member, says) in enumerate(cases):
        box = '%s-u%02d' % (module_prefix, number)
        path = os.path.join(corpus_dir, '%02d-%s.tx9' % (number, case))
        encrypted = case.endswith('-encrypted')
        if encrypted:
            plain = os.path.join(corpus_dir, 'payload.gz')
            with open(plain, 'wb') as handle:
                handle.write(data)
            gpg_symmetric(plain, plain + '.gpg', PASSWORD)
            with open(plain + '.gpg', 'rb') as handle:
                data = handle.read()
            os.unlink(plain)
            os.unlink(plain + '.gpg')
        metadata = archive_metadata.new_metadata(box, 'tx9-box:0.1.0', encrypted, hashlib.sha256(data).hexdigest(), len(data))
        write_container(path, [('metadata.json', json.dumps(metadata).encode('utf-8')), (archive.payload_member(encrypted), data)])
        imports.append(dict(path=path, password=PASSWORD))
        expected.append((case, rule, box, shown(member), says))
    before = dict((name, sha256_file(os.path.join(corpus_dir, name))) for name in os.listdir(corpus_dir))

    with CreateEvents(client) as events:
        # One object made on purpose, so the event stream is seen to report what is made.
        control = client.volumes.create('tx9-%s-u-control' % module_prefix)
        control.remove()
        results = import_each(playbooks, imports)
    made = events.named('tx9-%s-u' % module_prefix)

    assert len(results) == len(expected)
    wrong = []
    for (case, rule, box, member, says), result in zip(expected, results):
        msg = result.get('msg') or ''
        if not result.get('failed') or result.get('cause') != 'ARCHIVE_UNSAFE':
            wrong.append('%s (%s): %s %s' % (case, rule, result.get('cause'), msg))
        elif result.get('member') != member or '"%s"' % member not in msg or says not in msg:
            wrong.append('%s (%s) should name "%s" and say "%s": %s' % (case, rule, member, says, msg))
        left = nothing_left(client, state_home, box)
        if left:
            wrong.append('%s left %s' % (case, left))
    assert not wrong, '\n'.join(wrong)
    assert made == ['volume ' + control.name], 'the refused imports made Docker objects, if only for a moment: %s' % made
    assert dict((name, sha256_file(os.path.join(corpus_dir, name))) for name in os.listdir(corpus_dir)) == before


# Same second.

def test_a_backup_in_a_second_that_already_has_an_archive_takes_a_dash_2_name_and_overwrites_nothing(
        source_box, playbooks, workdir):
    box = source_box['name']
    dest = os.path.join(workdir, 'same-second')
    os.makedirs(dest)
    start = archive_metadata.utc_now() - datetime.timedelta(seconds=2)
    names = placeholder_names(box, start, 120)
    for name in names:
        with open(os.path.join(dest, name), 'wb') as handle:
            handle.write(('placeholder %s\n' % name).encode('utf-8'))

    result = playbooks.module('tx9_backup', dict(name=box, dest=dest, encrypt=False))

    succeeded(result, 'the unencrypted backup')
    written = os.path.basename(result['path'])
    assert written not in names
    assert written[:-len('.tx9')].rsplit('-', 1)[1] == '2' and written[:-len('-2.tx9')] + '.tx9' in names, written
    for name in names:
        with open(os.path.join(dest, name), 'rb') as handle:
            assert handle.read() == ('placeholder %s\n' % name).encode('utf-8'), name
    assert sorted(os.listdir(dest)) == sorted(names + [written])
    assert archive.read_archive(result['path']).metadata.encrypted is False


# SIGKILL at points across the flow.

class BackupRun:
    """One tx9_backup playbook run in its own session, watched through what it leaves in dest and the lock."""

    def __init__(self, playbooks, state_home, box, dest, workdir, marker):
        self.dest = dest
        self.marker = marker
        self.lock = os.path.join(state_home, 'locks', '%s.lock' % box)
        self.before = set(os.listdir(dest))
        self.vars = os.path.join(workdir, 'kill-vars.json')
        self.log_path = os.path.join(workdir, 'kill-output.log')
        with open(self.vars, 'w') as handle:
            json.dump(dict(module_args=dict(name=box, dest=dest, password=PASSWORD),
                           result_path=os.path.join(workdir, 'kill-result.json')), handle)
        self.log = open(self.log_path, 'w')
        self.started = time.time()
        self.work_seen = None
        self.proc = subprocess.Popen([os.path.join(BIN, 'ansible-playbook'), os.path.join(PLAYS, 'tx9_backup.yml'), '-e', '@' + self.vars],
                                     cwd=REPO_ROOT, env=playbooks.env(), stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def new_entries(self, prefix):
        return [os.path.join(self.dest, e) for e in os.listdir(self.dest) if e.startswith(prefix) and e not in self.before]

    def workdirs(self):
        found = self.new_entries('.tx9-backup-')
        if found and self.work_seen is None:
            self.work_seen = time.time()
        return found

    def payload_bytes(self):
        total = 0
        for work in self.workdirs():
            for name in os.listdir(work) if os.path.isdir(work) else ():
                try:
                    total += os.path.getsize(os.path.join(work, name))
                except OSError:
                    pass
        return total

    def staging(self):
        """Staging files of the publish step, in dest or in the run's private work directory."""
        found = [e for e in self.new_entries('.') if '.staging-' in e]
        for work in self.workdirs():
            try:
                found.extend(os.path.join(work, e) for e in os.listdir(work) if '.staging-' in e)
            except OSError:
                pass
        return found

    def stage(self):
        """What the run had left in dest when it was killed, for the failure message."""
        found = {}
        for work in self.workdirs():
            found[os.path.basename(work)] = sorted(os.listdir(work)) if os.path.isdir(work) else None
        found['staging'] = [os.path.basename(e) for e in self.staging()]
        return found

    def output(self):
        with open(self.log_path) as handle:
            return handle.read()[-4000:]

    def kill_when(self, ready, what, limit=300):
        """SIGKILL the whole process group as soon as ready(self) holds; fails when the run ends first."""
        deadline = time.time() + limit
        while not ready(self):
            assert self.proc.poll() is None, 'the backup ended (%s) before %s:\n%s' % (self.proc.returncode, what, self.output())
            assert time.time() < deadline, 'never reached %s' % what
            time.sleep(0.005)
        tree = kill_tree(self.proc.pid)
        elapsed = time.time() - self.started
        self.proc.wait(timeout=60)
        self.log.close()
        deadline = time.time() + 30
        while any(alive(pid) for pid in tree):
            assert time.time() < deadline, 'processes of the killed run are still alive: %s' % sorted(tree)
            time.sleep(0.05)
        return '%s, killed after %.2f s (%d processes) with %s' % (what, elapsed, len(tree), self.stage())


KILL_POINTS = [
    ('0.4 s after ansible-playbook started', lambda run: time.time() - run.started > 0.4),
    ('as soon as the box lock is held', lambda run: lock_held(run.lock)),
    ('as soon as hb down left its quiesce marker (checkpoint, manifest)', lambda run: os.path.lexists(run.marker)),
    ('right after the payload work started', lambda run: bool(run.workdirs())),
    ('0.3 s into the payload work', lambda run: bool(run.workdirs()) and time.time() - run.work_seen > 0.3),
    ('with 20 MB of payload written', lambda run: run.payload_bytes() > 20 * 1024 * 1024),
    ('while the archive is staged for publishing', lambda run: bool(run.staging())),
]


BALLAST_MB = 400
AGENT_UID = 1001


def kill_at_every_point(playbooks, client, state_home, workdir, box, dest, marker):
    for what, ready in KILL_POINTS:
        run = BackupRun(playbooks, state_home, box, dest, workdir, marker)
        killed = run.kill_when(ready, what)
        assert tx9_names(dest) == [], '%s: %s' % (killed, tx9_names(dest))
        present = playbooks.module('tx9_box', dict(name=box))
        succeeded(present, 'state=present after the kill %s' % killed)
        assert agent_running(client, box), killed
        assert hb_status(client, box)['quiesced'] is False, 'still quiesced after state=present; the kill: %s' % killed


def test_sigkill_at_any_point_leaves_no_tx9_file_and_the_next_present_run_resumes_the_box(
        source_box, playbooks, client, state_home, workdir):
    box = source_box['name']
    dest = os.path.join(workdir, 'killed')
    os.makedirs(dest)
    # The quiesce marker, seen from this host through the volume's mount point.
    volume = client.volumes.get('tx9-%s-agent-data' % box).attrs['Mountpoint']
    marker = os.path.join(volume, 'home', 'agent', '.config', 'hermes-box', 'quiesced')
    assert os.path.isdir(os.path.dirname(marker)), 'the agent volume is not visible from this host at %s' % volume
    # Incompressible ballast, so the payload work lasts long enough to be killed in its middle.
    ballast = os.path.join(volume, 'home', 'agent', 'kill-ballast.bin')
    with open(ballast, 'wb') as handle:
        for _chunk in range(BALLAST_MB // 8):
            handle.write(os.urandom(8 * 1024 * 1024))
    os.chown(ballast, AGENT_UID, AGENT_UID)
    try:
        kill_at_every_point(playbooks, client, state_home, workdir, box, dest, marker)
    finally:
        os.unlink(ballast)

    result = playbooks.module('tx9_backup', dict(name=box, dest=dest, password=PASSWORD))
    succeeded(result, 'the backup after the kills')
    assert tx9_names(dest) == [result['path']]
    assert sha256_file(result['path']) == result['sha256']
    assert not [e for e in os.listdir(dest) if e.startswith('.tx9-backup-')], os.listdir(dest)
    assert sorted(os.listdir(dest)) == [os.path.basename(result['path'])], 'a killed run left files behind'
    assert hb_status(client, box)['quiesced'] is False


# The round trip.

@pytest.fixture(scope='module')
def round_trip(source_box, playbooks, client, state_home, workdir, module_prefix):
    """Source listing, Hermes db, encrypted backup, delete, import under another name: everything the tests compare."""
    box = source_box['name']
    present = playbooks.module('tx9_box', dict(name=box))
    succeeded(present, 'state=present on the source')
    db_path, journal_mode, wal_size = in_box_ok(client, box, [HERMES_PYTHON, '-c', WRITE_HERMES_DB, str(HERMES_MESSAGES)]).split()
    assert journal_mode == 'wal' and int(wal_size) > 0, (journal_mode, wal_size)
    tree_before = listing(client, box, TREE)
    home_before = listing(client, box, HOME, skip=NOT_COMPARED)
    token_before = box_token(state_home, box)
    dest = os.path.join(workdir, 'round-trip')

    backup_started = time.time()
    backup = playbooks.module('tx9_backup', dict(name=box, dest=dest, password=PASSWORD))
    succeeded(backup, 'the round-trip backup')
    backup['window'] = (int(backup_started), int(time.time()) + 1)
    source_status = hb_status(client, box)
    removed = playbooks.module('tx9_box', dict(name=box, state='absent'))
    succeeded(removed, 'deleting the source')
    assert nothing_left(client, state_home, box) == {}

    new_name = module_prefix + '-rt'
    imported = playbooks.module('tx9_import', dict(path=backup['path'], name=new_name, password=PASSWORD))
    succeeded(imported, 'importing the round-trip archive')
    return dict(source=box, name=new_name, backup=backup, imported=imported, source_status=source_status, db_path=db_path,
                tree_before=tree_before, home_before=home_before, token_before=token_before,
                tree_after=listing(client, new_name, TREE), home_after=listing(client, new_name, HOME, skip=NOT_COMPARED))


def test_round_trip_backup_reports_the_archive_and_resumes_the_source(round_trip):
    backup = round_trip['backup']
    assert backup['encrypted'] is True and backup['changed'] is True
    assert os.path.basename(backup['path']).startswith(round_trip['source'] + '-')
    assert sha256_file(backup['path']) == backup['sha256'] and os.path.getsize(backup['path']) == backup['size']
    assert backup['size'] > BIG_FILE_SIZE
    assert os.stat(backup['path']).st_mode & 0o777 == 0o600
    assert round_trip['source_status']['quiesced'] is False


def test_round_trip_restores_every_file_link_and_mode(round_trip):
    before, after = round_trip['tree_before'], round_trip['tree_after']
    assert before['big.bin']['size'] == BIG_FILE_SIZE
    assert before['hard-run.sh']['hardlinks'] == ['a/b/c/hard-run-deep.sh', 'hard-run.sh', 'run.sh']
    assert set(after) == set(before), (sorted(set(before) - set(after)), sorted(set(after) - set(before)))
    different = dict((path, (before[path], after[path])) for path in before if before[path] != after[path])
    assert not different, different


def test_round_trip_leaves_out_caches_dependency_trees_and_bytecode(round_trip, client):
    for rel in LEFT_OUT:
        assert in_box(client, round_trip['name'], ['test', '-e', TREE + '/' + rel])[0] == 1, rel


def test_round_trip_keeps_the_rest_of_the_home(round_trip):
    before = dict((path, entry) for path, entry in round_trip['home_before'].items()
                  if os.path.basename(path) not in RUNTIME_FILES)
    after = round_trip['home_after']
    missing = sorted(set(before) - set(after))
    assert not missing, missing
    different = {}
    for path, entry in before.items():
        mine, theirs = dict(entry), dict(after[path])
        if path in REWRITTEN:
            for key in ('size', 'sha256'):
                mine.pop(key, None)
                theirs.pop(key, None)
        if mine != theirs:
            different[path] = (entry, after[path])
    assert not different, different


def test_round_trip_hermes_database_passes_integrity_check_with_the_writes_that_were_only_in_its_wal(round_trip, client):
    report = json.loads(in_box_ok(client, round_trip['name'], [HERMES_PYTHON, '-c', READ_HERMES_DB, round_trip['db_path']]))
    assert report['integrity'] == [['ok']]
    assert report['messages'] == HERMES_MESSAGES
    assert report['last'] == 'message %d \u00fc\u2603' % (HERMES_MESSAGES - 1)
    assert (report['title'], report['meta']) == ('written last', 'only in the WAL')


def test_round_trip_import_mints_a_fresh_token(round_trip, state_home):
    token = box_token(state_home, round_trip['name'])
    assert token and token != round_trip['token_before']


def test_round_trip_import_arrives_quiesced_with_its_gateway_disabled(round_trip, client):
    name = round_trip['name']
    assert round_trip['imported']['box']['quiesced'] is True and round_trip['imported']['box']['gateway_disabled'] is True
    assert in_box(client, name, ['test', '-e', HOME + '/.config/hermes-box/gateway-disabled'])[0] == 0
    status = hb_status(client, name)
    assert status['quiesced'] is True, status
    assert agent_running(client, name)


def test_encrypted_backup_payload_decrypts_with_plain_gpg_and_lists_with_plain_tar(round_trip, workdir):
    backup = round_trip['backup']
    out = os.path.join(workdir, 'plain-read')
    os.makedirs(out)
    listed = subprocess.run(['tar', '-tvf', backup['path']], check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout
    assert [line.split()[-1] for line in listed.splitlines()] == ['metadata.json', 'data.tar.gz.gpg']
    subprocess.run(['tar', '-xf', backup['path'], '-C', out], check=True)
    with open(os.path.join(out, 'metadata.json')) as handle:
        metadata = json.load(handle)
    assert metadata['box'] == round_trip['source'] and metadata['payload'] == 'data.tar.gz.gpg'
    assert sha256_file(os.path.join(out, 'data.tar.gz.gpg')) == metadata['payload_sha256']
    decrypted = gpg_decrypt(os.path.join(out, 'data.tar.gz.gpg'), os.path.join(out, 'data.tar.gz'), PASSWORD)
    assert decrypted.returncode == 0, decrypted.stderr
    names = subprocess.run(['tar', '-tz', '-f', os.path.join(out, 'data.tar.gz')], check=True, stdout=subprocess.PIPE,
                           universal_newlines=True).stdout.splitlines()
    assert './home/agent/workspace/rt/big.bin' in names
    assert './home/agent/workspace/rt/\u00dcbung \u2013 \u65e5\u672c\u8a9e/gr\u00fc\u00dfe.txt' in names
    assert not [name for name in names if '/node_modules' in name or name.endswith(('.db-wal', '.db-shm'))]
    with tarfile.open(os.path.join(out, 'data.tar.gz'), 'r:gz') as tar:
        big = tar.getmember('./home/agent/workspace/rt/big.bin')
        assert big.size == BIG_FILE_SIZE


def test_importing_under_a_name_in_use_is_refused_with_name_exists_and_touches_nothing(round_trip, playbooks, client, state_home):
    name = round_trip['name']
    container_id = client.containers.get('tx9-%s-agent' % name).id
    token = box_token(state_home, name)
    result = playbooks.module('tx9_import', dict(path=round_trip['backup']['path'], name=name, password=PASSWORD))
    assert result.get('failed') is True and result.get('cause') == 'NAME_EXISTS', (result.get('cause'), result.get('msg'))
    assert 'box named %s already exists' % name in result['msg'], result['msg']
    assert client.containers.get('tx9-%s-agent' % name).id == container_id
    assert agent_running(client, name)
    assert box_token(state_home, name) == token


def test_round_trip_import_rewires_mcp_with_the_fresh_token(round_trip, client):
    status = hb_status(client, round_trip['name'])
    assert status['executor']['mcp_ok'] is True, status['executor']
    assert status['wiring']['current'] is True and status['wiring']['stale'] == [], status['wiring']


def test_through_an_engine_it_cannot_tell_is_local_the_round_trip_uses_dockers_streams_and_carries_the_same_tree(
        round_trip, playbooks, client, state_home, workdir, module_prefix):
    box, new_name = round_trip['name'], module_prefix + '-tcp'
    dest = os.path.join(workdir, 'over-tcp')
    started = int(time.time())
    with EngineOverTcp() as engine:
        backup = playbooks.module('tx9_backup', dict(name=box, dest=dest, encrypt=False, docker_host=engine.url))
        succeeded(backup, 'the backup over TCP')
        imported = playbooks.module('tx9_import', dict(path=backup['path'], name=new_name, docker_host=engine.url))
        succeeded(imported, 'the import over TCP')
        assert engine.connections > 0
    try:
        # No helper container read the volume: the tar came out of the agent's exec stream.
        assert helper_events(client, box, (started, int(time.time()) + 1)) == []
        assert listing(client, new_name, TREE) == round_trip['tree_after']
        assert sha256_file(backup['path']) == backup['sha256']
        # Neither import left a pipe behind (the round trip's went through one).
        assert [entry for entry in os.listdir(os.path.join(state_home, 'imports')) if entry.startswith('.tx9-pipe-')] == []
    finally:
        playbooks.module_ok('tx9_box', dict(name=new_name, state='absent'))


def helper_events(client, box, window):
    """The engine's events, in window, of the helper containers that read box's volume for a backup."""
    labels = ['tx9.box=%s' % box, 'tx9.role=backup']
    events = client.api.events(since=window[0], until=window[1], decode=True,
                               filters={'type': 'container', 'label': labels})
    return [event['Action'] for event in events if event['Action'] in ('create', 'start', 'die', 'destroy')]


def test_on_the_engine_of_this_host_a_backup_reads_the_volume_through_a_helper_container_it_then_removes(round_trip, client):
    assert helper_events(client, round_trip['source'], round_trip['backup']['window']) == ['create', 'start', 'die', 'destroy']
