# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The image build context: deterministic bytes, kept exec bits, skipped junk, moved files."""

from __future__ import annotations

import hashlib
import io
import os
import pathlib
import tarfile

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._image import context

TREE = {
    'box.env': (b'# pins\nBASE_IMAGE=debian:bookworm-slim\n\nTOOL=1.2=3\n', False),
    'docker/Dockerfile': (b'ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n', False),
    'guest/hb': (b'#!/bin/sh\necho hb\n', True),
    'guest/profile.sh': (b'export A=1\n', False),
    'provision/provision.sh': (b'#!/bin/sh\nexit 0\n', True),
}


def make_tree(root: pathlib.Path | str, files: dict[str, tuple[bytes, bool]] | None = None,
              reverse: bool = False) -> str:
    files = files or TREE
    for name in sorted(files, reverse=reverse):
        data, executable = files[name]
        path = os.path.join(str(root), *name.split('/'))
        if not os.path.isdir(os.path.dirname(path)):
            os.makedirs(os.path.dirname(path))
        with open(path, 'wb') as handle:
            handle.write(data)
        os.chmod(path, 0o755 if executable else 0o644)
    return str(root)


def members(data: bytes) -> dict[str, tuple[tarfile.TarInfo, bytes | None]]:
    found: dict[str, tuple[tarfile.TarInfo, bytes | None]] = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        for info in archive.getmembers():
            handle = archive.extractfile(info) if info.isfile() else None
            found[info.name] = (info, handle.read() if handle is not None else None)
    return found


def test_the_same_tree_gives_the_same_bytes_and_sha256(tmp_path: pathlib.Path) -> None:
    first = context.build_context(make_tree(tmp_path / 'a'))
    second = context.build_context(make_tree(tmp_path / 'b', reverse=True))
    assert first == second
    assert len(first[1]) == 64


def test_the_controller_computes_the_digest_a_build_on_the_target_labels_its_image_with(tmp_path: pathlib.Path) -> None:
    from ansible_collections.col_agents.tx9.plugins.module_utils._image.ensure import unpack_assets
    controller = make_tree(tmp_path / 'controller')
    archive = tmp_path / 'assets.tar'
    archive.write_bytes(context.pack(context.read_tree(controller)))
    target = unpack_assets(str(archive), str(tmp_path / 'target'))
    bundle = tmp_path / 'ca.crt'
    bundle.write_bytes(b'-----BEGIN CERTIFICATE-----\n')

    sent = context.assets_digest(context.read_tree(controller))

    assert context.build_context(target)[1] == context.image_digest(sent, hashlib.sha256(b'').hexdigest())
    assert context.build_context(target, str(bundle))[1] == context.image_digest(
        sent, hashlib.sha256(bundle.read_bytes()).hexdigest())


def test_mtimes_owners_and_read_write_bits_do_not_change_the_context(tmp_path: pathlib.Path) -> None:
    assert os.geteuid() == 0, 'this test changes owners (chown) and must run as root, as the unit suite does'
    root = make_tree(tmp_path / 'a')
    before = context.build_context(root)
    for name in TREE:
        path = os.path.join(root, *name.split('/'))
        os.utime(path, (1234567890, 1234567890))
        os.chmod(path, os.stat(path).st_mode & ~0o044)
        os.chown(path, 4321, 4321)
    assert context.build_context(root) == before


def test_every_member_has_zero_times_and_owners(tmp_path: pathlib.Path) -> None:
    data, _digest = context.build_context(make_tree(tmp_path))
    for info, _content in members(data).values():
        assert (info.mtime, info.uid, info.gid, info.uname, info.gname) == (0, 0, 0, '', '')


def test_the_exec_bit_is_kept_and_other_modes_are_normalised(tmp_path: pathlib.Path) -> None:
    found = members(context.build_context(make_tree(tmp_path))[0])
    assert found['guest/hb'][0].mode == 0o755
    assert found['provision/provision.sh'][0].mode == 0o755
    assert found['guest/profile.sh'][0].mode == 0o644
    assert found['guest'][0].isdir() and found['guest'][0].mode == 0o755


