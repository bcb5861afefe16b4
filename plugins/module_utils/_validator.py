# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The member-by-member validator of a .tx9 payload. Private to the col_agents.tx9 collection.

A payload is a gzip-compressed tar of a box's /data. Nothing of it may be
created or extracted before every rule of the format's "What a valid payload
may contain" holds, so this reads the tar as a stream, member by
member, keeps only names and kinds (never contents), and refuses the first
violation with ARCHIVE_UNSAFE naming the member; a damaged gzip or tar is
ARCHIVE_CORRUPT.

Two ways in:
- validate_stream(fileobj) reads a whole gzip (or plain) tar stream;
- PayloadValidator().feed(tarinfo) per member, then finish(), for a caller
  that parses the tar itself while doing something else with the bytes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import gzip
import re
import tarfile
import zlib

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._pathtable import PathTable

MAX_MEMBERS = 1000000
# The kernel's own limit on links followed in one path lookup (MAXSYMLINKS).
MAX_SYMLINK_HOPS = 40
CHUNK_SIZE = 1024 * 1024

DIRECTORY = 'd'
REGULAR = 'f'
SYMLINK = 'l'
HARDLINK = 'h'

KIND_NAMES = {
    DIRECTORY: 'a directory',
    REGULAR: 'a regular file',
    SYMLINK: 'a symbolic link',
    HARDLINK: 'a hard link',
}

# Other tar types, named for the person reading the refusal.
FOREIGN_TYPES = {
    tarfile.CHRTYPE: 'a character device',
    tarfile.BLKTYPE: 'a block device',
    tarfile.FIFOTYPE: 'a FIFO',
    tarfile.GNUTYPE_SPARSE: 'a GNU sparse file',
    tarfile.CONTTYPE: 'a contiguous file',
}

# C0 controls, DEL and C1 controls: none belongs in a file name a person reads.
CONTROL = re.compile('[\x00-\x1f\x7f-\x9f]')

REQUIRED_DIRECTORIES = ('home', 'home/agent')

UNSAFE_FIX = ('Do not import this archive. List it with "tar -tvzf" (after "gpg --decrypt" when it is '
              'encrypted) to see the member, and restore from another backup.')
CORRUPT_FIX = 'The archive is damaged or incomplete; copy it again from its source or use another backup.'


def shown(text, limit=200):
    """text for an error message: controls and undecodable bytes escaped, long text cut."""
    out = []
    for char in text:
        code = ord(char)
        if 0xdc80 <= code <= 0xdcff:
            # A byte that was not UTF-8, kept by surrogateescape.
            out.append('\\x%02x' % (code - 0xdc00))
        elif CONTROL.match(char):
            out.append('\\x%02x' % code)
        else:
            out.append(char)
    text = ''.join(out)
    if len(text) > limit:
        return text[:limit] + '...'
    return text


def unsafe(member, rule):
    """The ARCHIVE_UNSAFE refusal of one member."""
    return Tx9Error('The payload member "%s" %s; the archive is refused.' % (shown(member), rule),
                    'ARCHIVE_UNSAFE', UNSAFE_FIX, details=dict(member=shown(member)))


def corrupt(detail):
    return Tx9Error('The payload is not a complete gzip-compressed tar (%s); the archive is refused.' % detail,
                    'ARCHIVE_CORRUPT', CORRUPT_FIX)


def normalise(name):
    """The archive path a name stands for: "./a//b/" is "a/b"; the root is ""."""
    return '/'.join(part for part in name.split('/') if part not in ('', '.'))


def parent_of(path):
    return path.rpartition('/')[0]


class StrictTarInfo(tarfile.TarInfo):
    """A TarInfo whose reader accepts only a zero block as the end of the archive.

    tarfile ends quietly at a truncated, missing or invalid header once past
    the first member; a payload must parse to its end, so those become errors.
    """

    @classmethod
    def frombuf(cls, buf, encoding, errors):
        try:
            return super(StrictTarInfo, cls).frombuf(buf, encoding, errors)
        except tarfile.EOFHeaderError:
            raise
        except (tarfile.EmptyHeaderError, tarfile.TruncatedHeaderError):
            raise tarfile.SubsequentHeaderError('the tar ends before its end-of-archive block')
        except tarfile.HeaderError as exc:
            raise tarfile.SubsequentHeaderError('a tar header is damaged: %s' % exc)


