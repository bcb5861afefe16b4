# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The old host's half of a pre-copied move: the box's data while it runs, then only what changed.

Private to the col_agents.tx9 collection. The base pass writes a .tx9 archive
of the running box (not quiesced) after recording, for every path of its
volume, what identifies its content now (inode, change time, mode, size: the
change time moves with every write, rename and mode change, and nothing in
the box can set it back). A changes pass, quiesced when it is the last, walks
the volume again and writes a change set (changeset.py): every path /data
holds, and, read by GNU tar in the hardened helper, each path whose
identification changed or that is new. A path whose change time is too close
to its pass's start to be told apart from a later write is always sent again.

The volume is walked from this host through directory descriptors that never
follow a symbolic link, so a box that swaps a directory for a link while it
is walked cannot lead the walk out of its volume; nothing of a file is read
here, only its status. Everything lives in dest: the record, the manifest and
the archives.
"""

from __future__ import annotations

import array
import fnmatch
import functools
import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.changeset import (
    CHANGES_FORMAT,
    PATHS_MEMBER,
    changes_metadata_fields,
    paths_member,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.metadata import MetadataFields
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.validator import (
    MAX_MEMBERS,
    PayloadSummary,
    PayloadValidator,
    iter_members,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import (
    ChunkReader,
    TeeReader,
    gzip_writer,
    write_atomic,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._lock import box_lock
from ansible_collections.col_agents.tx9.plugins.module_utils._names import object_names
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.backup import Backup, prepare_dest
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.backup_payload import (
    ArchiveWriter,
    PipedTar,
    TarSource,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.host_volumes import volume_directory
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.pipes import PIPE_PATH

if TYPE_CHECKING:
    import datetime

    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpg import Gpg
    from ansible_collections.col_agents.tx9.plugins.module_utils._io import HashingWriter

RECORD = 'precopy.json'
MANIFEST = 'manifest'
LIST_PATH = '/tx9-changed'
# A change time within this many nanoseconds of its pass's start may hide a later write of the same tick.
RACY_NS = 2_000_000_000
KEY_BYTES = 16
UNAVAILABLE_FIX = (
    'Move it with tx9_migrate_strategy: full (one archive, the box quiesced throughout), '
    'or run the engine on the host the modules run on.'
)


def volume_root(client: Any, box: str) -> str:
    """The directory of the box's agent volume on this host; PRECOPY_UNAVAILABLE when it cannot be read here."""
    return volume_directory(client, object_names(box)['agent_volume'], 'PRECOPY_UNAVAILABLE', UNAVAILABLE_FIX)


def excluded(path: str, patterns: Sequence[str]) -> bool:
    """Whether GNU tar, given ./ and these --exclude patterns, leaves path out (any trailing run of its names)."""
    return exclusion_matcher(tuple(patterns))('./' + path)


