# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Change sets: what changed in a box's /data since the tree the receiving host already holds.

Private to the col_agents.tx9 collection. A pre-copied move sends the box's
data once while the box runs (a .tx9 archive, staged on the new host), then,
quiesced, only what changed since: a change set. Its container is a .tx9's
(metadata.json, then data.tar.gz or data.tar.gz.gpg) with the format
"tx9-changes" and a `changes` object in the metadata; its payload's first
member is PATHS_MEMBER, the NUL-terminated list of every path /data holds at
that moment, then the members that changed (docs/archive-format.md).

Nothing a change set says is applied before the whole of it was checked
against the staged tree it applies to: the staged tree's records (kept on the
receiving host, written by this module from members it validated) minus what
the list no longer holds, plus the changed members, are fed to the payload
validator as one archive, so a change set is held to every rule and cause of
a whole archive (no member below a symbolic link the staged tree holds, no
link that escapes, no file where a directory with children stays, the caps).
What is removed from the staged tree is only ever a path of that tree.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.envelope import (
    Archive,
    CanonicalStream,
    canonical_chunks,
    end_of_stream,
    expansion_bound,
    plain_payload,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.metadata import SHA256_HEX, invalid
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.pathtable import PathTable
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarheader import (
    DIRECTORY,
    HARDLINK,
    REGULAR,
    SYMLINK,
    Member,
    normalise,
    unsafe,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarwriter import (
    canonical_header,
    padding,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.validator import (
    MAX_MEMBERS,
    DiskExceeded,
    PayloadSummary,
    PayloadValidator,
    iter_members,
    parent_of,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._io import HashingWriter

if TYPE_CHECKING:
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpg import Gpg

CHANGES_FORMAT = 'tx9-changes'
PATHS_MEMBER = '.tx9-paths'
# The list names at most MAX_MEMBERS paths, each at most PATH_MAX bytes and its NUL.
PATH_MAX = 4096
MAX_PATHS_BYTES = 256 * 1024 * 1024
# The metadata's `changes` object: (key, type).
CHANGES_KEYS: tuple[tuple[str, type], ...] = (('base', str), ('paths', int), ('members', int), ('bytes', int))
CHUNK_SIZE = 1024 * 1024

# A staged tree's record: kind code, regular file size, path and link target, NUL-separated.
KIND_CODES = {DIRECTORY: b'd', REGULAR: b'f', SYMLINK: b'l', HARDLINK: b'h'}
CODE_KINDS = {code: kind for kind, code in KIND_CODES.items()}
LISTED = 'listed'
DROPPED = 'dropped'


def tree_record(path: str, member: Member) -> bytes:
    """One record of a staged tree's file, for the member at the normalised path."""
    size = member.size if member.kind == REGULAR else 0
    return b'%s%d\0%s\0%s\0' % (
        KIND_CODES[member.kind],
        size,
        path.encode('utf-8', 'surrogateescape'),
        member.linkname.encode('utf-8', 'surrogateescape'),
    )


def read_tree(path: str) -> Iterator[Member]:
    """The records of a staged tree's file as members named by their normalised paths."""
    with open(path, 'rb') as handle:
        pending = b''
        while True:
            chunk = handle.read(CHUNK_SIZE)
            if not chunk:
                break
            pending += chunk
            fields = pending.split(b'\0')
            whole = (len(fields) - 1) // 3 * 3
            for index in range(0, whole, 3):
                yield _tree_member(fields[index], fields[index + 1], fields[index + 2])
            pending = b'\0'.join(fields[whole:])
        if pending:
            raise ValueError(f'the staged tree {path} ends inside a record')


def _tree_member(head: bytes, name: bytes, link: bytes) -> Member:
    kind = CODE_KINDS[head[:1]]
    return Member(
        name.decode('utf-8', 'surrogateescape'),
        kind,
        size=int(head[1:]),
        linkname=link.decode('utf-8', 'surrogateescape'),
    )


class ChangesFields:
    """The `changes` object of a change set's metadata, checked."""

    def __init__(self, archive: Archive) -> None:
        raw = archive.metadata.raw.get('changes')
        if not isinstance(raw, dict):
            raise invalid(archive.path, 'its metadata has no "changes" object, which a change set holds')
        for key, kind in CHANGES_KEYS:
            value = raw.get(key)
            if not isinstance(value, kind) or isinstance(value, bool) or (isinstance(value, int) and value < 0):
                raise invalid(archive.path, f'the change set key "{key}" is missing or not a {kind.__name__}')
        if not SHA256_HEX.match(raw['base']):
            raise invalid(archive.path, "the change set's base is not 64 lowercase hex digits")
        if raw['paths'] > MAX_MEMBERS or raw['members'] > MAX_MEMBERS:
            raise invalid(archive.path, f'the change set announces more than the {MAX_MEMBERS} paths a box may hold')
        self.base: str = raw['base']
        self.paths: int = raw['paths']
        self.members: int = raw['members']
        self.bytes: int = raw['bytes']


class Listing:
    """Pass one over a change set's payload: the paths /data holds, and the kinds of the changed members."""

    def __init__(self, fields: ChangesFields) -> None:
        self.fields = fields
        self.listed = PathTable((LISTED,))
        self.changed = PathTable((DIRECTORY, REGULAR, SYMLINK, HARDLINK))
        self.members = 0
        self.bytes = 0

    def read(self, archive: Archive, passphrase: str | None, gpg: Gpg | None) -> None:
        with plain_payload(archive, passphrase, gpg) as stream:
            members = iter_members(stream, max_bytes=expansion_bound(archive), with_reader=True)
            for member, reader in members:
                if self.members == 0 and not self.listed:
                    self._read_paths(member, reader.data())
                    continue
                self._count(member)
            if not self.listed:
                raise unsafe(PATHS_MEMBER, 'is missing; a change set starts with the list of the paths /data holds')

    def _read_paths(self, member: Member, data: Iterator[bytes]) -> None:
        if member.name != PATHS_MEMBER or member.kind != REGULAR:
            raise unsafe(member.name, f'comes first, where a change set holds its list "{PATHS_MEMBER}"')
        if member.size > MAX_PATHS_BYTES or member.size > (self.fields.paths + 1) * (PATH_MAX + 1):
            raise unsafe(PATHS_MEMBER, f'is {member.size} bytes, more than {self.fields.paths} paths take')
        pending = b''
        for chunk in data:
            parts = (pending + chunk).split(b'\0')
            pending = parts.pop()
            if len(pending) > PATH_MAX:
                raise unsafe(PATHS_MEMBER, f'names a path longer than {PATH_MAX} bytes')
            for raw in parts:
                self._list(raw)
        if pending:
            raise unsafe(PATHS_MEMBER, 'does not end with a NUL')
        # The root is always there, said or not.
        self.listed.add('', LISTED)

    def _list(self, raw: bytes) -> None:
        if len(self.listed) >= self.fields.paths:
            raise unsafe(PATHS_MEMBER, f'names more than the {self.fields.paths} paths its metadata announces')
        if len(raw) > PATH_MAX:
            raise unsafe(PATHS_MEMBER, f'names a path longer than {PATH_MAX} bytes')
        self.listed.add(normalise(raw.decode('utf-8', 'surrogateescape')), LISTED)

    def _count(self, member: Member) -> None:
        self.members += 1
        if member.kind == REGULAR:
            self.bytes += member.size
        if self.members > self.fields.members or self.bytes > self.fields.bytes:
            raise unsafe(
                member.name,
                f'takes the change set beyond the {self.fields.members} members and {self.fields.bytes} bytes '
                'its metadata announces',
            )
        path = normalise(member.name)
        if not self.changed.add(path, member.kind):
            raise unsafe(member.name, f'names "{path}" a second time')


class Composition:
    """Pass two: the staged tree and the change set as one archive, validated; what to remove first."""

    def __init__(self, listing: Listing) -> None:
        self.listing = listing
        self.validator = PayloadValidator()
        self.dropped = PathTable((DROPPED,))
        # Staged directories that stay where they are though the change set names them (a new mode, new entries).
        self.in_place = PathTable((DIRECTORY,))
        # Staged paths the change set takes away, the highest of each subtree only, in the tree's order.
        self.removals: list[str] = []

    def compose(self, tree: str, archive: Archive, passphrase: str | None, gpg: Gpg | None, out: IO[bytes]) -> None:
        for member in read_tree(tree):
            kept = self._staged(member)
            if kept is not None:
                # The root's record is named "" (its normalised path), which the validator knows as ".".
                self.validator.feed(kept if kept.name else Member('.', kept.kind, mode=kept.mode))
                out.write(tree_record(kept.name, kept))
        with plain_payload(archive, passphrase, gpg) as stream:
            members = iter_members(stream, max_bytes=expansion_bound(archive))
            next(members, None)  # the list, read in pass one
            for member in members:
                path = normalise(member.name)
                if member.kind == DIRECTORY and path in self.in_place:
                    continue  # the staged directory stays where it is; its mode comes with the extraction
                self.validator.feed(member)
                out.write(tree_record(path, member))

    def summary(self) -> PayloadSummary:
        return self.validator.finish()

    def _staged(self, member: Member) -> Member | None:
        """The staged member as the new tree holds it, or None when the change set takes it away."""
        path = member.name
        changed = self.listing.changed.get(path)
        if path and (path not in self.listing.listed or (changed is not None and changed != member.kind)):
            self._drop(path)
            return None
        if changed == DIRECTORY:
            self.in_place.add(path, DIRECTORY)
        elif changed is not None:
            return None  # replaced in place by the changed member (tar replaces a file of the same kind)
        if member.kind == HARDLINK:
            target = normalise(member.linkname)
            if target in self.dropped or target in self.listing.changed:
                # Its file was replaced or removed: what stays at this path is a file of its own.
                return Member(path, REGULAR, size=member.size)
        return member

    def _drop(self, path: str) -> None:
        parent = path
        while parent:
            parent = parent_of(parent)
            if parent in self.dropped:
                break
        else:
            self.removals.append(path)
        self.dropped.add(path, DROPPED)


def check_changes(
    archive: Archive,
    passphrase: str | None,
    gpg: Gpg | None,
    tree: str,
    new_tree: str,
    max_disk: int | None = None,
    on_disk_exceeded: DiskExceeded | None = None,
) -> tuple[ChangesFields, list[str], PayloadSummary]:
    """Validate the change set against the staged tree; (its fields, the paths to remove first, the new tree's summary).

    The new tree's records are written to new_tree (mode 0600), which the
    caller renames over tree once the changes were applied.
    """
    fields = ChangesFields(archive)
    listing = Listing(fields)
    listing.read(archive, passphrase, gpg)
    if max_disk is not None and on_disk_exceeded is not None and listing.bytes > max_disk:
        raise on_disk_exceeded(PATHS_MEMBER, listing.bytes, max_disk)
    composition = Composition(listing)
    descriptor = os.open(new_tree, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, 'wb') as out:
        composition.compose(tree, archive, passphrase, gpg, out)
        summary = composition.summary()
    return fields, composition.removals, summary


class ChangeStream(CanonicalStream):
    """The changed members as a canonical tar (our headers, their data), then the end mark; for tar to extract.

    Only for a change set check_changes accepted: the payload's bytes are
    hashed again as they are read and must be the ones checked (open_payload).
    The members were validated against the staged tree as they compose it;
    check() raises an error kept while the stream was read, as CanonicalStream's does.
    """

    def __init__(
        self, archive: Archive, passphrase: str | None, gpg: Gpg | None, uid: int, gid: int, end_mark: str
    ) -> None:
        super().__init__(archive, passphrase, gpg, uid, gid, end_mark=end_mark)

    def _chunks(self) -> Iterator[bytes]:
        with plain_payload(self.archive, self.passphrase, self.gpg) as stream:
            members = iter_members(stream, max_bytes=expansion_bound(self.archive), with_reader=True)
            next(members, None)  # the list
            yield from canonical_chunks(members, lambda member: normalise(member.name), self.uid, self.gid)
        self.summary = PayloadSummary()
        yield end_of_stream(self.end_mark, self.uid, self.gid)


class PlainCopy(Archive):
    """An encrypted change set's payload, decrypted once into a file of ours: later passes read it as plain."""

    @property
    def encrypted(self) -> bool:
        return False


def plain_copy_bound(stored_size: int) -> int:
    """The most an encrypted change set's payload decrypts to: a change set is never recompressed by gpg, so
    its plaintext is the stored payload less OpenPGP's framing (a margin of a sixteenth and 1 MiB)."""
    return stored_size + stored_size // 16 + 1024 * 1024


@contextlib.contextmanager
def decrypted_once(archive: Archive, passphrase: str | None, gpg: Gpg | None, path: str) -> Iterator[Archive]:
    """The change set to read as many times as its check and application need, gpg's key derivation paid once.

    A plain change set is itself. An encrypted one is decrypted into path
    (0600, removed on leaving), bounded by plain_copy_bound, and given only
    once gpg's verdict on the whole block came: each later pass checks the
    copy's SHA-256 as it reads it, as it does a stored payload's.
    """
    if not archive.encrypted:
        yield archive
        return
    bound = plain_copy_bound(archive.payload_size)
    written = HashingWriter(None)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(descriptor, 'wb') as out, plain_payload(archive, passphrase, gpg) as stream:
            for chunk in iter(lambda: stream.read(CHUNK_SIZE), b''):
                if written.size + len(chunk) > bound:
                    raise invalid(
                        archive.path,
                        f'its encrypted payload decrypts to more than {bound} bytes, '
                        'more than a change set of its size holds',
                    )
                out.write(chunk)
                written.write(chunk)
        yield PlainCopy(path, archive.metadata, archive.payload_name, 0, written.size, written.hexdigest())
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def paths_member(paths: bytes, mtime: int) -> bytes:
    """The first member of a change set's payload: the NUL-terminated list of every path /data holds."""
    member = Member(PATHS_MEMBER, REGULAR, size=len(paths), mode=0o600, mtime=mtime)
    return canonical_header(PATHS_MEMBER, member, 0, 0) + paths + padding(len(paths))


def changes_metadata_fields(base: str, paths: int, members: int, size: int) -> dict[str, Any]:
    """The `changes` object of a new change set's metadata."""
    return dict(base=base, paths=paths, members=members, bytes=size)
