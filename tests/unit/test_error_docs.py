# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


import ast
import os
import re

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import CAUSES

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(REPO, 'docs', 'errors.md')
PLUGINS = os.path.join(REPO, 'plugins')


def test_every_cause_is_documented_in_errors_md():
    with open(DOCS) as handle:
        text = handle.read()
    undocumented = [cause for cause in CAUSES if '| `%s` |' % cause not in text]
    assert undocumented == []


def test_every_cause_errors_md_lists_is_one_a_module_can_raise():
    with open(DOCS) as handle:
        listed = re.findall(r'^\| `([A-Z_]+)` \|', handle.read(), re.MULTILINE)
    assert listed and sorted(set(listed) - set(CAUSES)) == []


def test_every_cause_the_collection_raises_by_name_is_a_known_cause():
    raised = set()
    for root, _dirs, files in os.walk(PLUGINS):
        for name in (f for f in files if f.endswith('.py')):
            with open(os.path.join(root, name)) as handle:
                tree = ast.parse(handle.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and getattr(node.func, 'id', getattr(node.func, 'attr', '')) == 'Tx9Error':
                    given = node.args[1:2] + [k.value for k in node.keywords if k.arg == 'cause']
                    raised.update(a.value for a in given if isinstance(a, ast.Constant) and isinstance(a.value, str))
    assert len(raised) > 20 and sorted(raised - set(CAUSES)) == []
