# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The client config formats hb reads and rewrites: Claude JSON, Codex TOML, Hermes YAML."""


import textwrap
import tomllib

import pytest

URL = 'http://executor:4788/mcp'
TOKEN = 'f' * 64


def dedent(text):
    return textwrap.dedent(text).lstrip('\n')


# Claude ---------------------------------------------------------------------

def test_claude_entry_is_a_user_scope_http_server_with_a_bearer_header(hb):
    config = hb.claude_with_executor({}, URL, TOKEN)
    assert config['mcpServers']['executor'] == {
        'type': 'http', 'url': URL, 'headers': {'Authorization': 'Bearer ' + TOKEN}}
    assert hb.claude_is_current(config, URL, TOKEN)


def test_claude_is_stale_when_its_header_carries_another_token(hb):
    config = hb.claude_with_executor({}, URL, 'old')
    assert not hb.claude_is_current(config, URL, TOKEN)


def test_claude_is_stale_when_a_project_entry_shadows_the_user_one(hb):
    config = hb.claude_with_executor({}, URL, TOKEN)
    config['projects'] = {'/data/home/agent/workspace': {'mcpServers': {'executor': {'type': 'stdio'}}}}
    assert not hb.claude_is_current(config, URL, TOKEN)


def test_claude_rewiring_drops_project_entries_that_would_shadow_it(hb):
    config = {'projects': {'/w': {'mcpServers': {'executor': {}, 'keep': {}}, 'allowedTools': []}}}
    updated = hb.claude_with_executor(config, URL, TOKEN)
    assert updated['projects']['/w']['mcpServers'] == {'keep': {}}
    assert 'executor' in config['projects']['/w']['mcpServers'], 'the input is not modified'


def test_claude_config_that_is_not_an_object_is_stale(hb):
    assert not hb.claude_is_current(None, URL, TOKEN)
    assert not hb.claude_is_current([], URL, TOKEN)


# Codex ----------------------------------------------------------------------

def test_codex_entry_reads_the_bearer_from_the_token_env_var(hb):
    data = tomllib.loads(hb.codex_with_executor('', URL))
    assert data == {'mcp_servers': {'executor': {'url': URL, 'bearer_token_env_var': 'EXECUTOR_MCP_TOKEN'}}}


def test_codex_rewiring_replaces_the_old_table_and_keeps_everything_else(hb):
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
    updated = hb.codex_with_executor(old, URL)
    data = tomllib.loads(updated)
    assert data['model'] == 'o3'
    assert data['mcp_servers']['github'] == {'url': 'https://example.com/mcp'}
    assert data['mcp_servers']['executor'] == {'url': URL, 'bearer_token_env_var': 'EXECUTOR_MCP_TOKEN'}
    assert '# chosen' in updated


def test_codex_rewiring_replaces_an_inline_executor_definition(hb):
    old = dedent('''
        [mcp_servers]
        executor = { url = "http://old/mcp" }
        other = { url = "http://other/mcp" }
        ''')
    data = tomllib.loads(hb.codex_with_executor(old, URL))
    assert data['mcp_servers']['executor']['url'] == URL
    assert data['mcp_servers']['other'] == {'url': 'http://other/mcp'}


def test_codex_rewiring_replaces_dotted_keys_at_the_top_level(hb):
    old = 'mcp_servers.executor.url = "http://old/mcp"\nmodel = "o3"\n'
    data = tomllib.loads(hb.codex_with_executor(old, URL))
    assert data['mcp_servers']['executor']['url'] == URL
    assert data['model'] == 'o3'


def test_codex_is_stale_when_the_bearer_comes_from_another_variable(hb):
    text = '[mcp_servers.executor]\nurl = "%s"\nbearer_token_env_var = "OTHER"\n' % URL
    assert not hb.codex_is_current(text, URL)


def test_codex_is_stale_when_the_entry_is_disabled(hb):
    text = hb.codex_with_executor('', URL) + 'enabled = false\n'
    assert not hb.codex_is_current(text, URL)


