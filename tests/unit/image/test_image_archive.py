# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Exporting the box image to an archive and loading it elsewhere, against a stand-in engine."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import pathlib
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from docker.errors import NotFound

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._image import transfer

TAG = 'tx9-box:0.1.0'
IMAGE_ID = 'sha256:' + 'ab' * 32
SAVED = b'a docker save tar stands here ' * 70000  # about 2 MB: more than one chunk


class Image:
    def __init__(self, image_id: str, labels: dict[str, str] | None = None) -> None:
        self.id = image_id
        self.labels = labels or {}


class Engine:
    """The part of the Docker SDK the archive code uses, with a record of what was asked."""

    def __init__(self, images: dict[str, Image] | None = None) -> None:
        self.images_by_ref = dict(images or {})
        self.loads: list[bytes] = []
        self.tags: list[tuple[str, str, str]] = []
        self.saves = 0
        self.timeout = 60
        self.api = self
        self.images = self

    def get(self, ref: str) -> Image:
        if ref not in self.images_by_ref:
            raise NotFound(f'no such image: {ref}')
        return self.images_by_ref[ref]

    def get_image(self, tag: str, chunk_size: int | None = None) -> Iterator[bytes]:
        self.saves += 1
        assert self.timeout >= transfer.TRANSFER_TIMEOUT
        return (SAVED[i:i + 65536] for i in range(0, len(SAVED), 65536))

    def load_image(self, pieces: Iterable[bytes]) -> Iterator[dict[str, Any]]:
        data = b''.join(pieces)
        self.loads.append(data)
        loaded = Image(IMAGE_ID, {'tx9.assets': 'f00d'})
        self.images_by_ref[IMAGE_ID] = loaded
        self.images_by_ref[TAG] = loaded
        return iter([{'stream': f'Loaded image: {TAG}\n'}])

    def tag(self, image_id: str, repository: str, version: str) -> None:
        self.tags.append((image_id, repository, version))
        self.images_by_ref[f'{repository}:{version}'] = self.images_by_ref[image_id]


def source_engine() -> Engine:
    image = Image(IMAGE_ID, {'tx9.assets': 'f00d'})
    return Engine({TAG: image, IMAGE_ID: image})


# The fixture below: the engine, the archive's path, and what the export returned.
Exported = tuple[Engine, str, bool, dict[str, Any]]


@pytest.fixture
def exported(tmp_path: pathlib.Path) -> Exported:
    engine = source_engine()
    path = str(tmp_path / 'images' / 'tx9-box.tar.gz')
    changed, record = transfer.export_image(engine, TAG, path)
    return engine, path, changed, record


def test_an_export_writes_the_saved_image_gzipped_with_its_sha256_and_a_record_beside_it(exported: Exported) -> None:
    engine, path, changed, record = exported
    with open(path, 'rb') as handle:
        data = handle.read()
    assert changed is True and gzip.decompress(data) == SAVED
    assert record == dict(path=path, image=TAG, image_id=IMAGE_ID, assets_hash='f00d',
                          sha256=hashlib.sha256(data).hexdigest(), size=len(data), omitted_layers=0)
    assert os.stat(path).st_mode & 0o777 == 0o600
    with open(path + '.json') as handle:
        assert json.load(handle)['sha256'] == record['sha256']
    assert [name for name in os.listdir(os.path.dirname(path)) if name.endswith('.partial')] == []
    assert engine.timeout == 60


def test_a_second_export_of_the_same_image_id_writes_nothing(exported: Exported) -> None:
    engine, path, _changed, record = exported
    again = transfer.export_image(engine, TAG, path)
    assert again == (False, record) and engine.saves == 1


def test_an_export_whose_file_was_damaged_is_written_again(exported: Exported) -> None:
    engine, path, _changed, record = exported
    with open(path, 'r+b') as handle:
        handle.seek(100)
        byte = handle.read(1)
        handle.seek(100)
        handle.write(bytes([byte[0] ^ 1]))
    changed, again = transfer.export_image(engine, TAG, path)
    assert changed is True and again['sha256'] == record['sha256'] and engine.saves == 2


def test_an_export_never_overwrites_a_file_it_did_not_write(tmp_path: pathlib.Path) -> None:
    path = tmp_path / 'mine.tar.gz'
    path.write_bytes(b'somebody else')
    with pytest.raises(Tx9Error) as refused:
        transfer.export_image(source_engine(), TAG, str(path))
    assert refused.value.cause == 'ARCHIVE_WRITE_FAILED'
    assert path.read_bytes() == b'somebody else'


def test_an_export_in_check_mode_writes_nothing(tmp_path: pathlib.Path) -> None:
    engine = source_engine()
    path = str(tmp_path / 'tx9-box.tar.gz')
    changed, record = transfer.export_image(engine, TAG, path, check_mode=True)
    assert changed is True and record['sha256'] == '' and not os.path.exists(path) and engine.saves == 0


