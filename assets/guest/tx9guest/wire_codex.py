# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Codex's wiring: [mcp_servers.executor] in $CODEX_HOME/config.toml."""

from __future__ import annotations

import json
import re
import tomllib

from .mcp import MCP_SERVER_NAME, TOKEN_ENV_NAME

CODEX_TABLE_RE = re.compile(r'^\s*\[\[?\s*(?P<key>[^\[\]]+?)\s*\]\]?\s*(#.*)?$')


def _toml_key_path(key: str) -> list[str]:
    """Split a dotted TOML key ('a."b.c".d') into its parts."""
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([^.\s]+)', key)
    return [a or b or c for a, b, c in parts]


def codex_is_current(text: str | None, url: str) -> bool:
    if text is None:
        return False
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False
    servers = data.get('mcp_servers')
    entry = servers.get(MCP_SERVER_NAME) if isinstance(servers, dict) else None
    return (
        isinstance(entry, dict)
        and entry.get('url') == url
        and entry.get('bearer_token_env_var') == TOKEN_ENV_NAME
        and entry.get('enabled', True) is True
    )


def codex_without_executor(text: str | None) -> str:
    """config.toml text with every definition of mcp_servers.executor removed.

    Line-based so the user's other settings and comments survive untouched.
    """
    out = []
    section: list[str] = []  # key path of the current [table]
    for line in (text or '').splitlines():
        m = CODEX_TABLE_RE.match(line)
        if m:
            section = _toml_key_path(m.group('key'))
            if section[:2] == ['mcp_servers', MCP_SERVER_NAME]:
                continue
            out.append(line)
            continue
        if section[:2] == ['mcp_servers', MCP_SERVER_NAME]:
            continue
        key = re.match(r"^\s*([A-Za-z0-9_\-.\"' ]+?)\s*=", line)
        if key:
            full = section + _toml_key_path(key.group(1))
            if full[:2] == ['mcp_servers', MCP_SERVER_NAME]:
                continue
        out.append(line)
    while out and not out[-1].strip():
        out.pop()
    return '\n'.join(out) + ('\n' if out else '')


def codex_with_executor(text: str | None, url: str) -> str:
    base = codex_without_executor(text)
    block = (
        f'[mcp_servers.{MCP_SERVER_NAME}]\n'
        f'url = {json.dumps(url)}\n'
        f'bearer_token_env_var = {json.dumps(TOKEN_ENV_NAME)}\n'
    )
    return (base + '\n' if base else '') + block
