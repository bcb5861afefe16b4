# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Codex's config.toml: the executor table, rewritten by lines, and what makes it stale."""

import textwrap
import tomllib

from tx9guest import wire_codex

URL = 'http://executor:4788/mcp'


def dedent(text):
    return textwrap.dedent(text).lstrip('\n')


def test_codex_entry_reads_the_bearer_from_the_token_env_var():
    data = tomllib.loads(wire_codex.codex_with_executor('', URL))
    assert data == {'mcp_servers': {'executor': {'url': URL, 'bearer_token_env_var': 'EXECUTOR_MCP_TOKEN'}}}


def test_codex_rewiring_replaces_the_old_table_and_keeps_everything_else():
    old = dedent('''
        model = "o3"  # chosen

        [mcp_servers.executor]
        url = "http://old:4788/mcp"
        bearer_token_env_var = "OLD"

        [mcp_servers.executor.env]
        A = "1"

        [mcp_servers.github]
        url = "https://example.com/mcp"
        ''')
    updated = wire_codex.codex_with_executor(old, URL)
    data = tomllib.loads(updated)
    assert data['model'] == 'o3'
    assert data['mcp_servers']['github'] == {'url': 'https://example.com/mcp'}
    assert data['mcp_servers']['executor'] == {'url': URL, 'bearer_token_env_var': 'EXECUTOR_MCP_TOKEN'}
    assert '# chosen' in updated


def test_codex_rewiring_replaces_an_inline_executor_definition():
    old = dedent('''
        [mcp_servers]
        executor = { url = "http://old/mcp" }
        other = { url = "http://other/mcp" }
        ''')
    data = tomllib.loads(wire_codex.codex_with_executor(old, URL))
    assert data['mcp_servers']['executor']['url'] == URL
    assert data['mcp_servers']['other'] == {'url': 'http://other/mcp'}


def test_codex_rewiring_replaces_dotted_keys_at_the_top_level():
    old = 'mcp_servers.executor.url = "http://old/mcp"\nmodel = "o3"\n'
    data = tomllib.loads(wire_codex.codex_with_executor(old, URL))
    assert data['mcp_servers']['executor']['url'] == URL
    assert data['model'] == 'o3'


def test_codex_is_stale_when_the_bearer_comes_from_another_variable():
    text = '[mcp_servers.executor]\nurl = "%s"\nbearer_token_env_var = "OTHER"\n' % URL
    assert not wire_codex.codex_is_current(text, URL)


def test_codex_is_stale_when_the_entry_is_disabled():
    text = wire_codex.codex_with_executor('', URL) + 'enabled = false\n'
    assert not wire_codex.codex_is_current(text, URL)


def test_codex_config_that_is_not_toml_is_stale():
    assert not wire_codex.codex_is_current('[mcp_servers.executor\nurl = ', URL)
    assert not wire_codex.codex_is_current(None, URL)
