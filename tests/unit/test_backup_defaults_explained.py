# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The backup module and the backup role keep their archives in different places by default, and each says why."""

import os

import yaml

from ansible_collections.col_agents.tx9.plugins.modules import tx9_backup

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_module_says_its_downloads_default_is_for_a_person_and_names_the_roles_default():
    dest = yaml.safe_load(tx9_backup.DOCUMENTATION)['options']['dest']
    said = ' '.join(dest['description'])
    assert dest['default'] == '~/Downloads'
    assert 'at their desk' in said and '/var/backups/tx9' in said and 'tx9_backup#role' in said


def test_the_role_says_its_system_default_is_for_hosts_and_names_the_modules_default():
    with open(os.path.join(ROOT, 'roles', 'tx9_backup', 'meta', 'argument_specs.yml')) as handle:
        dest = yaml.safe_load(handle)['argument_specs']['main']['options']['tx9_backup_dest']
    said = ' '.join(dest['description'])
    assert dest['default'] == '/var/backups/tx9'
    assert 'scheduled runs' in said and '~/Downloads' in said and 'M(col_agents.tx9.tx9_backup)' in said