class PayloadSummary:
    """What a valid payload holds: member counts and the bytes of its regular files."""

    def __init__(self, members=0, files=0, directories=0, symlinks=0, hardlinks=0, size=0):
        self.members = members
        self.files = files
        self.directories = directories
        self.symlinks = symlinks
        self.hardlinks = hardlinks
        self.size = size

    def as_dict(self):
        return dict(members=self.members, files=self.files, directories=self.directories,
                    symlinks=self.symlinks, hardlinks=self.hardlinks, size=self.size)

    def __repr__(self):
        return 'PayloadSummary(%r)' % (self.as_dict(),)


class PayloadValidator:
    """Checks members one at a time; finish() does the checks that need them all.

    feed() refuses what one member shows on its own (name, type, root, hard
    links to earlier members, members below a known link). finish() refuses
    what only the whole archive shows: a parent that never appeared, a missing
    home or home/agent, and symbolic links, which may point at later members.
    """

    def __init__(self, max_members=MAX_MEMBERS, max_hops=MAX_SYMLINK_HOPS):
        self.max_members = max_members
        self.max_hops = max_hops
        self.summary = PayloadSummary()
        # normalised path -> kind, for every member: compact, as a payload may hold a million.
        self._kinds = PathTable((DIRECTORY, REGULAR, SYMLINK, HARDLINK))
        self._names = {}            # normalised path of a symlink -> member name, for messages
        self._links = {}            # normalised path of a symlink -> target
        self._waiting = {}          # parent not yet seen -> name of the first member inside it
        self._resolved = {}         # symlink path -> (resolved parts, hops), see _resolve
        self._last_directory = None  # the directory _nearest_known found last

    def feed(self, tarinfo):
        """Check one member; raise ARCHIVE_UNSAFE naming it at the first rule it breaks."""
        name = tarinfo.name
        self.summary.members += 1
        if self.summary.members > self.max_members:
            raise unsafe(name, 'is one more than the %d members an archive may hold' % self.max_members)
        path = self._check_name(name)
        kind = self._kind_of(tarinfo)
        self._check_place(name, path, kind)
        if kind == SYMLINK:
            self._check_symlink_target(name, tarinfo.linkname)
            self._links[path] = tarinfo.linkname
            self._names[path] = name
        elif kind == HARDLINK:
            self._check_hardlink_target(name, tarinfo.linkname)
        self._kinds.add(path, kind)
        self._count(kind, tarinfo)

    def finish(self):
        """Check what needs the whole archive; return the PayloadSummary."""
        if self._waiting:
            parent, child = next(iter(self._waiting.items()))
            raise unsafe(child, 'sits in "%s", which is not a directory in the archive' % shown(parent))
        for required in REQUIRED_DIRECTORIES:
            if required not in self._kinds:
                raise Tx9Error('The payload has no "%s" directory, which every box has; the archive is refused.' % required,
                               'ARCHIVE_UNSAFE', UNSAFE_FIX, details=dict(member=required))
        for path in self._links:
            self._check_link_resolves(path)
        return self.summary

    def _check_name(self, name):
        if not name:
            raise unsafe(name, 'has an empty name')
        if CONTROL.search(name):
            raise unsafe(name, 'has a control character in its name')
        if name.startswith('/'):
            raise unsafe(name, 'has an absolute name')
        if '..' in name.split('/'):
            raise unsafe(name, 'has a ".." component in its name')
        path = normalise(name)
        if path in self._kinds:
            raise unsafe(name, 'names "%s" a second time' % (shown(path) or '.'))
        return path

    @staticmethod
    def _kind_of(tarinfo):
        # tarfile counts sparse and contiguous members as regular; many extractors refuse them.
        if tarinfo.type in (tarfile.REGTYPE, tarfile.AREGTYPE):
            return REGULAR
        if tarinfo.isdir():
            return DIRECTORY
        if tarinfo.issym():
            return SYMLINK
        if tarinfo.islnk():
            return HARDLINK
        what = FOREIGN_TYPES.get(tarinfo.type, 'of the unknown tar type "%s"' % shown(tarinfo.type.decode('latin-1')))
        raise unsafe(tarinfo.name, 'is %s; only regular files, directories, symbolic links and hard links '
                                   'may travel' % what)

    def _check_place(self, name, path, kind):
        """The root, home and home/agent are directories, and every parent is a real directory."""
        if path == '':
            if kind != DIRECTORY:
                raise unsafe(name, 'is the root of the archive but %s, not a directory' % KIND_NAMES[kind])
            return
        if path in REQUIRED_DIRECTORIES and kind != DIRECTORY:
            raise unsafe(name, 'is %s, but "%s" must be a directory' % (KIND_NAMES[kind], path))
        child = self._waiting.pop(path, None)
        if child is not None and kind != DIRECTORY:
            # A member named earlier sits inside this one.
            raise unsafe(child, self._below(path, kind))
        parent = parent_of(path)
        if parent == '':
            return
        ancestor, ancestor_kind = self._nearest_known(parent)
        if ancestor_kind is not None and ancestor_kind != DIRECTORY:
            raise unsafe(name, self._below(ancestor, ancestor_kind))
        link = self._link_at_or_above(parent)
        if link is not None:
            # Checked on the links' exact names, so no digest collision can hide one.
            raise unsafe(name, self._below(link, SYMLINK))
        if ancestor != parent:
            self._waiting.setdefault(parent, name)

    def _link_at_or_above(self, path):
        """The symbolic link that path or one of its parents is, or None."""
        if not self._links:
            return None
        while path:
            if path in self._links:
                return path
            path = parent_of(path)
        return None

    def _nearest_known(self, path):
        """The closest of path and its parents already seen, and its kind (None, None when none was)."""
        if path == self._last_directory:
            # Members of one directory mostly follow each other.
            return path, DIRECTORY
        while path:
            kind = self._kinds.get(path)
            if kind is not None:
                if kind == DIRECTORY:
                    self._last_directory = path
                return path, kind
            path = parent_of(path)
        return None, None

    @staticmethod
    def _below(parent, parent_kind):
        if parent_kind == SYMLINK:
            return 'sits below the symbolic link "%s"' % shown(parent)
        return 'sits below "%s", which is %s, not a directory' % (shown(parent), KIND_NAMES[parent_kind])

    @staticmethod
    def _check_symlink_target(name, target):
        if not target:
            raise unsafe(name, 'is a symbolic link with an empty target')
        if CONTROL.search(target):
            raise unsafe(name, 'is a symbolic link with a control character in its target')
        if target.startswith('/'):
            raise unsafe(name, 'is a symbolic link to the absolute path "%s"' % shown(target))

    def _check_hardlink_target(self, name, target):
        if not target:
            raise unsafe(name, 'is a hard link with an empty target')
        if CONTROL.search(target):
            raise unsafe(name, 'is a hard link with a control character in its target')
        if target.startswith('/'):
            raise unsafe(name, 'is a hard link to the absolute path "%s"' % shown(target))
        if '..' in target.split('/'):
            raise unsafe(name, 'is a hard link whose target "%s" leaves the root' % shown(target))
        path = normalise(target)
        kind = self._kinds.get(path)
        if kind is None:
            raise unsafe(name, 'is a hard link to "%s", which is not an earlier member' % shown(target))
        if kind != REGULAR:
            raise unsafe(name, 'is a hard link to "%s", which is %s, not a regular file' % (shown(target), KIND_NAMES[kind]))

    def _count(self, kind, tarinfo):
        if kind == REGULAR:
            self.summary.files += 1
            self.summary.size += tarinfo.size
        elif kind == DIRECTORY:
            self.summary.directories += 1
        elif kind == SYMLINK:
            self.summary.symlinks += 1
        else:
            self.summary.hardlinks += 1

    def _check_link_resolves(self, path):
        try:
            self._resolve(path, [])
        except LinkRefused as refusal:
            raise unsafe(self._names[path], 'is a symbolic link to "%s", which %s' % (shown(self._links[path]), refusal.rule))

    def _resolve(self, path, stack):
        """Where the link at path leads, as path parts, and the hops it took.

        Resolution is physical, like the kernel's: a ".." after a link applies
        to where the link led, not to the link's name. Every parent of a link
        is a real directory (checked before), so a link's result never depends
        on how it was reached and is remembered.
        """
        known = self._resolved.get(path)
        if known is not None:
            return known
        stack.append(path)
        parts = [part for part in parent_of(path).split('/') if part]
        hops = 1
        for part in self._links[path].split('/'):
            if part in ('', '.'):
                continue
            if part == '..':
                if not parts:
                    raise LinkRefused(self._via('leads out of the root', path, stack))
                parts.pop()
                continue
            parts.append(part)
            here = '/'.join(parts)
            if here not in self._links:
                continue
            if here in stack:
                raise LinkRefused(self._via('is part of a cycle of links', here, stack))
            led_to, taken = self._resolve(here, stack)
            hops += taken
            if hops > self.max_hops:
                raise LinkRefused('takes more than %d hops to resolve' % self.max_hops)
            parts = list(led_to)
        stack.pop()
        self._resolved[path] = (tuple(parts), hops)
        return self._resolved[path]

    @staticmethod
    def _via(rule, where, stack):
        if where == stack[0]:
            return rule
        return '%s (at the link "%s")' % (rule, shown(where))


