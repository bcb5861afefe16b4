# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tar subset's vocabulary and the parsing of one header. Private to the col_agents.tx9 collection.

What the reader (tarstream.py), the canonical writer (tarwriter.py) and the
payload validator share: member kinds, the Member the reader yields, the
refusals that name a member, and the strict parsing of a 512-byte header
block and of the extension records (pax, GNU long names) before a member.
docs/archive-format.md says the accepted subset for people.
"""

from __future__ import annotations

import dataclasses
import re

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

BLOCK = 512

USTAR_MAGIC = b'ustar\x0000'
GNU_MAGIC = b'ustar  \x00'

MAX_NAME_BYTES = 4096
MAX_DEPTH = 256
MAX_COMPONENT_BYTES = 255

DIRECTORY = 'd'
REGULAR = 'f'
SYMLINK = 'l'
HARDLINK = 'h'
# A member of any other type, which only a reader told to pass them (foreign=True) yields.
FOREIGN = '?'

KIND_NAMES = {
    DIRECTORY: 'a directory',
    REGULAR: 'a regular file',
    SYMLINK: 'a symbolic link',
    HARDLINK: 'a hard link',
}

MEMBER_TYPES = {b'0': REGULAR, b'\0': REGULAR, b'1': HARDLINK, b'2': SYMLINK, b'5': DIRECTORY}
PAX_LOCAL = b'x'
GNU_LONG_NAME = b'L'
GNU_LONG_LINK = b'K'
EXTENSIONS = (PAX_LOCAL, GNU_LONG_NAME, GNU_LONG_LINK)

# Other types, named for the person reading the refusal.
FOREIGN_TYPES = {
    b'3': 'a character device',
    b'4': 'a block device',
    b'6': 'a FIFO',
    b'7': 'a contiguous file',
    b'g': 'a global pax header',
    b'S': 'a GNU sparse file',
    b'D': 'a GNU directory dump',
    b'M': 'a GNU multi-volume continuation',
    b'N': 'a GNU old long-name record',
    b'V': 'a GNU volume label',
}

# pax keywords a member may carry: the ones that say what the reader keeps
# (path, linkpath, mtime) and ownership and times it ignores.
PAX_KEYWORDS = frozenset(('path', 'linkpath', 'mtime', 'atime', 'ctime', 'uid', 'gid', 'uname', 'gname'))
PAX_TIME = re.compile(rb'-?[0-9]{1,20}(\.[0-9]{1,19})?\Z')
PAX_ID = re.compile(rb'[0-9]{1,20}\Z')
PAX_LENGTH = re.compile(rb'[1-9][0-9]{0,7} ')
OCTAL = re.compile(rb' *([0-7]*)[ \0]*\Z')

# Each byte from 0x80 as itself, every other byte as zero: the bytes a signed checksum counts differently.
HIGH_BYTES = bytes(128) + bytes(range(128, 256))

# C0 controls, DEL and C1 controls: none belongs in a file name a person reads.
CONTROL = re.compile('[\x00-\x1f\x7f-\x9f]')

UNSAFE_FIX = (
    'Do not import this archive. List it with "tar -tvzf" (after "gpg --decrypt" when it is '
    'encrypted) to see the member, and restore from another backup.'
)
CORRUPT_FIX = 'The archive is damaged or incomplete; copy it again from its source or use another backup.'


def shown(text: str, limit: int = 200) -> str:
    """text for an error message: controls and undecodable bytes escaped, long text cut."""
    out = []
    for char in text:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            # A byte that was not UTF-8, kept by surrogateescape.
            out.append(f'\\x{code - 0xDC00:02x}')
        elif CONTROL.match(char):
            out.append(f'\\x{code:02x}')
        else:
            out.append(char)
    text = ''.join(out)
    if len(text) > limit:
        return text[:limit] + '...'
    return text


def unsafe(member: str, rule: str) -> Tx9Error:
    """The ARCHIVE_UNSAFE refusal of one member."""
    return Tx9Error(
        f'The payload member "{shown(member)}" {rule}; the archive is refused.',
        'ARCHIVE_UNSAFE',
        UNSAFE_FIX,
        details=dict(member=shown(member)),
    )


def corrupt(detail: str) -> Tx9Error:
    return Tx9Error(
        f'The payload is not a complete gzip-compressed tar ({detail}); the archive is refused.',
        'ARCHIVE_CORRUPT',
        CORRUPT_FIX,
    )


def normalise(name: str) -> str:
    """The archive path a name stands for: "./a//b/" is "a/b"; the root is ""."""
    return '/'.join(part for part in name.split('/') if part not in ('', '.'))


def text_of(raw: bytes) -> str:
    """A header's bytes as text: UTF-8, any other byte kept by surrogateescape."""
    return raw.decode('utf-8', 'surrogateescape')


