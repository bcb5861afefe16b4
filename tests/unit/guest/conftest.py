# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tx9guest package on sys.path, and a box whose data volume and runtime directory are temporary."""

import json
import os
import pwd
import sys

import pytest

from guest_helpers import GUEST

# The launchers put the package on sys.path the same way (see assets/guest/hb).
sys.path.insert(0, GUEST)

from tx9guest import cli, context, errors, quiesce, settings

TOKEN = 'a' * 32 + 'b' * 32
STAND_IN_GATEWAY = 'import time; print("stand-in gateway up", flush=True); time.sleep(600)'


@pytest.fixture
def token():
    """The token every `box` is started with unless a test says otherwise."""
    return TOKEN


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """The box's data volume, in a temporary directory: TX9_DATA_DIR moves every path of it."""
    data = tmp_path / 'data'
    (data / 'home' / 'agent').mkdir(parents=True)
    monkeypatch.setenv('TX9_DATA_DIR', str(data))
    return data


@pytest.fixture
def box(data_dir, tmp_path, monkeypatch):
    """box(**settings): a Context on the temporary data volume, as the agent container would see it."""
    # Whether Hermes is installed depends on the image, not on this host.
    monkeypatch.setattr(context.Context, 'hermes_installed',
                        property(lambda self: self.settings.get('INSTALL_HERMES') == '1'))
    runtime = tmp_path / 'run'
    runtime.mkdir()

    def make(token=TOKEN, host='executor', hermes=True, **extra):
        settings = {'BOXD_EXECUTOR_TOKEN': token or '', 'EXECUTOR_HOST': host,
                    'WIRE_EXECUTOR_MCP': '1', 'INSTALL_HERMES': '1' if hermes else '0',
                    'TX9_BOX_NAME': 'demo', 'TX9_DATA_DIR': str(data_dir), 'TX9_RUNTIME_DIR': str(runtime),
                    'TX9_TOKEN_FILE': str(tmp_path / 'delivered-token')}
        settings.update(extra)
        return context.Context(settings)

    return make


@pytest.fixture
def live(box, monkeypatch):
    """Contexts whose services and gateway really run (as this user), with fast restart policies.

    Everything they started is stopped when the test ends.
    """
    monkeypatch.setattr(settings, 'agent_account', lambda: pwd.getpwuid(os.getuid()))
    monkeypatch.setenv('BOXD_EXECUTOR_TOKEN', TOKEN)
    monkeypatch.setenv('TX9_BOX_NAME', 'demo')
    made = []

    def make(**extra):
        settings = {
            'WIRE_EXECUTOR_MCP': '0',
            'TX9_SERVICE_RESTART_DELAY': '0.1', 'TX9_SERVICE_GIVE_UP_AFTER': '3', 'TX9_SERVICE_FAST_SECONDS': '3',
            'TX9_GATEWAY_RESTART_DELAY': '0.1', 'TX9_GATEWAY_GIVE_UP_AFTER': '3', 'TX9_GATEWAY_FAST_SECONDS': '3',
            'TX9_GATEWAY_ARGV': json.dumps([sys.executable, '-c', STAND_IN_GATEWAY, 'tx9-test-gateway']),
        }
        settings.update(extra)
        ctx = box(**settings)
        made.append(ctx)
        return ctx

    yield make
    for ctx in made:
        try:
            quiesce.stop_everything(ctx, 'the test ended', grace=1.0)
        except errors.HbError:
            pass


@pytest.fixture
def run_hb(capsys):
    """run_hb(ctx, *argv): (exit code, stdout, stderr) of `hb ARGV` against ctx."""

    def run(ctx, *argv):
        code = cli.main(list(argv), ctx)
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def write_service():
    """write_service(ctx, name, body, mode=0o755): a definition in the box's services.d; returns its path."""

    def write(ctx, name, body, mode=0o755):
        os.makedirs(ctx.paths.services_dir, exist_ok=True)
        path = os.path.join(ctx.paths.services_dir, name)
        with open(path, 'w') as f:
            f.write(body)
        os.chmod(path, mode)
        return path

    return write
