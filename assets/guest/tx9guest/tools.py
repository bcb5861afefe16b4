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
from typing import TYPE_CHECKING, Any

from .cmdargs import parse_flags
from .files import write_atomic
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


def tool_key(name: str) -> list[object] | None:
    """What identifies the file a tool's command runs: its real path, size and change time (None when absent)."""
    path = find_tool(name)
    if path is None:
        return None
    real = os.path.realpath(path)
    try:
        found = os.stat(real)
    except OSError:
        return None
    return [real, found.st_size, found.st_mtime_ns]


def read_cache(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding='utf-8') as handle:
            found = json.loads(handle.read(65536))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def cached_versions(names: list[str], cache_path: str) -> dict[str, tuple[str | None, str | None]]:
    """all_versions, asking only the tools whose file changed since the cache at cache_path saw it.

    A tool's version is kept with what identifies its file (tool_key): the same file answers the
    same --version, so a manifest written while the box is quiesced runs no tool it already asked.
    """
    cache = read_cache(cache_path)
    keys = {name: tool_key(name) for name in names}
    kept = {
        name: (str(cache[name]['version']), None)
        for name in names
        if keys[name] is not None
        and isinstance(cache.get(name), dict)
        and cache[name].get('key') == keys[name]
        and cache[name].get('version')
    }
    asked = all_versions([name for name in names if name not in kept]) if len(kept) < len(names) else {}
    if asked:
        stored = {
            name: dict(key=keys[name], version=version)
            for name, (version, _problem) in asked.items()
            if version and keys[name] is not None
        }
        stored.update({name: cache[name] for name in kept})
        try:
            write_atomic(cache_path, json.dumps(stored, sort_keys=True) + '\n', 0o600)
        except OSError:
            pass  # a cache that cannot be written is asked again next time
    return {name: kept.get(name) or asked[name] for name in names}


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
