# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Claude Code's wiring: the user-scope mcpServers entry in $CLAUDE_CONFIG_DIR/.claude.json."""

from __future__ import annotations

import copy
from typing import Any

from .mcp import MCP_SERVER_NAME, header


def claude_is_current(config: Any, url: str, token: str | None) -> bool:
    """True when Claude's user config has our entry and nothing shadows it."""
    if not isinstance(config, dict) or not token:
        return False
    servers = config.get('mcpServers')
    entry = servers.get(MCP_SERVER_NAME) if isinstance(servers, dict) else None
    if not isinstance(entry, dict):
        return False
    if entry.get('type') != 'http' or entry.get('url') != url:
        return False
    headers = entry.get('headers')
    if not isinstance(headers, dict) or header(headers, 'Authorization') != f'Bearer {token}':
        return False
    # A project (local-scope) entry of the same name would win over ours.
    return not _claude_project_entries(config)


def _claude_project_entries(config: dict[str, Any]) -> list[str]:
    found = []
    projects = config.get('projects')
    if isinstance(projects, dict):
        for path, project in projects.items():
            servers = project.get('mcpServers') if isinstance(project, dict) else None
            if isinstance(servers, dict) and MCP_SERVER_NAME in servers:
                found.append(path)
    return found


def claude_with_executor(config: Any, url: str, token: str | None) -> dict[str, Any]:
    """A copy of Claude's config with our user-scope entry (None: remove it)."""
    updated: dict[str, Any] = copy.deepcopy(config) if isinstance(config, dict) else {}
    for path in _claude_project_entries(updated):
        del updated['projects'][path]['mcpServers'][MCP_SERVER_NAME]
    servers = updated.get('mcpServers')
    if not isinstance(servers, dict):
        servers = updated['mcpServers'] = {}
    if token is None:
        servers.pop(MCP_SERVER_NAME, None)
    else:
        servers[MCP_SERVER_NAME] = {
            'type': 'http',
            'url': url,
            'headers': {'Authorization': f'Bearer {token}'},
        }
    return updated
