# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Connecting to the engine: it has answered once connect returns, with no request more than that takes."""

import docker.errors
import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils import _docker
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error


class Engine:
    """A DockerClient that records what it was asked: its version (api_version auto) and pings."""

    asked: list = []
    answers = True

    def __init__(self, base_url, version, timeout, tls):
        if version == 'auto':
            self.request('version')

    def request(self, what):
        self.asked.append(what)
        if not self.answers:
            raise docker.errors.DockerException('connection refused')

    def ping(self):
        self.request('ping')


@pytest.fixture
def engine(monkeypatch):
    monkeypatch.setattr(_docker.docker, 'DockerClient', Engine)
    monkeypatch.setattr(Engine, 'asked', [])
    monkeypatch.setattr(Engine, 'answers', True)
    return Engine


def settings(api_version):
    return _docker.connection_from_params(dict(docker_host='unix:///var/run/docker.sock', api_version=api_version))


def test_with_api_version_auto_the_version_request_is_the_only_proof_the_engine_answers(engine):
    _docker.connect(settings('auto'))
    assert engine.asked == ['version']


def test_with_a_fixed_api_version_the_engine_is_pinged(engine):
    _docker.connect(settings('1.41'))
    assert engine.asked == ['ping']


@pytest.mark.parametrize('api_version', ['auto', '1.41'])
def test_an_engine_that_does_not_answer_is_unavailable_either_way(engine, api_version):
    engine.answers = False
    with pytest.raises(Tx9Error) as failed:
        _docker.connect(settings(api_version))
    assert failed.value.cause == 'DOCKER_UNAVAILABLE'
