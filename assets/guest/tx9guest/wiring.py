# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Wiring: the token in force, and Executor's MCP entry in the Claude, Codex and Hermes configs.

Wiring only rewrites client config files, so it works while the box is
quiesced: an imported box arrives quiesced and is wired to its new token
before anyone resumes it. It never starts services or the gateway.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .cmdargs import expect_no_args
from .errors import HbError
from .files import load_json_file, locked, remove, write_atomic
from .mcp import TOKEN_ENV_NAME
from .settings import read_text
from .wire_claude import claude_is_current, claude_with_executor
from .wire_codex import codex_is_current, codex_with_executor, codex_without_executor
from .wire_hermes import hermes_is_current, hermes_with_executor

if TYPE_CHECKING:
    from .context import Context

WIRED_VALUE = 'http-v3'


def token_env_line(token: str) -> str:
    return f'export {TOKEN_ENV_NAME}={shlex.quote(token)}'


def parse_token_env(text: str | None) -> str | None:
    """The token from an executor-mcp.env file, or None."""
    for line in (text or '').splitlines():
        line = line.strip()
        if line.startswith('export '):
            line = line[len('export ') :].lstrip()
        if not line.startswith(TOKEN_ENV_NAME + '='):
            continue
        try:
            parts = shlex.split(line[len(TOKEN_ENV_NAME) + 1 :])
        except ValueError:
            return None
        return parts[0] if parts and parts[0] else None
    return None


def current_token(settings: Mapping[str, str], token_env_text: str | None, delivered: str | None = None) -> str | None:
    """The token in force: the one tx9 delivered to this container, else the injected value, else disk.

    tx9 writes the delivered file (Paths.token_file) when it rotates the token
    without recreating the agent. BOXD_EXECUTOR_TOKEN is the value the agent
    container was created with, so after an import or upgrade it carries the
    new token while the files on /data still hold the old one.
    """
    delivered = (delivered or '').strip()
    if delivered:
        return delivered
    injected = (settings.get('BOXD_EXECUTOR_TOKEN') or '').strip()
    if injected:
        return injected
    on_disk = parse_token_env(token_env_text)
    if on_disk:
        return on_disk
    return (settings.get(TOKEN_ENV_NAME) or '').strip() or None


def check_token(token: str | None) -> str:
    """The token, when it can be sent as a Bearer header; HbError otherwise."""
    if not token:
        raise HbError(
            'no Executor token: BOXD_EXECUTOR_TOKEN is not set and '
            '~/.config/hermes-box/executor-mcp.env has none; start the box with '
            'tx9 (it injects the token), then run `hb wire-mcp`'
        )
    if not re.fullmatch(r'[\x21-\x7e]+', token):
        raise HbError(
            'the Executor token contains spaces or control characters, so it '
            "cannot be sent as a Bearer header; recreate the box's token with tx9"
        )
    return token


def wiring_stale(ctx: Context) -> list[str]:
    """Which parts of the wiring differ from what wire-mcp would write."""
    p = ctx.paths
    stale = []
    if (read_text(p.marker) or '').strip() != WIRED_VALUE:
        stale.append('marker')
    token_text = read_text(p.token_env)
    if not ctx.token or token_text is None or token_text.strip() != token_env_line(ctx.token):
        stale.append('token')
    if not claude_is_current(load_json_file(p.claude_json), ctx.url, ctx.token):
        stale.append('claude')
    if not codex_is_current(read_text(p.codex_toml), ctx.url):
        stale.append('codex')
    if ctx.hermes_installed and not hermes_is_current(read_text(p.hermes_yaml), ctx.url):
        stale.append('hermes')
    return stale


def wiring_state(ctx: Context) -> dict[str, Any]:
    if not ctx.wiring_enabled:
        return {'enabled': False, 'current': True, 'stale': []}
    stale = wiring_stale(ctx)
    return {'enabled': True, 'current': not stale, 'stale': stale}


def write_claude(ctx: Context, token: str | None) -> None:
    config = load_json_file(ctx.paths.claude_json)
    if config is None:
        raise HbError(f'{ctx.paths.claude_json} is not valid JSON; repair or remove it, then run `hb wire-mcp`')
    updated = claude_with_executor(config, ctx.url, token)
    # 0600: the file carries the Bearer token.
    write_atomic(ctx.paths.claude_json, json.dumps(updated, indent=2) + '\n', 0o600)


def write_codex(ctx: Context, wire_it: bool) -> None:
    text = read_text(ctx.paths.codex_toml)
    if text is None and not wire_it:
        return
    updated = codex_with_executor(text, ctx.url) if wire_it else codex_without_executor(text)
    if wire_it and not codex_is_current(updated, ctx.url):
        raise HbError(
            f'{ctx.paths.codex_toml} defines mcp_servers.executor in a form hb '
            'cannot rewrite (or is not valid TOML); remove that entry, then run `hb wire-mcp`'
        )
    write_atomic(ctx.paths.codex_toml, updated, None if text is not None else 0o600)


def write_hermes(ctx: Context, wire_it: bool) -> None:
    text = read_text(ctx.paths.hermes_yaml)
    if text is None and not wire_it:
        return
    updated = hermes_with_executor(text, ctx.url if wire_it else None)
    if wire_it and not hermes_is_current(updated, ctx.url):
        raise HbError(
            f'{ctx.paths.hermes_yaml} has an mcp_servers block hb cannot rewrite; '
            'fix its indentation or remove the executor entry, then run `hb wire-mcp`'
        )
    write_atomic(ctx.paths.hermes_yaml, updated, None)


def wire(ctx: Context) -> None:
    """Write the token env file, the three client configs, then the marker."""
    token = check_token(ctx.token)
    with locked(ctx.paths.wiring_lock, 'MCP wiring'):
        write_atomic(ctx.paths.token_env, token_env_line(token) + '\n', 0o600)
        write_claude(ctx, token)
        write_codex(ctx, True)
        if ctx.hermes_installed:
            write_hermes(ctx, True)
        # Last, so an interrupted run is seen as stale and redone.
        write_atomic(ctx.paths.marker, WIRED_VALUE + '\n', 0o644)


def unwire(ctx: Context) -> None:
    """Wiring disabled: take our entries out of every client config."""
    with locked(ctx.paths.wiring_lock, 'MCP wiring'):
        remove(ctx.paths.marker)
        if os.path.exists(ctx.paths.claude_json):
            write_claude(ctx, None)
        write_codex(ctx, False)
        write_hermes(ctx, False)
        remove(ctx.paths.token_env)


def cmd_wire_mcp(ctx: Context, args: list[str]) -> int:
    expect_no_args('wire-mcp', args)
    if not ctx.wiring_enabled:
        unwire(ctx)
        print('hb wire-mcp: wiring is disabled (WIRE_EXECUTOR_MCP is not 1); executor entries removed')
        return 0
    wire(ctx)
    print(f'hb wire-mcp: Claude, Codex{", Hermes" if ctx.hermes_installed else ""} use {ctx.url}')
    return 0


def wire_once(ctx: Context) -> str:
    """Rewire only when stale; returns a one-line summary."""
    if not ctx.wiring_enabled:
        return 'wiring disabled'
    stale = wiring_stale(ctx)
    if not stale:
        return 'wiring current'
    wire(ctx)
    return f'rewired executor MCP (was stale: {", ".join(stale)})'


def cmd_wire_once(ctx: Context, args: list[str]) -> int:
    expect_no_args('wire-once', args)
    print(f'hb wire-once: {wire_once(ctx)}')
    return 0
