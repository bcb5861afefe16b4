# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection as a user gets it: built, installed into a fresh collections path, used by name.

Every command here runs with an ansible.cfg of the test's own whose only
collections path is the fresh one, so nothing reaches the checkout.
"""

import json
import os
import re
import subprocess
import tarfile
import uuid

import pytest
import yaml

from conftest import BIN, REPO_ROOT, recap

NAMESPACE, NAME = 'col_agents', 'tx9'


def galaxy_version():
    with open(os.path.join(REPO_ROOT, 'galaxy.yml')) as handle:
        return yaml.safe_load(handle)['version']


class Installed:
    """A collections path holding the collection installed from the tarball built from this checkout."""

    def __init__(self, work, playbooks):
        self.work = work
        self.collections = os.path.join(work, 'collections')
        self.root = os.path.join(self.collections, 'ansible_collections', NAMESPACE, NAME)
        config = os.path.join(work, 'ansible.cfg')
        with open(config, 'w') as handle:
            handle.write('[defaults]\ncollections_path = %s\ncollections_scan_sys_path = false\n'
                         'retry_files_enabled = false\ninterpreter_python = auto_silent\n' % self.collections)
        self.env = playbooks.env(dict(ANSIBLE_CONFIG=config, ANSIBLE_COLLECTIONS_PATH=self.collections))
        self.tarball = None

    def run(self, argv, timeout=600):
        """Run a tool from the venv in the test's directory; (exit code, stdout+stderr)."""
        proc = subprocess.run([os.path.join(BIN, argv[0])] + list(argv[1:]), cwd=self.work, env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                              timeout=timeout, check=False)
        return proc.returncode, proc.stdout

    def checked(self, argv, timeout=600):
        code, output = self.run(argv, timeout=timeout)
        assert code == 0, '%s failed (%d):\n%s' % (' '.join(argv), code, output[-6000:])
        return output


@pytest.fixture(scope='module')
def installed(tmp_path_factory, playbooks):
    """`ansible-galaxy collection build` of this checkout, installed with `ansible-galaxy collection install`."""
    work = Installed(str(tmp_path_factory.mktemp('tx9-install')), playbooks)
    dist = os.path.join(work.work, 'dist')
    work.checked(['ansible-galaxy', 'collection', 'build', REPO_ROOT, '--output-path', dist])
    work.tarball = os.path.join(dist, '%s-%s-%s.tar.gz' % (NAMESPACE, NAME, galaxy_version()))
    work.checked(['ansible-galaxy', 'collection', 'install', '--offline', '-p', work.collections, work.tarball])
    return work


def test_the_install_is_the_only_copy_of_the_collection_ansible_sees(installed):
    listing = json.loads(installed.checked(['ansible-galaxy', 'collection', 'list', '%s.%s' % (NAMESPACE, NAME),
                                            '--format', 'json']))
    assert list(listing) == [os.path.dirname(os.path.dirname(installed.root))]
    assert listing[os.path.dirname(os.path.dirname(installed.root))]['%s.%s' % (NAMESPACE, NAME)]['version'] \
        == galaxy_version()


def test_the_tarball_carries_the_license_the_changelog_and_what_an_execution_environment_needs(installed):
    with tarfile.open(installed.tarball) as tar:
        names = set(tar.getnames())
        manifest = json.load(tar.extractfile('MANIFEST.json'))
    for name in ('COPYING', 'README.md', 'requirements.txt', 'bindep.txt', 'meta/execution-environment.yml',
                 'meta/runtime.yml', 'changelogs/changelog.yaml', 'changelogs/config.yaml',
                 'assets/docker/Dockerfile', 'playbooks/create_box.yml', 'playbooks/create-box.yml'):
        assert name in names, '%s is not in the built collection' % name
    assert manifest['collection_info']['license'] == ['GPL-3.0-or-later']
    checkout_only = sorted(n for n in names if n.split('/')[0] in ('tests', 'scripts', '.ci', 'Makefile', 'ansible.cfg'))
    assert checkout_only == []


def test_ansible_doc_renders_tx9_box_from_the_installed_copy(installed):
    output = installed.checked(['ansible-doc', 'col_agents.tx9.tx9_box'])
    assert os.path.join(installed.root, 'plugins', 'modules', 'tx9_box.py') in output
    assert 'EXAMPLES' in output and 'RETURN VALUES' in output
    assert '[WARNING]' not in output and 'ERROR' not in output


def test_ansible_builder_adds_the_modules_python_libraries_and_gpg_and_tar(installed):
    output = installed.checked(['ansible-builder', 'introspect', '--sanitize', installed.collections])
    found = yaml.safe_load(output)
    python = [line.split('#')[0].strip() for line in found['python']]
    system = [line.split('#')[0].strip() for line in found['system']]
    assert [re.split(r'[<>=\s]', line)[0] for line in python] == ['docker', 'python-gnupg', 'isal']
    assert 'gnupg [platform:dpkg]' in system and 'gnupg2 [platform:rpm]' in system
    assert any(line.startswith('tar ') or line == 'tar' for line in system)


def test_the_create_box_playbook_runs_by_its_fqcn_from_the_installed_copy(installed, built_image, client,
                                                                          box_prefix):
    box = box_prefix + '-installed'
    args = ['-e', 'box_name=%s' % box, '-e', 'tx9_box_image=%s' % built_image['tag']]

    output = installed.checked(['ansible-playbook', 'col_agents.tx9.create_box', '--check'] + args)
    assert recap(output)['failed'] == 0
    assert not client.containers.list(all=True, filters={'label': 'tx9.box=%s' % box})

    output = installed.checked(['ansible-playbook', 'col_agents.tx9.create_box'] + args, timeout=1500)
    assert recap(output)['failed'] == 0
    assert 'docker exec -it -u agent tx9-%s-agent tmux new -A -s main' % box in output
    for role in ('agent', 'executor'):
        container = client.containers.get('tx9-%s-%s' % (box, role))
        assert container.status == 'running'
        assert container.labels['tx9.box'] == box and container.labels['tx9.role'] == role

    installed.checked(['ansible', 'localhost', '-m', 'col_agents.tx9.tx9_box', '-a', 'name=%s state=absent' % box])
    assert not client.containers.list(all=True, filters={'label': 'tx9.box=%s' % box})


def test_a_build_says_how_long_it_takes_and_where_its_log_is_before_it_starts(installed, built_image, client,
                                                                              state_home):
    tag = 'tx9-box:it%s' % uuid.uuid4().hex[:6]
    try:
        output = installed.checked(['ansible-playbook', 'col_agents.tx9.build_image', '-e', 'tx9_box_image=%s' % tag],
                                   timeout=1500)
        said = re.search(r'Follow it with: tail -f (\S+?)"', output)
        assert said, output[-3000:]
        announced = output.index('Follow it with: tail -f')
        assert output.index('TASK [col_agents.tx9.tx9_box : Build the box image]') > announced
        assert 'minutes' in output[output.rindex('Building %s' % tag, 0, announced):announced]
        log_path = said.group(1)
        assert os.path.dirname(log_path) == os.path.join(state_home, 'logs')
        with open(log_path) as handle:
            log = handle.read()
        assert 'Successfully tagged %s' % tag in log or 'naming to' in log
        assert recap(output)['changed'] == 1
    finally:
        if client.images.list(name=tag):
            client.images.remove(tag)
