# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every task that uses one of the collection's filters loads them all, in a process of its own: none may pull in
the Docker SDK (whose import costs more than the task)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
COLLECTIONS = ROOT / '.cache' / 'collections'
SCRIPT = '''
import json, sys
from ansible.plugins.loader import init_plugin_loader
init_plugin_loader([sys.argv[1]])
from ansible.plugins.loader import filter_loader
filter_loader.get('col_agents.tx9.shaped')
print(json.dumps(sorted(name for name in sys.modules if name.split('.')[0] in ('docker', 'requests', 'urllib3'))))
'''


def test_loading_the_collections_filters_imports_neither_the_docker_sdk_nor_requests():
    done = subprocess.run([sys.executable, '-c', SCRIPT, str(COLLECTIONS)], capture_output=True, text=True, check=True,
                          env=dict(os.environ, PYTHONPATH=str(COLLECTIONS)), timeout=120)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
