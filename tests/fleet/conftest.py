# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet fixtures: the multi-host test bed of tests/fleet/bed.py, driven over real SSH.

The bed is brought up fresh once per session and torn down at its end, when a
test fails, on SIGINT (pytest's KeyboardInterrupt) and on SIGTERM, and at
interpreter exit as a last resort.
"""


import atexit
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bed as bedlib  # noqa: E402  pylint: disable=wrong-import-position

REPO_ROOT = bedlib.REPO_ROOT
BIN = os.path.dirname(sys.executable)
PLAYS = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'plays')


class Fleet:
    """The bed's hosts and ansible-playbook over SSH with the bed's inventory."""

    def __init__(self, bed):
        self.bed = bed
        self.hosts = bed.hosts
        self.inventory = bed.inventory

    def env(self):
        env = dict(os.environ)
        env.update(ANSIBLE_CONFIG=os.path.join(REPO_ROOT, 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
                   ANSIBLE_FORCE_COLOR='0', PATH=BIN + os.pathsep + env.get('PATH', ''))
        env.pop('TX9_HOME', None)
        env.pop('DOCKER_HOST', None)
        return env

    def playbook(self, playbook, *args, **kwargs):
        """ansible-playbook against the bed's inventory; returns its output (fails the test on failure)."""
        argv = [os.path.join(BIN, 'ansible-playbook'), '-i', self.inventory, playbook] + list(args)
        env = dict(self.env(), **kwargs.pop('env', {}))
        proc = subprocess.run(argv, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=kwargs.pop('timeout', 1200), check=False)
        if kwargs.pop('check', True) and proc.returncode != 0:
            raise AssertionError('ansible-playbook %s failed (%d):\n%s' % (' '.join(argv[1:]), proc.returncode,
                                                                           proc.stdout[-6000:]))
        return proc.stdout

    def module(self, module, target, args, timeout=1200):
        """Run one tx9 module on target (a host name or pattern); returns {host: result}."""
        work = tempfile.mkdtemp(prefix='tx9-fleet-call-')
        try:
            extra = os.path.join(work, 'vars.json')
            with open(extra, 'w') as handle:
                json.dump(dict(tx9_fleet_target=target, tx9_fleet_module=module, module_args=args,
                               result_dir=work), handle)
            self.playbook(os.path.join(PLAYS, 'module.yml'), '-e', '@' + extra, timeout=timeout)
            results = {}
            for name in os.listdir(work):
                if name.endswith('.json') and name != 'vars.json':
                    with open(os.path.join(work, name)) as handle:
                        results[name[:-len('.json')]] = json.load(handle)
            return results
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def prepare(self):
        """Every host prepared by the host role over SSH, no tx9 object left from an earlier run, the box image loaded."""
        self.playbook(os.path.join(PLAYS, 'host.yml'))
        self.clear_boxes()
        self.bed.load_image()

    def clear_boxes(self):
        """Remove every tx9 object an interrupted earlier run left in the bed hosts' engines."""
        for host in self.hosts:
            for kind in ('container', 'network', 'volume'):
                code, output = self.ssh(host, ['docker', kind, 'ls', '-q', '--filter', 'label=tx9'] +
                                        (['-a'] if kind == 'container' else []))
                assert code == 0, output
                if output.split():
                    force = [] if kind == 'network' else ['-f']
                    code, output = self.ssh(host, ['docker', kind, 'rm'] + force + output.split(), timeout=300)
                    assert code == 0, output

    def ssh(self, host, argv, timeout=120):
        """A command on a bed host over SSH; returns (exit code, output)."""
        proc = self.bed.ssh(host, argv, check=False, timeout=timeout)
        return proc.returncode, proc.stdout + proc.stderr


def inventory(fleet, config, *args):
    """ansible-inventory over the bed's inventory and then the plugin's configuration; (stdout, stderr)."""
    argv = [os.path.join(BIN, 'ansible-inventory'), '-i', fleet.inventory, '-i', config] + list(args)
    proc = subprocess.run(argv, cwd=REPO_ROOT, env=fleet.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'are not in the inventory' not in proc.stderr, proc.stderr
    return proc.stdout, proc.stderr


def graph_groups(text):
    """{group: [hosts directly in it]} from ansible-inventory --graph."""
    groups, current = {}, None
    for line in text.splitlines():
        match = re.match(r'^[ |]*--@(\S+):$', line) or re.match(r'^@(\S+):$', line)
        if match:
            current = groups.setdefault(match.group(1), [])
        elif current is not None and re.match(r'^[ |]*--[^@]', line):
            current.append(line.split('--', 1)[1].strip())
    return dict((name, sorted(hosts)) for name, hosts in groups.items())


def plain(value):
    """ansible-inventory's JSON with its untrusted-string markers ({"__ansible_unsafe": text}) read as text."""
    if isinstance(value, dict):
        if set(value) == set(['__ansible_unsafe']):
            return value['__ansible_unsafe']
        return dict((key, plain(item)) for key, item in value.items())
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def recaps(output):
    """{host: {counter: int}} from a PLAY RECAP."""
    found = {}
    for host, counters in re.findall(r'^(\S+)\s+:\s+(ok=.*)$', output, re.MULTILINE):
        found[host] = dict((k, int(v)) for k, v in re.findall(r'(\w+)=(\d+)', counters))
    assert found, 'no PLAY RECAP in:\n%s' % output[-3000:]
    return found


def token_of(fleet, host, name):
    """The box token in the host's state home, '' when the host has no state file for the box
    (compared, never printed)."""
    code, output = fleet.ssh(host, ['sh', '-c', 'test ! -e "$1" || sed -n "s/^EXECUTOR_MCP_TOKEN=//p" "$1"', 'sh',
                                    '/root/.tx9/boxes/%s.env' % name])
    assert code == 0
    return output.strip()


def leftovers(fleet, host, name):
    """Docker objects labelled for the box, its state file and its migration files on host."""
    found = []
    for kind in ('container', 'volume', 'network'):
        code, output = fleet.ssh(host, ['docker', kind, 'ls', '-q', '--filter', 'label=tx9.box=%s' % name] +
                                 (['-a'] if kind == 'container' else []))
        assert code == 0, output
        found += ['%s %s' % (kind, ref) for ref in output.split()]
    code, output = fleet.ssh(host, ['sh', '-c', 'ls -d "$1" "$2" 2>/dev/null; true', 'sh',
                                    '/root/.tx9/boxes/%s.env' % name, '/root/.tx9/migrate/%s' % name])
    return found + output.split()


@pytest.fixture(scope='session')
def fleet():
    """A fresh bed (down, then up), torn down however the session ends; without root every test fails, saying why."""
    problem = bedlib.root_problem(os.geteuid())
    if problem:
        pytest.fail(problem, pytrace=False)
    bed = bedlib.Bed(count=int(os.environ.get('TX9_FLEET_HOSTS', bedlib.DEFAULT_COUNT)))
    state = dict(down=False)

    def teardown():
        if not state['down']:
            state['down'] = True
            bed.down()

    def on_sigterm(signum, frame):
        teardown()
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    atexit.register(teardown)
    try:
        bed.down()
        bed.up()
        yield Fleet(bed)
    finally:
        teardown()
        signal.signal(signal.SIGTERM, previous)


@pytest.fixture(scope='session')
def controller_image():
    """The box image on the controller's engine, built through the real playbook only when missing."""
    probe = subprocess.run(['docker', 'image', 'inspect', bedlib.IMAGE], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)
    if probe.returncode != 0:
        argv = [os.path.join(BIN, 'ansible-playbook'), 'playbooks/build-image.yml']
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, 'ansible.cfg'),
                   PATH=BIN + os.pathsep + os.environ.get('PATH', ''))
        proc = subprocess.run(argv, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=3600, check=False)
        assert proc.returncode == 0, 'building %s failed:\n%s' % (bedlib.IMAGE, proc.stdout[-6000:])
    return bedlib.IMAGE


@pytest.fixture(scope='module')
def bed(fleet, controller_image):
    """Every host prepared by the host role, the box image loaded, no box left from an earlier run."""
    fleet.prepare()
    return fleet


@pytest.fixture
def box(bed):
    """A box on the first host with 1 MiB of files (movecheck.make_box), removed from every host afterwards;
    a module with a box fixture of its own uses that one."""
    from movecheck import make_box
    name = make_box(bed, 'mv')
    yield name
    bed.module('tx9_box', 'fleet', dict(name=name, state='absent'))


@pytest.fixture
def scratch():
    """A directory of the controller for one test's files (inventories, crafted archives), removed afterwards."""
    path = tempfile.mkdtemp(prefix='tx9-fleet-scratch-')
    yield path
    shutil.rmtree(path, ignore_errors=True)
