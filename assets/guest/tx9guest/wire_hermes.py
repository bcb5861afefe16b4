# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hermes' wiring: mcp_servers.executor in $HERMES_HOME/config.yaml, edited with the YAML subset editor."""

from __future__ import annotations

import json
from typing import Any

from .errors import HbError
from .mcp import MCP_SERVER_NAME, header
from .yaml_edit import (
    find_yaml_key,
    first_child_indent,
    parse_yaml_mapping,
    yaml_key_line,
    yaml_scalar,
    yaml_section_end,
)

HERMES_AUTH_PLACEHOLDER = 'Bearer ${EXECUTOR_MCP_TOKEN}'


def hermes_executor_block(text: str | None) -> dict[Any, Any] | None:
    """The parsed mcp_servers.executor mapping, or None when absent."""
    lines = (text or '').splitlines()
    top = find_yaml_key(lines, 0, len(lines), 0, 'mcp_servers')
    if top is None:
        return None
    end = yaml_section_end(lines, top, 0)
    child = first_child_indent(lines, top + 1, end)
    if child is None:
        return None
    at = find_yaml_key(lines, top + 1, end, child, MCP_SERVER_NAME)
    if at is None:
        return None
    block = parse_yaml_mapping(lines[at : yaml_section_end(lines, at, child)])
    entry = block.get(MCP_SERVER_NAME)
    return entry if isinstance(entry, dict) else None


def hermes_is_current(text: str | None, url: str) -> bool:
    entry = hermes_executor_block(text)
    if entry is None:
        return False
    headers = entry.get('headers')
    return (
        entry.get('url') == url
        and isinstance(headers, dict)
        and header(headers, 'Authorization') == HERMES_AUTH_PLACEHOLDER
        and entry.get('enabled') is True
    )


def _hermes_entry_lines(indent: int, url: str) -> list[str]:
    pad = ' ' * indent
    return [
        f'{pad}{MCP_SERVER_NAME}:',
        f'{pad}  url: {json.dumps(url)}',
        f'{pad}  headers:',
        f'{pad}    Authorization: {json.dumps(HERMES_AUTH_PLACEHOLDER)}',
        f'{pad}  enabled: true',
    ]


def hermes_with_executor(text: str | None, url: str | None) -> str:
    """config.yaml text with our executor entry (url None: entry removed)."""
    lines = (text or '').splitlines()
    top = find_yaml_key(lines, 0, len(lines), 0, 'mcp_servers')
    if top is None:
        if url is None:
            return text or ''
        while lines and not lines[-1].strip():
            lines.pop()
        lines += ([''] if lines else []) + ['mcp_servers:'] + _hermes_entry_lines(2, url)
        return '\n'.join(lines) + '\n'
    parsed = yaml_key_line(lines[top])
    inline = parsed[1] if parsed else None
    if inline is not None and yaml_scalar(inline) not in (None, '{}'):
        raise HbError(
            'mcp_servers in the Hermes config.yaml is written in flow style '
            '({...}); rewrite it as an indented block, then run `hb wire-mcp`'
        )
    lines[top] = 'mcp_servers:'
    end = yaml_section_end(lines, top, 0)
    child = first_child_indent(lines, top + 1, end)
    if child is None:
        child = 2
    at = find_yaml_key(lines, top + 1, end, child, MCP_SERVER_NAME)
    new = [] if url is None else _hermes_entry_lines(child, url)
    if at is None:
        lines[end:end] = new
    else:
        lines[at : yaml_section_end(lines, at, child)] = new
    return '\n'.join(lines) + '\n'
