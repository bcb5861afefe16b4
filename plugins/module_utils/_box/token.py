# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The box token: minting it, delivering it to a running agent, and proving a rotation.

Private to the col_agents.tx9 collection. A rotation recreates only Executor
with the new token; the agent keeps running and gets the token as a file in
its own container layer (/var/lib/tx9/executor-token, 0600, the agent's),
which its runtime prefers over the environment it was created with. The file
travels through Docker's archive API, never a command line.
"""

from __future__ import annotations

import binascii
import io
import os
import tarfile
import time
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._docker import ENGINE_ERRORS, docker_error
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._exec import exec_output
from ansible_collections.col_agents.tx9.plugins.module_utils._mcp import initialize

TOKEN_DIR = '/var/lib/tx9'
TOKEN_NAME = 'executor-token'
AGENT_HOME = '/data/home/agent'


def mint_token() -> str:
    """256 random bits, hex."""
    return binascii.hexlify(os.urandom(32)).decode('ascii')


def token_archive(token: str, uid: int, gid: int) -> bytes:
    """A tar of tx9/ (0700) and tx9/executor-token (0600), both owned by uid:gid."""
    buffer = io.BytesIO()
    now = time.time()
    with tarfile.open(fileobj=buffer, mode='w', format=tarfile.PAX_FORMAT) as archive:
        directory = tarfile.TarInfo('tx9')
        directory.type, directory.mode, directory.uid, directory.gid, directory.mtime = (
            tarfile.DIRTYPE,
            0o700,
            uid,
            gid,
            now,
        )
        archive.addfile(directory)
        data = (token + '\n').encode('ascii')
        member = tarfile.TarInfo('tx9/' + TOKEN_NAME)
        member.size, member.mode, member.uid, member.gid, member.mtime = len(data), 0o600, uid, gid, now
        archive.addfile(member, io.BytesIO(data))
    return buffer.getvalue()


def agent_owner(client: Any, container_id: str) -> tuple[int, int]:
    """(uid, gid) of the agent's home in the container."""
    try:
        exec_id = client.api.exec_create(container_id, ['stat', '-c', '%u %g', AGENT_HOME], stdout=True, stderr=True)[
            'Id'
        ]
        output = exec_output(client.api, exec_id).decode('utf-8', 'replace').split()
    except ENGINE_ERRORS as exc:
        raise docker_error(f'read the owner of {AGENT_HOME} in the agent', exc)
    if len(output) != 2 or not all(part.isdigit() for part in output):
        raise Tx9Error(
            f'The agent container did not report the owner of {AGENT_HOME}.',
            'NOT_RUNNING',
            'Start the box with col_agents.tx9.tx9_box state=present, then run again.',
        )
    return int(output[0]), int(output[1])


def deliver_token(client: Any, container_id: str, token: str) -> None:
    """Put the token where the running agent reads it first."""
    uid, gid = agent_owner(client, container_id)
    try:
        client.api.put_archive(container_id, os.path.dirname(TOKEN_DIR), token_archive(token, uid, gid))
    except ENGINE_ERRORS as exc:
        raise docker_error('deliver the token to the agent', exc)


def prove_rotation(address: str, port: str | int | None, old_token: str, new_token: str) -> None:
    """Fail unless the old token gets 401 and the new one a proper MCP answer on the published port."""
    old_status, new_status, problem = 0, 0, 'Executor publishes no port'
    if port is not None:
        old_status, _problem = initialize(address, port, old_token, timeout=5)
        new_status, problem = initialize(address, port, new_token, timeout=5)
    if old_status == 401 and new_status == 200 and not problem:
        return
    raise Tx9Error(
        f'The token was rotated but Executor on {address}:{port} answered the old token with {old_status} '
        f'and the new one with {new_status}{f" ({problem})" if problem else ""}.',
        'TOKEN_ROTATION_FAILED',
        "Look at docker logs of the box's executor container, then run rotate_token again.",
    )
