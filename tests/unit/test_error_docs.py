# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


import os

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import CAUSES

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'docs', 'errors.md')


def test_every_cause_is_documented_in_errors_md():
    with open(DOCS) as handle:
        text = handle.read()
    undocumented = [cause for cause in CAUSES if '| `%s` |' % cause not in text]
    assert undocumented == []