def test_losing_the_exec_bit_changes_the_digest(tmp_path: pathlib.Path) -> None:
    root = make_tree(tmp_path)
    before = context.build_context(root)[1]
    os.chmod(os.path.join(root, 'guest', 'hb'), 0o644)
    assert context.build_context(root)[1] != before


def test_pycache_folders_and_compiled_or_editor_files_are_skipped(tmp_path: pathlib.Path) -> None:
    root = make_tree(tmp_path)
    before = context.build_context(root)
    junk = ['guest/__pycache__/hb.cpython-311.pyc', 'guest/hb.pyc', 'guest/x.pyo', 'guest/.hb.swp',
            'guest/hb~', '.DS_Store', '.pytest_cache/v/cache']
    make_tree(root, dict((name, (b'junk', False)) for name in junk))
    assert context.build_context(root) == before
    assert not [name for name in members(before[0]) if 'pycache' in name or name.endswith('.pyc')]


def test_the_dockerfile_moves_to_the_context_root(tmp_path: pathlib.Path) -> None:
    found = members(context.build_context(make_tree(tmp_path))[0])
    assert found['Dockerfile'][1] == TREE['docker/Dockerfile'][0]
    assert 'docker/Dockerfile' not in found


def test_a_tree_without_a_dockerfile_is_refused(tmp_path: pathlib.Path) -> None:
    files = dict(TREE)
    del files['docker/Dockerfile']
    with pytest.raises(ValueError):
        context.build_context(make_tree(tmp_path, files))


def test_the_ca_bundle_travels_as_host_ca_crt(tmp_path: pathlib.Path) -> None:
    bundle = tmp_path / 'ca.crt'
    bundle.write_bytes(b'-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n')
    found = members(context.build_context(make_tree(tmp_path / 'assets'), str(bundle))[0])
    assert found['host-ca.crt'][1] == bundle.read_bytes()
    assert found['host-ca.crt'][0].mode == 0o644


def test_without_a_ca_bundle_host_ca_crt_is_empty(tmp_path: pathlib.Path) -> None:
    found = members(context.build_context(make_tree(tmp_path))[0])
    assert found['host-ca.crt'][1] == b''


def test_the_ca_bundle_is_part_of_the_digest(tmp_path: pathlib.Path) -> None:
    root = make_tree(tmp_path / 'assets')
    bundle = tmp_path / 'ca.crt'
    bundle.write_bytes(b'cert')
    assert context.build_context(root, str(bundle))[1] != context.build_context(root)[1]


@pytest.mark.parametrize('name', sorted(TREE))
def test_changing_one_byte_of_any_asset_changes_the_digest(tmp_path: pathlib.Path, name: str) -> None:
    root = make_tree(tmp_path)
    before = context.build_context(root)[1]
    path = os.path.join(root, *name.split('/'))
    with open(path, 'rb') as handle:
        data = bytearray(handle.read())
    data[-2] ^= 1
    with open(path, 'wb') as handle:
        handle.write(bytes(data))
    assert context.build_context(root)[1] != before


def test_a_new_file_changes_the_digest(tmp_path: pathlib.Path) -> None:
    root = make_tree(tmp_path)
    before = context.build_context(root)[1]
    make_tree(root, {'guest/extra': (b'', False)})
    assert context.build_context(root)[1] != before


def test_box_env_is_read_without_comments_or_blank_lines(tmp_path: pathlib.Path) -> None:
    root = make_tree(tmp_path)
    assert context.read_box_env(root) == {'BASE_IMAGE': 'debian:bookworm-slim', 'TOOL': '1.2=3'}


def test_the_shipped_assets_make_a_deterministic_context_with_a_dockerfile_at_the_root() -> None:
    assets = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), 'assets')
    data, digest = context.build_context(assets)
    assert context.build_context(assets) == (data, digest)
    found = members(data)
    assert 'Dockerfile' in found and 'host-ca.crt' in found
