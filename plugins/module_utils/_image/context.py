# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The image build context: a deterministic tar of the collection's assets.

Private to the col_agents.tx9 collection. The same assets always give the
same bytes (sorted names, zero times and owners, normalised modes), so the
SHA-256 of the context without the host's CA bundle, with the bundle's beside
it, identifies an image build; the controller computes the first from its own
assets, and a plan needs no assets sent.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shlex
import stat
import tarfile

# Files whose name says they are never part of a build.
SKIPPED_NAMES = ('__pycache__', '.pytest_cache', '.DS_Store')
SKIPPED_SUFFIXES = ('.pyc', '.pyo', '.swp', '~')


def _skipped(name: str) -> bool:
    return name in SKIPPED_NAMES or name.endswith(SKIPPED_SUFFIXES)


def _add(archive: tarfile.TarFile, name: str, data: bytes, executable: bool, is_dir: bool = False) -> None:
    info = tarfile.TarInfo(name)
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ''
    if is_dir:
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
        archive.addfile(info)
        return
    info.size = len(data)
    info.mode = 0o755 if executable else 0o644
    archive.addfile(info, io.BytesIO(data))


def tree_files(root: str) -> list[tuple[str, str]]:
    """(relative name, absolute path) of every regular file under root, sorted."""
    found: list[tuple[str, str]] = []
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not _skipped(d))
        for filename in sorted(filenames):
            if _skipped(filename):
                continue
            path = os.path.join(directory, filename)
            if os.path.isfile(path):
                found.append((os.path.relpath(path, root).replace(os.sep, '/'), path))
    return sorted(found)


def pack(files: dict[str, tuple[bytes, bool]]) -> bytes:
    """A deterministic uncompressed tar of files: a dict name -> (bytes, executable)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode='w', format=tarfile.USTAR_FORMAT) as archive:
        seen_dirs: set[str] = set()
        for name in sorted(files):
            parts = name.split('/')[:-1]
            for depth in range(1, len(parts) + 1):
                directory = '/'.join(parts[:depth])
                if directory not in seen_dirs:
                    seen_dirs.add(directory)
                    _add(archive, directory, b'', False, is_dir=True)
            data, executable = files[name]
            _add(archive, name, data, executable)
    return buffer.getvalue()


def read_tree(root: str) -> dict[str, tuple[bytes, bool]]:
    """The files under root as pack() input."""
    files: dict[str, tuple[bytes, bool]] = {}
    for name, path in tree_files(root):
        with open(path, 'rb') as handle:
            data = handle.read()
        files[name] = (data, bool(os.stat(path).st_mode & stat.S_IXUSR))
    return files


def context_files(assets: dict[str, tuple[bytes, bool]]) -> dict[str, tuple[bytes, bool]]:
    """The assets as a build context holds them: the Dockerfile at the root. ValueError without one."""
    files = dict(assets)
    dockerfile = files.pop('docker/Dockerfile', None)
    if dockerfile is None:
        raise ValueError('the assets have no docker/Dockerfile')
    files['Dockerfile'] = dockerfile
    return files


def assets_digest(assets: dict[str, tuple[bytes, bool]]) -> str:
    """SHA-256 of the build context without the host's CA bundle: what the controller computes from its assets."""
    return hashlib.sha256(pack(context_files(assets))).hexdigest()


def image_digest(assets_sha256: str, ca_sha256: str) -> str:
    """The tx9.assets label of the image built from those assets with that CA bundle (the SHA-256 of no bytes
    when the host's is not trusted): the assets' digest and the bundle's, which each side can compute alone."""
    return hashlib.sha256(f'{assets_sha256} {ca_sha256}\n'.encode()).hexdigest()


def read_ca(ca_bundle: str | None) -> bytes:
    """The CA bundle a build trusts (no bytes when none)."""
    if not ca_bundle:
        return b''
    with open(ca_bundle, 'rb') as handle:
        return handle.read()


def build_context(assets_root: str, ca_bundle: str | None = None) -> tuple[bytes, str]:
    """The Docker build context for the box image, and the digest its image is labelled with (image_digest).

    The Dockerfile moves to the context root; the host's CA bundle, when
    given, travels as host-ca.crt (empty when not trusted) so builds behind
    TLS-inspecting proxies work.
    """
    assets = read_tree(assets_root)
    files = context_files(assets)
    ca_data = read_ca(ca_bundle)
    digest = image_digest(assets_digest(assets), hashlib.sha256(ca_data).hexdigest())
    files['host-ca.crt'] = (ca_data, False)
    return pack(files), digest


ENV_KEY = re.compile(r'[A-Za-z_][A-Za-z0-9_]*\Z')


def parse_box_env(text: str) -> dict[str, str]:
    """KEY=VALUE lines of box.env as a shell reads them: comments skipped, "export " allowed, quotes removed.

    The guest runtime reads box.env by the same rules (a test feeds both the same lines).
    """
    values: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        if line.startswith('export '):
            line = line[len('export ') :].lstrip()
        key, sep, value = line.partition('=')
        if not sep or not ENV_KEY.match(key):
            continue
        try:
            parts = shlex.split(value, comments=True)
        except ValueError:
            parts = [value]
        values[key] = parts[0] if parts else ''
    return values


def read_box_env(assets_root: str) -> dict[str, str]:
    """The assets' box.env as a dict."""
    with open(os.path.join(assets_root, 'box.env')) as handle:
        return parse_box_env(handle.read())
