# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/create-box.yml with box options given as -e variables: the box gets them, a host directory is
mounted, and a variable that looks like a box option but is none is warned about."""


import json
import os
import shutil
import tempfile
import uuid

import pytest

from conftest import recap, remove_boxes

GIB = 1024 ** 3


@pytest.fixture
def create_name(client, playbooks):
    """A box name of this test, prefixed create-; the box and its state file are removed afterwards."""
    name = 'create-%s' % uuid.uuid4().hex[:6]
    yield name
    playbooks.module('tx9_box', dict(name=name, state='absent'))
    remove_boxes(client, name)


@pytest.fixture
def share():
    path = tempfile.mkdtemp(prefix='tx9-create-share-')
    with open(os.path.join(path, 'hello.txt'), 'w') as handle:
        handle.write('from the host\n')
    os.chmod(path, 0o755)
    os.chmod(os.path.join(path, 'hello.txt'), 0o644)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_create_box_gives_the_box_the_limits_budget_and_mounts_of_its_variables_and_warns_of_a_misspelt_one(
        built_image, playbooks, client, create_name, share):
    mounts = json.dumps(dict(mounts=[dict(source=share, target='/mnt/share', read_only=True)]))
    proc = playbooks.run('playbooks/create-box.yml', '-e', 'box_name=%s' % create_name,
                         '-e', 'tx9_box_image=%s' % built_image['tag'], '-e', 'agent_memory=3g', '-e', 'agent_cpus=2',
                         '-e', 'agent_volume_budget=50g', '-e', 'agent_memroy=1g', '-e', mounts)
    output = ' '.join(proc.stdout.split())
    assert 'The variable agent_memroy is no box option of the create_box playbook and changes nothing; ' \
           'did you mean agent_memory?' in output, proc.stdout[-4000:]
    assert 'Box %s is running.' % create_name in proc.stdout

    agent = client.containers.get('tx9-%s-agent' % create_name)
    assert agent.attrs['HostConfig']['Memory'] == 3 * GIB
    assert agent.attrs['HostConfig']['NanoCpus'] == 2 * 10 ** 9
    bound = [m for m in agent.attrs['Mounts'] if m['Destination'] == '/mnt/share']
    assert len(bound) == 1 and bound[0]['Source'] == os.path.realpath(share) and bound[0]['RW'] is False, agent.attrs['Mounts']
    seen = agent.exec_run(['cat', '/mnt/share/hello.txt'], user='agent')
    assert seen.exit_code == 0 and seen.output == b'from the host\n'

    box = playbooks.module_ok('tx9_box', dict(name=create_name))['box']
    assert box['resources']['agent_volume_budget'] == 50 * GIB, box['resources']
    assert box['resources']['agent_memory'] == 3 * GIB and box['resources']['agent_cpus'] == 2.0

    again = playbooks.run('playbooks/create-box.yml', '-e', 'box_name=%s' % create_name,
                          '-e', 'tx9_box_image=%s' % built_image['tag'], '-e', 'agent_memory=3g', '-e', 'agent_cpus=2',
                          '-e', 'agent_volume_budget=50g', '-e', mounts)
    assert recap(again.stdout)['changed'] == 0, again.stdout[-4000:]
    assert 'no box option' not in again.stdout
    assert client.containers.get('tx9-%s-agent' % create_name).id == agent.id