class LinkRefused(Exception):
    """A symbolic link that does not resolve inside the root; carries the rule it broke."""

    def __init__(self, rule):
        super(LinkRefused, self).__init__(rule)
        self.rule = rule


def open_tar_stream(fileobj, compressed=True):
    """A stream-mode TarFile over fileobj (gzip-compressed unless told otherwise).

    The gzip layer is Python's GzipFile rather than tarfile's own "r|gz",
    which never checks the CRC and length trailer.
    """
    source = gzip.GzipFile(fileobj=fileobj, mode='rb') if compressed else fileobj
    return tarfile.open(fileobj=source, mode='r|', tarinfo=StrictTarInfo, encoding='utf-8', errors='surrogateescape')


def drain_tar_end(tar):
    """Read what follows the end-of-archive block to EOF; it must be zeros.

    Reading to EOF is what makes GzipFile check the CRC and length trailer.
    """
    stream = tar.fileobj
    while True:
        chunk = stream.read(CHUNK_SIZE)
        if not chunk:
            return
        if chunk.count(b'\0') != len(chunk):
            raise tarfile.ReadError('data follows the end of the tar')


def iter_members(fileobj, compressed=True):
    """Every member of a tar stream, then its end checked; ARCHIVE_CORRUPT when damaged."""
    try:
        tar = open_tar_stream(fileobj, compressed)
        while True:
            tarinfo = tar.next()
            if tarinfo is None:
                break
            # Stream mode remembers every member it read; a payload may hold a million.
            tar.members = []
            yield tarinfo
        drain_tar_end(tar)
    except (tarfile.TarError, EOFError, OSError, zlib.error, UnicodeError) as exc:
        raise corrupt(('%s' % exc) or type(exc).__name__)


def validate_stream(fileobj, compressed=True, validator=None):
    """Validate a whole payload stream, reading it to its end; return the PayloadSummary.

    fileobj only needs read(); nothing of the payload is kept in memory.
    """
    validator = validator or PayloadValidator()
    for tarinfo in iter_members(fileobj, compressed):
        validator.feed(tarinfo)
    return validator.finish()
