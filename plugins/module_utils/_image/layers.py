# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which layers of an image an engine already holds, and a docker save that leaves them out.

Private to the col_agents.tx9 collection. An image's layers are named by their
diff IDs, the SHA-256 of each layer's uncompressed tar, in order from the base.
docker load never opens the file of a layer whose chain (that layer and every
layer below it) the engine already holds, so an archive meant for hosts that
share an image's first layers can leave those layer files out: an upgrade that
changed the guest runtime ships under a megabyte, not the whole image.

The filter knows a layer's file by its content (its SHA-256 is the diff ID),
whatever the save's layout, and fails when the save did not hold every layer it
was told to leave out, so an archive never lacks a layer it was not meant to.
"""

from __future__ import annotations

import hashlib
import tarfile
import tempfile
from collections.abc import Iterable, Sequence
from typing import IO, Any, cast

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import CHUNK_SIZE, ChunkReader


def image_layers(image: Any) -> list[str]:
    """The diff IDs of image's layers, base first."""
    return list(((getattr(image, 'attrs', None) or {}).get('RootFS') or {}).get('Layers') or [])


def shared_prefix(first: Sequence[str], second: Sequence[str]) -> int:
    """How many leading entries two layer lists have in common."""
    count = 0
    for one, other in zip(first, second):
        if one != other:
            break
        count += 1
    return count


def present_layers(images: Iterable[Any], layers: Sequence[str]) -> int:
    """How many leading layers of layers the engine holding images has (as the first layers of one image)."""
    return max([shared_prefix(layers, image_layers(image)) for image in images] or [0])


def copy_save_without(
    chunks: Iterable[bytes], omit: Iterable[str], target: IO[bytes], spill_dir: str | None = None
) -> int:
    """Write the docker save tar read from chunks into target, without the files of the layers in omit.

    omit is a set of diff IDs; every regular member whose SHA-256 is one of them is left out.
    Returns the number of members left out. Fails (DOCKER_ERROR) when a layer of omit was not
    in the save.
    """
    omit = set(omit)
    left_out: set[str] = set()
    count = 0
    # A stream ('r|') is only ever read, and ChunkReader has the read() of a file.
    stream = cast(IO[bytes], ChunkReader(chunks))
    source = tarfile.open(fileobj=stream, mode='r|')
    copy = tarfile.open(fileobj=target, mode='w|', format=tarfile.PAX_FORMAT)
    for member in source:
        if not member.isreg():
            copy.addfile(member)
            continue
        # A member is read once, hashed while it is spilled, then copied or dropped.
        with tempfile.SpooledTemporaryFile(max_size=CHUNK_SIZE, dir=spill_dir) as spill:
            digest = hashlib.sha256()
            reader = source.extractfile(member)
            if reader is None:  # never for the regular members this loop keeps
                continue
            while True:
                chunk = reader.read(CHUNK_SIZE)
                if not chunk:
                    break
                digest.update(chunk)
                spill.write(chunk)
            diff_id = 'sha256:' + digest.hexdigest()
            if diff_id in omit:
                left_out.add(diff_id)
                count += 1
                continue
            spill.seek(0)
            copy.addfile(member, spill)
    copy.close()
    source.close()
    if left_out != omit:
        raise Tx9Error(
            f"The engine's save of the image did not hold the layers {', '.join(sorted(omit - left_out))} that were "
            'to be left out; nothing was written.',
            'DOCKER_ERROR',
            'Export it whole (omit_layers: 0).',
        )
    return count


def layers_to_omit(layers: Sequence[str], count: int) -> set[str]:
    """The diff IDs whose files an export leaving out the first count layers drops: a layer that
    also sits above them (the same content twice) keeps its file."""
    return set(layers[:count]) - set(layers[count:])
