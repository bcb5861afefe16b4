# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each role's README names exactly the entry points its argument_specs define, with their short descriptions."""

import os
import re

import pytest
import yaml

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = sorted(os.listdir(os.path.join(REPO_ROOT, 'roles')))
ROW = re.compile(r'^\| `(?P<entry>[a-z_]+)` \| (?P<said>.+) \|$')


def entry_points(role):
    with open(os.path.join(REPO_ROOT, 'roles', role, 'meta', 'argument_specs.yml')) as handle:
        specs = yaml.safe_load(handle)['argument_specs']
    return {name: spec['short_description'] for name, spec in specs.items()}


def readme_rows(role):
    with open(os.path.join(REPO_ROOT, 'roles', role, 'README.md')) as handle:
        rows = (ROW.match(line.rstrip('\n')) for line in handle)
        return {row['entry']: row['said'] for row in rows if row}


@pytest.mark.parametrize('role', ROLES)
def test_a_role_readme_lists_every_entry_point_of_its_argument_specs_and_no_other(role):
    assert readme_rows(role) == entry_points(role)
