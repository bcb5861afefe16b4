# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running the in-box `hb` command from the host. Private to the col_agents.tx9 collection."""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._docker import ENGINE_ERRORS
from ansible_collections.col_agents.tx9.plugins.module_utils._exec import exec_output
from ansible_collections.col_agents.tx9.plugins.module_utils._names import LABEL_ROLE, box_labels

HB = '/opt/tx9/bin/hb'


def run_hb(client: Any, container_id: str, args: Sequence[str], user: str = 'agent') -> tuple[int, str]:
    """Run hb with args (argv, never a shell string) in the container; (exit code, output).

    When Docker cannot run it at all (the container is restarting or gone, the
    engine timed out), the exit code is -1 and the output says why.
    """
    return run_in(client, container_id, [HB] + list(args), user, f'hb {args[0] if args else ""}')


def run_in(client: Any, container_id: str, argv: Sequence[str], user: str, what: str) -> tuple[int, str]:
    """Run argv (never a shell string) in the container as user; (exit code, output), -1 when Docker could not."""
    try:
        exec_id = client.api.exec_create(container_id, list(argv), user=user, stdout=True, stderr=True)['Id']
        output = exec_output(client.api, exec_id)
        code = client.api.exec_inspect(exec_id).get('ExitCode')
    except ENGINE_ERRORS as exc:  # the SDK raises APIError, requests' errors and socket timeouts
        return -1, f'Docker could not run {what}: {getattr(exc, "explanation", None) or exc}'
    # A missing exit code means the exec never finished: treat it as a failure, not 0.
    return (code if code is not None else -1), output.decode('utf-8', 'replace')


def last_json_line(output: str) -> dict[str, Any] | None:
    """The JSON object on the last line of output that holds one, or None."""
    for line in reversed(output.strip().splitlines()):
        line = line.strip()
        if line.startswith('{'):
            try:
                found: dict[str, Any] = json.loads(line)
            except ValueError:
                return None
            return found
    return None


def guest_status(client: Any, container_id: str) -> dict[str, Any]:
    """`hb status --json` as a dict, or a dict with healthy False and the reason."""
    code, output = run_hb(client, container_id, ['status', '--json'])
    status = last_json_line(output)
    if status is None:
        tail = ' '.join(output.strip().splitlines()[-2:])[:300]
        return {'healthy': False, 'detail': f'hb status exited {code}: {tail}'}
    return status


READER_TIMEOUT = 300


def run_hb_offline(client: Any, box: str, image: str, volume: str, args: Sequence[str], user: str) -> tuple[int, str]:
    """Run hb with args in a throwaway container that mounts volume read-only at /data; (exit code, stdout).

    For a stopped container's volume: no network, a read-only root, no new
    privileges, and no capabilities but, for root, DAC_READ_SEARCH (the
    Executor volume's logs are root's files in the agent's directory). It
    carries the box's labels with the role reader and is removed whatever
    happens.
    """
    api = client.api
    labels = box_labels(box)
    labels[LABEL_ROLE] = 'reader'
    host_config = api.create_host_config(
        binds={volume: {'bind': '/data', 'mode': 'ro'}},
        network_mode='none',
        read_only=True,
        security_opt=['no-new-privileges'],
        cap_drop=['ALL'],
        cap_add=['DAC_READ_SEARCH'] if user == 'root' else None,
        tmpfs={'/tmp': 'size=16m,mode=1777'},
    )
    try:
        helper = api.create_container(
            image,
            name=f'tx9-{box}-reader-{secrets.token_hex(4)}',
            labels=labels,
            user=user,
            entrypoint=[HB],
            command=list(args),
            host_config=host_config,
        )['Id']
    except ENGINE_ERRORS as exc:  # the SDK raises APIError and requests' errors
        return -1, f'Docker could not create a reader for {volume}: {getattr(exc, "explanation", None) or exc}'
    try:
        api.start(helper)
        code = api.wait(helper, timeout=READER_TIMEOUT).get('StatusCode')
        output = api.logs(helper, stdout=True, stderr=False)
        if code != 0:
            output += api.logs(helper, stdout=False, stderr=True)
        return code, output.decode('utf-8', 'replace')
    except ENGINE_ERRORS as exc:
        return -1, f'Docker could not run hb {args[0]} on {volume}: {getattr(exc, "explanation", None) or exc}'
    finally:
        try:
            api.remove_container(helper, force=True)
        except ENGINE_ERRORS:
            pass  # best effort, never masking the outcome; the reader carries the box's labels
