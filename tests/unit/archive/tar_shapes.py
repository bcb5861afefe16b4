# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tar shapes that Python's tarfile, GNU tar and Go's archive/tar read differently.

A payload is validated by one tar parser and extracted by another: dockerd
unpacks put_archive uploads with Go's archive/tar and moby's pkg/archive. Every
shape below is a complete payload (the directories ./, ./home/ and
./home/agent/, then the odd members) whose bytes are written here field by
field, with correct checksums unless the shape is about checksums, so every
byte is under control; tarfile never writes them.

What each parser sees was observed on Python 3.11 (tarfile), GNU tar 1.34
(tar -tvf) and Go 1.19 (archive/tar, the version Debian's docker.io 20.10 is
built with); each builder's docstring says it. docs/tar-differentials.md has
the table.

SHAPES lists (id, build, expected_cause, expected_member): the payload that
build() returns must be refused with that cause, naming a member whose name
contains expected_member (None: no single member is named).

canary(id) builds the same shape around members that, were Go's view ever
extracted by dockerd into the restore container's /data/.tx9-restore-stage,
would overwrite /opt/tx9/bin/hb (the restore container's entrypoint) with a
script that writes /data/PWNED, and write /data/PWNED directly; CANARY_IDS
lists the shapes it applies to.
"""


import collections

BLOCK = 512
MTIME = 1764470834

# Magic and version, bytes 257-265 of a header.
USTAR = b'ustar\x0000'
GNU = b'ustar  \x00'
V7 = b''

# Type flags.
REGULAR = b'0'
OLD_REGULAR = b'\x00'
HARDLINK = b'1'
SYMLINK = b'2'
DIRECTORY = b'5'
PAX = b'x'
PAX_GLOBAL = b'g'
LONGNAME = b'L'
LONGLINK = b'K'

END = b'\x00' * (2 * BLOCK)

# Header field offsets and widths (POSIX ustar; GNU and STAR reuse the area from 345).
FIELDS = dict(name=(0, 100), mode=(100, 8), uid=(108, 8), gid=(116, 8), size=(124, 12), mtime=(136, 12),
              chksum=(148, 8), typeflag=(156, 1), linkname=(157, 100), magic=(257, 8), uname=(265, 32),
              gname=(297, 32), devmajor=(329, 8), devminor=(337, 8), prefix=(345, 155))
GNU_ATIME = 345
GNU_CTIME = 357
STAR_PREFIX_SIZE = 131
STAR_ATIME = 476
STAR_TRAILER = 508

# What the canary members write, were they ever extracted.
CANARY_SCRIPT = b'#!/bin/sh\necho pwned > /data/PWNED\nexit 0\n'
CANARY_FILE = b'pwned\n'


def as_bytes(value):
    if isinstance(value, bytes):
        return value
    return value.encode('utf-8')


def octal(value, width):
    """value as width-1 octal digits and a NUL, the POSIX form."""
    digits = b'%0*o' % (width - 1, value)
    if len(digits) > width - 1:
        raise ValueError('%d does not fit %d octal digits' % (value, width - 1))
    return digits + b'\x00'


def base256(value, width):
    """value in GNU's base-256 form: 0x80 (or 0xff when negative), then big-endian two's complement."""
    if value < 0:
        value += 256 ** width
        return bytes(bytearray([0xff])) + value.to_bytes(width, 'big')[1:]
    return bytes(bytearray([0x80])) + value.to_bytes(width - 1, 'big')


def checksums(block):
    """The unsigned and signed sums of a header, its checksum field counted as spaces."""
    block = bytearray(block)
    block[148:156] = b' ' * 8
    unsigned = sum(block)
    signed = sum(byte - 256 if byte > 127 else byte for byte in block)
    return unsigned, signed


def header(name, typeflag=REGULAR, size=0, mode=None, uid=0, gid=0, mtime=MTIME, linkname=b'', magic=USTAR,
           uname=b'', gname=b'', prefix=b'', raw=None, checksum='unsigned'):
    """One 512-byte header.

    Numeric fields take an int (written as octal) or bytes (written as they
    are). raw maps offsets to bytes written last, over anything else.
    checksum is 'unsigned' (POSIX), 'signed' (the sum of signed bytes), an int
    or bytes for the field itself.
    """
    if mode is None:
        mode = 0o755 if typeflag == DIRECTORY else 0o644
    block = bytearray(BLOCK)
    values = dict(name=as_bytes(name), mode=mode, uid=uid, gid=gid, size=size, mtime=mtime, typeflag=typeflag,
                  linkname=as_bytes(linkname), magic=magic, uname=as_bytes(uname), gname=as_bytes(gname),
                  prefix=as_bytes(prefix))
    for field, value in values.items():
        start, width = FIELDS[field]
        if not isinstance(value, bytes):
            value = octal(value, width)
        if len(value) > width:
            raise ValueError('%s is %d bytes, the field holds %d' % (field, len(value), width))
        block[start:start + len(value)] = value
    if magic != V7:
        start, width = FIELDS['devmajor']
        block[start:start + width] = octal(0, width)
        start, width = FIELDS['devminor']
        block[start:start + width] = octal(0, width)
    for offset, value in sorted((raw or {}).items()):
        block[offset:offset + len(value)] = value
    unsigned, signed = checksums(block)
    if checksum == 'unsigned':
        field = b'%06o\x00 ' % unsigned
    elif checksum == 'signed':
        field = b'%06o\x00 ' % signed
    elif isinstance(checksum, int):
        field = b'%06o\x00 ' % checksum
    else:
        field = checksum
    block[148:148 + len(field)] = field
    return bytes(block)


def pad(data, fill=b''):
    """data padded to whole blocks; the padding starts with fill, then NULs."""
    rest = -len(data) % BLOCK
    if len(fill) > rest:
        raise ValueError('the padding holds %d bytes, not %d' % (rest, len(fill)))
    return data + fill + b'\x00' * (rest - len(fill))


def entry(name, typeflag=REGULAR, data=b'', size=None, fill=b'', **fields):
    """A header and its data; size defaults to the data's length."""
    data = as_bytes(data)
    return header(name, typeflag, size=len(data) if size is None else size, **fields) + pad(data, fill)


def directory(name, **fields):
    return entry(name, DIRECTORY, **fields)


def regular(name, data=b'', **fields):
    return entry(name, REGULAR, data, **fields)


def symlink(name, target, **fields):
    return entry(name, SYMLINK, linkname=target, **fields)


def hardlink(name, target, **fields):
    return entry(name, HARDLINK, linkname=target, **fields)


def pax_record(keyword, value, length=None, sign=b''):
    """One pax record, "LEN keyword=value\\n"; length defaults to the record's real length.

    sign goes before the digits of the length (and counts in it).
    """
    body = b' ' + as_bytes(keyword) + b'=' + as_bytes(value) + b'\n'
    if length is None:
        length = len(body) + 1
        while len(sign) + len(b'%d' % length) + len(body) != length:
            length += 1
    return sign + b'%d' % length + body


def pax_data(records):
    """records: (keyword, value) pairs, or bytes for a record written as it is."""
    return b''.join(record if isinstance(record, bytes) else pax_record(*record) for record in records)


def long_directory(name):
    """A directory whose name may pass 100 bytes: a pax path record then the header (name cut to fit)."""
    if len(as_bytes(name)) <= 100:
        return directory(name)
    return pax_header([('path', name)]) + directory(as_bytes(name)[:100])


def pax_header(records, typeflag=PAX, name='home/agent/shape-pax-header', magic=USTAR, size=None, fill=b''):
    """An extended header (typeflag x, or g for a global one) holding records."""
    return entry(name, typeflag, pax_data(records), size=size, fill=fill, magic=magic, mode=0o644)


def gnu_long(typeflag, value, size=None, fill=b'', terminate=True):
    """A GNU long name (L) or long link (K) header and its data, the value NUL-terminated unless told."""
    data = as_bytes(value) + (b'\x00' if terminate else b'')
    return entry('././@LongLink', typeflag, data, size=size, fill=fill, magic=GNU, mode=0o644)


def base(magic=USTAR):
    """The directories every payload starts with."""
    return b''.join(directory(name, magic=magic) for name in ('./', './home/', './home/agent/'))


def payload(*parts, **options):
    """A complete uncompressed payload: the base directories, parts, the end-of-archive blocks."""
    return base(options.get('magic', USTAR)) + b''.join(parts) + END


PLAIN_NAME = './home/agent/notes.txt'
PLAIN_LONG_NAME = 'home/agent/' + 'a-long-name-' * 10 + '.txt'
PLAIN_DATA = b'hello\n'


def plain_payload(magic=USTAR):
    """A valid payload: the base directories, a file, and a file whose name needs a pax path (or a GNU L)."""
    if magic == GNU:
        long_member = gnu_long(LONGNAME, PLAIN_LONG_NAME)
    else:
        long_member = pax_header([('path', PLAIN_LONG_NAME)], name='home/agent/PaxHeaders/long')
    return payload(regular(PLAIN_NAME, PLAIN_DATA, magic=magic),
                   long_member + regular(PLAIN_LONG_NAME[:100], PLAIN_DATA, magic=magic), magic=magic)


# Twins: one member as Go should see it and as Python should see it.

Twin = collections.namedtuple('Twin', 'kind go_name py_name go_link py_link data mode')


def twin(kind, go_name, py_name=None, go_link='', py_link=None, data=b'', mode=None):
    return Twin(kind, go_name, go_name if py_name is None else py_name, go_link,
                go_link if py_link is None else py_link, as_bytes(data), mode)


def plain(t):
    """The member as one ordinary header: what Go sees, written plainly."""
    return entry(t.go_name, t.kind, t.data if t.kind == REGULAR else b'', linkname=t.go_link, mode=t.mode)


# Go sees an absolute symlink into the container's root; Python sees relative names and targets.
ABSOLUTE_ESCAPE = (
    twin(SYMLINK, 'home/agent/.tx9-bin', 'home/agent/shape-py-bin', '/opt/tx9/bin', 'shape-safe'),
    twin(REGULAR, 'home/agent/.tx9-bin/hb', 'home/agent/shape-py-hb', data=CANARY_SCRIPT, mode=0o755),
    twin(SYMLINK, 'home/agent/.tx9-data', 'home/agent/shape-py-data', '/data', 'shape-safe'),
    twin(REGULAR, 'home/agent/.tx9-data/PWNED', 'home/agent/shape-py-pwned', data=CANARY_FILE),
)

# Only names differ: relative links that moby accepts one by one (each target
# stays in the extraction directory when joined to the link's own name) but
# that climb out once .u (-> ..) has moved the later ones up a level. Python
# sees the links at other names, deep enough that every target stays inside.
RELATIVE_ESCAPE = (
    twin(SYMLINK, 'home/agent/.u', 'home/agent/shape-py/1/.u', '..'),
    twin(SYMLINK, 'home/agent/.u/.r', 'home/agent/shape-py/2/.r', '../../..'),
    twin(REGULAR, 'home/agent/.u/.r/opt/tx9/bin/hb', 'home/agent/shape-py/3/hb', data=CANARY_SCRIPT, mode=0o755),
    twin(SYMLINK, 'home/agent/.u/.d', 'home/agent/shape-py/4/.d', '../..'),
    twin(REGULAR, 'home/agent/.u/.d/PWNED', 'home/agent/shape-py/5/PWNED', data=CANARY_FILE),
)

# Members Go alone reads (hidden from Python in data it skips).
HIDDEN_ESCAPE = tuple(plain(t) for t in ABSOLUTE_ESCAPE)

DEMO_NAME = (twin(REGULAR, 'home/agent/shape-go', 'home/agent/shape-py', data=b'demo\n'),)
DEMO_LINK = (twin(SYMLINK, 'home/agent/shape-link', go_link='shape-go-target', py_link='shape-py-target'),)
DEMO_HIDDEN = (regular('home/agent/shape-hidden', b'only Go reads this member\n'),)


BASE_NAMES = ('', 'home', 'home/agent')


def python_parents(names):
    """Plain directories for the parents of Python's names beyond the base ones, shallowest first.

    Go sees them too, before the twins; a twin that Go sees as a link at the
    same name replaces such a directory when extracted.
    """
    wanted = set()
    for name in names:
        parts = [part for part in name.split('/') if part not in ('', '.')][:-1]
        for depth in range(1, len(parts) + 1):
            wanted.add('/'.join(parts[:depth]))
    wanted -= set(BASE_NAMES)
    return b''.join(directory(name) for name in sorted(wanted, key=lambda name: (name.count('/'), name)))


def twins_payload(encode, twins, magic=USTAR):
    """A payload of twins, each written by encode(twin, index) -> (bytes, Python's name)."""
    parts = []
    names = []
    for index, t in enumerate(twins):
        data, py_name = encode(t, index)
        parts.append(data)
        names.append(py_name)
    return payload(python_parents(names), *parts, magic=magic)


# Shapes where Go and Python read other names or link targets (twin encoders).

def _linked(t):
    return t.kind in (SYMLINK, HARDLINK)


def encode_pax_then_gnu(t, index):
    records = []
    longs = b''
    if t.py_name != t.go_name:
        records.append(('path', t.py_name))
        longs += gnu_long(LONGNAME, t.go_name)
    if _linked(t) and t.py_link != t.go_link:
        records.append(('linkpath', t.py_link))
        longs += gnu_long(LONGLINK, t.go_link)
    data = t.data if t.kind == REGULAR else b''
    return (pax_header(records) + longs
            + entry(t.go_name, t.kind, data, linkname=t.go_link, magic=GNU, mode=t.mode)), t.py_name


def pax_path_then_gnu_longname(twins=DEMO_NAME):
    """A pax path record, then a GNU long name (L), then the member.

    Python's tarfile: the pax path (tarfile applies the L name to the member
    first, then the pax records over it).
    GNU tar: the pax path.
    Go's archive/tar: the L name (GNU long names are applied after the pax
    records, whatever their order).
    """
    return twins_payload(encode_pax_then_gnu, twins)


def pax_linkpath_then_gnu_longlink(twins=DEMO_LINK):
    """A pax linkpath record, then a GNU long link (K), then a symbolic link.

    Python's tarfile: the pax linkpath.
    GNU tar: the pax linkpath.
    Go's archive/tar: the K target, so an absolute one where Python saw a
    relative one.
    """
    return twins_payload(encode_pax_then_gnu, twins)


def encode_two_gnu_longs(t, index):
    longs = b''
    if t.py_name != t.go_name:
        longs += gnu_long(LONGNAME, t.py_name) + gnu_long(LONGNAME, t.go_name)
    if _linked(t) and t.py_link != t.go_link:
        longs += gnu_long(LONGLINK, t.py_link) + gnu_long(LONGLINK, t.go_link)
    data = t.data if t.kind == REGULAR else b''
    return longs + entry(t.go_name, t.kind, data, linkname=t.go_link, magic=GNU, mode=t.mode), t.py_name


def two_gnu_longnames(twins=DEMO_NAME):
    """Two GNU long name (L) headers before one member.

    Python's tarfile: the first L (each L applies its name after the headers
    that follow it are read, so the outermost wins).
    GNU tar: the last L.
    Go's archive/tar: the last L.
    """
    return twins_payload(encode_two_gnu_longs, twins, magic=GNU)


def two_gnu_longlinks(twins=DEMO_LINK):
    """Two GNU long link (K) headers before one symbolic link.

    Python's tarfile: the first K. GNU tar: the last K. Go's archive/tar: the last K.
    """
    return twins_payload(encode_two_gnu_longs, twins, magic=GNU)


def encode_pax_then_pax(t, index):
    first = [('path', t.py_name)]
    second = [('path', t.go_name)]
    if _linked(t):
        first.append(('linkpath', t.py_link))
        second.append(('linkpath', t.go_link))
    data = t.data if t.kind == REGULAR else b''
    return (pax_header(first) + pax_header(second)
            + entry('home/agent/shape-header', t.kind, data, linkname='shape-header-target', mode=t.mode)), t.py_name


def pax_header_then_pax_header(twins=DEMO_NAME):
    """Two pax extended headers (x) before one member, both with path (and linkpath).

    Python's tarfile: the first header's records (tarfile applies the inner
    header first and the outer one over it).
    GNU tar: the second header's.
    Go's archive/tar: the second header's records only (a pax header replaces
    the records of an earlier one instead of merging with them).
    """
    return twins_payload(encode_pax_then_pax, twins)


def encode_global(t, index):
    records = [('path', t.py_name), ('linkpath', t.py_link or 'shape-py-target')]
    data = t.data if t.kind == REGULAR else b''
    return (pax_header(records, PAX_GLOBAL, name='home/agent/shape-global')
            + entry(t.go_name, t.kind, data, linkname=t.go_link, mode=t.mode)), t.py_name


def pax_global_header_with_path(twins=DEMO_NAME):
    """A pax global header (g) carrying path and linkpath, then a plain member.

    Python's tarfile: applies the global records to every later member (to
    one with its own x header and to one without), so path and linkpath of
    the g header.
    GNU tar: applies the global records to later members, like Python.
    Go's archive/tar: returns the g header as an entry of its own (moby skips
    it) and applies nothing of it, so the member's header name and link.
    """
    return twins_payload(encode_global, twins)


def encode_pax_signed_length(t, index):
    records = [pax_record('path', t.go_name, sign=b'+')]
    if _linked(t):
        records.append(pax_record('linkpath', t.go_link, sign=b'+'))
    data = t.data if t.kind == REGULAR else b''
    return pax_header(records) + entry(t.py_name, t.kind, data, linkname=t.py_link, mode=t.mode), t.py_name


def pax_record_length_with_plus_sign(twins=DEMO_NAME):
    """pax records whose length is written "+NN" (a sign, then the decimal length).

    Python's tarfile: a record must start with digits; at the first one that
    does not, tarfile stops reading records, silently, so it keeps the
    header's name and link.
    GNU tar: "Malformed extended header: missing length"; keeps the header's
    name and link; exits 2.
    Go's archive/tar: strconv.ParseInt accepts the sign, so it applies the
    records: other name, other link.
    """
    return twins_payload(encode_pax_signed_length, twins)


def encode_pax_in_padding(t, index):
    visible = pax_record('mtime', '%d' % MTIME)
    hidden = [('path', t.py_name)]
    if _linked(t):
        hidden.append(('linkpath', t.py_link))
    data = t.data if t.kind == REGULAR else b''
    return (pax_header([visible], size=len(visible), fill=pax_data(hidden))
            + entry(t.go_name, t.kind, data, linkname=t.go_link, mode=t.mode)), t.py_name


def pax_records_in_block_padding(twins=DEMO_NAME):
    """A pax header whose size covers one record; more records follow in its block's padding.

    Python's tarfile: reads the whole last block and parses records until one
    does not match, so it applies those in the padding too.
    GNU tar: reads size bytes only.
    Go's archive/tar: reads size bytes only, so the header's own name and link.
    """
    return twins_payload(encode_pax_in_padding, twins)


def encode_sparse_name(t, index):
    data = t.data if t.kind == REGULAR else b''
    return (pax_header([('GNU.sparse.name', t.py_name)])
            + entry(t.go_name, t.kind, data, linkname=t.go_link, mode=t.mode)), t.py_name


def gnu_sparse_name_without_sparse_data(twins=DEMO_NAME):
    """A pax GNU.sparse.name record on a member that has no sparse map and no sparse version.

    Python's tarfile: takes GNU.sparse.name as the member's name, always.
    GNU tar: takes it as the name too.
    Go's archive/tar: uses GNU.sparse.name only for a sparse file (version
    records or a map), so the header's name.
    """
    return twins_payload(encode_sparse_name, twins)


def encode_gnu_prefix(t, index):
    prefix = b'%d' % (index + 1)
    data = t.data if t.kind == REGULAR else b''
    return (entry(t.go_name, t.kind, data, linkname=t.go_link, magic=GNU, mode=t.mode, prefix=prefix),
            '%s/%s' % (prefix.decode('ascii'), t.go_name))


def prefix_in_gnu_header(twins=DEMO_NAME):
    """A GNU header (magic "ustar  ") with bytes in the ustar prefix area (345-500).

    In a GNU header that area holds atime, ctime and sparse data, not a
    prefix. The bytes here are octal digits, a valid atime.
    Python's tarfile: joins the prefix to the name whatever the magic ("1/name").
    GNU tar: no prefix in a GNU header: the name.
    Go's archive/tar: atime parses, so no prefix: the name (Go joins the
    prefix only when atime/ctime do not parse and the bytes are ASCII).
    """
    return twins_payload(encode_gnu_prefix, twins, magic=GNU)


def encode_v7_prefix(t, index):
    prefix = b'%d' % (index + 1)
    data = t.data if t.kind == REGULAR else b''
    return (entry(t.go_name, t.kind, data, linkname=t.go_link, magic=V7, mode=t.mode, prefix=prefix),
            '%s/%s' % (prefix.decode('ascii'), t.go_name))


def prefix_in_v7_header(twins=DEMO_NAME):
    """A V7 header (no magic) with bytes in the ustar prefix area.

    Python's tarfile: joins the prefix to the name ("1/name"), magic or not.
    GNU tar: a V7 header has no prefix: the name.
    Go's archive/tar: a V7 header has no prefix: the name.
    """
    return twins_payload(encode_v7_prefix, twins)


def encode_mixed_magic(t, index):
    prefix = b'%d' % (index + 1)
    data = t.data if t.kind == REGULAR else b''
    return (entry(t.go_name, t.kind, data, linkname=t.go_link, magic=b'ustar 00', mode=t.mode, prefix=prefix),
            '%s/%s' % (prefix.decode('ascii'), t.go_name))


def gnu_magic_with_ustar_version(twins=DEMO_NAME):
    """A header whose magic is GNU's "ustar " but whose version is ustar's "00", with a prefix.

    Python's tarfile: ignores magic and joins the prefix ("1/name").
    GNU tar: neither ustar nor GNU: V7, no prefix: the name.
    Go's archive/tar: neither: V7, no prefix: the name.
    """
    return twins_payload(encode_mixed_magic, twins)


def star_fields(go_name, digit):
    """name and raw bytes of a STAR header that Go reads as go_name and Python as "home/agent<digit>/...".

    The prefix is "home/agent" led by "./" to 131 bytes; the rest of the
    name goes in the name field.
    """
    parent, rest = '/'.join(go_name.split('/')[:2]), '/'.join(go_name.split('/')[2:])
    fill = STAR_PREFIX_SIZE - len(parent)
    lead = b'./' * (fill // 2) + (b'/' if fill % 2 else b'')
    prefix = lead + as_bytes(parent)
    assert len(prefix) == STAR_PREFIX_SIZE
    raw = {FIELDS['prefix'][0]: prefix, STAR_ATIME: digit + b'\x00', STAR_TRAILER: b'tar\x00'}
    return rest, raw, '%s%s/%s' % (parent, digit.decode('ascii'), rest)


def encode_star(t, index):
    leaf, raw, py_name = star_fields(t.go_name, b'%d' % (index + 1))
    data = t.data if t.kind == REGULAR else b''
    return entry(leaf, t.kind, data, linkname=t.go_link, mode=t.mode, raw=raw), py_name


def star_trailer_shortens_the_prefix(twins=DEMO_NAME):
    """A ustar header with "tar\\0" at offset 508: Go's STAR detection.

    The prefix area holds 131 bytes without a NUL, then octal digits at 476.
    Python's tarfile: a 155-byte prefix, read to its first NUL: the 131 bytes
    and the digits ("home/agent1/name").
    GNU tar: not STAR (that needs atime/ctime ending in a space), so the same
    155-byte prefix as Python.
    Go's archive/tar: STAR: a 131-byte prefix; 476-500 are atime and ctime
    ("home/agent/name").
    """
    return twins_payload(encode_star, twins)


def encode_longname_tail(t, index):
    name = as_bytes(t.go_name)
    data = t.data if t.kind == REGULAR else b''
    return (gnu_long(LONGNAME, name, fill=b'-py', terminate=False)
            + entry(t.go_name, t.kind, data, linkname=t.go_link, magic=GNU, mode=t.mode)), t.go_name + '-py'


def gnu_longname_continues_in_padding(twins=DEMO_NAME):
    """A GNU long name (L) whose size excludes its NUL; the block's padding goes on with "-py".

    Python's tarfile: reads the whole block and cuts at the first NUL: the
    name and "-py".
    GNU tar: the name and "-py", like Python.
    Go's archive/tar: size bytes: the name.
    """
    return twins_payload(encode_longname_tail, twins, magic=GNU)


# Shapes where one parser skips data that the other reads as headers (hidden members).

def _hidden_bytes(hidden):
    return b''.join(hidden)


def old_regular_named_dir_by_pax_path(hidden=DEMO_HIDDEN):
    """An old-style regular file (typeflag NUL) whose pax path ends in "/", with data.

    Python's tarfile: decides "directory" from the header's own name before
    the pax path applies: a regular file (the slash stripped), its data
    skipped.
    GNU tar: lists a directory "home/agent/shape-file/" but skips the data.
    Go's archive/tar: decides after the pax path: a directory, which has no
    data, so the data blocks are read as headers: hidden members.
    """
    data = _hidden_bytes(hidden)
    return payload(pax_header([('path', 'home/agent/shape-file/')]),
                   header('home/agent/shape-file', OLD_REGULAR, size=len(data)) + data)


def old_regular_named_dir_by_gnu_longname(hidden=DEMO_HIDDEN):
    """An old-style regular file (typeflag NUL) whose GNU long name ends in "/", with data.

    Python's tarfile: a regular file "home/agent/shape-file/", data skipped.
    GNU tar: lists a directory but skips the data.
    Go's archive/tar: a directory without data: hidden members.
    """
    data = _hidden_bytes(hidden)
    return payload(gnu_long(LONGNAME, 'home/agent/shape-file/'),
                   header('home/agent/shape-file', OLD_REGULAR, size=len(data), magic=GNU) + data, magic=GNU)


def cover(hidden):
    """A header that Python reads as a regular file whose data is hidden (Go reads hidden as members)."""
    data = _hidden_bytes(hidden)
    return header('home/agent/shape-cover', REGULAR, size=len(data)), data


def old_regular_dir_name_undone_by_pax_path(hidden=DEMO_HIDDEN):
    """An old-style regular file (typeflag NUL) named "home/agent/shape-dir/", the pax path without the slash.

    Python's tarfile: a directory (decided on the header's own name), no data:
    its one data block is read as the next header, here a regular file
    "home/agent/shape-cover" whose data holds the hidden members.
    GNU tar: like Go.
    Go's archive/tar: a regular file "home/agent/shape-dir" (decided after the
    pax path) whose data is that block; then the hidden members.
    """
    cover_header, data = cover(hidden)
    return payload(pax_header([('path', 'home/agent/shape-dir')]),
                   header('home/agent/shape-dir/', OLD_REGULAR, size=BLOCK) + cover_header + data)


def pax_size_against_sparse_realsize(hidden=DEMO_HIDDEN):
    """A pax header with size=0 and then GNU.sparse.realsize=N on a regular file without a sparse map.

    Python's tarfile: both set the size, the later record wins: N bytes of
    data skipped.
    GNU tar: size N, like Python.
    Go's archive/tar: size 0 (realsize only for a sparse file): hidden members.
    """
    data = _hidden_bytes(hidden)
    records = [('size', '0'), ('GNU.sparse.realsize', '%d' % len(data))]
    return payload(pax_header(records), header('home/agent/shape-file', REGULAR, size=0) + data)


def pax_size_against_sparse_size(hidden=DEMO_HIDDEN):
    """A pax header with size=0 and then GNU.sparse.size=N on a regular file without a sparse map.

    Python's tarfile: N bytes skipped. GNU tar: size N, like Python. Go's
    archive/tar: size 0 (no sparse map): hidden members.
    """
    data = _hidden_bytes(hidden)
    records = [('size', '0'), ('GNU.sparse.size', '%d' % len(data))]
    return payload(pax_header(records), header('home/agent/shape-file', REGULAR, size=0) + data)


def size_with_leading_nul(hidden=DEMO_HIDDEN):
    """A regular file whose size field is a NUL, then octal digits: "\\0" "0000001000" "\\0".

    Python's tarfile: the field ends at its first NUL: size 0, so the next
    block, here a regular file "home/agent/shape-cover" holding the hidden
    members as its data, is a header.
    GNU tar: skips one leading NUL: size 512.
    Go's archive/tar: trims leading NULs: size 512: that block is data, then
    the hidden members.
    """
    cover_header, data = cover(hidden)
    size = b'\x00' + octal(BLOCK, 11)
    return payload(header('home/agent/shape-file', REGULAR, size=size) + cover_header + data)


# Numeric fields.

def size_in_octal_with_underscore():
    """A size field "000000_0012": Python's int(x, 8) takes the underscore.

    Python's tarfile: size 10. GNU tar: not a number (error). Go's archive/tar:
    not octal: invalid header.
    """
    return payload(regular('home/agent/shape-file', b'0123456789', size=b'000000_0012\x00'))


def size_in_octal_with_plus_sign():
    """A size field "+0000000012".

    Python's tarfile: size 10 (int accepts a sign). GNU tar: a leading sign
    means its obsolete base-64 form: a size of 951617749834222966, then an
    unexpected end. Go's archive/tar: invalid header.
    """
    return payload(regular('home/agent/shape-file', b'0123456789', size=b'+0000000012\x00'))


def mode_in_octal_with_0o_prefix():
    """A mode field "0o00644": Python's int(x, 8) takes the "0o" prefix.

    Python's tarfile: mode 0644. GNU tar: not a number (lists it, exits 2).
    Go's archive/tar: invalid header.
    """
    return payload(regular('home/agent/shape-file', b'x', mode=b'0o00644\x00'))


def size_in_octal_after_a_tab():
    """A size field "\\t0000000012": a tab before the digits.

    Python's tarfile: strip() drops any whitespace: size 10. GNU tar: skips
    leading whitespace: size 10. Go's archive/tar: trims only spaces and
    NULs: invalid header.
    """
    return payload(regular('home/agent/shape-file', b'0123456789', size=b'\t0000000012'))


def size_in_base256_in_a_ustar_header():
    """A ustar (not GNU) header whose size is in base-256.

    Python's tarfile, GNU tar and Go's archive/tar all read the number: base-256
    is a GNU extension, which no ustar writer uses.
    """
    return payload(regular('home/agent/shape-file', b'0123456789', size=base256(10, 12)))


def size_in_base256_negative():
    """A GNU header whose size is -512 in base-256.

    Python's tarfile: a negative size moves its offset backwards (a stream
    cannot seek back: error). GNU tar: error. Go's archive/tar: invalid header.
    """
    return payload(header('home/agent/shape-file', REGULAR, size=base256(-512, 12), magic=GNU), magic=GNU)


def uid_in_base256_with_first_byte_0x81():
    """A GNU header whose uid field starts with 0x81, not 0x80 or 0xff.

    Python's tarfile: base-256 only after 0x80 or 0xff; otherwise ASCII octal:
    invalid header. GNU tar: base-256 after 0x80 or 0xff only: error.
    Go's archive/tar: base-256 whenever the high bit is set: uid 2**56.
    """
    return payload(regular('home/agent/shape-file', b'x', magic=GNU, uid=b'\x81' + b'\x00' * 7), magic=GNU)


# Checksums.

def checksum_of_signed_bytes():
    """A header with a byte above 127 (in the name) whose checksum is the sum of signed bytes.

    Python's tarfile, GNU tar and Go's archive/tar all accept the signed sum
    as well as the unsigned one that POSIX defines.
    """
    return payload(regular(u'home/agent/shape-\u00e9', b'x', checksum='signed'))


def checksum_wrong():
    """A header whose checksum matches neither sum: all three refuse it."""
    return payload(regular('home/agent/shape-file', b'x', checksum=1234))


def checksum_after_a_nul():
    """A checksum field "\\0" followed by the right octal digits.

    Python's tarfile: the field ends at its first NUL: checksum 0: bad checksum.
    GNU tar: skips one leading NUL: good. Go's archive/tar: trims NULs: good.
    """
    block = header('home/agent/shape-file', REGULAR, size=1)
    unsigned = checksums(block)[0]
    return payload(header('home/agent/shape-file', REGULAR, size=1, checksum=b'\x00%06o\x00' % unsigned) + pad(b'x'))


# Members that should have no data.

def inner_member(name):
    """A block that parses as a header: what a parser that does not skip a member's data reads next."""
    return header(name, REGULAR)


def directory_with_size():
    """A directory header with size 512, its data block a header.

    Python's tarfile, GNU tar and Go's archive/tar: a directory has no data:
    all three read the block as a member.
    """
    return payload(directory('home/agent/shape-dir/', size=BLOCK) + inner_member('home/agent/shape-dir/inner'))


def symlink_with_size():
    """A symbolic link header with size 512, its data block a header.

    Python's tarfile and Go's archive/tar: no data: the block is a member.
    GNU tar: skips size bytes after a symbolic link: no such member.
    """
    return payload(symlink('home/agent/shape-link', 'shape-target', size=BLOCK)
                   + inner_member('home/agent/shape-after-link'))


def hardlink_with_size():
    """A hard link header with size 512, its data block a header (the link names an earlier file).

    Python's tarfile, GNU tar and Go's archive/tar: no data: the block is a
    member (GNU tar lists the link with size 0).
    """
    return payload(regular('home/agent/shape-target', b'x'),
                   hardlink('home/agent/shape-link', 'home/agent/shape-target', size=BLOCK)
                   + inner_member('home/agent/shape-after-link'))


# Types and formats outside the subset.

def gnu_type(typeflag, data=b''):
    """A member of a GNU type (GNU header)."""
    return payload(entry('home/agent/shape-type', typeflag, data, magic=GNU), magic=GNU)


def gnu_type_sparse():
    """Typeflag S, old GNU sparse, empty map: all three read a sparse file; moby has no case for its type."""
    return gnu_type(b'S')


def gnu_type_multivolume():
    """Typeflag M, a GNU multi-volume continuation.

    Python and Go: an unknown type with data. GNU tar: "--Continued at byte 0--".
    """
    return gnu_type(b'M', b'continued\n')


def gnu_type_volume_label():
    """Typeflag V, a GNU volume label: Python and Go an unknown type with data; GNU tar "--Volume Header--"."""
    return gnu_type(b'V', b'label\n')


def gnu_type_dumpdir():
    """Typeflag D, a GNU incremental dump directory.

    GNU tar: a directory whose data lists names. Python and Go: an unknown type with data.
    """
    return gnu_type(b'D', b'Yshape-name\x00\x00')


def gnu_type_old_names():
    """Typeflag N, GNU's old long-name record: all three an unknown type with data."""
    return gnu_type(b'N', b'shape-name\n')


def contiguous_file():
    """Typeflag 7, a contiguous file: Python and Go: a regular file; moby has no case for it."""
    return gnu_type(b'7', b'x')


def v7_header():
    """A V7 header (no magic) for a plain regular file: all three read the same member."""
    return payload(regular('home/agent/shape-v7', b'x', magic=V7))


def old_regular_with_trailing_slash():
    """Typeflag NUL and a name ending in "/": all three read a directory (the V7 convention)."""
    return payload(header('home/agent/shape-dir/', OLD_REGULAR))


def pax_header_with_gnu_magic():
    """A pax extended header (x) in a GNU header: all three apply it."""
    return payload(pax_header([('path', 'home/agent/shape-py')], magic=GNU) + regular('home/agent/shape-go', b'x'))


def gnu_longname_with_ustar_magic():
    """A GNU long name (L) in a ustar header: all three apply it."""
    long_name = entry('././@LongLink', LONGNAME, b'home/agent/shape-long\x00', magic=USTAR)
    return payload(long_name + regular('home/agent/shape-short', b'x'))


# pax records.

def pax_record_twice():
    """A pax header with path twice.

    Python's tarfile, GNU tar and Go's archive/tar: the last one.
    """
    records = [('path', 'home/agent/shape-first'), ('path', 'home/agent/shape-second')]
    return payload(pax_header(records) + regular('home/agent/shape-header', b'x'))


def pax_path_empty():
    """A pax path record with an empty value.

    Python's tarfile: the name becomes "". GNU tar: an empty name, listed as
    "." (it warns). Go's archive/tar: an empty value leaves the header's name.
    """
    return payload(pax_header([('path', '')]) + regular('home/agent/shape-header', b'x'))


def pax_path_with_nul():
    """A pax path holding a NUL: "home/agent/shape-a\\0/../../x".

    Python's tarfile: the name with the NUL. GNU tar: cut at the NUL. Go's
    archive/tar: invalid header.
    """
    return payload(pax_header([('path', b'home/agent/shape-a\x00/../../x')]) + regular('home/agent/shape-header', b'x'))


def pax_record_length_too_long():
    """A pax record whose length runs past its newline into the next record.

    Python's tarfile: takes the value up to the claimed end, newline and the
    next record included.
    GNU tar: "out of range", keeps the header's name, exits 2. Go's
    archive/tar: the record does not end in a newline: invalid header.
    """
    records = [pax_record('path', 'home/agent/shape-py', length=40), pax_record('mtime', '1')]
    return payload(pax_header(records) + regular('home/agent/shape-header', b'x'))


def pax_record_length_too_short():
    """A pax record whose length ends inside its value.

    Python's tarfile: takes the value cut short ("home/agent") and stops.
    GNU tar: "missing newline", keeps the header's name, exits 2. Go's
    archive/tar: invalid header.
    """
    records = [pax_record('path', 'home/agent/shape-py', length=20)]
    return payload(pax_header(records) + regular('home/agent/shape-header', b'x'))


def pax_hdrcharset():
    """A pax hdrcharset=BINARY record and a path that is not UTF-8.

    Python's tarfile: decodes the path with the archive's encoding instead of
    UTF-8 (it looks for the record anywhere in the header's bytes, even inside
    another value). GNU tar 1.34: ignores the keyword as unknown; the path's
    bytes as they are. Go's archive/tar: ignores hdrcharset; bytes as they are.
    """
    records = [('hdrcharset', 'BINARY'), ('path', b'home/agent/shape-\xe9')]
    return payload(pax_header(records) + regular('home/agent/shape-header', b'x'))


def pax_schily_xattr():
    """A pax SCHILY.xattr.security.capability record on a regular file.

    Python's tarfile: keeps it in pax_headers, unused. GNU tar: restores it
    only with --xattrs. Go's archive/tar: Header.Xattrs, which moby sets on
    the extracted file with lsetxattr (file capabilities, as root).
    """
    capability = b'\x01\x00\x00\x02\xc0\x00\x00\x00' + b'\x00' * 12
    return payload(pax_header([('SCHILY.xattr.security.capability', capability)])
                   + regular('home/agent/shape-file', b'#!/bin/sh\n', mode=0o755))


def pax_libarchive_xattr():
    """A pax LIBARCHIVE.xattr.user.shape record (base64 value) on a regular file.

    Python's tarfile: keeps it, unused. GNU tar: ignores the keyword unless
    told --xattrs. Go's archive/tar: not an xattr it knows (PAXRecords only).
    """
    return payload(pax_header([('LIBARCHIVE.xattr.user.shape', 'c2hhcGU=')]) + regular('home/agent/shape-file', b'x'))


def pax_size_record():
    """A pax size record (all three read the size from it)."""
    return payload(pax_header([('size', '1')]) + regular('home/agent/shape-file', b'x', size=0, fill=b''))


def pax_header_over_one_mib():
    """A pax header of more than 1 MiB.

    Python's tarfile: reads it. GNU tar: reads it. Go's archive/tar: refuses
    a special file over 1 MiB (ErrFieldTooLong).
    """
    records = [('comment', 'x' * (1 << 20))]
    return payload(pax_header(records) + regular('home/agent/shape-file', b'x'))


# Lengths and sizes.

def gnu_longname_over_4097_bytes():
    """A GNU long name of 5000 bytes (a single component under home/agent)."""
    name = 'home/agent/shape-' + 'n' * 4983
    return payload(gnu_long(LONGNAME, name) + regular(name[:100], b'x', magic=GNU), magic=GNU)


def pax_path_over_4096_bytes():
    """A pax path of 4200 bytes."""
    name = 'home/agent/shape-' + 'n' * 4183
    return payload(pax_header([('path', name)]) + regular('home/agent/shape-header', b'x'))


def path_with_257_components():
    """A regular file 257 components deep, every parent a directory in the archive."""
    parts = ['home', 'agent'] + ['d'] * 254
    dirs = [long_directory('/'.join(parts[:depth]) + '/') for depth in range(3, len(parts) + 1)]
    name = '/'.join(parts + ['shape-deep'])
    return payload(b''.join(dirs), pax_header([('path', name)]) + regular('home/agent/shape-deep', b'x'))


def link_target_over_4096_bytes():
    """A symbolic link whose target (pax linkpath) is 4200 bytes, inside the root."""
    target = 'shape-' + 'n/../' * 838
    return payload(pax_header([('linkpath', target)]) + symlink('home/agent/shape-link', 'shape-short'))


def size_larger_than_the_stream():
    """A regular file that claims 8 GiB - 1 bytes, then the archive ends."""
    return base() + header('home/agent/shape-big', REGULAR, size=0o77777777777) + b'x' * BLOCK + END


def gnu_longname_then_end():
    """A GNU long name (L) and then the end-of-archive blocks.

    Python's tarfile: error (no member after the L). GNU tar: a plain end
    (exit 0). Go's archive/tar: a plain end of archive.
    """
    return payload(gnu_long(LONGNAME, 'home/agent/shape-orphan'), magic=GNU)


def pax_header_then_end():
    """A pax extended header and then the end-of-archive blocks.

    Python's tarfile: error. GNU tar: a plain end (exit 0). Go's archive/tar:
    a plain end of archive.
    """
    return payload(pax_header([('path', 'home/agent/shape-orphan')]))


def zero_block_then_member():
    """One zero block, then a member, then the end.

    Python's tarfile: the archive ends at the zero block (the validator then
    finds data after its end). GNU tar: warns of "a lone zero block", stops,
    exits 0. Go's archive/tar: invalid header.
    """
    return base() + b'\x00' * BLOCK + regular('home/agent/shape-file', b'x') + END


# Owners and modes (no parser disagrees; builders for the writer's tests).

def setuid_root_file():
    """A regular file owned by root, mode 06755: every parser reads the bits; moby applies them."""
    return payload(regular('home/agent/shape-setuid', b'#!/bin/sh\n', mode=0o6755, uid=0, gid=0,
                           uname='root', gname='root'))


# Shapes all three parsers read alike that the subset allows: a strict reader must accept them.

def name_of_exactly_100_bytes():
    """A name filling all 100 bytes of its field, no NUL, under a ustar prefix."""
    name = 'shape-' + 'n' * 94
    return payload(regular(name, b'x', prefix='home/agent'))


def prefix_of_exactly_155_bytes():
    """A ustar prefix filling all 155 bytes, no NUL, every parent a directory."""
    parts = ['home', 'agent', 'd' * 48, 'd' * 48]
    parts.append('d' * (155 - len('/'.join(parts)) - 1))
    prefix = '/'.join(parts)
    assert len(prefix) == 155
    dirs = [long_directory('/'.join(parts[:depth]) + '/') for depth in range(3, len(parts) + 1)]
    return payload(b''.join(dirs), regular('shape-file', b'x', prefix=prefix))


def gnu_longname_and_longlink():
    """A GNU long name and long link (one each) on a symbolic link, GNU headers."""
    name = 'home/agent/shape-' + 'n' * 120
    target = 'shape-' + 't' * 120
    return payload(gnu_long(LONGNAME, name) + gnu_long(LONGLINK, target)
                   + entry(name[:100], SYMLINK, linkname=target[:100], magic=GNU), magic=GNU)


def gnu_base256_uid():
    """A GNU header whose uid (2**21) is in base-256."""
    return payload(regular('home/agent/shape-file', b'x', magic=GNU, uid=base256(1 << 21, 8)), magic=GNU)


def pax_path_linkpath_and_times():
    """A pax header with path, linkpath, mtime, atime, ctime, uid, gid, uname and gname once each."""
    records = [('path', 'home/agent/shape-' + 'n' * 120), ('linkpath', 'shape-target'), ('mtime', '1764470834.5'),
               ('atime', '1764470834'), ('ctime', '1764470834'), ('uid', '1000'), ('gid', '1000'),
               ('uname', 'agent'), ('gname', 'agent')]
    return payload(pax_header(records) + symlink('home/agent/shape-header', 'shape-header-target'))


# The lists.

Shape = collections.namedtuple('Shape', 'id build expected_cause expected_member')

UNSAFE = 'ARCHIVE_UNSAFE'
CORRUPT = 'ARCHIVE_CORRUPT'
STEM = 'home/agent/shape-'


def shapes(cause, member, *builds):
    """One Shape per build, named by its function, each refused with cause naming member (a stem)."""
    return [Shape(build.__name__.replace('_', '-'), build, cause, member) for build in builds]


SHAPES = [
    *shapes(
        UNSAFE, STEM,
        pax_path_then_gnu_longname, pax_linkpath_then_gnu_longlink, two_gnu_longnames, two_gnu_longlinks,
        pax_header_then_pax_header, pax_global_header_with_path, pax_record_length_with_plus_sign,
        pax_records_in_block_padding, gnu_sparse_name_without_sparse_data, gnu_longname_continues_in_padding,
        pax_header_with_gnu_magic, gnu_longname_with_ustar_magic, pax_record_twice, pax_path_empty, pax_path_with_nul,
        pax_record_length_too_long, pax_record_length_too_short, pax_hdrcharset, pax_header_over_one_mib,
        pax_path_over_4096_bytes),
    *shapes(
        UNSAFE, 'shape-go',
        prefix_in_gnu_header, prefix_in_v7_header, star_trailer_shortens_the_prefix, gnu_magic_with_ustar_version),
    *shapes(
        UNSAFE, 'home/agent/shape-file',
        old_regular_named_dir_by_pax_path, old_regular_named_dir_by_gnu_longname, pax_size_against_sparse_realsize,
        pax_size_against_sparse_size, size_with_leading_nul, size_in_octal_with_underscore,
        size_in_octal_with_plus_sign, mode_in_octal_with_0o_prefix, size_in_octal_after_a_tab,
        size_in_base256_in_a_ustar_header, size_in_base256_negative, uid_in_base256_with_first_byte_0x81,
        pax_schily_xattr, pax_libarchive_xattr, pax_size_record),
    *shapes(
        UNSAFE, 'home/agent/shape-dir',
        old_regular_dir_name_undone_by_pax_path, directory_with_size, old_regular_with_trailing_slash),
    *shapes(
        CORRUPT, None,
        checksum_of_signed_bytes, checksum_wrong, checksum_after_a_nul, gnu_longname_then_end, pax_header_then_end,
        zero_block_then_member),
    *shapes(
        UNSAFE, 'home/agent/shape-link',
        symlink_with_size, hardlink_with_size, link_target_over_4096_bytes),
    *shapes(
        UNSAFE, 'home/agent/shape-type',
        gnu_type_sparse, gnu_type_multivolume, gnu_type_volume_label, gnu_type_dumpdir, gnu_type_old_names,
        contiguous_file),
    *shapes(
        UNSAFE, 'home/agent/shape-v7',
        v7_header),
    *shapes(
        UNSAFE, None,
        gnu_longname_over_4097_bytes),
    *shapes(
        UNSAFE, 'home/agent/d/d/d/',
        path_with_257_components),
    *shapes(
        UNSAFE, 'home/agent/shape-big',
        size_larger_than_the_stream),
]

# Shapes every parser reads alike and the subset allows: the validator must accept them.
AGREED = [(build.__name__.replace('_', '-'), build) for build in (
    name_of_exactly_100_bytes, prefix_of_exactly_155_bytes, gnu_longname_and_longlink, gnu_base256_uid,
    pax_path_linkpath_and_times)]

_CANARIES = dict(
    (shape_id, (build, members)) for shape_id, build, members in (
        ('pax-path-then-gnu-longname', pax_path_then_gnu_longname, ABSOLUTE_ESCAPE),
        ('pax-linkpath-then-gnu-longlink', pax_linkpath_then_gnu_longlink, ABSOLUTE_ESCAPE),
        ('two-gnu-longnames', two_gnu_longnames, ABSOLUTE_ESCAPE),
        ('two-gnu-longlinks', two_gnu_longlinks, ABSOLUTE_ESCAPE),
        ('pax-header-then-pax-header', pax_header_then_pax_header, ABSOLUTE_ESCAPE),
        ('pax-global-header-with-path', pax_global_header_with_path, ABSOLUTE_ESCAPE),
        ('pax-record-length-with-plus-sign', pax_record_length_with_plus_sign, ABSOLUTE_ESCAPE),
        ('pax-records-in-block-padding', pax_records_in_block_padding, ABSOLUTE_ESCAPE),
        ('gnu-sparse-name-without-sparse-data', gnu_sparse_name_without_sparse_data, RELATIVE_ESCAPE),
        ('prefix-in-gnu-header', prefix_in_gnu_header, RELATIVE_ESCAPE),
        ('prefix-in-v7-header', prefix_in_v7_header, RELATIVE_ESCAPE),
        ('star-trailer-shortens-the-prefix', star_trailer_shortens_the_prefix, RELATIVE_ESCAPE),
        ('gnu-magic-with-ustar-version', gnu_magic_with_ustar_version, RELATIVE_ESCAPE),
        ('gnu-longname-continues-in-padding', gnu_longname_continues_in_padding, RELATIVE_ESCAPE),
        ('old-regular-named-dir-by-pax-path', old_regular_named_dir_by_pax_path, HIDDEN_ESCAPE),
        ('old-regular-named-dir-by-gnu-longname', old_regular_named_dir_by_gnu_longname, HIDDEN_ESCAPE),
        ('old-regular-dir-name-undone-by-pax-path', old_regular_dir_name_undone_by_pax_path, HIDDEN_ESCAPE),
        ('pax-size-against-sparse-realsize', pax_size_against_sparse_realsize, HIDDEN_ESCAPE),
        ('pax-size-against-sparse-size', pax_size_against_sparse_size, HIDDEN_ESCAPE),
        ('size-with-leading-nul', size_with_leading_nul, HIDDEN_ESCAPE),
    ))

CANARY_IDS = tuple(sorted(_CANARIES))


def canary(shape_id):
    """The shape built around the escape: Go's view writes /opt/tx9/bin/hb and /data/PWNED.

    The uncompressed payload bytes, like every builder's.
    """
    build, members = _CANARIES[shape_id]
    return build(members)
