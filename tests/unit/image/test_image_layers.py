# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which layers an engine holds, and a docker save copied without the files of the shared ones."""

from __future__ import annotations

import hashlib
import io
import pathlib
import tarfile

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._image import layers


def diff_id(data: bytes) -> str:
    return 'sha256:' + hashlib.sha256(data).hexdigest()


BASE = b'base layer tar ' * 100000   # more than one chunk, so it spills to disk
MIDDLE = b'middle layer tar'
TOP = b'top layer tar'


class Image:
    def __init__(self, diff_ids: list[str]) -> None:
        self.attrs = {'RootFS': {'Type': 'layers', 'Layers': list(diff_ids)}}


def saved(members: list[tuple[str, bytes | None]]) -> list[bytes]:
    """A docker save in the legacy layout: a directory, VERSION, json and layer.tar per layer."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode='w', format=tarfile.GNU_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    raw = buffer.getvalue()
    return [raw[i:i + 65536] for i in range(0, len(raw), 65536)]


SAVE = [('aa', None), ('aa/VERSION', b'1.0'), ('aa/json', b'{"id": "aa"}'), ('aa/layer.tar', TOP),
        ('cfg.json', b'{"rootfs": {}}'), ('bb', None), ('bb/json', b'{"id": "bb"}'), ('bb/layer.tar', BASE),
        ('cc', None), ('cc/json', b'{"id": "cc"}'), ('cc/layer.tar', MIDDLE), ('manifest.json', b'[{}]')]


def copied(omit: set[str], tmp_path: pathlib.Path) -> tuple[int, dict[str, bytes | None]]:
    out = io.BytesIO()
    count = layers.copy_save_without(saved(SAVE), omit, out, spill_dir=str(tmp_path))
    found: dict[str, bytes | None] = {}
    with tarfile.open(fileobj=io.BytesIO(out.getvalue()), mode='r') as tar:
        for m in tar:
            handle = tar.extractfile(m) if m.isreg() else None
            found[m.name] = handle.read() if handle is not None else None
    return count, found


def test_a_copy_without_the_base_layer_keeps_every_other_member_byte_for_byte(tmp_path: pathlib.Path) -> None:
    count, members = copied({diff_id(BASE)}, tmp_path)
    assert count == 1
    assert 'bb/layer.tar' not in members
    assert members == dict((name, data) for name, data in SAVE if name != 'bb/layer.tar')


def test_a_copy_that_leaves_nothing_out_is_the_whole_save(tmp_path: pathlib.Path) -> None:
    count, members = copied(set(), tmp_path)
    assert count == 0 and members == dict(SAVE)


def test_a_layer_to_leave_out_that_the_save_does_not_hold_fails_the_copy(tmp_path: pathlib.Path) -> None:
    with pytest.raises(Tx9Error) as caught:
        copied({diff_id(BASE), diff_id(b'no such layer')}, tmp_path)
    assert caught.value.cause == 'DOCKER_ERROR'
    assert diff_id(b'no such layer') in str(caught.value)


def test_present_layers_is_the_longest_run_from_the_base_that_one_image_shares() -> None:
    wanted = [diff_id(BASE), diff_id(MIDDLE), diff_id(TOP)]
    engine = [Image([diff_id(BASE), diff_id(b'other')]), Image([diff_id(BASE), diff_id(MIDDLE)]),
              Image([diff_id(MIDDLE), diff_id(TOP)])]
    assert layers.present_layers(engine, wanted) == 2
    assert layers.present_layers([], wanted) == 0
    assert layers.present_layers([Image(wanted)], wanted) == 3


def test_a_left_out_layer_whose_content_also_sits_higher_up_keeps_its_file() -> None:
    wanted = ['sha256:a', 'sha256:b', 'sha256:a', 'sha256:c']
    assert layers.layers_to_omit(wanted, 2) == {'sha256:b'}
    assert layers.layers_to_omit(wanted, 0) == set()
    assert layers.layers_to_omit(wanted, 4) == {'sha256:a', 'sha256:b', 'sha256:c'}


def test_an_image_without_rootfs_has_no_layers() -> None:
    assert layers.image_layers(object()) == []
