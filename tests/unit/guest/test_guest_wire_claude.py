# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Claude Code's config: the user-scope executor entry, and what makes it stale."""

from tx9guest import wire_claude

URL = 'http://executor:4788/mcp'
TOKEN = 'f' * 64


def test_claude_entry_is_a_user_scope_http_server_with_a_bearer_header():
    config = wire_claude.claude_with_executor({}, URL, TOKEN)
    assert config['mcpServers']['executor'] == {
        'type': 'http', 'url': URL, 'headers': {'Authorization': 'Bearer ' + TOKEN}}
    assert wire_claude.claude_is_current(config, URL, TOKEN)


def test_claude_is_stale_when_its_header_carries_another_token():
    config = wire_claude.claude_with_executor({}, URL, 'old')
    assert not wire_claude.claude_is_current(config, URL, TOKEN)


def test_claude_is_stale_when_a_project_entry_shadows_the_user_one():
    config = wire_claude.claude_with_executor({}, URL, TOKEN)
    config['projects'] = {'/data/home/agent/workspace': {'mcpServers': {'executor': {'type': 'stdio'}}}}
    assert not wire_claude.claude_is_current(config, URL, TOKEN)


def test_claude_rewiring_drops_project_entries_that_would_shadow_it():
    config = {'projects': {'/w': {'mcpServers': {'executor': {}, 'keep': {}}, 'allowedTools': []}}}
    updated = wire_claude.claude_with_executor(config, URL, TOKEN)
    assert updated['projects']['/w']['mcpServers'] == {'keep': {}}
    assert 'executor' in config['projects']['/w']['mcpServers'], 'the input is not modified'


def test_claude_config_that_is_not_an_object_is_stale():
    assert not wire_claude.claude_is_current(None, URL, TOKEN)
    assert not wire_claude.claude_is_current([], URL, TOKEN)