def test_codex_config_that_is_not_toml_is_stale(hb):
    assert not hb.codex_is_current('[mcp_servers.executor\nurl = ', URL)
    assert not hb.codex_is_current(None, URL)


# Hermes ---------------------------------------------------------------------

WIRED_YAML = dedent('''
    mcp_servers:
      executor:
        url: "http://executor:4788/mcp"
        headers:
          Authorization: "Bearer ${EXECUTOR_MCP_TOKEN}"
        enabled: true
    ''')


def test_hermes_entry_is_appended_when_the_config_has_no_mcp_servers(hb):
    updated = hb.hermes_with_executor('model: gpt\n', URL)
    assert updated == 'model: gpt\n\n' + WIRED_YAML
    assert hb.hermes_is_current(updated, URL)


def test_hermes_entry_uses_the_literal_token_placeholder(hb):
    entry = hb.hermes_executor_block(hb.hermes_with_executor('', URL))
    assert entry == {'url': URL, 'headers': {'Authorization': 'Bearer ${EXECUTOR_MCP_TOKEN}'}, 'enabled': True}


def test_hermes_rewiring_replaces_only_the_executor_entry(hb):
    old = dedent('''
        mcp_servers:
            github:
                url: https://example.com/mcp
            executor:
                url: http://old:4788/mcp
                timeout: 30
        # trailing comment
        model:
            default: x
        ''')
    updated = hb.hermes_with_executor(old, URL)
    assert hb.hermes_is_current(updated, URL)
    assert '    github:\n        url: https://example.com/mcp\n    executor:\n' in updated
    assert 'timeout' not in updated
    assert updated.endswith('# trailing comment\nmodel:\n    default: x\n')


def test_hermes_reads_plain_scalars_as_a_yaml_library_writes_them(hb):
    text = dedent('''
        mcp_servers:
          executor:
            enabled: yes  # on
            headers: {}
            url: http://executor:4788/mcp
        ''').replace('headers: {}', 'headers:\n      Authorization: Bearer ${EXECUTOR_MCP_TOKEN}')
    assert hb.hermes_is_current(text, URL)


def test_hermes_is_stale_without_enabled_true(hb):
    assert not hb.hermes_is_current(WIRED_YAML.replace('enabled: true', 'enabled: false'), URL)
    assert not hb.hermes_is_current(WIRED_YAML.replace('    enabled: true\n', ''), URL)


def test_hermes_is_stale_when_the_header_holds_a_literal_token(hb):
    text = WIRED_YAML.replace('${EXECUTOR_MCP_TOKEN}', TOKEN)
    assert not hb.hermes_is_current(text, URL)


def test_hermes_empty_mcp_servers_mapping_receives_the_entry(hb):
    updated = hb.hermes_with_executor('mcp_servers: {}\nmodel: x\n', URL)
    assert hb.hermes_is_current(updated, URL)
    assert updated.endswith('model: x\n')


def test_hermes_flow_style_mcp_servers_is_refused_with_advice(hb):
    with pytest.raises(hb.HbError, match='indented block'):
        hb.hermes_with_executor('mcp_servers: {other: {url: x}}\n', URL)


def test_hermes_entry_nested_elsewhere_does_not_count(hb):
    text = 'profiles:\n  mcp_servers:\n    executor:\n      url: %s\n' % URL
    assert hb.hermes_executor_block(text) is None


def test_hermes_unwiring_removes_the_entry_and_keeps_siblings(hb):
    text = WIRED_YAML + '  other:\n    url: x\n'
    updated = hb.hermes_with_executor(text, None)
    assert hb.hermes_executor_block(updated) is None
    assert 'other:\n    url: x' in updated


# box.env --------------------------------------------------------------------

def test_box_env_values_are_read_without_quotes_or_comments(hb):
    text = '# pins\nA=1\nB="two words"\nexport C=3 # note\nnot a line\n'
    assert hb.parse_env_file(text) == {'A': '1', 'B': 'two words', 'C': '3'}
