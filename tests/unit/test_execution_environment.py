# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An execution environment built with ansible-builder gets the collection's Python libraries and gpg and tar.

`ansible-builder create` writes the build context of an EE whose definition names the collection; the
steps its Containerfile runs are then run here without a container: the collection is installed from
the context's requirements.yml, and the context's own introspect.py turns the installed collection's
meta/execution-environment.yml into the requirements.txt and bindep.txt the image installs.
"""


import os
import re
import subprocess
import sys

import pytest
import yaml

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def run(args, cwd, **extra_env):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, 'ansible.cfg'), ANSIBLE_NOCOLOR='1', **extra_env)
    proc = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout
    return proc.stdout


@pytest.fixture(scope='module')
def context(tmp_path_factory):
    work = tmp_path_factory.mktemp('ee')
    definition = {'version': 3, 'dependencies': {'galaxy': {'collections': [{'name': REPO_ROOT, 'type': 'dir'}]}}}
    (work / 'execution-environment.yml').write_text(yaml.safe_dump(definition))
    run([os.path.join(BIN, 'ansible-builder'), 'create', '-f', 'execution-environment.yml', '-c', 'context',
         '--output-filename', 'Containerfile'], cwd=str(work))
    return work / 'context'


@pytest.fixture(scope='module')
def introspected(context, tmp_path_factory):
    collections = tmp_path_factory.mktemp('ee-collections')
    run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'install', '-r', str(context / '_build' / 'requirements.yml'),
         '-p', str(collections)], cwd=str(context), ANSIBLE_COLLECTIONS_PATH=str(collections))
    build = context / '_build'
    run([sys.executable, str(build / 'scripts' / 'introspect.py'), 'introspect',
         '--write-pip', str(build / 'requirements.txt'), '--write-bindep', str(build / 'bindep.txt'),
         str(collections)], cwd=str(context))
    return build


def names(path):
    lines = [line.split('#')[0].strip() for line in path.read_text().splitlines()]
    return {re.split(r'[\s<>=!~\[;]', line)[0] for line in lines if line}


def test_the_build_context_installs_the_collection_and_introspects_it(context):
    requirements = yaml.safe_load((context / '_build' / 'requirements.yml').read_text())
    assert requirements['collections'] == [{'name': REPO_ROOT, 'type': 'dir'}]
    containerfile = (context / 'Containerfile').read_text()
    assert 'ansible-galaxy collection install' in containerfile
    assert 'introspect.py introspect' in containerfile


def test_the_context_requirements_name_the_modules_python_libraries(introspected):
    assert names(introspected / 'requirements.txt') == {'docker', 'python-gnupg', 'isal'}


def test_the_context_bindep_names_gpg_and_tar_for_debian_and_rpm_systems(introspected):
    bindep = (introspected / 'bindep.txt').read_text()
    assert names(introspected / 'bindep.txt') == {'gnupg', 'gnupg2', 'tar'}
    assert re.search(r'^gnupg \[platform:dpkg\]', bindep, re.M)
    assert re.search(r'^gnupg2 \[platform:rpm\]', bindep, re.M)
    assert re.search(r'^tar \[platform:dpkg platform:rpm\]', bindep, re.M)
