# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one canonical tar writer of the collection. Private to the col_agents.tx9 collection.

What another program reads is written here from the members the reader and
the validator accepted, never passed through: GNU headers, long names as GNU
long-name records, which Go's archive/tar, GNU tar and Python's tarfile read
alike, byte for byte.
"""

from __future__ import annotations

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarheader import (
    BLOCK,
    DIRECTORY,
    GNU_LONG_LINK,
    GNU_LONG_NAME,
    GNU_MAGIC,
    HARDLINK,
    REGULAR,
    SYMLINK,
    Member,
    normalise,
)

TYPEFLAGS = {REGULAR: b'0', HARDLINK: b'1', SYMLINK: b'2', DIRECTORY: b'5'}
LONG_LINK_NAME = b'././@LongLink'

# The end of a tar: two zero blocks.
END_OF_ARCHIVE = b'\0' * (2 * BLOCK)


def _numeric(value: int, width: int) -> bytes:
    """An octal field of width bytes, or GNU base-256 when octal cannot hold value."""
    digits = width - 1
    if 0 <= value < 8**digits:
        return b'%0*o\0' % (digits, value)
    return (value + (1 << (8 * width)) if value < 0 else value | (0x80 << (8 * (width - 1)))).to_bytes(width, 'big')


def _block(
    name: bytes,
    typeflag: bytes,
    size: int = 0,
    mode: int = 0,
    mtime: int = 0,
    linkname: bytes = b'',
    uid: int = 0,
    gid: int = 0,
) -> bytes:
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


def _long_record(typeflag: bytes, raw: bytes) -> bytes:
    data = raw + b'\0'
    return _block(LONG_LINK_NAME, typeflag, size=len(data)) + data + b'\0' * (-len(data) % BLOCK)


def canonical_header(path: str, member: Member, uid: int, gid: int) -> bytes:
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


def padding(size: int) -> bytes:
    """The zeros that fill a member's data of size bytes up to a whole block."""
    return b'\0' * (-size % BLOCK)
