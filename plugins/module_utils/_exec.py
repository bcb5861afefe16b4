# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The output of a command run in a container (a Docker exec), read frame by frame.

Private to the col_agents.tx9 collection. Docker sends an exec's output as
frames (an 8-byte header: the stream, 1 stdout or 2 stderr, and the payload's
length, then the payload) on the connection it takes over after its HTTP
answer. The bytes of the first frames may arrive together with that answer's
headers and then sit in the buffer of the reader that read the headers; a
reader that goes to the socket underneath skips them and takes payload bytes
for a header. These frames are read through that same buffer, so none is
skipped, wherever the engine is (a local socket, TCP, TLS).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import Any

HEADER = struct.Struct('>BxxxL')
CHUNK = 1024 * 1024
# The most of a command's output kept in memory: its last bytes, which hold what callers read (the last
# JSON line, the tail of an error). A command that prints more cannot grow the module's memory.
OUTPUT_LIMIT = 4 * 1024 * 1024
STDOUT = 1
STDERR = 2


def frames(reader: Any) -> Iterator[tuple[int, bytes]]:
    """(stream, bytes) of each frame read from reader (anything with read(n)), payloads in pieces of at most
    CHUNK bytes; ends at the end of the stream (a header or payload cut short ends it too)."""
    while True:
        header = read_exactly(reader, HEADER.size)
        if header is None:
            return
        stream, size = HEADER.unpack(header)
        while size:
            data = reader.read(min(size, CHUNK))
            if not data:
                return
            size -= len(data)
            yield stream, data


def read_exactly(reader: Any, size: int) -> bytes | None:
    """size bytes from reader, or None when the stream ends first."""
    data = b''
    while len(data) < size:
        more = reader.read(size - len(data))
        if not more:
            return None
        data += more
    return data


def buffered_reader(sock: Any) -> Any:
    """The reader to take the exec's frames from: the buffered reader the HTTP answer was read with, when it
    sits in front of sock (docker's client keeps the answer on the socket it returns), else sock itself."""
    response = getattr(sock, '_response', None)
    reader = getattr(getattr(getattr(response, 'raw', None), '_fp', None), 'fp', None)
    if reader is not None and getattr(reader, 'raw', None) is sock and hasattr(reader, 'read'):
        return reader
    return sock


def exec_frames(api: Any, exec_id: str) -> Iterator[tuple[int, bytes]]:
    """Start the exec and yield (stream, bytes) of its output until it ends; the connection is closed after."""
    sock = api.exec_start(exec_id, socket=True)
    try:
        yield from frames(buffered_reader(sock))
    finally:
        response = getattr(sock, '_response', None)
        if response is not None:
            response.close()
        sock.close()


def exec_output(api: Any, exec_id: str, limit: int = OUTPUT_LIMIT) -> bytes:
    """The exec's stdout and stderr as they came, in one piece (what exec_start returns, without its flaw).

    Of more than limit bytes, the last limit bytes, after a line that says how many were left out.
    """
    return last_bytes((data for _stream, data in exec_frames(api, exec_id)), limit)


def last_bytes(pieces: Iterable[bytes], limit: int) -> bytes:
    """The pieces joined, or of more than limit bytes the last limit after a line saying how many were left out."""
    kept = bytearray()
    dropped = 0
    for piece in pieces:
        kept += piece
        if len(kept) > 2 * limit:
            dropped += len(kept) - limit
            del kept[:-limit]
    if len(kept) > limit:
        dropped += len(kept) - limit
        del kept[:-limit]
    if not dropped:
        return bytes(kept)
    return f'[the first {dropped} bytes of the output were left out]\n'.encode('ascii') + bytes(kept)