def test_exporting_an_image_the_engine_lacks_is_image_missing(tmp_path: pathlib.Path) -> None:
    with pytest.raises(Tx9Error) as refused:
        transfer.export_image(Engine(), TAG, str(tmp_path / 'x.tar.gz'))
    assert refused.value.cause == 'IMAGE_MISSING'


def test_an_archive_is_loaded_and_tagged_when_the_engine_lacks_its_image_id(exported: Exported) -> None:
    _source, path, _changed, record = exported
    target = Engine()
    changed, loaded, image = transfer.load_archive(target, TAG, path, record['sha256'], IMAGE_ID)
    assert (changed, loaded, image.id) == (True, True, IMAGE_ID)
    assert target.loads == [SAVED]
    assert target.get(TAG).id == IMAGE_ID


def test_a_flipped_byte_is_refused_before_anything_reaches_docker_load(exported: Exported) -> None:
    _source, path, _changed, record = exported
    with open(path, 'r+b') as handle:
        handle.seek(-20, os.SEEK_END)
        byte = handle.read(1)
        handle.seek(-20, os.SEEK_END)
        handle.write(bytes([byte[0] ^ 0x40]))
    target = Engine()
    with pytest.raises(Tx9Error) as refused:
        transfer.load_archive(target, TAG, path, record['sha256'], IMAGE_ID)
    assert refused.value.cause == 'IMAGE_ARCHIVE_CORRUPT'
    assert record['sha256'] in refused.value.reason
    assert target.loads == [] and target.tags == []


def test_an_engine_that_has_the_image_id_reads_no_archive(exported: Exported, tmp_path: pathlib.Path) -> None:
    _source, _path, _changed, record = exported
    target = source_engine()
    missing = str(tmp_path / 'never-copied.tar.gz')
    assert transfer.load_archive(target, TAG, missing, record['sha256'], IMAGE_ID[len('sha256:'):]) == (
        False, False, target.get(IMAGE_ID))
    assert target.loads == [] and target.tags == []


def test_an_engine_that_has_the_image_id_under_another_tag_only_gets_the_tag(exported: Exported) -> None:
    _source, path, _changed, record = exported
    image = Image(IMAGE_ID)
    target = Engine({IMAGE_ID: image, 'tx9-box:old': image})
    changed, loaded, _image = transfer.load_archive(target, TAG, path, record['sha256'], IMAGE_ID)
    assert (changed, loaded) == (True, False)
    assert target.loads == [] and target.tags == [(IMAGE_ID, 'tx9-box', '0.1.0')]


def test_a_load_in_check_mode_says_it_would_load_without_reading_the_archive(tmp_path: pathlib.Path) -> None:
    target = Engine()
    assert transfer.load_archive(target, TAG, str(tmp_path / 'absent'), '00', IMAGE_ID, check_mode=True) == (
        True, True, None)
    assert target.loads == []


def test_an_archive_that_holds_another_image_is_refused_after_the_load(exported: Exported) -> None:
    _source, path, _changed, record = exported
    other = 'sha256:' + 'cd' * 32
    with pytest.raises(Tx9Error) as refused:
        transfer.load_archive(Engine(), TAG, path, record['sha256'], other)
    assert refused.value.cause == 'IMAGE_ARCHIVE_CORRUPT' and other in refused.value.reason


def test_a_missing_archive_names_its_path(tmp_path: pathlib.Path) -> None:
    with pytest.raises(Tx9Error) as refused:
        transfer.load_archive(Engine(), TAG, str(tmp_path / 'absent.tar.gz'), '00', IMAGE_ID)
    assert refused.value.cause == 'INVALID_ARGUMENT' and 'absent.tar.gz' in refused.value.reason


def test_a_tag_with_a_registry_port_splits_at_its_last_colon() -> None:
    engine = source_engine()
    transfer.tag_image(engine, IMAGE_ID, 'registry.example:5000/tx9-box:1.2')
    transfer.tag_image(engine, IMAGE_ID, 'registry.example:5000/tx9-box')
    assert engine.tags == [(IMAGE_ID, 'registry.example:5000/tx9-box', '1.2'),
                           (IMAGE_ID, 'registry.example:5000/tx9-box', 'latest')]


def test_a_load_that_is_due_without_archive_or_sha256_is_refused_before_reading_anything() -> None:
    target = Engine()
    for path, sha256 in ((None, '00'), ('/nonexistent', None)):
        with pytest.raises(Tx9Error) as refused:
            transfer.load_archive(target, TAG, path, sha256, IMAGE_ID)
        assert refused.value.cause == 'INVALID_ARGUMENT'
    assert target.loads == []