def field(block: bytes, start: int, end: int) -> bytes:
    """A NUL-terminated string field's bytes."""
    raw = block[start:end]
    cut = raw.find(b'\0')
    return raw if cut < 0 else raw[:cut]


class Member:
    """One member as the reader accepted it: what the canonical writer needs, nothing else."""

    __slots__ = ('name', 'kind', 'size', 'mode', 'mtime', 'linkname', 'offset')

    def __init__(
        self,
        name: str,
        kind: str,
        size: int = 0,
        mode: int = 0o644,
        mtime: int = 0,
        linkname: str = '',
        offset: int = 0,
    ) -> None:
        self.name = name
        self.kind = kind
        self.size = size
        self.mode = mode
        self.mtime = mtime
        self.linkname = linkname
        self.offset = offset

    def __repr__(self) -> str:
        return f'Member({self.name!r}, {self.kind!r}, size={self.size})'


class Header:
    """One 512-byte header block, parsed strictly; name is the best name known so far, for refusals."""

    def __init__(self, block: bytes, name_hint: str | None) -> None:
        self.block = block
        self.typeflag = block[156:157]
        self.magic = block[257:265]
        self.gnu = self.magic == GNU_MAGIC
        self.hint = name_hint or text_of(self.name())
        self._check_checksum()
        if self.magic != USTAR_MAGIC and not self.gnu:
            raise unsafe(self.hint, f'has a tar header that is neither ustar nor GNU ({self._magic_shown()})')
        self._check_reserved()

    def _magic_shown(self) -> str:
        if not self.magic.strip(b'\0'):
            return 'an old V7 header'
        return f'magic {shown(self.magic.decode("latin-1"))}'

    def _check_checksum(self) -> None:
        stored = self.number(148, 156, 'checksum', corrupt_on_error=True)
        unsigned = sum(self.block) - sum(self.block[148:156]) + 8 * 32
        if stored == unsigned:
            return
        # Old writers summed the bytes as signed chars: bytes from 0x80 count 256 less.
        high = self.block[:148].translate(HIGH_BYTES) + self.block[156:].translate(HIGH_BYTES)
        if stored != unsigned - 2 * sum(high):
            raise corrupt(f'the tar header of "{shown(self.hint)}" has a wrong checksum')

    def _check_reserved(self) -> None:
        # GNU keeps times, sparse maps and offsets where ustar has its prefix, and
        # Python's tarfile reads a prefix there all the same; star keeps a split prefix.
        if self.gnu:
            if self.block[345:512].count(0) != 167:
                raise unsafe(
                    self.hint,
                    'has times, sparse or multi-volume data in its GNU header, where other readers see a name prefix',
                )
        elif self.block[500:512].count(0) != 12:
            raise unsafe(self.hint, 'has data in the reserved end of its ustar header')

    def number(self, start: int, end: int, what: str, corrupt_on_error: bool = False, signed: bool = False) -> int:
        raw = self.block[start:end]
        if raw[0] & 0x80:
            return self._base256(raw, what, corrupt_on_error, signed)
        match = OCTAL.match(raw)
        if match is None:
            if corrupt_on_error:
                raise corrupt(f'the tar header of "{shown(self.hint)}" has a malformed {what}')
            raise unsafe(self.hint, f'has a {what} that is not octal digits')
        digits = match.group(1)
        return int(digits, 8) if digits else 0

    def _base256(self, raw: bytes, what: str, corrupt_on_error: bool, signed: bool) -> int:
        if not self.gnu or corrupt_on_error:
            raise unsafe(self.hint, f'has a base-256 {what} in a header that is not GNU')
        if raw[0] == 0xFF:
            value = int.from_bytes(raw, 'big', signed=True)
        elif raw[0] == 0x80:
            value = int.from_bytes(raw[1:], 'big')
        else:
            raise unsafe(self.hint, f'has a malformed base-256 {what}')
        if value < 0 and not signed:
            raise unsafe(self.hint, f'has a negative {what}')
        return value

    def name(self) -> bytes:
        name = field(self.block, 0, 100)
        if not self.gnu:
            prefix = field(self.block, 345, 500)
            if prefix:
                name = prefix + b'/' + name
        return name


def check_path_limits(member: str, path: str, what: str = 'name') -> None:
    """At most MAX_NAME_BYTES and MAX_DEPTH components; a name's components fit a file system's 255 bytes."""
    raw = path.encode('utf-8', 'surrogateescape')
    if len(raw) > MAX_NAME_BYTES:
        raise unsafe(member, f'has a {what} of {len(raw)} bytes; at most {MAX_NAME_BYTES} are allowed')
    parts = [part for part in raw.split(b'/') if part not in (b'', b'.')]
    if len(parts) > MAX_DEPTH:
        raise unsafe(member, f'has a {what} of more than {MAX_DEPTH} components')
    if what == 'name' and parts and max(len(part) for part in parts) > MAX_COMPONENT_BYTES:
        raise unsafe(
            member, f'has a name component of more than {MAX_COMPONENT_BYTES} bytes, which no file system holds'
        )


