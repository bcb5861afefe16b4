# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An encrypted change set is decrypted once, with real gpg, and read from that copy by every later pass."""

from __future__ import annotations

import io
import os

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._archive import changeset
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import envelope
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpg import Gpg
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.tests.unit.archive.test_archive_changeset import (
    BASE,
    LEGIT_MEMBERS,
    LEGIT_PATHS,
    LEGIT_STAGED,
    change_set_payload,
    read_changes,
    staged_tree,
    write_changes,
)
from ansible_collections.col_agents.tx9.tests.unit.archive.tx9_archive_kit import metadata_for, write_tx9

PASSPHRASE = 'a one-time passphrase of the move'


@pytest.fixture
def sealed(tmp_path):
    """A legitimate change set, its payload encrypted with real gpg, and the staged tree it applies to."""
    plain = change_set_payload(LEGIT_PATHS, LEGIT_MEMBERS)
    stored = io.BytesIO()
    Gpg().encrypt_stream(io.BytesIO(plain), stored.write, PASSPHRASE)
    data = stored.getvalue()
    meta = metadata_for(data, encrypted=True, format=changeset.CHANGES_FORMAT)
    meta['changes'] = changeset.changes_metadata_fields(
        BASE, len(LEGIT_PATHS), len(LEGIT_MEMBERS), sum(info.size for info, unused in LEGIT_MEMBERS))
    path = tmp_path / 'dev.tx9c'
    write_tx9(path, data, meta, encrypted=True)
    archive = envelope.read_archive(str(path), expected_format=changeset.CHANGES_FORMAT)
    return archive, staged_tree(tmp_path, *LEGIT_STAGED), plain


def test_an_encrypted_change_set_is_checked_from_one_private_plain_copy_that_is_gone_afterwards(tmp_path, sealed):
    archive, tree, plain = sealed
    copy = str(tmp_path / 'changes.plain')

    with changeset.decrypted_once(archive, PASSPHRASE, Gpg(), copy) as once:
        assert not once.encrypted
        assert os.stat(copy).st_mode & 0o777 == 0o600
        assert open(copy, 'rb').read() == plain
        fields, removals, unused = changeset.check_changes(once, None, None, tree, str(tmp_path / 'tree.new'))
        streamed = b''.join(changeset.ChangeStream(once, None, None, 1000, 1000, '.tx9-end'))

    assert (fields.base, removals) == (BASE, ['home/agent/gone.txt', 'home/agent/olddir'])
    assert streamed.endswith(b'\0' * 1024)
    assert not os.path.exists(copy)


def test_a_plain_change_set_is_read_as_it_is_and_no_copy_is_made(tmp_path):
    plain = read_changes(write_changes(tmp_path, LEGIT_PATHS, *LEGIT_MEMBERS))
    copy = str(tmp_path / 'changes.plain')

    with changeset.decrypted_once(plain, None, None, copy) as once:
        assert once is plain
        assert not os.path.exists(copy)


def test_a_copy_changed_between_two_passes_is_refused_as_corrupt(tmp_path, sealed):
    archive, tree, unused = sealed
    copy = str(tmp_path / 'changes.plain')

    with changeset.decrypted_once(archive, PASSPHRASE, Gpg(), copy) as once:
        changeset.check_changes(once, None, None, tree, str(tmp_path / 'tree.new'))
        with open(copy, 'r+b') as handle:
            handle.seek(5)
            handle.write(b'\xff')
        with pytest.raises(Tx9Error) as info:
            b''.join(changeset.ChangeStream(once, None, None, 1000, 1000, '.tx9-end'))

    assert info.value.cause in ('ARCHIVE_CORRUPT', 'ARCHIVE_UNSAFE'), info.value.reason


def test_a_payload_that_decrypts_beyond_its_bound_is_refused_and_leaves_no_copy(tmp_path, sealed, monkeypatch):
    archive = sealed[0]
    copy = str(tmp_path / 'changes.plain')
    monkeypatch.setattr(changeset, 'plain_copy_bound', lambda size: 16)

    with pytest.raises(Tx9Error) as info:
        with changeset.decrypted_once(archive, PASSPHRASE, Gpg(), copy):
            raise AssertionError('a copy beyond its bound was given')

    assert info.value.cause == 'ARCHIVE_INVALID', info.value.reason
    assert 'decrypts to more than 16 bytes' in info.value.reason
    assert not os.path.exists(copy)
