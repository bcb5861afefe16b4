# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`hb init`: the managed directories, the new box's gateway policy, and what a boot forgets."""

import os

from tx9guest import boxinit, gateway, quiesce, settings


def test_init_disables_the_gateway_of_a_new_box_only_once(box, monkeypatch):
    ctx = box()
    monkeypatch.setattr(settings, 'agent_account', lambda: None)
    assert boxinit.cmd_init(ctx, []) == 0
    assert os.path.exists(ctx.paths.gateway_disabled)
    for rel in ('.claude', '.codex', '.hermes', 'workspace', '.local/share', '.local/state'):
        assert os.path.isdir(os.path.join(ctx.paths.home, rel))
    assert oct(os.stat(ctx.paths.state).st_mode & 0o777) == '0o700'
    os.unlink(ctx.paths.gateway_disabled)  # the user enabled the gateway
    boxinit.cmd_init(ctx, [])
    assert not os.path.exists(ctx.paths.gateway_disabled)


def test_init_at_boot_keeps_the_quiesce_marker_and_forgets_runtime_state(live):
    ctx = live()
    quiesce.cmd_down(ctx, ['--by', 'backup'])
    with open(os.path.join(ctx.paths.runtime, 'leftover.state'), 'w') as f:
        f.write('{}')
    assert boxinit.cmd_init(ctx, ['--boot']) == 0
    assert ctx.quiesced_by == 'backup', 'a quiesce survives container restarts'
    assert not os.path.exists(os.path.join(ctx.paths.runtime, 'leftover.state'))
    assert os.path.isdir(ctx.paths.services_dir)


def test_a_new_box_starts_with_the_gateway_disabled(live):
    ctx = live()
    boxinit.cmd_init(ctx, [])
    assert not ctx.gateway_enabled
    assert gateway.reconcile_gateway(ctx) == []
