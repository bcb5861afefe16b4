# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one tar reader and the one tar writer of the collection. Private to the col_agents.tx9 collection.

Untrusted tar bytes are read here and nowhere else. The reader accepts a
strict subset of tar on which Python's tarfile, GNU tar and Go's archive/tar
(Docker's extractor) agree, and refuses everything else with ARCHIVE_UNSAFE
naming the member, before any work proportional to what a header claims.
What another program reads is written by canonical_header() from the members
the reader and the validator accepted, never passed through.

The subset (docs/archive-format.md says it for people):
- ustar ("ustar\\0" "00") or GNU ("ustar  \\0") headers; no V7, no star trailer;
- member types: regular file ("0", or NUL when the name does not end in
  "/"), hard link ("1"), symbolic link ("2"), directory ("5"); only regular
  files have data;
- one extension per member: a pax local header ("x", ustar only, at most
  1 MiB, the keywords of PAX_KEYWORDS once each) or GNU long name/link
  ("L"/"K", GNU only, at most one of each); no global header, no sparse
  member or record, no xattr or ACL record, no pax size;
- a GNU header's bytes 345-512 hold only access and change times; a ustar
  header's bytes 500-512 are zero;
- numbers are octal digits (GNU headers may use base-256);
- names and link targets at most 4,096 bytes and 256 components;
- a member's data ends within what the stream can hold.
"""

import re

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

BLOCK = 512
CHUNK_SIZE = 1024 * 1024

USTAR_MAGIC = b'ustar\x0000'
GNU_MAGIC = b'ustar  \x00'

MAX_PAX_SIZE = 1024 * 1024
MAX_NAME_BYTES = 4096
MAX_LONG_NAME_SIZE = MAX_NAME_BYTES + 1
MAX_DEPTH = 256
MAX_COMPONENT_BYTES = 255
# What may follow the end-of-archive block: padding, never content.
MAX_TRAILER = 1024 * 1024

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


def shown(text, limit=200):
    """text for an error message: controls and undecodable bytes escaped, long text cut."""
    out = []
    for char in text:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            # A byte that was not UTF-8, kept by surrogateescape.
            out.append('\\x%02x' % (code - 0xDC00))
        elif CONTROL.match(char):
            out.append(f'\\x{code:02x}')
        else:
            out.append(char)
    text = ''.join(out)
    if len(text) > limit:
        return text[:limit] + '...'
    return text


def unsafe(member, rule):
    """The ARCHIVE_UNSAFE refusal of one member."""
    return Tx9Error(
        f'The payload member "{shown(member)}" {rule}; the archive is refused.',
        'ARCHIVE_UNSAFE',
        UNSAFE_FIX,
        details=dict(member=shown(member)),
    )


def overclaimed(member, size, room):
    return unsafe(member, 'claims %d bytes of data, more than the %d bytes this payload can still hold' % (size, room))


def corrupt(detail):
    return Tx9Error(
        f'The payload is not a complete gzip-compressed tar ({detail}); the archive is refused.',
        'ARCHIVE_CORRUPT',
        CORRUPT_FIX,
    )


def normalise(name):
    """The archive path a name stands for: "./a//b/" is "a/b"; the root is ""."""
    return '/'.join(part for part in name.split('/') if part not in ('', '.'))


def text_of(raw):
    """A header's bytes as text: UTF-8, any other byte kept by surrogateescape."""
    return raw.decode('utf-8', 'surrogateescape')


def field(block, start, end):
    """A NUL-terminated string field's bytes."""
    raw = block[start:end]
    cut = raw.find(b'\0')
    return raw if cut < 0 else raw[:cut]


class Member:
    """One member as the reader accepted it: what the canonical writer needs, nothing else."""

    __slots__ = ('name', 'kind', 'size', 'mode', 'mtime', 'linkname', 'offset')

    def __init__(self, name, kind, size=0, mode=0o644, mtime=0, linkname='', offset=0):
        self.name = name
        self.kind = kind
        self.size = size
        self.mode = mode
        self.mtime = mtime
        self.linkname = linkname
        self.offset = offset

    def __repr__(self):
        return 'Member(%r, %r, size=%d)' % (self.name, self.kind, self.size)


class Header:
    """One 512-byte header block, parsed strictly; name is the best name known so far, for refusals."""

    def __init__(self, block, name_hint):
        self.block = block
        self.typeflag = block[156:157]
        self.magic = block[257:265]
        self.gnu = self.magic == GNU_MAGIC
        self.hint = name_hint or text_of(self.name())
        self._check_checksum()
        if self.magic != USTAR_MAGIC and not self.gnu:
            raise unsafe(self.hint, f'has a tar header that is neither ustar nor GNU ({self._magic_shown()})')
        self._check_reserved()

    def _magic_shown(self):
        if not self.magic.strip(b'\0'):
            return 'an old V7 header'
        return 'magic {}'.format(shown(self.magic.decode('latin-1')))

    def _check_checksum(self):
        stored = self.number(148, 156, 'checksum', corrupt_on_error=True)
        unsigned = sum(self.block) - sum(self.block[148:156]) + 8 * 32
        if stored == unsigned:
            return
        # Old writers summed the bytes as signed chars: bytes from 0x80 count 256 less.
        high = self.block[:148].translate(HIGH_BYTES) + self.block[156:].translate(HIGH_BYTES)
        if stored != unsigned - 2 * sum(high):
            raise corrupt(f'the tar header of "{shown(self.hint)}" has a wrong checksum')

    def _check_reserved(self):
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

    def number(self, start, end, what, corrupt_on_error=False, signed=False):
        raw = self.block[start:end]
        if raw[0] & 0x80:
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
        match = OCTAL.match(raw)
        if match is None:
            if corrupt_on_error:
                raise corrupt(f'the tar header of "{shown(self.hint)}" has a malformed {what}')
            raise unsafe(self.hint, f'has a {what} that is not octal digits')
        digits = match.group(1)
        return int(digits, 8) if digits else 0

    def name(self):
        name = field(self.block, 0, 100)
        if not self.gnu:
            prefix = field(self.block, 345, 500)
            if prefix:
                name = prefix + b'/' + name
        return name


class TarReader:
    """Reads tar members from a stream of bytes (read(n)), strictly, one at a time.

    members() yields each Member; the data of a regular file is read with
    data() or skipped when the caller asks for the next member. max_bytes
    bounds where any member's data may end (what the stream can hold), so a
    header's claim is refused before any work is spent on it.
    """

    def __init__(self, stream, max_bytes=None, pax_size=False, foreign=False, overclaim=None):
        self.stream = stream
        self.max_bytes = max_bytes
        # A pax size record, which only the .tx9 container may use (for a payload over 8 GiB).
        self.pax_size = pax_size
        # Members of other types yielded with kind None (the container says what it expected).
        self.foreign = foreign
        # The error of a member whose data would end beyond max_bytes.
        self.overclaim = overclaim or overclaimed
        self.offset = 0  # tar bytes consumed
        self._buffer = b''
        self._pos = 0
        self._pending = 0  # data (and padding) of the current member not yet read
        self._pending_data = 0

    # Raw reading.

    def _fill(self, need):
        """Make at least need bytes available (fewer at the end of the stream)."""
        available = len(self._buffer) - self._pos
        if available >= need:
            return available
        # What is left is kept; a drained buffer is replaced by the chunk itself, without a copy.
        parts = [self._buffer[self._pos :]] if available else []
        while available < need:
            chunk = self.stream.read(max(CHUNK_SIZE, need - available))
            if not chunk:
                break
            parts.append(chunk)
            available += len(chunk)
        self._buffer = parts[0] if len(parts) == 1 else b''.join(parts)
        self._pos = 0
        return available

    def _take(self, size, what):
        if self._fill(size) < size:
            raise corrupt(f'the tar ends inside {what}')
        data = self._buffer[self._pos : self._pos + size]
        self._pos += size
        self.offset += size
        return data

    def _chunks(self, size, what):
        """size bytes as chunks, without joining them."""
        while size > 0:
            if self._pos >= len(self._buffer):
                if self._fill(1) < 1:
                    raise corrupt(f'the tar ends inside {what}')
            end = min(len(self._buffer), self._pos + size)
            chunk = self._buffer[self._pos : end]
            size -= end - self._pos
            self.offset += end - self._pos
            self._pos = end
            yield chunk

    def _skip(self, size, what):
        """Pass over size bytes without copying them."""
        while size > 0:
            if self._pos >= len(self._buffer) and self._fill(1) < 1:
                raise corrupt(f'the tar ends inside {what}')
            step = min(len(self._buffer) - self._pos, size)
            self._pos += step
            self.offset += step
            size -= step

    def _skip_pending(self):
        if self._pending:
            self._skip(self._pending, "a member's data")
            self._pending = 0
            self._pending_data = 0

    def data(self):
        """The current regular member's data as chunks (then its padding is skipped)."""
        size = self._pending_data
        padding = self._pending - size
        self._pending = self._pending_data = 0
        yield from self._chunks(size, "a member's data")
        if padding:
            self._take(padding, "a member's padding")

    # Members.

    def members(self):
        """Every member, then the end of the tar checked."""
        while True:
            self._skip_pending()
            member = self._next()
            if member is None:
                self._check_trailer()
                return
            yield member

    def _next(self):
        extension = {}
        kinds = []
        while True:
            block = self._take(BLOCK, 'a header')
            if block.count(0) == BLOCK:
                return self._end(kinds)
            header = Header(block, extension.get('path') or extension.get('name'))
            if header.typeflag in EXTENSIONS:
                self._extension(header, extension, kinds)
                continue
            return self._member(header, extension, kinds)

    @staticmethod
    def _end(kinds):
        if kinds:
            raise corrupt('the tar ends after an extension header, before its member')
        return None

    def _check_trailer(self):
        """Only zeros may follow the end block; reading to the end makes gzip check its trailer."""
        seen = 0
        while True:
            if self._fill(1) < 1:
                return
            chunk = self._buffer[self._pos :]
            self._pos = len(self._buffer)
            if chunk.count(0) != len(chunk):
                raise corrupt('data follows the end of the tar')
            seen += len(chunk)
            if seen > MAX_TRAILER:
                raise corrupt('more than %d bytes of padding follow the end of the tar' % MAX_TRAILER)

    def _extension(self, header, extension, kinds):
        """Read one extension header into extension; a rule it breaks waits for the member's name."""
        kind = header.typeflag
        limit = MAX_PAX_SIZE if kind == PAX_LOCAL else MAX_LONG_NAME_SIZE
        size = header.number(124, 136, 'size')
        if size > limit:
            raise unsafe(header.hint, 'has an extension header of %d bytes; at most %d are allowed' % (size, limit))
        self._check_claim(header.hint, size)
        data = self._take(size, 'an extension header')
        padding = self._take(-size % BLOCK, "an extension header's padding")
        try:
            extension_rule(kind, header.gnu, kinds)
            if padding.count(0) != len(padding):
                raise Refusal('has data hidden in the padding of an extension header')
            if kind == PAX_LOCAL:
                values, problem = parse_pax(data, self.pax_size)
                extension.update(values)
                if problem:
                    raise Refusal(problem)
            else:
                extension['name' if kind == GNU_LONG_NAME else 'link'] = long_name(data)
        except Refusal as refusal:
            extension.setdefault('problem', refusal.args[0])
        kinds.append(kind)

    def _check_claim(self, name, size):
        if self.max_bytes is not None and self.offset + size > self.max_bytes:
            raise self.overclaim(name, size, max(self.max_bytes - self.offset, 0))

    def _member(self, header, extension, kinds):
        kind = MEMBER_TYPES.get(header.typeflag)
        name = extension.get('path') or extension.get('name') or text_of(header.name())
        if 'problem' in extension:
            raise unsafe(name, extension['problem'])
        if kind is None:
            if self.foreign:
                return Member(name, None, offset=self.offset)
            what = FOREIGN_TYPES.get(
                header.typeflag, 'of the unknown tar type "{}"'.format(shown(header.typeflag.decode('latin-1')))
            )
            raise unsafe(name, f'is {what}; only regular files, directories, symbolic links and hard links may travel')
        if kinds and header.gnu != (PAX_LOCAL not in kinds):
            raise unsafe(name, 'has extension headers of one tar format and a member header of another')
        if header.typeflag == b'\0' and (name.endswith('/') or header.name().endswith(b'/')):
            raise unsafe(name, 'is an old-style regular file whose name ends in "/"')
        if kind != DIRECTORY and name.endswith('/') and name.strip('/.'):
            raise unsafe(name, f'is {KIND_NAMES[kind]} whose name ends in "/"')
        if kind == DIRECTORY:
            name = name.rstrip('/') or name
        linkname = extension.get('linkpath') or extension.get('link') or text_of(field(header.block, 157, 257))
        check_path_limits(name, name)
        if kind == SYMLINK:
            check_path_limits(name, linkname, 'link target')
        elif kind == HARDLINK:
            check_path_limits(name, linkname)
        size = extension['size'] if 'size' in extension else header.number(124, 136, 'size')
        if kind != REGULAR and size:
            raise unsafe(name, 'is %s with %d bytes of data; only regular files carry data' % (KIND_NAMES[kind], size))
        self._check_claim(name, size)
        mtime = extension.get('mtime')
        if mtime is None:
            mtime = header.number(136, 148, 'modification time', signed=True)
        mode = header.number(100, 108, 'mode')
        header.number(108, 116, 'owner')
        header.number(116, 124, 'group')
        self._pending_data = size
        self._pending = size + (-size % BLOCK)
        return Member(
            name, kind, size, mode & 0o7777, mtime, linkname if kind in (SYMLINK, HARDLINK) else '', self.offset
        )


def check_path_limits(member, path, what='name'):
    """At most MAX_NAME_BYTES and MAX_DEPTH components; a name's components fit a file system's 255 bytes."""
    raw = path.encode('utf-8', 'surrogateescape')
    if len(raw) > MAX_NAME_BYTES:
        raise unsafe(member, 'has a %s of %d bytes; at most %d are allowed' % (what, len(raw), MAX_NAME_BYTES))
    parts = [part for part in raw.split(b'/') if part not in (b'', b'.')]
    if len(parts) > MAX_DEPTH:
        raise unsafe(member, 'has a %s of more than %d components' % (what, MAX_DEPTH))
    if what == 'name' and parts and max(len(part) for part in parts) > MAX_COMPONENT_BYTES:
        raise unsafe(
            member, 'has a name component of more than %d bytes, which no file system holds' % MAX_COMPONENT_BYTES
        )


class Refusal(Exception):
    """A rule an extension header breaks; refused once the member it belongs to is named."""


def extension_rule(kind, gnu, kinds):
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
        raise Refusal('has two GNU long-%s headers' % ('name' if kind == GNU_LONG_NAME else 'link'))


def long_name(data):
    """A GNU long name or link: the bytes before the terminating NULs."""
    if not data.endswith(b'\0'):
        raise Refusal('has a GNU long name that does not end in a NUL within its size')
    raw = data.rstrip(b'\0')
    if b'\0' in raw:
        raise Refusal('has a NUL inside a GNU long name')
    return text_of(raw)


def parse_pax(data, pax_size=False):
    """The records of a pax local header: {'path', 'linkpath', 'mtime'} as far as given.

    Every record is read, so the path is known even when another record
    breaks a rule; the first rule broken is raised after them as a Refusal.
    """
    values = {}
    seen = set()
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
            pax_value(values, keyword, value)
        except Refusal as refusal:
            problem = problem or refusal.args[0]
    return values, problem


def pax_keyword(key, pax_size=False):
    try:
        keyword = key.decode('ascii')
    except UnicodeError:
        raise Refusal('has a pax keyword that is not ASCII')
    if not keyword:
        raise Refusal('has a pax record without a keyword')
    if keyword.startswith('GNU.sparse.'):
        raise Refusal(f'has a GNU sparse record ({shown(keyword)})')
    if 'xattr' in keyword.lower() or 'acl' in keyword.lower():
        raise Refusal(f'has an extended attribute or ACL record ({shown(keyword)})')
    if keyword == 'size' and not pax_size:
        raise Refusal('has a pax size record; sizes travel in the header')
    if keyword not in PAX_KEYWORDS and keyword != 'size':
        raise Refusal(
            'has the pax keyword "{}", which is not among {}'.format(shown(keyword), ', '.join(sorted(PAX_KEYWORDS)))
        )
    return keyword


def pax_value(values, keyword, value):
    if not value or b'\0' in value:
        raise Refusal(f'has an empty pax "{keyword}" or one holding a NUL')
    if keyword in ('path', 'linkpath'):
        try:
            values[keyword] = value.decode('utf-8')
        except UnicodeError:
            raise Refusal(f'has a pax "{keyword}" that is not UTF-8')
    elif keyword in ('mtime', 'atime', 'ctime'):
        if not PAX_TIME.match(value):
            raise Refusal(f'has a malformed pax "{keyword}"')
        if keyword == 'mtime':
            whole, _dot, fraction = value.partition(b'.')
            # Seconds, rounded down, as the header field would hold them.
            values['mtime'] = int(whole) - (1 if whole.startswith(b'-') and fraction.strip(b'0') else 0)
    elif keyword in ('uid', 'gid', 'size') and not PAX_ID.match(value):
        raise Refusal(f'has a malformed pax "{keyword}"')
    elif keyword == 'size':
        values['size'] = int(value)


# The canonical writer: GNU headers, long names as GNU long-name records, which
# Go's archive/tar, GNU tar and Python's tarfile read alike, byte for byte.

TYPEFLAGS = {REGULAR: b'0', HARDLINK: b'1', SYMLINK: b'2', DIRECTORY: b'5'}
LONG_LINK_NAME = b'././@LongLink'


def _numeric(value, width):
    """An octal field of width bytes, or GNU base-256 when octal cannot hold value."""
    digits = width - 1
    if 0 <= value < 8**digits:
        return b'%0*o\0' % (digits, value)
    return (value + (1 << (8 * width)) if value < 0 else value | (0x80 << (8 * (width - 1)))).to_bytes(width, 'big')


def _block(name, typeflag, size=0, mode=0, mtime=0, linkname=b'', uid=0, gid=0):
    header = bytearray(BLOCK)
    header[0 : len(name)] = name
    header[100:108] = b'%07o\0' % mode
    header[108:116] = _numeric(uid, 8)
    header[116:124] = _numeric(gid, 8)
    header[124:136] = _numeric(size, 12)
    header[136:148] = _numeric(mtime, 12)
    header[148:156] = b' ' * 8
    header[156:157] = typeflag
    header[157 : 157 + len(linkname)] = linkname
    header[257:265] = GNU_MAGIC
    header[148:156] = b'%06o\0 ' % sum(header)
    return bytes(header)


def _long_record(typeflag, raw):
    data = raw + b'\0'
    return _block(LONG_LINK_NAME, typeflag, size=len(data)) + data + b'\0' * (-len(data) % BLOCK)


def canonical_header(path, member, uid, gid):
    """The header blocks of member under the normalised path, owned by uid:gid, permission bits only."""
    name = path.encode('utf-8', 'surrogateescape')
    if member.kind == DIRECTORY:
        name = name + b'/' if name else b'./'
    # A hard link names an earlier member, so it takes that member's canonical name.
    target = normalise(member.linkname) if member.kind == HARDLINK else member.linkname
    link = target.encode('utf-8', 'surrogateescape')
    out = []
    if len(name) >= 100:
        out.append(_long_record(GNU_LONG_NAME, name))
        name = name[:99]
    if len(link) >= 100:
        out.append(_long_record(GNU_LONG_LINK, link))
        link = link[:99]
    size = member.size if member.kind == REGULAR else 0
    out.append(_block(name, TYPEFLAGS[member.kind], size, member.mode & 0o777, member.mtime, link, uid, gid))
    return b''.join(out)


def padding(size):
    return b'\0' * (-size % BLOCK)


END_OF_ARCHIVE = b'\0' * (2 * BLOCK)