# Extension records: a pax local header or GNU long names before a member.


class Refusal(Exception):
    """A rule an extension header breaks; refused once the member it belongs to is named."""


@dataclasses.dataclass
class Extension:
    """What the extension records before one member said, and the first rule they broke."""

    path: str | None = None  # pax
    linkpath: str | None = None  # pax
    mtime: int | None = None  # pax
    size: int | None = None  # pax, in the .tx9 container only
    name: str | None = None  # GNU long name
    link: str | None = None  # GNU long link
    problem: str | None = None
    # The typeflags of the records read so far.
    kinds: list[bytes] = dataclasses.field(default_factory=list)


def extension_rule(kind: bytes, gnu: bool, kinds: list[bytes]) -> None:
    """One extension per member, of the member's own format."""
    if kind == PAX_LOCAL:
        if gnu:
            raise Refusal('has a pax header in a GNU-format header')
        if kinds:
            raise Refusal('has a pax header after another extension header')
        return
    if not gnu:
        raise Refusal('has a GNU long-name header in a ustar-format header')
    if PAX_LOCAL in kinds:
        raise Refusal('mixes a pax header with GNU long names')
    if kind in kinds:
        raise Refusal(f'has two GNU long-{"name" if kind == GNU_LONG_NAME else "link"} headers')


def long_name(data: bytes) -> str:
    """A GNU long name or link: the bytes before the terminating NULs."""
    if not data.endswith(b'\0'):
        raise Refusal('has a GNU long name that does not end in a NUL within its size')
    raw = data.rstrip(b'\0')
    if b'\0' in raw:
        raise Refusal('has a NUL inside a GNU long name')
    return text_of(raw)


def parse_pax(data: bytes, extension: Extension, pax_size: bool = False) -> str | None:
    """Read the records of a pax local header into extension (path, linkpath, mtime, size as far as given).

    Every record is read, so the path is known even when another record
    breaks a rule; the first rule broken is returned, None when there is none.
    """
    seen: set[str] = set()
    problem = None
    pos = 0
    while pos < len(data):
        match = PAX_LENGTH.match(data, pos)
        end = pos + int(match.group(0)) if match else 0
        if match is None or end > len(data) or data[end - 1 : end] != b'\n':
            problem = problem or 'has a malformed pax record'
            break
        key, equals, value = data[match.end() : end - 1].partition(b'=')
        pos = end
        try:
            keyword = pax_keyword(key if equals else b'', pax_size)
            if keyword in seen:
                raise Refusal(f'has the pax keyword "{keyword}" twice')
            seen.add(keyword)
            pax_value(extension, keyword, value)
        except Refusal as refusal:
            problem = problem or refusal.args[0]
    return problem


def pax_keyword(key: bytes, pax_size: bool = False) -> str:
    try:
        keyword = key.decode('ascii')
    except UnicodeError:
        raise Refusal('has a pax keyword that is not ASCII') from None
    if not keyword:
        raise Refusal('has a pax record without a keyword')
    if keyword.startswith('GNU.sparse.'):
        raise Refusal(f'has a GNU sparse record ({shown(keyword)})')
    if 'xattr' in keyword.lower() or 'acl' in keyword.lower():
        raise Refusal(f'has an extended attribute or ACL record ({shown(keyword)})')
    if keyword == 'size' and not pax_size:
        raise Refusal('has a pax size record; sizes travel in the header')
    if keyword not in PAX_KEYWORDS and keyword != 'size':
        raise Refusal(f'has the pax keyword "{shown(keyword)}", which is not among {", ".join(sorted(PAX_KEYWORDS))}')
    return keyword


def pax_value(extension: Extension, keyword: str, value: bytes) -> None:
    if not value or b'\0' in value:
        raise Refusal(f'has an empty pax "{keyword}" or one holding a NUL')
    if keyword in ('path', 'linkpath'):
        try:
            text = value.decode('utf-8')
        except UnicodeError:
            raise Refusal(f'has a pax "{keyword}" that is not UTF-8') from None
        if keyword == 'path':
            extension.path = text
        else:
            extension.linkpath = text
    elif keyword in ('mtime', 'atime', 'ctime'):
        if not PAX_TIME.match(value):
            raise Refusal(f'has a malformed pax "{keyword}"')
        if keyword == 'mtime':
            whole, _dot, fraction = value.partition(b'.')
            # Seconds, rounded down, as the header field would hold them.
            extension.mtime = int(whole) - (1 if whole.startswith(b'-') and fraction.strip(b'0') else 0)
    elif keyword in ('uid', 'gid', 'size') and not PAX_ID.match(value):
        raise Refusal(f'has a malformed pax "{keyword}"')
    elif keyword == 'size':
        extension.size = int(value)
