# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hermes' state: SQLite checkpoint and integrity (`hb verify-state`), and the box manifest."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import sys
import time
import urllib.parse
from typing import TYPE_CHECKING, Any

from .cmdargs import expect_no_args, parse_flags
from .files import ensure_dir, write_atomic
from .settings import agent_ids
from .supervise import run_as_agent
from .tools import TOOLS, cached_versions
from .wiring import WIRED_VALUE

if TYPE_CHECKING:
    from .context import Context

SQLITE_MAGIC = b'SQLite format 3\0'
DB_SUFFIXES = ('.db', '.sqlite', '.sqlite3')
SKIP_DIRS = {'node_modules', '.venv', 'venv', '__pycache__', '.cache', 'cache', 'tmp', '.git', 'backups'}
CHECKPOINT_TRIES = 5


def find_databases(root: str) -> list[str]:
    """SQLite databases under root, never following symlinks, skipping caches and venvs."""
    found: list[str] = []
    if not os.path.isdir(root) or os.path.islink(root):
        return found
    for directory, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not os.path.islink(os.path.join(directory, d)))
        for name in sorted(files):
            if not name.endswith(DB_SUFFIXES):
                continue
            path = os.path.join(directory, name)
            try:
                if not stat.S_ISREG(os.lstat(path).st_mode):
                    continue
                with open(path, 'rb') as f:
                    if f.read(16) != SQLITE_MAGIC:
                        continue
            except OSError:
                continue
            found.append(path)
    return found


def check_database(
    path: str,
    checkpoint: bool,
    tries: int = CHECKPOINT_TRIES,
    busy_seconds: float = 2.0,
    pragma: str = 'integrity_check',
) -> dict[str, Any]:
    """Checkpoint (optionally) and integrity-check one database; a report dict.

    pragma "quick_check" is the faster check doctor uses.
    """
    report: dict[str, Any] = {'path': path, 'ok': False, 'integrity': None, 'checkpoint': None, 'problem': None}
    uri = 'file:' + urllib.parse.quote(path) + '?mode=rw'
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=busy_seconds, isolation_level=None)
    except sqlite3.Error as e:
        report['problem'] = f'cannot open: {e}'
        return report
    try:
        if checkpoint:
            result: dict[str, Any] | None = None
            for attempt in range(1, tries + 1):
                try:
                    busy, wal_pages, moved = conn.execute('PRAGMA wal_checkpoint(TRUNCATE)').fetchone()
                except sqlite3.OperationalError as e:
                    busy, wal_pages, moved = 1, None, None
                    report['problem'] = str(e)
                result = {'busy': busy, 'log': wal_pages, 'checkpointed': moved, 'attempts': attempt}
                if busy == 0:
                    report['problem'] = None
                    break
                time.sleep(0.2 * attempt)
            report['checkpoint'] = result
            if result is None or result['busy'] != 0:
                report['problem'] = (
                    f'the checkpoint stayed busy after {tries} tries: another process holds a '
                    'transaction open on it; stop it (`hb down` stops the gateway and services) '
                    'and run `hb verify-state --checkpoint` again'
                )
                return report
        rows = conn.execute(f'PRAGMA {"quick_check" if pragma == "quick_check" else "integrity_check"}').fetchall()
        report['integrity'] = 'ok' if rows == [('ok',)] else '; '.join(str(r[0]) for r in rows[:5])
        if report['integrity'] != 'ok':
            report['problem'] = f'{pragma} failed: {report["integrity"]}'
        else:
            report['ok'] = True
    except sqlite3.Error as e:
        report['problem'] = f'{type(e).__name__}: {e}'
    finally:
        conn.close()
    return report


def cmd_verify_state(ctx: Context, args: list[str]) -> int:
    checkpoint = parse_flags('verify-state', args, {'--checkpoint'})['--checkpoint']
    if os.geteuid() == 0 and agent_ids():
        return run_as_agent(ctx, 'verify-state', args)
    root = ctx.paths.hermes_home
    reports = [check_database(path, checkpoint) for path in find_databases(root)]
    for report in reports:
        rel = os.path.relpath(report['path'], root)
        print(
            f'{"ok  " if report["ok"] else "FAIL"} {rel}: '
            + (report['problem'] or ('checkpointed, integrity ok' if checkpoint else 'integrity ok'))
        )
    problems = [r for r in reports if not r['ok']]
    summary = {
        'ok': not problems,
        'checkpoint': checkpoint,
        'quiesced': ctx.quiesced,
        'home': root,
        'databases': [dict(r, path=os.path.relpath(r['path'], root)) for r in reports],
    }
    if checkpoint and not ctx.quiesced:
        print('hb verify-state: note: the box is not quiesced, so the databases may change again at once')
    print(f'hb verify-state: {len(reports)} database(s), {len(problems)} problem(s)')
    print(json.dumps(summary))
    if problems:
        print(f'hb verify-state: {problems[0]["path"]}: {problems[0]["problem"]}', file=sys.stderr)
        return 1
    return 0


def cmd_write_manifest(ctx: Context, args: list[str]) -> int:
    expect_no_args('write-manifest', args)
    if os.geteuid() == 0 and agent_ids():
        # The tools answer --version as the agent, so none of them writes root-owned files into the home.
        return run_as_agent(ctx, 'write-manifest', args)
    names = [name for name, _flag in TOOLS]
    versions = cached_versions(names, ctx.paths.tool_versions)
    manifest = {
        'schema': 'tx9.manifest.v1',
        'box': ctx.box,
        'image': ctx.settings.get('TX9_IMAGE') or None,
        'written_at': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
        'tools': {name: version for name, (version, _problem) in versions.items()},
        'quiesced_by': ctx.quiesced_by,
        'gateway_enabled': ctx.gateway_enabled,
        'wiring': WIRED_VALUE,
    }
    ensure_dir(ctx.paths.state, 0o700)
    write_atomic(ctx.paths.manifest, json.dumps(manifest, indent=2) + '\n', 0o600)
    print(f'hb write-manifest: wrote {ctx.paths.manifest}')
    print(json.dumps(manifest))
    return 0
