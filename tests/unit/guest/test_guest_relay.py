# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The dashboard relay of a confined box: bytes both ways unchanged, a half close passed on, no target no hang."""

from __future__ import annotations

import asyncio

from tx9guest import relay


async def upstream_echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answers once the client has finished sending: what it got, upper-cased."""
    data = await reader.read()
    writer.write(b'GOT ' + data.upper())
    await writer.drain()
    writer.close()


async def through_relay(payload: bytes, target_port: int | None = None) -> bytes:
    upstream = await asyncio.start_server(upstream_echo, '127.0.0.1', 0)
    port = target_port or upstream.sockets[0].getsockname()[1]
    front = await asyncio.start_server(relay.Relay('127.0.0.1', port).handle, '127.0.0.1', 0)
    try:
        reader, writer = await asyncio.open_connection('127.0.0.1', front.sockets[0].getsockname()[1])
        writer.write(payload)
        await writer.drain()
        writer.write_eof()
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        return answer
    finally:
        front.close()
        upstream.close()


def test_the_relay_carries_bytes_both_ways_and_passes_the_clients_half_close_on():
    payload = b'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:32768\r\nAuthorization: Bearer x\r\n\r\n' + bytes(200000)
    assert asyncio.run(through_relay(payload)) == b'GOT ' + payload.upper()


def test_a_target_that_does_not_answer_closes_the_clients_connection_at_once():
    async def closed_port() -> int:
        probe = await asyncio.start_server(upstream_echo, '127.0.0.1', 0)
        port = probe.sockets[0].getsockname()[1]
        probe.close()
        await probe.wait_closed()
        return port

    async def run() -> bytes:
        return await through_relay(b'hello', await closed_port())

    assert asyncio.run(run()) == b''


def test_the_relay_refuses_arguments_it_cannot_use():
    assert relay.main(['4788', 'executor']) == 2
    assert relay.main(['port', 'executor', '4788']) == 2
