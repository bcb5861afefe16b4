# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Docker exec's output read frame by frame through the reader that read the HTTP answer, so frames that
arrived with the answer's headers are not skipped; over a real socket pair."""

import io
import socket
import struct
import threading

from ansible_collections.col_agents.tx9.plugins.module_utils import _exec


def frame(stream, payload):
    return struct.pack('>BxxxL', stream, len(payload)) + payload


ANSWER = b'HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n\r\n'
BODY = frame(1, b'out one\n') + frame(2, b'err\n') + frame(1, b'x' * 300000) + frame(1, b'last\n')


class Response:
    """What docker's client keeps on the socket it returns: the HTTP answer, whose reader read the headers."""

    def __init__(self, reader):
        self.raw = type('Raw', (), {})()
        self.raw._fp = type('Fp', (), {})()
        self.raw._fp.fp = reader
        self.closed = False

    def close(self):
        self.closed = True


class Api:
    """exec_start(socket=True) as docker's client answers it: the raw socket, the answer's reader in front."""

    def __init__(self, sock):
        self.sock = sock

    def exec_start(self, exec_id, socket=False):
        assert socket is True and exec_id == 'exec-id'
        reader = self.sock.makefile('rb')
        # The headers are read the way an HTTP client reads them: a line at a time through the buffer, which
        # takes in whatever came with them.
        while reader.readline() not in (b'\r\n', b''):
            pass
        raw = reader.raw
        raw._response = Response(reader)
        return raw


def serve(data):
    ours, theirs = socket.socketpair()

    def send():
        theirs.sendall(data)
        theirs.close()

    threading.Thread(target=send, daemon=True).start()
    return ours


def test_frames_that_arrived_with_the_answers_headers_are_read_first_and_in_order():
    found = list(_exec.exec_frames(Api(serve(ANSWER + BODY)), 'exec-id'))
    stdout = b''.join(data for stream, data in found if stream == _exec.STDOUT)
    stderr = b''.join(data for stream, data in found if stream == _exec.STDERR)
    assert stdout == b'out one\n' + b'x' * 300000 + b'last\n' and stderr == b'err\n'


def test_the_output_comes_whole_in_arrival_order():
    assert _exec.exec_output(Api(serve(ANSWER + BODY)), 'exec-id') == b'out one\nerr\n' + b'x' * 300000 + b'last\n'


def test_a_stream_cut_short_ends_the_frames_without_inventing_any():
    assert list(_exec.frames(io.BytesIO(frame(1, b'whole') + frame(1, b'cut')[:10]))) == [(1, b'whole'), (1, b'cu')]
    assert list(_exec.frames(io.BytesIO(frame(2, b'e') + b'\x01\x00'))) == [(2, b'e')]


def test_a_socket_without_a_reader_in_front_is_read_directly():
    sock = io.BytesIO(frame(1, b'plain'))
    assert _exec.buffered_reader(sock) is sock
    assert list(_exec.frames(_exec.buffered_reader(sock))) == [(1, b'plain')]


def test_output_longer_than_the_limit_keeps_its_last_bytes_and_says_how_many_were_left_out():
    body = frame(1, b'a' * 1000) + frame(2, b'b' * 1000) + frame(1, b'{"tail": true}\n')
    kept = _exec.exec_output(Api(serve(ANSWER + body)), 'exec-id', limit=600)

    assert kept == b'[the first 1415 bytes of the output were left out]\n' + (b'b' * 1000 + b'{"tail": true}\n')[-600:]


def test_output_within_the_limit_comes_whole():
    assert _exec.last_bytes([b'x' * 10, b'y' * 10], 20) == b'x' * 10 + b'y' * 10


def test_however_long_the_output_what_is_kept_is_the_limit_after_one_line():
    kept = _exec.last_bytes((b'z' * 97 for _piece in range(1000)), 300)

    marker, rest = kept.split(b'\n', 1)
    assert marker == b'[the first 96700 bytes of the output were left out]' and rest == b'z' * 300
