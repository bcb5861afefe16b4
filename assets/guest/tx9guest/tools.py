# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The box's command-line tools: where they are and which versions answer (`hb versions`)."""

from __future__ import annotations

import concurrent.futures
import json
import os
import re
import shutil
import subprocess
from typing import TYPE_CHECKING

from .cmdargs import parse_flags
from .settings import Paths

if TYPE_CHECKING:
    from .context import Context

# Tools reported by `versions` and checked by `doctor`, with the box.env flag
# that says whether the image installs them (None: always expected).
TOOLS = (
    ('claude', 'INSTALL_CLAUDE'),
    ('codex', 'INSTALL_CODEX'),
    ('hermes', 'INSTALL_HERMES'),
    ('executor', 'INSTALL_EXECUTOR'),
    ('node', None),
)
VERSION_RE = re.compile(r'v?(\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.\-]+)?)')


def parse_version(output: str | None) -> str | None:
    m = VERSION_RE.search(output or '')
    return m.group(1) if m else None


def tool_path_env() -> dict[str, str]:
    env = dict(os.environ)
    parts = env.get('PATH', '').split(os.pathsep)
    env['PATH'] = os.pathsep.join([d for d in Paths.tool_dirs if d not in parts] + parts)
    return env


def find_tool(name: str) -> str | None:
    return shutil.which(name, path=tool_path_env()['PATH'])


def tool_version(name: str, timeout: float = 30.0) -> tuple[str | None, str | None]:
    """(version, problem): version None when the tool is absent or silent."""
    path = find_tool(name)
    if path is None:
        return None, 'not installed'
    try:
        done = subprocess.run(
            [path, '--version'],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=tool_path_env(),
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f'did not answer --version ({e})'
    version = parse_version(done.stdout) or parse_version(done.stderr)
    if done.returncode != 0 or not version:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ['']
        return None, f'--version exited {done.returncode}: {tail[0][:200]}'
    return version, None


def all_versions(names: list[str]) -> dict[str, tuple[str | None, str | None]]:
    # In parallel: each node CLI takes about half a second to start.
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(names)) as pool:
        results = list(pool.map(tool_version, names))
    return dict(zip(names, results))


def cmd_versions(ctx: Context, args: list[str]) -> int:
    as_json = parse_flags('versions', args, {'--json'})['--json']
    names = [name for name, _flag in TOOLS]
    found = {name: (v or 'missing') for name, (v, _problem) in all_versions(names).items()}
    if as_json:
        print(json.dumps(found, sort_keys=False))
    else:
        for name in names:
            print(f'{name} {found[name]}')
    return 0
