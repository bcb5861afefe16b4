# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build once, run everywhere, over real SSH: the image on the first host is exported, moved
through the controller and loaded on the second without a build there; a damaged archive is
refused before docker load."""


import json
import os
import re
import shutil
import tempfile
import time
import uuid

import pytest

from conftest import PLAYS, REPO_ROOT, recaps

IMAGE = 'tx9-box:0.1.0'
ARCHIVE_DIR = '/root/.tx9/images'


def image_id(fleet, host):
    """The ID host's engine gives IMAGE, or None when it has no such image."""
    code, output = fleet.ssh(host, ['docker', 'image', 'inspect', '--format', '{{.Id}}', IMAGE])
    return output.strip() if code == 0 else None


def image_label(fleet, host, label):
    code, output = fleet.ssh(host, ['docker', 'image', 'inspect', '--format',
                                    '{{index .Config.Labels "%s"}}' % label, IMAGE])
    assert code == 0, output
    return output.strip()


def build_logs(fleet, host):
    """The image build logs in host's state home."""
    code, output = fleet.ssh(host, ['sh', '-c', 'ls -1 /root/.tx9/logs 2>/dev/null || true'])
    assert code == 0, output
    return [name for name in output.split() if name.startswith('image-build-')]


def image_events(fleet, host, since, action):
    """The image events of one action (load, tag, ...) host's engine saw since a UNIX time."""
    code, output = fleet.ssh(host, ['docker', 'events', '--since', str(int(since)), '--until', str(int(time.time()) + 1),
                                    '--filter', 'type=image', '--filter', 'event=%s' % action,
                                    '--format', '{{.Action}} {{.Actor.ID}}'])
    assert code == 0, output
    return output.splitlines()


def remove_image(fleet, host):
    code, output = fleet.ssh(host, ['docker', 'image', 'rm', IMAGE], timeout=300)
    assert code == 0, output
    assert image_id(fleet, host) is None


@pytest.fixture(scope='module')
def source_and_target(fleet, controller_image):
    """The first host with the box image, the second without it (the bed loads it everywhere; it is removed
    there); the second gets it back at the end, so other fleet tests find it on every host."""
    fleet.prepare()
    source, target = fleet.hosts[0], fleet.hosts[1]
    remove_image(fleet, target)
    yield source, target
    fleet.bed.load_image()


