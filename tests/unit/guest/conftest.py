# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Load the guest scripts (no .py suffix) as modules, and give hb a private home."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

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

    def make(token=TOKEN, host='executor', hermes=True, **extra):
        settings = {'BOXD_EXECUTOR_TOKEN': token or '', 'EXECUTOR_HOST': host,
                    'WIRE_EXECUTOR_MCP': '1', 'INSTALL_HERMES': '1' if hermes else '0',
                    'TX9_BOX_NAME': 'demo'}
        settings.update(extra)
        return hb.Context(settings)

    return make
