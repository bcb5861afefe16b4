# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The box image: build it from the assets, its base image, and pruning.

Private to the col_agents.tx9 collection.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Collection, Iterable
from typing import IO, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._docker import (
    docker_error,
    find_image,
    is_engine_error,
    is_not_found,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._image.context import build_context, read_box_env
from ansible_collections.col_agents.tx9.plugins.module_utils._names import LABEL_ASSETS, LABEL_OWNER, LABEL_VERSION
from ansible_collections.col_agents.tx9.plugins.module_utils._version import COLLECTION_VERSION, IMAGE_REPOSITORY

DEBIAN_BASE = re.compile(r'^(?:docker\.io/)?(?:library/)?debian:([a-z]+)(?:-slim)?$')
SOURCES_DIR = '/etc/apt/sources.list.d'
SOURCES_LIST = '/etc/apt/sources.list'

Write = Callable[[str], None]


def debian_mirror(texts: Iterable[str], suite: str) -> str | None:
    """The first Debian mirror URI in apt sources that serves suite.

    texts are the contents of deb822 `.sources` files or one-line
    `sources.list` files; the host's own configuration decides the mirror.
    """
    for text in texts:
        for stanza in re.split(r'\n\s*\n', text):
            fields: dict[str, list[str]] = {}
            for line in stanza.splitlines():
                if ':' in line and not line.lstrip().startswith('#'):
                    key, value = line.split(':', 1)
                    fields[key.strip().lower()] = value.split()
            if fields.get('enabled', ['yes'])[0].lower() == 'no':
                continue
            if 'deb' in fields.get('types', []) and suite in fields.get('suites', []):
                for uri in fields.get('uris', []):
                    if uri.startswith(('http://', 'https://')):
                        return uri
        for line in text.splitlines():
            # One-line form: deb [options] URI SUITE COMPONENTS...
            words = re.sub(r'\[[^\]]*\]', ' ', line.split('#', 1)[0]).split()
            if len(words) >= 3 and words[0] == 'deb' and words[2] == suite:
                return words[1]
    return None


def host_apt_sources() -> list[str]:
    texts = []
    if os.path.isdir(SOURCES_DIR):
        for name in sorted(os.listdir(SOURCES_DIR)):
            if name.endswith(('.sources', '.list')):
                with open(os.path.join(SOURCES_DIR, name)) as handle:
                    texts.append(handle.read())
    if os.path.isfile(SOURCES_LIST):
        with open(SOURCES_LIST) as handle:
            texts.append(handle.read())
    return texts


def image_status(client: Any, tag: str, digest: str) -> tuple[str, Any]:
    """'current' (tag labelled with digest), 'stale' (tag exists, other assets) or 'missing', with the image."""
    image = find_image(client, tag)
    if image is None:
        return 'missing', None
    if (image.labels or {}).get(LABEL_ASSETS) == digest:
        return 'current', image
    return 'stale', image


def new_log_path(log_dir: str, tag: str) -> str:
    """A new build log in log_dir, image-build-<tag>-<UTC time>.log: the one place that names it
    (tx9_image returns it as planned_log_path in check mode, for a caller to announce and pass on)."""
    stamp = time.strftime('%Y%m%d-%H%M%S', time.gmtime())
    safe_tag = re.sub(r'[^A-Za-z0-9_.-]', '_', tag)
    return os.path.join(log_dir, f'image-build-{safe_tag}-{stamp}.log')


class ImageBuilder:
    """Ensures tx9-box:<version> exists and matches the assets it was given."""

    def __init__(
        self,
        client: Any,
        assets_root: str,
        tag: str | None = None,
        ca_bundle: str | None = None,
        log_dir: str | None = None,
        base_bootstrap: str = 'auto',
        build_timeout: int = 3600,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.client = client
        self.assets_root = assets_root
        self.tag = tag or f'{IMAGE_REPOSITORY}:{COLLECTION_VERSION}'
        self.ca_bundle = ca_bundle
        self.log_dir = log_dir
        self.base_bootstrap = base_bootstrap
        self.build_timeout = build_timeout
        self.log = log or (lambda message: None)
        try:
            self.box_env = read_box_env(assets_root)
            self.context, self.digest = build_context(assets_root, ca_bundle)
        except (OSError, ValueError) as exc:
            raise Tx9Error(
                f'The image assets at {assets_root} are not usable: {exc}.',
                'ASSETS_INVALID',
                'Use the assets shipped with the col_agents.tx9 collection (leave assets_dir unset).',
            )
        self.base_image = self.box_env.get('BASE_IMAGE', 'debian:bookworm-slim')

    def labels(self) -> dict[str, str]:
        return {LABEL_OWNER: '1', LABEL_VERSION: COLLECTION_VERSION, LABEL_ASSETS: self.digest}

    def status(self) -> tuple[str, Any]:
        """'current', 'stale' (tag exists, other assets) or 'missing', with the image (None when missing)."""
        return image_status(self.client, self.tag, self.digest)

    def new_log_path(self) -> str:
        if self.log_dir is None:
            raise ValueError('a build log needs a log_dir or a log_path')
        return new_log_path(self.log_dir, self.tag)

    def build(self, log_path: str | None = None) -> str:
        """Build the image, streaming Docker's output into a log file; return the log path.

        log_path names the file (appended to); by default a new timestamped file in log_dir.
        """
        chosen = bool(log_path)
        log_path = log_path or self.new_log_path()
        try:
            fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError as exc:
            raise Tx9Error(
                f'The build log {log_path} cannot be written: {exc.strerror}.',
                'INVALID_ARGUMENT' if chosen else 'STATE_HOME',
                'Give log_path in a directory this user can write, or leave it unset.'
                if chosen
                else f'Make {self.log_dir} writable, or set TX9_HOME to a writable directory.',
            )
        with os.fdopen(fd, 'w') as log_file:
            error = self.build_into(log_file)
        if error:
            raise Tx9Error(
                f'Building the box image {self.tag} failed: {error.strip()} (full output in {log_path}).',
                'IMAGE_BUILD_FAILED',
                f'Read {log_path} for the failing step, fix its cause (network, disk space, a pin in box.env), '
                'then run again.',
                details=dict(log_path=log_path),
            )
        return log_path

    def build_into(self, log_file: IO[str]) -> str | None:
        """Build the image, Docker's output streamed into log_file; the error that stopped it, or None."""

        def write(line: str) -> None:
            log_file.write(line if line.endswith('\n') else line + '\n')
            log_file.flush()

        write(f'tx9: building {self.tag} (assets {self.digest})')
        self.ensure_base(write)
        error: str | None = None
        try:
            stream = self.client.api.build(
                fileobj=io.BytesIO(self.context),
                custom_context=True,
                tag=self.tag,
                labels=self.labels(),
                buildargs={'BASE_IMAGE': self.base_image},
                rm=True,
                forcerm=True,
                pull=False,
                decode=True,
                timeout=self.build_timeout,
            )
            for chunk in stream:
                if 'stream' in chunk:
                    log_file.write(chunk['stream'])
                    log_file.flush()
                elif 'error' in chunk:
                    error = chunk['error']
                    write(f'ERROR: {error}')
        except Exception as exc:
            if not is_engine_error(exc):
                raise
            error = str(exc)
            write(f'ERROR: {error}')
        return error

    def ensure_base(self, write: Write) -> None:
        """Use the base image if present, else pull it, else bootstrap it with debootstrap."""
        if find_image(self.client, self.base_image) is not None:
            write(f'tx9: base image {self.base_image} is present')
            return
        repository, _sep, tag = self.base_image.partition(':')
        try:
            write(f'tx9: pulling base image {self.base_image}')
            self.client.images.pull(repository, tag=tag or 'latest')
            return
        except Exception as exc:
            if not is_engine_error(exc):
                raise
            write(f'tx9: pull failed: {exc}')
        match = DEBIAN_BASE.match(self.base_image)
        if self.base_bootstrap != 'auto' or not match:
            raise Tx9Error(
                f'The base image {self.base_image} is not on this host and cannot be pulled.',
                'BASE_IMAGE_UNAVAILABLE',
                'Load it (docker load) or make a registry reachable; for a Debian base, set '
                'base_bootstrap=auto to build it with debootstrap.',
            )
        self.bootstrap_debian(match.group(1), write)

    def bootstrap_debian(self, suite: str, write: Write) -> None:
        debootstrap = shutil.which('debootstrap') or (
            '/usr/sbin/debootstrap' if os.path.exists('/usr/sbin/debootstrap') else None
        )
        mirror = debian_mirror(host_apt_sources(), suite)
        if not debootstrap or not mirror:
            missing = (
                'debootstrap is not installed'
                if not debootstrap
                else (f'no Debian mirror for {suite} is configured in the apt sources')
            )
            raise Tx9Error(
                f'The base image {self.base_image} cannot be made here: {missing}.',
                'BASE_IMAGE_UNAVAILABLE',
                'Install debootstrap (the col_agents.tx9.tx9_host role does) and configure a Debian '
                f'mirror in /etc/apt/sources.list.d, or load {self.base_image} with docker load.',
            )
        work = tempfile.mkdtemp(prefix='tx9-base-')
        try:
            root = os.path.join(work, 'root')
            write(f'tx9: debootstrap --variant=minbase {suite} from {mirror}')
            self._run([debootstrap, '--variant=minbase', suite, root, mirror], write)
            tarball = os.path.join(work, 'root.tar')
            self._run(['tar', '-C', root, '-cf', tarball, '.'], write)
            repository, _sep, tag = self.base_image.partition(':')
            self.client.api.import_image_from_file(
                tarball, repository=repository, tag=tag, changes=['LABEL tx9.base=debootstrap']
            )
            write(f'tx9: imported {self.base_image}')
        finally:
            shutil.rmtree(work, ignore_errors=True)

    @staticmethod
    def _run(argv: list[str], write: Write) -> None:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
        output = proc.stdout.decode('utf-8', 'replace')
        write(output)
        if proc.returncode != 0:
            tail = ' '.join(output.strip().splitlines()[-3:])
            raise Tx9Error(
                f'Making the base image failed: {argv[0]} exited {proc.returncode:d}: {tail}',
                'BASE_IMAGE_UNAVAILABLE',
                'Check that the Debian mirror in the apt sources answers, then run again.',
            )


def unused_box_images(client: Any, keep_tags: Collection[str]) -> list[tuple[str, list[str]]]:
    """tx9 images no container uses, minus keep_tags: a list of (id, tags)."""
    used: set[str | None] = set()
    for container in client.api.containers(all=True):
        used.add(container.get('ImageID'))
    found: list[tuple[str, list[str]]] = []
    for image in client.api.images(all=False):
        tags = [t for t in (image.get('RepoTags') or []) if t and t != '<none>:<none>']
        ours = (image.get('Labels') or {}).get(LABEL_OWNER) == '1' or any(
            t.startswith(IMAGE_REPOSITORY + ':') for t in tags
        )
        if not ours or image['Id'] in used:
            continue
        if any(t in keep_tags for t in tags):
            continue
        tx9_tags = [t for t in tags if t.startswith(IMAGE_REPOSITORY + ':')]
        if tags and not tx9_tags:
            continue  # a tx9-labelled image someone re-tagged for other use: leave it
        found.append((image['Id'], tx9_tags))
    return found


def remove_images(client: Any, images: Iterable[tuple[str, list[str]]]) -> None:
    """Remove (id, tags) pairs: each tx9 tag, then the id when it has none left."""
    for image_id, tags in images:
        try:
            for tag in tags:
                client.api.remove_image(tag)
            if not tags:
                client.api.remove_image(image_id)
        except Exception as exc:
            if not is_engine_error(exc):
                raise
            if not is_not_found(exc):
                raise docker_error(f'remove image {(tags or [image_id])[0]}', exc)
