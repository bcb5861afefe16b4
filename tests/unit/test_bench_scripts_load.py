# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every bench script loads against the collection as it is now: a name the code moved or renamed
fails here, not at the start of `make bench`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(path.stem for path in (TESTS / 'bench').glob('*.py'))
LOAD = (
    'import importlib, sys; sys.path[:0] = [{bench!r}, {fleet!r}]; sys.argv = ["bench"]; importlib.import_module({name!r})'
)


@pytest.mark.parametrize('name', SCRIPTS)
def test_the_bench_script_loads(name: str) -> None:
    code = LOAD.format(bench=str(TESTS / 'bench'), fleet=str(TESTS / 'fleet'), name=name)
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_there_are_bench_scripts_to_load() -> None:
    assert {'run', 'backup_bench', 'import_bench', 'migrate_bench'} <= set(SCRIPTS)
