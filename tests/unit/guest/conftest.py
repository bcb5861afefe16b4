# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Load the guest scripts (no .py suffix) as modules, and give hb a private home and runtime directory."""


import importlib.machinery
import importlib.util
import os

import pytest

GUEST = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))), 'assets', 'guest')


def load_script(name):
    path = os.path.join(GUEST, name)
    loader = importlib.machinery.SourceFileLoader(name.replace('-', '_'), path)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.fixture(scope='session')
def hb():
    return load_script('hb')


@pytest.fixture(scope='session')
def entrypoint():
    return load_script('tx9-executor-entrypoint')


@pytest.fixture(scope='session')
def logs():
    return load_script('tx9-logs')


TOKEN = 'a' * 32 + 'b' * 32


@pytest.fixture
def token():
    """The token every `box` is started with unless a test says otherwise."""
    return TOKEN


@pytest.fixture
def box(hb, tmp_path, monkeypatch):
    """A Context on a temporary home, as the agent container would see it."""
    home = tmp_path / 'home' / 'agent'
    home.mkdir(parents=True)
    monkeypatch.setattr(hb, 'agent_home', lambda settings: str(home))
    # Whether Hermes is installed depends on the image, not on this host.
    monkeypatch.setattr(hb.Context, 'hermes_installed',
                        property(lambda self: self.settings.get('INSTALL_HERMES') == '1'))

    runtime = tmp_path / 'run'
    runtime.mkdir()

    def make(token=TOKEN, host='executor', hermes=True, **extra):
        settings = {'BOXD_EXECUTOR_TOKEN': token or '', 'EXECUTOR_HOST': host,
                    'WIRE_EXECUTOR_MCP': '1', 'INSTALL_HERMES': '1' if hermes else '0',
                    'TX9_BOX_NAME': 'demo', 'TX9_RUNTIME_DIR': str(runtime)}
        settings.update(extra)
        return hb.Context(settings)

    return make


@pytest.fixture
def live(box, hb, tmp_path, monkeypatch):
    """Contexts whose services and gateway really run (as this user), with fast restart policies.

    Everything they started is stopped when the test ends.
    """
    import json
    import pwd
    import sys

    logs = tmp_path / 'logs'
    logs.mkdir()
    monkeypatch.setattr(hb, 'agent_account', lambda: pwd.getpwuid(os.getuid()))
    monkeypatch.setattr(hb, 'LOG_DIR', str(logs))
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
            hb.stop_everything(ctx, 'the test ended', grace=1.0)
        except hb.HbError:
            pass


STAND_IN_GATEWAY = 'import time; print("stand-in gateway up", flush=True); time.sleep(600)'


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
