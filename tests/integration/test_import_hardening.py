# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Imports extract exactly what the validator saw, through the real engine.

Every tar shape that Python's tarfile, GNU tar and Go's archive/tar read
differently is refused by our validator with its own cause (never by
Docker), and creates nothing; the canary payloads built around those shapes
are proved live by handing one to Docker raw. Members with setuid, setgid or
sticky bits or a root owner arrive without them. An import killed at each of
its steps leaves nothing that blocks the next import of the same archive under
the same name, and the restore container is hardened while it works.
"""

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import threading
import time
import uuid

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._archive import envelope as archive
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import metadata as archive_metadata
from ansible_collections.col_agents.tx9.plugins.module_utils._names import box_labels, object_names
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import AttachedStdin
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.importer import STAGE, create_restore_container
from ansible_collections.col_agents.tx9.tests.unit.archive import tar_shapes as shapes
from ansible_collections.col_agents.tx9.tests.processes import alive, kill_tree
from conftest import BIN, PLAYS, REPO_ROOT, lock_held, remove_boxes
from portable_kit import AGENT_UID, CreateEvents, import_each, in_box_ok, labelled, nothing_left, write_container

PASSWORD = 'kill me softly \u2603'
CAUSES = dict((shape.id, shape.expected_cause) for shape in shapes.SHAPES)
KILL_POINTS = ('validation', 'extraction', 'promote', 'box-creation', 'readiness-gate')
BALLAST_MB = 160


def tx9_file(path, box, payload, encrypted=False):
    """A .tx9 holding payload (gzip, or OpenPGP bytes when encrypted) under this collection's metadata."""
    metadata = archive_metadata.new_metadata(box, 'tx9-box:0.1.0', encrypted, hashlib.sha256(payload).hexdigest(), len(payload))
    write_container(path, [('metadata.json', json.dumps(metadata).encode('utf-8')),
                           (archive.payload_member(encrypted), payload)])
    return path


# The differential shapes.

def test_every_tar_shape_parsers_read_differently_is_refused_by_our_validator_and_docker_is_never_asked(
        built_image, playbooks, client, state_home, box_prefix, tmp_path):
    cases = [(shape.id, shape.build(), shape.expected_cause, shape.expected_member) for shape in shapes.SHAPES]
    cases += [(shape_id + '-canary', shapes.canary(shape_id), CAUSES[shape_id], None) for shape_id in shapes.CANARY_IDS]
    imports, expected = [], []
    for number, (case, data, cause, member) in enumerate(cases):
        box = '%s-s%03d' % (box_prefix, number)
        path = tx9_file(str(tmp_path / ('%03d.tx9' % number)), box, gzip.compress(data, mtime=0))
        imports.append(dict(path=path, name=box))
        expected.append((case, box, cause, member))
    with CreateEvents(client) as events:
        results = import_each(playbooks, imports)

    assert len(results) == len(expected)
    wrong = []
    for (case, box, cause, member), result in zip(expected, results):
        if not result.get('failed') or result.get('cause') != cause:
            wrong.append('%s: %s %s' % (case, result.get('cause'), result.get('msg')))
        elif member is not None and member not in result.get('msg', ''):
            wrong.append('%s: the refusal does not name %s: %s' % (case, member, result.get('msg')))
        left = nothing_left(client, state_home, box)
        if left:
            wrong.append('%s left %s' % (case, left))
    assert not wrong, '\n'.join(wrong)
    assert events.labelled(box_prefix) == []


