# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Integration fixtures: a real Docker engine, the real box image, real playbooks.

The image is built once per run through playbooks/build-image.yml; every
object a test makes (boxes, images, files) gets a random name and is removed
afterwards; the state home is a private directory (TX9_HOME). A test changes
or removes only what it made: the suite plants a box named t1 and an unused
tx9-box:0.0.9 image (see bystanders.py) and fails when either changed.
"""


import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

import docker
import pytest

from bystanders import Bystanders

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
IMAGE = 'tx9-box:0.1.0'
PLAYS = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'plays')


class Playbooks:
    """Runs ansible-playbook from the repository root against localhost."""

    def __init__(self, state_home):
        self.state_home = state_home

    def env(self, extra=None):
        env = dict(os.environ)
        env.update(ANSIBLE_CONFIG=os.path.join(REPO_ROOT, 'ansible.cfg'), TX9_HOME=self.state_home,
                   ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0', PATH=BIN + os.pathsep + env.get('PATH', ''))
        env.update(extra or {})
        return env

    def run(self, playbook, *args, **kwargs):
        """Run a playbook; returns the CompletedProcess (stdout+stderr in .stdout)."""
        check = kwargs.pop('check', True)
        argv = [os.path.join(BIN, 'ansible-playbook'), playbook] + list(args)
        proc = subprocess.run(argv, cwd=REPO_ROOT, env=self.env(kwargs.pop("env", None)), check=False,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                              timeout=kwargs.pop('timeout', 1800))
        if check and proc.returncode != 0:
            raise AssertionError('ansible-playbook %s failed (%d):\n%s' % (' '.join(argv[1:]), proc.returncode,
                                                                           proc.stdout[-6000:]))
        return proc

    def module(self, module, args, *flags, **kwargs):
        """Call one tx9 module through a real play; returns its result dict."""
        return self.module_with_output(module, args, *flags, **kwargs)[0]

    def module_with_output(self, module, args, *flags, **kwargs):
        """Call one tx9 module through a real play; returns (result dict, ansible-playbook output)."""
        work = tempfile.mkdtemp(prefix='tx9-it-call-')
        try:
            extra = os.path.join(work, 'vars.json')
            result_path = os.path.join(work, 'result.json')
            with open(extra, 'w') as handle:
                json.dump(dict(module_args=args, result_path=result_path), handle)
            proc = self.run(os.path.join(PLAYS, '%s.yml' % module), '-e', '@' + extra, *flags, **kwargs)
            with open(result_path) as handle:
                return json.load(handle), proc.stdout
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def module_ok(self, module, args, *flags, **kwargs):
        """module(), failing the test unless the module ran and succeeded."""
        return self.module_ok_with_output(module, args, *flags, **kwargs)[0]

    def module_ok_with_output(self, module, args, *flags, **kwargs):
        """module_with_output(), failing the test unless the module ran and succeeded."""
        result, output = self.module_with_output(module, args, *flags, **kwargs)
        succeeded(result, '%s %s' % (module, ' '.join(flags)))
        return result, output

    def popen(self, playbook, *args):
        argv = [os.path.join(BIN, 'ansible-playbook'), playbook] + list(args)
        return subprocess.Popen(argv, cwd=REPO_ROOT, env=self.env(), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, universal_newlines=True)


def succeeded(result, what):
    """Assert a module ran and did not fail, showing its cause and message (not the whole result) when it did."""
    assert not result.get('skipped'), '%s did not run: %s' % (what, result.get('skip_reason') or result)
    assert not result.get('failed'), '%s failed with %s: %s' % (what, result.get('cause'), (result.get('msg') or '')[-2000:])
    return result


def random_prefix():
    """A random name prefix for a test's objects, so they never meet a person's box, image or file."""
    return 'it%s' % uuid.uuid4().hex[:6]


def recap(output):
    """The PLAY RECAP counters of localhost as a dict of ints."""
    match = re.search(r'^localhost\s+:\s+(.*)$', output, re.MULTILINE)
    assert match, 'no PLAY RECAP in:\n%s' % output[-3000:]
    return dict((k, int(v)) for k, v in re.findall(r'(\w+)=(\d+)', match.group(1)))


def lock_held(path):
    """Whether someone holds the flock of a box's lock file.

    Read from /proc/locks, never by trying the lock: a probe that took the lock for an instant
    could make the very operation a test watches fail with BOX_BUSY.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return False
    wanted = '%02x:%02x:%d' % (os.major(info.st_dev), os.minor(info.st_dev), info.st_ino)
    with open('/proc/locks') as handle:
        for line in handle:
            fields = line.split()
            # "N: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE START END"; a waiter's line has "->" after N.
            if len(fields) >= 6 and fields[1] == 'FLOCK' and fields[5] == wanted:
                return True
    return False