def test_a_damaged_archive_is_refused_before_docker_load_and_the_engine_is_left_without_the_image(
        fleet, source_and_target):
    source, target = source_and_target
    local = tempfile.mkdtemp(prefix='tx9-fleet-image-')
    exported_path = ARCHIVE_DIR + '/damaged-test.tar.gz'
    moved_path = '/tmp/tx9-fleet-damaged.tar.gz'
    try:
        exported = fleet.module('tx9_image', source.name, dict(source='present', export_path=exported_path),
                                timeout=1800)[source.name]
        assert not exported.get('failed'), exported
        assert exported['exported'] is True and exported['archive']['image_id'] == image_id(fleet, source)
        code, output = fleet.ssh(source, ['sha256sum', exported_path])
        assert code == 0 and output.split()[0] == exported['archive']['sha256'], output
        assert exported['built'] is False and build_logs(fleet, source) == []

        fleet.playbook(os.path.join(PLAYS, 'move.yml'), '-e', 'source=%s' % source.name, '-e', 'target=%s' % target.name,
                       '-e', 'src=%s' % exported_path, '-e', 'local_dir=%s' % local, '-e', 'dest=%s' % moved_path,
                       timeout=1800)
        # One byte in the middle of the copy, flipped on the target host.
        code, output = fleet.ssh(target, [os.path.join(REPO_ROOT, '.venv', 'bin', 'python'), '-c',
                                          'import sys\nwith open(sys.argv[1], "r+b") as f:\n'
                                          '    f.seek(int(sys.argv[2])); b = f.read(1)\n'
                                          '    f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0x01]))',
                                          moved_path, str(exported['archive']['size'] // 2)])
        assert code == 0, output

        started = time.time() - 1
        refused = fleet.module('tx9_image', target.name, dict(
            source='archive', archive_path=moved_path, archive_sha256=exported['archive']['sha256'],
            image_id=exported['archive']['image_id']))[target.name]
        assert refused.get('failed') is True, refused
        assert refused['cause'] == 'IMAGE_ARCHIVE_CORRUPT', refused
        assert exported['archive']['sha256'] in refused['msg'] and 'nothing was loaded' in refused['msg']
        assert image_id(fleet, target) is None
        assert image_events(fleet, target, started, 'load') == []
    finally:
        fleet.ssh(source, ['rm', '-f', exported_path, exported_path + '.json'])
        fleet.ssh(target, ['rm', '-f', moved_path])
        shutil.rmtree(local, ignore_errors=True)


def test_the_image_on_one_host_is_loaded_on_another_without_a_build_there_and_a_second_run_changes_nothing(
        fleet, source_and_target):
    source, target = source_and_target
    if image_id(fleet, target) is not None:
        remove_image(fleet, target)
    wanted = image_id(fleet, source)
    stage = tempfile.mkdtemp(prefix='tx9-fleet-stage-')
    # tx9_image_build=false: the bed's image comes from the machine's engine and may have been built
    # from other assets than this checkout's, and a bed host must never build (it has no registry).
    args = ['-e', 'tx9_hosts=fleet', '-e', 'tx9_image_build_host=%s' % source.name, '-e', 'tx9_image_build=false',
            '-e', 'tx9_box_image_stage_dir=%s' % stage]
    try:
        started = time.time() - 1
        first = fleet.playbook(os.path.join(REPO_ROOT, 'playbooks', 'build-image.yml'), *args, timeout=3000)
        assert image_id(fleet, target) == wanted
        # Loaded, not built: the target's engine saw a load, and the target has no build log.
        assert len(image_events(fleet, target, started, 'load')) == 1
        assert build_logs(fleet, target) == []
        assert image_events(fleet, source, started, 'load') == []
        first_recap = recaps(first)
        assert first_recap[target.name]['changed'] >= 1 and first_recap[target.name]['failed'] == 0
        # Each host says which image it has: the same ID and assets everywhere.
        said = dict((host, (image, assets)) for host, image, assets in re.findall(
            r'^ok: \[(\S+)\] => \{\n\s+"msg": "%s is (\S+), assets (\w+)' % re.escape(IMAGE), first, re.MULTILINE))
        assets = image_label(fleet, source, 'tx9.assets')
        assert said == {source.name: (wanted, assets), target.name: (wanted, assets)}, first[-3000:]
        # The copies and the export are gone; nothing is left on the controller either.
        for host in (source, target):
            code, output = fleet.ssh(host, ['sh', '-c', 'ls -A %s 2>/dev/null || true' % ARCHIVE_DIR])
            assert code == 0 and output.strip() == '', output
        assert os.listdir(stage) == []

        second = fleet.playbook(os.path.join(REPO_ROOT, 'playbooks', 'build-image.yml'), *args, timeout=1200)
        for name, counters in recaps(second).items():
            assert counters['changed'] == 0 and counters['failed'] == 0, (name, second[-3000:])
        assert len(image_events(fleet, target, started, 'load')) == 1
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def test_a_host_holding_the_older_images_layers_gets_only_the_new_layer_and_runs_the_new_image(
        fleet, source_and_target):
    # The usual upgrade: the new image is the old one plus what changed on top, and the other host runs the old one.
    source, target = source_and_target
    fleet.bed.load_image()
    newer = 'tx9-box:0.1.0-layer%s' % uuid.uuid4().hex[:6]
    marker = uuid.uuid4().hex
    stage = tempfile.mkdtemp(prefix='tx9-fleet-stage-')
    args = ['-e', 'tx9_hosts=fleet', '-e', 'tx9_image_build_host=%s' % source.name, '-e', 'tx9_image_build=false',
            '-e', 'tx9_box_image=%s' % newer, '-e', 'tx9_image_keep_archive=true',
            '-e', 'tx9_box_image_stage_dir=%s' % stage]
    try:
        code, output = fleet.ssh(source, ['sh', '-c', 'printf "FROM %s\\nRUN echo $2 > /marker\\n" "$1" | '
                                          'docker build -q -t "$3" -', 'sh', IMAGE, marker, newer], timeout=300)
        assert code == 0, output
        code, output = fleet.ssh(source, ['docker', 'image', 'inspect', '--format', '{{len .RootFS.Layers}} {{.Id}}',
                                          newer])
        assert code == 0, output
        count, wanted = output.split()

        fleet.playbook(os.path.join(REPO_ROOT, 'playbooks', 'build-image.yml'), *args, timeout=1800)

        code, output = fleet.ssh(target, ['docker', 'run', '--rm', '--entrypoint', 'cat', newer, '/marker'])
        assert code == 0 and output.strip() == marker, output
        code, output = fleet.ssh(target, ['docker', 'image', 'inspect', '--format', '{{.Id}}', newer])
        assert output.strip() == wanted, output
        # The export left out every layer the target held (all but the new one) and is a few kilobytes.
        exports = [name for name in os.listdir(stage) if name.endswith('.tar.gz')]
        assert len(exports) == 1 and exports[0].endswith('-%d.tar.gz' % (int(count) - 1)), exports
        assert os.path.getsize(os.path.join(stage, exports[0])) < 1024 * 1024
        code, output = fleet.ssh(source, ['sh', '-c', 'cat %s/*.json' % ARCHIVE_DIR])
        assert code == 0 and json.loads(output)['omitted_layers'] == int(count) - 1, output
    finally:
        for host in (source, target):
            fleet.ssh(host, ['sh', '-c', 'docker image rm "$1"; rm -rf %s' % ARCHIVE_DIR, 'sh', newer], timeout=300)
        shutil.rmtree(stage, ignore_errors=True)
