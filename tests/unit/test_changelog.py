# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The changelog: CHANGELOG.md is what antsibull-changelog writes from changelogs/changelog.yaml, which
records the release galaxy.yml names; the fragments of unreleased changes pass antsibull-changelog lint."""


import os
import shutil
import subprocess
import sys

import yaml

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHANGELOG_TOOL = os.path.join(os.path.dirname(sys.executable), 'antsibull-changelog')


def antsibull_changelog(cwd, *args):
    proc = subprocess.run([CHANGELOG_TOOL] + list(args), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout
    return proc.stdout


def test_changelog_md_is_what_antsibull_changelog_generates_from_changelog_yaml(tmp_path):
    shutil.copytree(os.path.join(REPO_ROOT, 'changelogs'), str(tmp_path / 'changelogs'))
    shutil.copy(os.path.join(REPO_ROOT, 'galaxy.yml'), str(tmp_path / 'galaxy.yml'))
    antsibull_changelog(str(tmp_path), 'generate')
    with open(os.path.join(REPO_ROOT, 'CHANGELOG.md')) as committed:
        assert committed.read() == (tmp_path / 'CHANGELOG.md').read_text(), \
            'CHANGELOG.md differs from changelogs/changelog.yaml: run antsibull-changelog generate'


def test_changelog_yaml_records_the_release_galaxy_yml_names():
    with open(os.path.join(REPO_ROOT, 'galaxy.yml')) as galaxy, \
            open(os.path.join(REPO_ROOT, 'changelogs', 'changelog.yaml')) as changelog:
        version = yaml.safe_load(galaxy)['version']
        releases = yaml.safe_load(changelog)['releases']
    assert version in releases
    assert '## v%s' % version.replace('.', '\\.') in open(os.path.join(REPO_ROOT, 'CHANGELOG.md')).read()


def test_the_changelog_and_its_fragments_pass_antsibull_changelog_lint():
    assert os.listdir(os.path.join(REPO_ROOT, 'changelogs', 'fragments'))
    output = antsibull_changelog(REPO_ROOT, 'lint')
    assert output.strip() == '', output
