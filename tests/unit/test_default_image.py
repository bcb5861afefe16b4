# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The default box image is one fact: the collection's version, read by the modules and (through a lookup) the roles."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

import yaml

from ansible_collections.col_agents.tx9.plugins.lookup.default_image import LookupModule
from ansible_collections.col_agents.tx9.plugins.module_utils._version import COLLECTION_VERSION, DEFAULT_IMAGE
from ansible_collections.col_agents.tx9.plugins.modules import tx9_image

ROOT = pathlib.Path(__file__).resolve().parents[2]
LOOKUP = "{{ lookup('col_agents.tx9.default_image') }}"
# The roles' variables that name the image a box runs or an upgrade moves to.
IMAGE_DEFAULTS = {'tx9_box': 'tx9_box_image', 'tx9_upgrade': 'tx9_upgrade_image'}
VERSIONED_TAG = re.compile(r'tx9-box:\d+\.\d+\.\d+')


def test_the_default_image_is_the_collection_version_tag() -> None:
    assert DEFAULT_IMAGE == f'tx9-box:{COLLECTION_VERSION}'


def test_the_lookup_gives_the_default_image_and_takes_no_terms() -> None:
    assert LookupModule().run([]) == [DEFAULT_IMAGE]


def test_the_roles_take_their_default_image_from_the_lookup() -> None:
    for role, variable in IMAGE_DEFAULTS.items():
        defaults = yaml.safe_load((ROOT / 'roles' / role / 'defaults' / 'main.yml').read_text(encoding='utf-8'))
        assert defaults[variable] == LOOKUP, role


def test_no_role_default_or_argument_spec_types_a_versioned_image() -> None:
    typed = [str(path.relative_to(ROOT)) for path in sorted((ROOT / 'roles').rglob('*.yml'))
             if path.parent.name in ('defaults', 'meta', 'vars') and VERSIONED_TAG.search(path.read_text(encoding='utf-8'))]
    assert typed == []


def test_the_image_module_documents_the_default_image_as_its_default() -> None:
    options = yaml.safe_load(tx9_image.DOCUMENTATION)['options']
    assert options['image']['default'] == DEFAULT_IMAGE


def test_a_play_renders_the_roles_default_image_to_the_collection_version_tag() -> None:
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), ANSIBLE_STDOUT_CALLBACK='minimal',
               ANSIBLE_CALLBACK_RESULT_FORMAT='json', ANSIBLE_NOCOLOR='1')
    done = subprocess.run(
        [str(pathlib.Path(sys.executable).with_name('ansible')), 'localhost', '-m', 'ansible.builtin.debug',
         '-a', f'msg={LOOKUP}'],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith('localhost | SUCCESS => '), done.stdout
    assert json.loads(done.stdout.split(' => ', 1)[1])['msg'] == DEFAULT_IMAGE