def stage_directory_tar():
    """A tiny tar that makes the staging directory under /data, as the old import uploaded it first."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode='w', format=tarfile.GNU_FORMAT) as tar:
        info = tarfile.TarInfo(STAGE.rsplit('/', 1)[1])
        info.type = tarfile.DIRTYPE
        info.mode = 0o700
        tar.addfile(info)
    return buffer.getvalue()


def test_a_canary_payload_handed_to_docker_raw_replaces_the_restore_entrypoint_so_the_canary_is_live(built_image, client):
    # What the corpus guards against, shown on a throwaway container made as the old import made it.
    name = 'tx9-it-canary-%s' % uuid.uuid4().hex[:8]
    volume = client.volumes.create(name=name)
    container = client.containers.create(built_image['tag'], name=name, user='root', network_mode='none',
                                         entrypoint=['/opt/tx9/bin/hb', 'restore-promote', STAGE],
                                         volumes={name: {'bind': '/data', 'mode': 'rw'}})
    try:
        container.put_archive('/data', stage_directory_tar())
        try:
            container.put_archive(STAGE, gzip.compress(shapes.canary('pax-path-then-gnu-longname'), mtime=0))
        except Exception:
            pass  # Docker may fail after it has written the escape; what it wrote is the point.
        stream, _stat = container.get_archive('/opt/tx9/bin/hb')
        with tarfile.open(fileobj=io.BytesIO(b''.join(stream))) as tar:
            entrypoint = tar.extractfile(tar.getmembers()[0]).read()
        assert b'PWNED' in entrypoint
    finally:
        container.remove(force=True)
        volume.remove(force=True)


# Modes and owners.

def special_payload():
    """Root-owned members with setuid, setgid and sticky bits, in the home and outside it."""
    return gzip.compress(shapes.payload(
        shapes.regular('home/agent/suid-root', b'#!/bin/sh\n', mode=0o4755, uid=0, gid=0),
        shapes.regular('home/agent/sgid', b'#!/bin/sh\n', mode=0o2755, uid=0, gid=0),
        shapes.directory('home/agent/sticky/', mode=0o1777, uid=0, gid=0),
        shapes.directory('opt/', uid=0, gid=0),
        shapes.regular('opt/tool', b'#!/bin/sh\n', mode=0o6755, uid=0, gid=0)), mtime=0)


def test_setuid_setgid_sticky_bits_and_root_owners_are_dropped_on_restore_and_counted(
        built_image, playbooks, client, box_prefix, tmp_path):
    box = '%s-modes' % box_prefix
    path = tx9_file(str(tmp_path / 'modes.tx9'), box, special_payload())

    result = playbooks.module('tx9_import', dict(path=path, name=box))

    assert not result.get('failed'), result.get('msg')
    assert result['special_modes_dropped'] == 4
    restored = ['/data/home/agent/suid-root', '/data/home/agent/sgid', '/data/home/agent/sticky', '/data/opt',
                '/data/opt/tool']
    modes = in_box_ok(client, box, ['stat', '-c', '%a %u %g %n'] + restored, user='root').split('\n')
    assert sorted(line for line in modes if line) == sorted([
        '755 %d %d /data/home/agent/suid-root' % (AGENT_UID, AGENT_UID),
        '755 %d %d /data/home/agent/sgid' % (AGENT_UID, AGENT_UID),
        '777 %d %d /data/home/agent/sticky' % (AGENT_UID, AGENT_UID),
        '755 %d %d /data/opt' % (AGENT_UID, AGENT_UID),
        '755 %d %d /data/opt/tool' % (AGENT_UID, AGENT_UID)])
    assert in_box_ok(client, box, ['find', '/data', '-xdev', '-perm', '/6000'], user='root').strip() == ''


# A stream cut short.

def restore_volume_after(client, box, image, stream_bytes, end_mark):
    """Feed stream_bytes to a restore container made as the import makes it; (exit code, its output, /data's listing)."""
    api = client.api
    volume = object_names(box)['agent_volume']
    api.create_volume(name=volume, labels=box_labels(box))
    helper = create_restore_container(api, box, image, end_mark)
    try:
        stdin = AttachedStdin(api, helper, 300)
        api.start(helper)
        stdin.write(stream_bytes)
        stdin.close_write()
        stdin.close()
        code = api.wait(helper, timeout=300)['StatusCode']
        output = api.logs(helper).decode('utf-8', 'replace')
    finally:
        api.remove_container(helper, force=True)
    listing = client.containers.run(image, ['-A', '/data'], entrypoint=['ls'], user='root', remove=True,
                                    network_mode='none', volumes={volume: {'bind': '/data', 'mode': 'ro'}})
    return code, output, sorted(listing.decode().split())


def test_a_stream_cut_at_a_member_boundary_is_never_promoted_and_a_whole_one_is(built_image, client, box_prefix, tmp_path):
    path = tx9_file(str(tmp_path / 'cut.tx9'), 'cut', special_payload())
    end_mark = '.tx9-stream-end-%s' % uuid.uuid4().hex
    whole = b''.join(archive.CanonicalStream(archive.read_archive(path), None, None, AGENT_UID, AGENT_UID, end_mark=end_mark))
    # The end mark's header block and the two end blocks: without them the tar ends cleanly after the last member.
    cut = whole[:-3 * 512]

    cut_code, cut_output, cut_listing = restore_volume_after(client, '%s-cut' % box_prefix, built_image['tag'], cut, end_mark)
    code, output, listing = restore_volume_after(client, '%s-whole' % box_prefix, built_image['tag'], whole, end_mark)

    # The volume starts with the image's own /data (Docker copies it into a new volume); promoting
    # replaces it with the staged tree (the payload's opt among it) and removes the staging directory.
    assert cut_code == 3 and 'ended before its end mark' in cut_output, cut_output
    assert '.tx9-restore-stage' in cut_listing and 'opt' not in cut_listing
    assert code == 0, output
    assert '.tx9-restore-stage' not in listing and 'opt' in listing


# A killed import.

class Events(threading.Thread):
    """The engine's events, collected as they come, until close()."""

    def __init__(self, client):
        super().__init__(daemon=True)
        self.stream = client.api.events(decode=True)
        self.seen = []

    def run(self):
        try:
            for event in self.stream:
                self.seen.append(event)
        except Exception:
            pass

    def close(self):
        self.stream.close()

    def first(self, kind, action, name):
        for event in list(self.seen):
            actor = event.get('Actor') or {}
            if event.get('Type') == kind and event.get('Action') == action and \
                    (actor.get('Attributes') or {}).get('name') == name:
                return event
        return None


def reached(point, box, client, events, lock):
    """Whether the running import has reached point (and what to record there)."""
    if point == 'validation':
        volumes = [volume.name for volume in client.volumes.list(filters={'name': 'tx9-%s-agent-data' % box})]
        return lock_held(lock) and not volumes, None
    if point == 'extraction':
        event = events.first('container', 'create', 'tx9-%s-restore' % box)
        if event is None:
            return False, None
        # Read at once: through a named pipe the whole stream may pass in well under a second.
        host_config = client.api.inspect_container(event['Actor']['ID'])['HostConfig']
        time.sleep(0.2)
        return True, host_config
    if point == 'promote':
        return events.first('container', 'start', 'tx9-%s-restore' % box) is not None, None
    if point == 'box-creation':
        return events.first('network', 'create', 'tx9-%s' % box) is not None, None
    started = events.first('container', 'start', 'tx9-%s-agent' % box)
    if started is not None:
        # Killed at once: the gate looks every quarter second, and Executor answers within seconds of starting.
        time.sleep(0.1)
    return started is not None, None


def kill_import_at(point, playbooks, client, state_home, box, path, workdir):
    """Start tx9_import of path as box, SIGKILL it when it reaches point; what was seen there."""
    args = os.path.join(workdir, '%s.json' % box)
    with open(args, 'w') as handle:
        json.dump(dict(module_args=dict(path=path, name=box, password=PASSWORD),
                       result_path=os.path.join(workdir, '%s.result' % box)), handle)
    lock = os.path.join(state_home, 'locks', '%s.lock' % box)
    events = Events(client)
    events.start()
    log = open(os.path.join(workdir, '%s.log' % box), 'w')
    # Its own session, so that killing its process groups never reaches this test.
    proc = subprocess.Popen([os.path.join(BIN, 'ansible-playbook'), os.path.join(PLAYS, 'tx9_import.yml'), '-e', '@' + args],
                            cwd=REPO_ROOT, env=playbooks.env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 600
        seen = None
        while time.time() < deadline:
            hit, seen = reached(point, box, client, events, lock)
            if hit:
                break
            assert proc.poll() is None, 'the import ended before it reached %s (see %s)' % (point, log.name)
            time.sleep(0.02)
        else:
            raise AssertionError('the import never reached %s' % point)
        tree = kill_tree(proc.pid)
        proc.wait()
        deadline = time.time() + 30
        while any(alive(pid) for pid in tree) and time.time() < deadline:
            time.sleep(0.05)
        return dict(seen=seen, left=labelled(client, box),
                    marker=os.path.exists(os.path.join(state_home, 'imports', '%s.json' % box)))
    finally:
        events.close()
        log.close()
        if proc.poll() is None:
            kill_tree(proc.pid)
            proc.wait()


@pytest.fixture(scope='module')
def ballast_archive(built_image, tmp_path_factory):
    """An encrypted archive with incompressible ballast, so each step lasts long enough to be killed in."""
    from portable_kit import make_home_tree, plain_tool_tx9
    work = str(tmp_path_factory.mktemp('killed'))
    root = os.path.join(work, 'root')
    make_home_tree(root)
    with open(os.path.join(root, 'home', 'agent', 'ballast.bin'), 'wb') as handle:
        for _chunk in range(BALLAST_MB // 8):
            handle.write(os.urandom(8 * 1024 * 1024))
    path = os.path.join(work, 'ballast.tx9')
    plain_tool_tx9(path, root, PASSWORD, 'ballast', work)
    shutil.rmtree(root)
    return dict(path=path, work=work)


@pytest.fixture(scope='module')
def killed_imports(ballast_archive, playbooks, client, state_home):
    """Per kill point: what the killed import left, and the result of importing again under the same name."""
    prefix = 'it%s' % uuid.uuid4().hex[:6]
    outcomes = {}
    try:
        for number, point in enumerate(KILL_POINTS):
            box = '%s-k%d' % (prefix, number)
            outcome = kill_import_at(point, playbooks, client, state_home, box, ballast_archive['path'],
                                     ballast_archive['work'])
            outcome['again'] = playbooks.module('tx9_import', dict(path=ballast_archive['path'], name=box,
                                                                   password=PASSWORD))
            outcome['after'] = labelled(client, box)
            outcome['marker_after'] = os.path.exists(os.path.join(state_home, 'imports', '%s.json' % box))
            outcome['lock_held'] = lock_held(os.path.join(state_home, 'locks', '%s.lock' % box))
            outcome['state_file'] = os.path.exists(os.path.join(state_home, 'boxes', '%s.env' % box))
            outcomes[point] = dict(outcome, box=box)
            if point == KILL_POINTS[-1] and not outcome['again'].get('failed'):
                # A real backup of a real box, for the canonical listing test.
                outcomes['backup'] = playbooks.module('tx9_backup', dict(name=box, dest=ballast_archive['work'],
                                                                         password=PASSWORD))
            remove_boxes(client, box)
        yield outcomes
    finally:
        remove_boxes(client, prefix)


@pytest.mark.parametrize('point', KILL_POINTS)
def test_an_import_killed_at_each_step_leaves_nothing_that_blocks_the_same_import_again(killed_imports, point):
    outcome = killed_imports[point]
    box = outcome['box']
    again = outcome['again']

    assert not again.get('failed'), (again.get('cause'), again.get('msg'))
    assert sorted(outcome['after']['containers']) == ['tx9-%s-agent' % box, 'tx9-%s-executor' % box]
    assert sorted(outcome['after']['volumes']) == ['tx9-%s-agent-data' % box, 'tx9-%s-exec-data' % box]
    assert outcome['after']['networks'] == ['tx9-%s' % box]
    assert outcome['state_file'] and not outcome['marker_after'] and not outcome['lock_held']
    if point != 'validation':
        assert outcome['marker'], 'the killed import left no marker of its objects: %s' % outcome['left']
        assert again['actions'][0].startswith('remove what an unfinished import')
    else:
        assert outcome['left'] == dict(containers=[], networks=[], volumes=[]) and not outcome['marker']


def test_the_restore_container_has_a_read_only_root_no_network_no_new_privileges_and_three_capabilities(killed_imports):
    config = killed_imports['extraction']['seen']

    assert config['ReadonlyRootfs'] is True
    assert config['NetworkMode'] == 'none'
    assert 'no-new-privileges' in (config.get('SecurityOpt') or [])
    assert config['CapDrop'] == ['ALL']
    assert sorted(config['CapAdd']) == ['CHOWN', 'DAC_OVERRIDE', 'FOWNER']
    # On this host's engine its input is the named pipe bound into it, and nothing else is.
    assert [(mount['Type'], mount['Target']) for mount in config.get('Mounts') or []] == [('bind', '/tx9-pipe')]


# The canonical stream Docker is given.

def tv_entry(line):
    """(type, name, link target) of one line of GNU tar -tv with numeric owners and literal names."""
    fields = line.split(None, 5)
    kind, rest = fields[0][0], fields[5]
    if kind == 'l':
        name, _arrow, target = rest.partition(' -> ')
    elif kind == 'h':
        name, _link, target = rest.partition(' link to ')
    else:
        name, target = rest, ''
    return {'d': 'd', '-': 'f', 'l': 'l', 'h': 'h'}[kind], name.rstrip('/') or '.', target


def canonical_listing_matches(path, password, workdir):
    """The canonical stream of the archive at path, listed by GNU tar, against the members the validator counted."""
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpg import Gpg
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarheader import normalise
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.validator import iter_members
    read = archive.read_archive(path)
    gpg = Gpg() if read.encrypted else None
    stream = archive.CanonicalStream(read, password, gpg, AGENT_UID, AGENT_UID)
    out = os.path.join(workdir, 'canonical.tar')
    with open(out, 'wb') as handle:
        for chunk in stream:
            handle.write(chunk)
    summary = stream.check()
    with archive.plain_payload(read, password, Gpg() if read.encrypted else None) as plain:
        validated = [(member.kind, normalise(member.name) or '.',
                      normalise(member.linkname) if member.kind == 'h' else member.linkname)
                     for member in iter_members(plain)]
    listing = subprocess.run(['tar', '--numeric-owner', '--quoting-style=literal', '-tvf', out], check=True,
                             stdout=subprocess.PIPE, universal_newlines=True).stdout.splitlines()
    os.unlink(out)
    assert len(validated) == summary.members
    return [tv_entry(line) for line in listing], validated


@pytest.mark.parametrize('made_by', ['tx9_backup', 'plain-tar-and-gpg', 'the-original-cli'])
def test_gnu_tar_lists_the_canonical_stream_as_exactly_the_members_the_validator_counted(
        made_by, killed_imports, ballast_archive, tmp_path):
    from portable_kit import cli_tx9
    if made_by == 'tx9_backup':
        backup = killed_imports['backup']
        assert not backup.get('failed'), backup.get('msg')
        path = backup['path']
    elif made_by == 'plain-tar-and-gpg':
        path = ballast_archive['path']
    else:
        path = str(tmp_path / 'cli.tx9')
        cli_tx9(path, 'cli', PASSWORD, str(tmp_path))

    listed, validated = canonical_listing_matches(path, PASSWORD, str(tmp_path))

    assert listed == validated
