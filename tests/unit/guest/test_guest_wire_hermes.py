# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hermes' config.yaml: the executor entry, edited in place, and what makes it stale."""

import textwrap

import pytest

from tx9guest import errors, wire_hermes

URL = 'http://executor:4788/mcp'
TOKEN = 'f' * 64


def dedent(text):
    return textwrap.dedent(text).lstrip('\n')


WIRED_YAML = dedent('''
    mcp_servers:
      executor:
        url: "http://executor:4788/mcp"
        headers:
          Authorization: "Bearer ${EXECUTOR_MCP_TOKEN}"
        enabled: true
    ''')


def test_hermes_entry_is_appended_when_the_config_has_no_mcp_servers():
    updated = wire_hermes.hermes_with_executor('model: gpt\n', URL)
    assert updated == 'model: gpt\n\n' + WIRED_YAML
    assert wire_hermes.hermes_is_current(updated, URL)


def test_hermes_entry_uses_the_literal_token_placeholder():
    entry = wire_hermes.hermes_executor_block(wire_hermes.hermes_with_executor('', URL))
    assert entry == {'url': URL, 'headers': {'Authorization': 'Bearer ${EXECUTOR_MCP_TOKEN}'}, 'enabled': True}


def test_hermes_rewiring_replaces_only_the_executor_entry():
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
    updated = wire_hermes.hermes_with_executor(old, URL)
    assert wire_hermes.hermes_is_current(updated, URL)
    assert '    github:\n        url: https://example.com/mcp\n    executor:\n' in updated
    assert 'timeout' not in updated
    assert updated.endswith('# trailing comment\nmodel:\n    default: x\n')


def test_hermes_reads_plain_scalars_as_a_yaml_library_writes_them():
    text = dedent('''
        mcp_servers:
          executor:
            enabled: yes  # on
            headers: {}
            url: http://executor:4788/mcp
        ''').replace('headers: {}', 'headers:\n      Authorization: Bearer ${EXECUTOR_MCP_TOKEN}')
    assert wire_hermes.hermes_is_current(text, URL)


def test_hermes_is_stale_without_enabled_true():
    assert not wire_hermes.hermes_is_current(WIRED_YAML.replace('enabled: true', 'enabled: false'), URL)
    assert not wire_hermes.hermes_is_current(WIRED_YAML.replace('    enabled: true\n', ''), URL)


def test_hermes_is_stale_when_the_header_holds_a_literal_token():
    text = WIRED_YAML.replace('${EXECUTOR_MCP_TOKEN}', TOKEN)
    assert not wire_hermes.hermes_is_current(text, URL)


def test_hermes_empty_mcp_servers_mapping_receives_the_entry():
    updated = wire_hermes.hermes_with_executor('mcp_servers: {}\nmodel: x\n', URL)
    assert wire_hermes.hermes_is_current(updated, URL)
    assert updated.endswith('model: x\n')


def test_hermes_flow_style_mcp_servers_is_refused_with_advice():
    with pytest.raises(errors.HbError, match='indented block'):
        wire_hermes.hermes_with_executor('mcp_servers: {other: {url: x}}\n', URL)


def test_hermes_entry_nested_elsewhere_does_not_count():
    text = 'profiles:\n  mcp_servers:\n    executor:\n      url: %s\n' % URL
    assert wire_hermes.hermes_executor_block(text) is None


def test_hermes_unwiring_removes_the_entry_and_keeps_siblings():
    text = WIRED_YAML + '  other:\n    url: x\n'
    updated = wire_hermes.hermes_with_executor(text, None)
    assert wire_hermes.hermes_executor_block(updated) is None
    assert 'other:\n    url: x' in updated
