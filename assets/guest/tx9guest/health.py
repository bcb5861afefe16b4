# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Executor's health check (`hb executor-health`), run by Docker in the Executor container.

An authenticated MCP handshake through the token-checking front on the
published port, with the token read from Executor's 0600 file: never from a
command line. (The agent's health check is `hb status --health`.)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from . import authfront
from .cmdargs import expect_no_args
from .mcp import mcp_handshake
from .settings import Paths

if TYPE_CHECKING:
    from .context import Context

PORT = 4788


def executor_token_file(paths: Paths) -> str:
    """Where the Executor entrypoint keeps the token (0600, the agent's)."""
    return os.path.join(paths.executor_data, 'server-control', 'auth.json')


def cmd_executor_health(ctx: Context, args: list[str]) -> int:
    expect_no_args('executor-health', args)
    try:
        token = authfront.read_token_file(executor_token_file(ctx.paths))
    except (OSError, ValueError) as e:
        print(f'unhealthy: the token file cannot be read: {e}', flush=True)
        return 1
    check = mcp_handshake('127.0.0.1', PORT, token)
    print(('healthy: ' if check['mcp_ok'] else 'unhealthy: ') + check['detail'], flush=True)
    return 0 if check['mcp_ok'] else 1
