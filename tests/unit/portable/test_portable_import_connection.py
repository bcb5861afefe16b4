# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an import hands the box it creates: where the engine is, and the image it must find there."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._portable import importer
from ansible_collections.col_agents.tx9.tests.unit.archive.tx9_archive_kit import payload, regular, write_tx9


class Stop(Exception):
    """Ends the import once the reconciler is made: nothing further is looked at."""


class RecordingReconciler:
    made: list[dict[str, Any]] = []

    def __init__(
        self, client: Any, home: Any, params: dict[str, Any], check_mode: bool = False, docker_host: str | None = None
    ) -> None:
        RecordingReconciler.made.append(dict(params=params, check_mode=check_mode, docker_host=docker_host))

    def validate(self) -> None:
        raise Stop


@pytest.fixture
def archive(tmp_path):
    path = tmp_path / 'dev.tx9'
    write_tx9(path, payload(regular('./home/agent/note.txt', b'note')))
    return str(path)


def reconciler_made(monkeypatch, archive, params):
    RecordingReconciler.made = []
    monkeypatch.setattr(importer, 'Reconciler', RecordingReconciler)
    with pytest.raises(Stop):
        importer.Import(None, None, archive, params).run()
    (made,) = RecordingReconciler.made
    return made


def test_under_docker_host_in_the_environment_the_box_is_probed_at_the_environments_engine(monkeypatch, archive):
    monkeypatch.setenv('DOCKER_HOST', 'tcp://engine.example:2376')

    made = reconciler_made(monkeypatch, archive, dict(docker_host=None))

    assert made['docker_host'] == 'tcp://engine.example:2376'
    assert made['params']['name'] == 'dev' and made['params']['state'] == 'present'


def test_the_docker_host_option_wins_over_the_environment(monkeypatch, archive):
    monkeypatch.setenv('DOCKER_HOST', 'tcp://engine.example:2376')

    made = reconciler_made(monkeypatch, archive, dict(docker_host='ssh://admin@other.example'))

    assert made['docker_host'] == 'ssh://admin@other.example'


def test_without_either_the_box_is_probed_at_the_default_socket(monkeypatch, archive):
    monkeypatch.delenv('DOCKER_HOST', raising=False)

    assert reconciler_made(monkeypatch, archive, {})['docker_host'] == 'unix:///var/run/docker.sock'


class NoImages:
    """An engine with 4 CPUs and no image at all."""

    @staticmethod
    def info() -> dict[str, Any]:
        return {'NCPU': 4}

    class images:  # noqa: N801 -- the SDK's attribute name
        @staticmethod
        def get(ref: str) -> Any:
            from docker.errors import ImageNotFound

            raise ImageNotFound(ref)


def test_an_import_without_its_image_is_refused_as_tx9_box_refuses_it(monkeypatch, archive, tmp_path):
    monkeypatch.setattr(importer, 'box_lock', lambda *_args, **_kwargs: contextlib.nullcontext())
    monkeypatch.setattr(importer.Import, 'refuse_taken', lambda _self, _box: None)

    with pytest.raises(Tx9Error) as failure:
        importer.Import(NoImages(), StateHome(str(tmp_path / 'home')), archive, dict(image='tx9-box:9.9.9')).run()

    assert failure.value.cause == 'IMAGE_MISSING'
    assert failure.value.reason == 'The image tx9-box:9.9.9 is not on this host.'
    assert failure.value.fix == 'Build it first with col_agents.tx9.tx9_image (or playbooks/build-image.yml).'