def box_token(state_home, box):
    """The box's token, from its state file in the tests' state home."""
    with open(os.path.join(state_home, 'boxes', '%s.env' % box)) as handle:
        for line in handle:
            if line.startswith('EXECUTOR_MCP_TOKEN='):
                return line.strip().split('=', 1)[1]
    raise AssertionError('no token in the state file of %s' % box)


@pytest.fixture(scope='session')
def client():
    return docker.from_env(version='auto', timeout=120)


@pytest.fixture(scope='session')
def state_home():
    path = tempfile.mkdtemp(prefix='tx9-it-home-')
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope='session')
def playbooks(state_home):
    return Playbooks(state_home)


@pytest.fixture
def own_playbooks():
    """Playbooks with a state home of the test's own (.state_home), where no other test's state files are."""
    path = tempfile.mkdtemp(prefix='tx9-it-own-home-')
    yield Playbooks(path)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope='session')
def built_image(playbooks, client):
    """The box image, built through the real playbook once per run.

    TX9_IT_IMAGE=TAG builds (or reuses, when its assets are unchanged) that
    tag from this checkout through the tx9_image module instead, so a run can
    leave tx9-box:0.1.0 alone on a shared engine.
    """
    started = time.time()
    tag = os.environ.get('TX9_IT_IMAGE') or IMAGE
    if tag == IMAGE:
        proc = playbooks.run('playbooks/build-image.yml', timeout=3600)
    else:
        argv = [os.path.join(BIN, 'ansible'), 'localhost', '-m', 'col_agents.tx9.tx9_image', '-a', 'image=%s' % tag]
        proc = subprocess.run(argv, cwd=REPO_ROOT, env=playbooks.env(), check=False, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, timeout=3600)
        assert proc.returncode == 0, 'building %s failed:\n%s' % (tag, proc.stdout[-6000:])
    os.environ['TX9_TEST_IMAGE'] = tag
    image = client.images.get(tag)
    return dict(tag=tag, id=image.id, output=proc.stdout, seconds=time.time() - started)


@pytest.fixture
def box_prefix(client):
    """A random box-name prefix; every object of boxes with it is removed afterwards."""
    prefix = random_prefix()
    yield prefix
    remove_boxes(client, prefix)


@pytest.fixture(scope='module')
def module_prefix(client):
    """A random box-name prefix for the boxes a test module's fixtures share; all their objects go afterwards."""
    prefix = random_prefix()
    yield prefix
    remove_boxes(client, prefix)


@pytest.fixture(scope='session', autouse=True)
def bystanders(client):
    """A box t1 and an unused tx9-box:0.0.9 on the engine, as a person may have them; the run fails if either changed."""
    with Bystanders(client) as planted:
        yield planted
        changed = planted.changes()
    assert not changed, 'the suite changed objects it did not make:\n' + '\n'.join(changed)


def remove_boxes(client, prefix):
    label = {'label': 'tx9.box'}
    for container in client.containers.list(all=True, filters=label):
        if container.labels.get('tx9.box', '').startswith(prefix):
            container.remove(force=True)
    for network in client.networks.list(filters=label):
        if network.attrs['Labels'].get('tx9.box', '').startswith(prefix):
            network.remove()
    for volume in client.volumes.list(filters=label):
        if (volume.attrs.get('Labels') or {}).get('tx9.box', '').startswith(prefix):
            volume.remove(force=True)
