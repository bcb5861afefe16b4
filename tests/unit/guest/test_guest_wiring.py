# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""hb's wiring: when it counts as stale, what wire writes, and when it refuses."""

import json
import os
import stat

import pytest

from tx9guest import errors, wiring

ALL_PARTS = ['marker', 'token', 'claude', 'codex', 'hermes']


def test_a_fresh_home_is_stale_in_every_part(box):
    assert wiring.wiring_stale(box()) == ALL_PARTS


def test_wiring_is_current_right_after_wiring(box):
    ctx = box()
    wiring.wire(ctx)
    assert wiring.wiring_stale(ctx) == []
    assert wiring.wiring_state(ctx) == {'enabled': True, 'current': True, 'stale': []}


def test_wiring_is_stale_when_the_token_changed(box):
    wiring.wire(box())
    assert wiring.wiring_stale(box(token='c' * 64)) == ['token', 'claude']


def test_wiring_is_stale_when_the_executor_host_changed(box):
    wiring.wire(box())
    assert wiring.wiring_stale(box(host='executor2')) == ['claude', 'codex', 'hermes']


def test_wiring_is_stale_when_the_marker_is_from_an_older_scheme(box):
    ctx = box()
    wiring.wire(ctx)
    with open(ctx.paths.marker, 'w') as f:
        f.write('http-v2\n')
    assert wiring.wiring_stale(ctx) == ['marker']


def test_hermes_is_not_part_of_the_wiring_when_it_is_not_installed(box):
    ctx = box(hermes=False)
    wiring.wire(ctx)
    assert wiring.wiring_stale(ctx) == []
    assert not os.path.exists(ctx.paths.hermes_yaml)


def test_wire_writes_the_token_env_file_private_with_a_shell_quoted_export(box, token):
    ctx = box()
    wiring.wire(ctx)
    with open(ctx.paths.token_env) as f:
        assert f.read() == 'export EXECUTOR_MCP_TOKEN=%s\n' % token
    assert stat.S_IMODE(os.stat(ctx.paths.token_env).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(ctx.paths.claude_json).st_mode) == 0o600


def test_wire_writes_the_marker_http_v3(box):
    ctx = box()
    wiring.wire(ctx)
    with open(ctx.paths.marker) as f:
        assert f.read().strip() == 'http-v3'


def test_wire_works_while_the_box_is_quiesced_so_an_imported_box_gets_its_new_token(box):
    wiring.wire(box())
    ctx = box(token='e' * 64)
    with open(ctx.paths.quiesced, 'w') as f:
        f.write('import\n')
    assert wiring.wire_once(ctx) == 'rewired executor MCP (was stale: token, claude)'
    assert wiring.wiring_stale(ctx) == []
    assert ctx.quiesced_by == 'import', 'wiring leaves the quiesce marker alone'


def test_wire_refuses_without_a_token_and_says_how_to_get_one(box):
    with pytest.raises(errors.HbError, match='BOXD_EXECUTOR_TOKEN'):
        wiring.wire(box(token=None))


def test_wire_once_leaves_current_wiring_untouched(box):
    ctx = box()
    wiring.wire(ctx)
    before = os.stat(ctx.paths.claude_json).st_mtime_ns
    assert wiring.wire_once(ctx) == 'wiring current'
    assert os.stat(ctx.paths.claude_json).st_mtime_ns == before


def test_wire_once_rewires_and_names_what_was_stale(box):
    wiring.wire(box())
    summary = wiring.wire_once(box(token='d' * 64))
    assert summary == 'rewired executor MCP (was stale: token, claude)'
    assert wiring.wiring_stale(box(token='d' * 64)) == []


def test_wire_keeps_the_users_other_claude_settings(box):
    ctx = box()
    os.makedirs(ctx.paths.claude_dir)
    with open(ctx.paths.claude_json, 'w') as f:
        json.dump({'theme': 'dark', 'mcpServers': {'other': {'type': 'stdio', 'command': 'x'}}}, f)
    wiring.wire(ctx)
    with open(ctx.paths.claude_json) as f:
        config = json.load(f)
    assert config['theme'] == 'dark'
    assert set(config['mcpServers']) == {'other', 'executor'}


def test_wire_fails_with_advice_when_claudes_config_is_not_json(box):
    ctx = box()
    os.makedirs(ctx.paths.claude_dir)
    with open(ctx.paths.claude_json, 'w') as f:
        f.write('{broken')
    with pytest.raises(errors.HbError, match='not valid JSON'):
        wiring.wire(ctx)
    assert not os.path.exists(ctx.paths.marker)


def test_disabled_wiring_counts_as_current(box):
    assert wiring.wiring_state(box(WIRE_EXECUTOR_MCP='0')) == {'enabled': False, 'current': True, 'stale': []}


def test_unwire_removes_every_executor_entry_and_the_token_file(box):
    ctx = box()
    wiring.wire(ctx)
    wiring.unwire(box(WIRE_EXECUTOR_MCP='0'))
    with open(ctx.paths.claude_json) as f:
        assert 'executor' not in json.load(f)['mcpServers']
    with open(ctx.paths.codex_toml) as f:
        assert 'executor' not in f.read()
    with open(ctx.paths.hermes_yaml) as f:
        assert 'executor' not in f.read()
    assert not os.path.exists(ctx.paths.token_env)
    assert not os.path.exists(ctx.paths.marker)


def test_the_injected_token_wins_over_the_token_file():
    settings = {'BOXD_EXECUTOR_TOKEN': 'new', 'EXECUTOR_MCP_TOKEN': 'env'}
    assert wiring.current_token(settings, 'export EXECUTOR_MCP_TOKEN=old\n') == 'new'


def test_the_token_file_is_used_when_no_token_is_injected():
    assert wiring.current_token({'EXECUTOR_MCP_TOKEN': 'env'}, 'export EXECUTOR_MCP_TOKEN=old\n') == 'old'


def test_the_token_env_line_reads_back_as_the_same_token():
    odd = "it's$weird"
    assert wiring.parse_token_env(wiring.token_env_line(odd) + '\n') == odd


def test_the_token_tx9_delivered_wins_over_the_containers_environment_and_the_disk():
    settings = {'BOXD_EXECUTOR_TOKEN': 'first-value'}
    on_disk = wiring.token_env_line('on-disk')
    assert wiring.current_token(settings, on_disk, 'delivered\n') == 'delivered'
    assert wiring.current_token(settings, on_disk, None) == 'first-value'
    assert wiring.current_token({}, on_disk, '') == 'on-disk'


def test_a_box_context_reads_the_delivered_token_file(box, tmp_path):
    (tmp_path / 'delivered-token').write_text('rotated-token\n')
    assert box().token == 'rotated-token'
