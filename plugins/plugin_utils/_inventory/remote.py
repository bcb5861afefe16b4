# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_info run on many Docker hosts at once, through Ansible's own connections.

Private to the col_agents.tx9 collection. The inventory plugin hands in each
host's connection variables; they go, every string marked !unsafe so nothing
is templated a second time, into a private inventory file (0600 in a 0700
directory, removed afterwards) for one `ansible <hosts> -m col_agents.tx9.tx9_info`
run. So a host is reached exactly as a play reaches it (any connection
plugin, port, key, jump host, become, interpreter), and the listing runs on
the host itself, where its engine and its state home are.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from typing import Any

MODULE = 'col_agents.tx9.tx9_info'
# The adhoc CLI's minimal callback: "<host> | <STATUS> => <result as JSON>".
RESULT_START = re.compile(r'^(?P<host>\S.*?) \| (?P<status>SUCCESS|CHANGED|FAILED!|UNREACHABLE!) => ', re.MULTILINE)
CHILD_ENV = dict(
    ANSIBLE_STDOUT_CALLBACK='minimal',
    ANSIBLE_LOAD_CALLBACK_PLUGINS='0',
    ANSIBLE_CALLBACK_RESULT_FORMAT='json',
    ANSIBLE_NOCOLOR='1',
    ANSIBLE_FORCE_COLOR='0',
    ANSIBLE_INVENTORY_ENABLED='yaml',
    ANSIBLE_RETRY_FILES_ENABLED='0',
)


def flow(value: object) -> str:
    """value as YAML flow text: strings tagged !unsafe, mappings and lists nested, the rest as JSON."""
    if isinstance(value, dict):
        pairs = ', '.join(f'{json.dumps(str(key))}: {flow(item)}' for key, item in value.items())
        return f'{{{pairs}}}'
    if isinstance(value, list | tuple):
        items = ', '.join(flow(item) for item in value)
        return f'[{items}]'
    if value is None or isinstance(value, (bool, int, float)):
        return json.dumps(value)
    # Strings, and anything else (an encrypted value the controller can read) as its text.
    return f'!unsafe {json.dumps(str(value))}'


def inventory_text(hosts: dict[str, dict[str, Any]]) -> str:
    """An inventory of {host: variables} in YAML flow syntax (JSON with !unsafe tags)."""
    return f'{flow({"all": {"hosts": hosts}})}\n'


def parse_results(text: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """{host: (status, result)} from the minimal callback's output."""
    decoder = json.JSONDecoder()
    results: dict[str, tuple[str, dict[str, Any]]] = {}
    for match in RESULT_START.finditer(text):
        try:
            result, _end = decoder.raw_decode(text, match.end())
        except ValueError:
            continue
        if isinstance(result, dict):
            results[match.group('host')] = (match.group('status'), result)
    return results


def host_outcome(status: str, result: dict[str, Any]) -> tuple[list[Any] | None, str | None]:
    """(boxes, None) for a listing, or (None, why not) for a failure or an unreachable host."""
    if status in ('SUCCESS', 'CHANGED') and isinstance(result.get('boxes'), list):
        return result['boxes'], None
    reason = result.get('msg') or 'tx9_info returned no boxes'
    cause = result.get('cause')
    prefix = f'{cause}: ' if cause else ''
    return None, f'{prefix}{str(reason).strip()}'


def child_env(collections_paths: Sequence[str] | None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(CHILD_ENV)
    env.pop('ANSIBLE_INVENTORY', None)
    if collections_paths:
        env['ANSIBLE_COLLECTIONS_PATH'] = os.pathsep.join(collections_paths)
    return env


def run_child(argv: list[str], env: dict[str, str], timeout: float) -> tuple[int | None, str, str]:
    """(exit code, stdout, stderr) of argv in its own session, killed whole on timeout."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        universal_newlines=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return None, out, err
    return proc.returncode, out, err


def list_on_hosts(
    hosts: dict[str, dict[str, Any]],
    python: str,
    collections_paths: Sequence[str] | None = None,
    extra_args: Iterable[str] = (),
    timeout: float = 600,
) -> tuple[dict[str, list[Any]], dict[str, str]]:
    """tx9_info on every host of {host: connection variables}: ({host: boxes}, {host: why not})."""
    if not hosts:
        return {}, {}
    workdir = tempfile.mkdtemp(prefix='tx9-inventory-')
    try:
        path = os.path.join(workdir, 'hosts.yml')
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), 'w') as handle:
            handle.write(inventory_text(hosts))
        argv = [python, '-m', 'ansible.cli.adhoc', 'all', '-i', path, '-m', MODULE] + list(extra_args)
        code, out, err = run_child(argv, child_env(collections_paths), timeout)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    results = parse_results(out)
    listings: dict[str, list[Any]] = {}
    errors: dict[str, str] = {}
    for host in hosts:
        if host in results:
            boxes, why = host_outcome(*results[host])
            if why is None and boxes is not None:
                listings[host] = boxes
                continue
        elif code is None:
            why = f'the listing did not finish within {timeout} s'
        else:
            why = f'ansible gave no result (exit {code}): {(err or out).strip()[-400:]}'
        errors[host] = why or 'tx9_info returned no boxes'
    return listings, errors
