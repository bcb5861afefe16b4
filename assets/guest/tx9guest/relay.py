# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The dashboard's way in on a confined box: a TCP relay in the egress container to Executor.

Docker drops a port published by a container that is only on an internal network, so the egress
container publishes the dashboard and this relay carries each connection, byte for byte, to
Executor's port on the box network. The name is looked up again for every connection, so an Executor
recreated with another address is found; the bytes are not read, so the Host header, the bearer token
and streamed answers reach Executor as a client sent them. At most MAX_CONNECTIONS at once.

python3 -m tx9guest.relay LISTEN_PORT TARGET_HOST TARGET_PORT
"""

from __future__ import annotations

import asyncio
import sys

MAX_CONNECTIONS = 256
CONNECT_TIMEOUT = 10.0
CHUNK = 65536


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy reader to writer until end of stream, then pass the end on (a half close)."""
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except OSError:
        writer.close()


class Relay:
    """Relays every connection to its port to target_host:target_port."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target_host = target_host
        self.target_port = target_port
        self.slots = asyncio.Semaphore(MAX_CONNECTIONS)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async with self.slots:
            try:
                upstream = await asyncio.wait_for(
                    asyncio.open_connection(self.target_host, self.target_port), CONNECT_TIMEOUT
                )
            except (OSError, TimeoutError):
                writer.close()
                return
            up_reader, up_writer = upstream
            try:
                await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
            finally:
                for end in (writer, up_writer):
                    end.close()


async def serve(listen_port: int, target_host: str, target_port: int) -> None:
    relay = Relay(target_host, target_port)
    server = await asyncio.start_server(relay.handle, '0.0.0.0', listen_port)
    async with server:
        await server.serve_forever()


def main(argv: list[str]) -> int:
    if len(argv) != 3 or not argv[0].isdigit() or not argv[2].isdigit():
        sys.stderr.write('usage: python3 -m tx9guest.relay LISTEN_PORT TARGET_HOST TARGET_PORT\n')
        return 2
    asyncio.run(serve(int(argv[0]), argv[1], int(argv[2])))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