@functools.lru_cache(maxsize=8)
def exclusion_matcher(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """Whether any of the patterns matches, as fnmatchcase does each, a trailing run of a ./-rooted path's names:
    the whole name, or what follows any of its slashes.

    A pattern that starts with * matches a trailing run only if it matches the whole name (the * takes the
    rest), and one that starts with ./ can only match the whole name: both are tried once, at the start.
    """
    whole = [pattern for pattern in patterns if pattern.startswith(('*', './'))]
    runs = [pattern for pattern in patterns if not pattern.startswith(('*', './'))]
    at_start = re.compile('|'.join(f'(?:{fnmatch.translate(pattern)})' for pattern in whole)).match if whole else None
    any_run = (
        re.compile('(?:^|(?<=/))(?:' + '|'.join(f'(?:{fnmatch.translate(pattern)})' for pattern in runs) + ')').search
        if runs
        else None
    )

    def matches(name: str) -> bool:
        return bool((at_start and at_start(name)) or (any_run and any_run(name)))

    return matches


def walk(root: str, patterns: Sequence[str]) -> Iterator[tuple[str, os.stat_result]]:
    """(path relative to root, its lstat) of root ('') and everything below it but the excluded and special files.

    Every directory is opened relative to its parent's descriptor with
    O_NOFOLLOW, so the walk never leaves root, whatever changes under it.
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    leaves_out = exclusion_matcher(tuple(patterns))
    top = os.open(root, flags)
    yield '', os.fstat(top)
    stack: list[tuple[str, int, Iterator[os.DirEntry[str]]]] = [('', top, iter(os.scandir(top)))]
    while stack:
        where, fd, entries = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            os.close(fd)
            continue
        path = f'{where}/{entry.name}' if where else entry.name
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        kind = stat.S_IFMT(info.st_mode)
        if kind not in (stat.S_IFDIR, stat.S_IFREG, stat.S_IFLNK) or leaves_out('./' + path):
            continue
        yield path, info
        if kind == stat.S_IFDIR:
            try:
                child = os.open(entry.name, flags, dir_fd=fd)
            except OSError:
                continue  # gone or replaced since it was listed: the next pass sees what is there
            stack.append((path, child, iter(os.scandir(child))))


class Manifest:
    """path -> what identifies its content, as 64-bit words under a keyed digest of the path; 0 is never trusted."""

    def __init__(self, key: bytes | None = None) -> None:
        self.key = key or os.urandom(KEY_BYTES)
        self.entries: dict[int, int] = {}

    def digest(self, path: str) -> int:
        raw = hashlib.blake2b(path.encode('utf-8', 'surrogateescape'), digest_size=8, key=self.key).digest()
        return int.from_bytes(raw, 'little')

    @staticmethod
    def identity(info: os.stat_result, started_ns: int) -> int:
        """The word for a path's status; 0 (changed whatever comes next) when its change time is racy."""
        if info.st_ctime_ns >= started_ns - RACY_NS:
            return 0
        raw = b'%d:%d:%d:%d' % (info.st_ino, info.st_ctime_ns, info.st_mode, info.st_size)
        return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), 'little') | 1

    def save(self, path: str) -> None:
        words = array.array('Q')
        for digest, word in self.entries.items():
            words.append(digest)
            words.append(word)
        descriptor = os.open(path + '.new', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, 'wb') as out:
            out.write(self.key)
            words.tofile(out)
        os.replace(path + '.new', path)

    @classmethod
    def load(cls, path: str) -> Manifest:
        with open(path, 'rb') as handle:
            manifest = cls(handle.read(KEY_BYTES))
            words = array.array('Q')
            words.frombytes(handle.read())
        manifest.entries = dict(zip(words[0::2], words[1::2]))
        return manifest


class Pass:
    """One walk of the volume against the last manifest: every path, the changed ones, the next manifest."""

    def __init__(self, root: str, patterns: Sequence[str], last: Manifest | None) -> None:
        self.started_ns = time.time_ns()
        self.manifest = Manifest(last.key if last else None)
        self.paths: list[bytes] = []
        self.changed: list[bytes] = []
        for path, info in walk(root, patterns):
            if len(self.paths) >= MAX_MEMBERS:
                # Bounded before the lists grow further: no archive could carry more.
                raise Tx9Error(
                    f'The volume at {root} holds more than the {MAX_MEMBERS} paths an archive may hold, so it '
                    'cannot be copied; nothing was sent.',
                    'ARCHIVE_UNSAFE',
                    'Remove paths the box does not need (caches, build trees) inside it, then move it again.',
                )
            digest = self.manifest.digest(path)
            word = self.manifest.identity(info, self.started_ns)
            self.manifest.entries[digest] = word
            raw = path.encode('utf-8', 'surrogateescape')
            self.paths.append(raw)
            if last is None or word == 0 or last.entries.get(digest) != word:
                self.changed.append(b'./' + raw if raw else b'.')


