# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The README's "A fleet from nothing", run as written on bed hosts whose Docker engines were never
started and that hold no image: its inventory (the bed's connection variables added) and its
commands, read from the README itself so the walk-through and this test cannot drift apart.

The image step builds on the controller's engine (where tx9-box:0.1.0 is current, so the build is a
no-op) and ships the image to the hosts: a bed host never builds."""


import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile

import pytest
import yaml

from conftest import BIN, REPO_ROOT, recaps

SECTION = 'A fleet from nothing'
IMAGE = 'tx9-box:0.1.0'
# The variables that say how to reach a host: the bed's own replace the README's.
CONNECTION = ('ansible_host', 'ansible_user', 'ansible_port', 'ansible_ssh_private_key_file',
              'ansible_ssh_common_args', 'ansible_python_interpreter')


def readme_section(title):
    """The text of one `## title` section of the README, up to the next `## ` heading."""
    with open(os.path.join(REPO_ROOT, 'README.md')) as handle:
        text = handle.read()
    match = re.search(r'^## %s\n(.*?)(?=^## )' % re.escape(title), text, re.MULTILINE | re.DOTALL)
    assert match, 'README.md has no section "## %s"' % title
    return match.group(1)


def fenced(section, language):
    """The fenced blocks of one language in a section."""
    return re.findall(r'^```%s\n(.*?)^```' % language, section, re.MULTILINE | re.DOTALL)


def walkthrough():
    """(the inventory as the README gives it, its commands as argv lists), from the README."""
    section = readme_section(SECTION)
    inventories, scripts = fenced(section, 'yaml'), fenced(section, 'bash')
    assert len(inventories) == 1 and len(scripts) == 1, 'the section has one yaml and one bash block'
    lines = [line for line in scripts[0].replace('\\\n', ' ').splitlines() if line.strip() and not line.startswith('#')]
    commands = [shlex.split(line) for line in lines]
    assert commands and all(argv[0] == 'ansible-playbook' for argv in commands), commands
    return yaml.safe_load(inventories[0]), commands


def bed_inventory(fleet, readme):
    """The README's inventory on the bed: its hosts in order become the bed's, reached the bed's way,
    every other variable kept. Returns (inventory, {README host name: bed host})."""
    with open(fleet.inventory) as handle:
        bed = json.load(handle)['fleet']
    group = readme['fleet']
    names = list(group['hosts'])
    assert len(names) <= len(fleet.hosts), 'the bed has fewer hosts than the walk-through'
    hosts, placed = {}, {}
    for name, host in zip(names, fleet.hosts):
        own = dict((k, v) for k, v in (group['hosts'][name] or {}).items() if k not in CONNECTION)
        own.update(bed['hosts'][host.name])
        hosts[name] = own
        placed[name] = host
    group_vars = dict((k, v) for k, v in (group.get('vars') or {}).items() if k not in CONNECTION)
    group_vars.update(bed['vars'])
    return {'fleet': {'hosts': hosts, 'vars': group_vars}}, placed


def engine_answers(fleet, host):
    return fleet.ssh(host, ['sh', '-c', 'timeout 20 docker info >/dev/null 2>&1'])[0] == 0


def image_id(fleet, host):
    code, output = fleet.ssh(host, ['docker', 'image', 'inspect', '--format', '{{.Id}}', IMAGE])
    return output.strip() if code == 0 else None


def build_logs(fleet, host):
    code, output = fleet.ssh(host, ['sh', '-c', 'ls -1 /root/.tx9/logs 2>/dev/null || true'])
    assert code == 0, output
    return [name for name in output.split() if name.startswith('image-build-')]


def box_state(fleet, host, name):
    """The agent container's state (running, exited, ...), '' when it does not exist."""
    code, output = fleet.ssh(host, ['sh', '-c', 'docker inspect --format "{{.State.Status}}" "$1" 2>/dev/null || true',
                                    'sh', 'tx9-%s-agent' % name])
    assert code == 0, output
    return output.strip()


def run(fleet, workdir, argv):
    """One walk-through command as written, in a directory holding its hosts.yml; (exit code, output)."""
    proc = subprocess.run([os.path.join(BIN, argv[0])] + argv[1:], cwd=workdir, env=fleet.env(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=3600, check=False)
    return proc.returncode, proc.stdout


@pytest.fixture(scope='module')
def from_nothing(fleet, controller_image):
    """A bed made anew with its hosts' data purged (no engine started, no image), the README's inventory
    on it, and every command of the walk-through run once, in order, then all of them again."""
    fleet.bed.down(purge=True)
    fleet.bed.up()
    readme, commands = walkthrough()
    inventory, placed = bed_inventory(fleet, readme)
    before = dict((name, engine_answers(fleet, host)) for name, host in placed.items())
    workdir = tempfile.mkdtemp(prefix='tx9-fleet-from-nothing-')
    try:
        with open(os.path.join(workdir, 'hosts.yml'), 'w') as handle:
            json.dump(inventory, handle, indent=2)
        first = [run(fleet, workdir, argv) for argv in commands]
        for argv, (code, output) in zip(commands, first):
            assert code == 0, '%s failed (%d):\n%s' % (' '.join(argv), code, output[-6000:])
        again = [run(fleet, workdir, argv) for argv in commands]
        yield dict(readme=readme, commands=commands, placed=placed, engines_before=before, first=first, again=again)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if all(engine_answers(fleet, host) for host in placed.values()):
            fleet.clear_boxes()
        for name, host in placed.items():
            for box in readme['fleet']['hosts'][name].get('tx9_boxes', []):
                fleet.ssh(host, ['sh', '-c', 'rm -f /root/.tx9/boxes/"$1".*', 'sh', box])


def test_the_walkthrough_starts_on_hosts_whose_docker_engine_is_not_started(from_nothing):
    assert from_nothing['engines_before'] and not any(from_nothing['engines_before'].values()), \
        from_nothing['engines_before']


def test_the_image_step_readies_every_host_and_loads_the_controllers_image_without_a_build_there(
        fleet, from_nothing):
    controller = subprocess.run(['docker', 'image', 'inspect', '--format', '{{.Id}}', IMAGE], stdout=subprocess.PIPE,
                                universal_newlines=True, check=True).stdout.strip()
    for name, host in from_nothing['placed'].items():
        assert engine_answers(fleet, host), name
        assert image_id(fleet, host) == controller, name
        assert build_logs(fleet, host) == [], name
    output = from_nothing['first'][0][1]
    assert 'Make the host ready' in output
    assert 'Building %s' % IMAGE not in output


def test_each_host_runs_the_box_the_inventory_places_on_it_and_the_table_lists_them(fleet, from_nothing):
    table = from_nothing['first'][-1][1]
    for name, host in from_nothing['placed'].items():
        box = from_nothing['readme']['fleet']['hosts'][name]['tx9_boxes'][0]
        assert box_state(fleet, host, box) == 'running', (name, box)
        others = [h for h in from_nothing['placed'].values() if h is not host]
        assert all(box_state(fleet, other, box) == '' for other in others), box
        assert re.search(r'^.*\b%s\s+%s\s+running\b' % (re.escape(name), re.escape(box)), table, re.MULTILINE), table


def test_running_the_walkthrough_again_changes_nothing_anywhere(from_nothing):
    for argv, (code, output) in zip(from_nothing['commands'], from_nothing['again']):
        assert code == 0, '%s failed (%d):\n%s' % (' '.join(argv), code, output[-6000:])
        changed = dict((host, counters['changed']) for host, counters in recaps(output).items())
        assert not any(changed.values()), (' '.join(argv), changed, output[-4000:])