class ChangeSetWriter(ArchiveWriter):
    """An ArchiveWriter whose payload is a change set: the list of paths, then tar of the changed ones."""

    def __init__(self, precopy: Precopy, walked: Pass, base: str, gpg: Gpg | None) -> None:
        super().__init__(precopy.client, precopy.box, precopy.excludes, precopy.encrypt, precopy.password, gpg)
        self.walked = walked
        self.base = base
        self.counted = PayloadSummary()

    def tar_source(self, agent: dict[str, Any], workdir: str) -> TarSource:
        listing = os.path.join(workdir, 'changed')
        with open(listing, 'wb') as out:
            out.write(b''.join(path + b'\0' for path in self.walked.changed))
        argv = [
            'tar',
            '--create',
            f'--file={PIPE_PATH}',
            '--directory=/data',
            '--numeric-owner',
            '--format=gnu',
            '--no-recursion',
            '--null',
            '--verbatim-files-from',
            f'--files-from={LIST_PATH}',
            '--ignore-failed-read',
        ]
        # The walk left the excluded paths out of the list already (tar would only warn that its patterns match none).
        mount = dict(Type='bind', Source=listing, Target=LIST_PATH, ReadOnly=True)
        return PipedTar(self.client, self.box, agent['Image'], self.excludes, workdir, argv=argv, mounts=[mount])

    def compress(self, chunks: Iterator[bytes], plain: HashingWriter) -> PayloadSummary:
        """The list of paths, then tar's members each checked on its own (the whole tree is the receiver's to check)."""
        listed = b''.join(path + b'\0' for path in self.walked.paths)
        validator = PayloadValidator()
        with gzip_writer(plain) as gz:
            gz.write(paths_member(listed, int(time.time())))
            for member in iter_members(TeeReader(ChunkReader(chunks), gz.write), compressed=False):
                if member.name == PATHS_MEMBER:
                    continue  # a file of the box with the list's name is named ./.tx9-paths, never this
                validator.feed(member)
        self.counted = validator.summary
        return validator.summary

    def metadata(self, image: str, stored: tuple[str, int], moment: datetime.datetime) -> MetadataFields:
        fields = super().metadata(image, stored, moment)
        fields['format'] = CHANGES_FORMAT
        extra: dict[str, Any] = dict(fields)
        extra['changes'] = changes_metadata_fields(
            self.base, len(self.walked.paths), self.counted.members, self.counted.size
        )
        return extra  # type: ignore[return-value]


class Precopy(Backup):
    """The base pass or a changes pass of one box, written into dest (the move's directory on this host)."""

    def __init__(self, client: Any, home: Any, box: str, dest: str, which: str, final: bool, **options: Any) -> None:
        super().__init__(client, home, box, dest, **options)
        self.which = which
        self.final = final

    def run(self) -> dict[str, Any]:
        started = time.time()
        gpg = self.check_inputs()
        dest = prepare_dest(self.dest)
        with box_lock(self.client, self.home, self.box):
            if self.which == 'changes' and self.final:
                result = self.snapshot(dest, gpg)  # quiesced, then archive() below
            else:
                result = self.archive(self.agent(), dest, gpg)
                result.update(changed=True, box=self.box, quiesced=False)
        result.update(duration=round(time.time() - started, 3), which=self.which)
        return result

    def archive(self, agent: dict[str, Any], dest: str, gpg: Gpg | None) -> dict[str, Any]:
        root = volume_root(self.client, self.box)
        record_path = os.path.join(dest, RECORD)
        if self.which == 'base':
            walked = Pass(root, self.excludes, None)
            result = ArchiveWriter(self.client, self.box, self.excludes, self.encrypt, self.password, gpg).write(
                agent, dest
            )
            result.update(paths=len(walked.paths))
        else:
            record = read_record(record_path)
            walked = Pass(root, self.excludes, Manifest.load(os.path.join(dest, MANIFEST)))
            writer = ChangeSetWriter(self, walked, record['head'], gpg)
            result = writer.write(agent, dest)
            result.update(paths=len(walked.paths), base=record['head'], files=writer.counted.files)
        walked.manifest.save(os.path.join(dest, MANIFEST))
        write_atomic(record_path, json.dumps(dict(box=self.box, head=result['sha256'], which=self.which)) + '\n')
        return result


def read_record(path: str) -> dict[str, Any]:
    """The record of the last pass; PRECOPY_MISSING when there was none."""
    try:
        with open(path, encoding='utf-8') as handle:
            record: dict[str, Any] = json.load(handle)
    except (OSError, ValueError) as exc:
        raise Tx9Error(
            f'No base pass of this box was recorded in {os.path.dirname(path)} ({exc}).',
            'PRECOPY_MISSING',
            'Run the base pass (which: base) first; a move does this itself.',
        ) from exc
    return record
