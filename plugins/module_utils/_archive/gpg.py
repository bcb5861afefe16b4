# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""OpenPGP symmetric encryption of .tx9 payloads. Private to the col_agents.tx9 collection.

One seam, Gpg, in front of python-gnupg and the gpg binary: AES-256, binary
(not armored) output that `gpg --batch --pinentry-mode loopback --passphrase P
--decrypt` reads. Every operation runs in its own short-lived GNUPGHOME, the
passphrase reaches gpg on a pipe (never argv, never an error text).
Decrypted output is only ever written to files this module creates, which it
removes again unless gpg reported complete success (gpg writes plaintext
before it has checked the integrity code at the end). Encrypted output goes
to a sink, or into a file the caller created and disposes of on failure.
What the runner relies on (the passphrase check, gpg's verdict, its
environment, the gate) is gpgsupport.py's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import IO, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpgsupport import (
    CORRUPT_FIX,
    HOME_PREFIX,
    MIN_GNUPG,
    Gate,
    Sink,
    check_passphrase,
    close_quietly,
    create_exclusive,
    decryption_error,
    gnupg_is_recent,
    gpg_environment,
    pipe_sink,
    remove_quietly,
    remove_stale_homes,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarstream import Readable
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import CHUNK_SIZE, HashingWriter

try:
    import gnupg

    HAS_GNUPG = True
    GNUPG_IMPORT_ERROR = None
except ImportError:
    HAS_GNUPG = False
    GNUPG_IMPORT_ERROR = traceback.format_exc()
else:
    # python-gnupg logs warnings (a non-zero gpg exit on a wrong passphrase) that would
    # otherwise reach a module's stderr; tx9 reports through Tx9Error instead.
    logging.getLogger('gnupg').addHandler(logging.NullHandler())

CIPHER = 'AES256'
# gpg-agent's socket lives in GNUPGHOME and a socket path must stay under ~100 characters.
HOME_PARENT = '/tmp'
# No passphrase cache in the agent.
GPG_OPTIONS = ['--no-symkey-cache']
# No recompression of a payload that is already gzip. The key derivation uses the
# largest iteration count OpenPGP encodes; naming it also spares a fresh agent
# its calibration run (about two seconds).
ENCRYPT_ARGS = ['--compress-algo', 'none', '--s2k-mode', '3', '--s2k-digest-algo', 'SHA512', '--s2k-count', '65011712']

MISSING_FIX = 'Install gnupg on the machine that runs tx9 (apt-get install gnupg), or back up with encrypt=false.'
GPG_FAILED_FIX = 'Run gpg --version to check that gpg works, or back up with encrypt=false.'

# One streaming operation of a Gpg: read src, give the output to sink, with the passphrase.
Operation = Callable[[Readable, Sink, 'str | None'], None]


@dataclasses.dataclass
class _Outcome:
    """What a worker thread running gpg hands back to the caller's thread."""

    error: BaseException | None = None
    done: bool = False


class Gpg:
    """Symmetric AES-256 encryption and decryption through python-gnupg and gpg.

    Streams: src objects need read(), sinks are callables given each output
    chunk, so no payload is ever held in memory.
    """

    def __init__(self, binary: str = 'gpg') -> None:
        if not HAS_GNUPG:
            raise Tx9Error(
                'The Python library python-gnupg is missing.',
                'MISSING_LIBRARY',
                'Install python-gnupg (pip install python-gnupg), or back up with encrypt=false.',
            )
        if not gnupg_is_recent(getattr(gnupg, '__version__', '0')):
            raise Tx9Error(
                f'python-gnupg {gnupg.__version__} is too old: tx9 needs {".".join(str(n) for n in MIN_GNUPG)} '
                'or newer (streams and a private gpg environment).',
                'MISSING_LIBRARY',
                'Install a newer one (pip install "python-gnupg>=0.5.4"), or run the col_agents.tx9.tx9_host role.',
            )
        path = shutil.which(binary)
        if path is None:
            raise Tx9Error(
                f'gpg ({binary}) is not installed, and encrypted archives need it.', 'GPG_MISSING', MISSING_FIX
            )
        self.binary = path

    # Streams.

    def encrypt_stream(self, src: Readable, sink: Sink, passphrase: str | None) -> None:
        """Encrypt everything read from src, giving the OpenPGP bytes to sink(chunk)."""
        check_passphrase(passphrase)
        with self._session() as gpg:
            gpg.on_data = self._collector(sink)
            result, feed_error = self._call(
                gpg,
                gpg.encrypt_file,
                src,
                None,
                symmetric=CIPHER,
                passphrase=passphrase,
                armor=False,
                extra_args=ENCRYPT_ARGS,
            )
        # A sink that failed (a full disk) says so first; gpg only saw its output go unread.
        self._raise_sink_failure(result)
        if result is None or result.returncode != 0 or not result.ok or feed_error is not None:
            detail = (
                feed_error if feed_error is not None else (result.status if result is not None else '') or 'no status'
            )
            raise Tx9Error(
                f'gpg could not encrypt the payload ({detail}).',
                'GPG_FAILED',
                GPG_FAILED_FIX,
            )
        self._raise_sink_failure(result)

    def decrypt_stream(self, src: Readable, sink: Sink, passphrase: str | None) -> None:
        """Decrypt everything read from src, giving the plaintext to sink(chunk).

        The sink sees plaintext before gpg has checked the integrity code at
        the end: whatever it kept must be thrown away when this raises.
        """
        check_passphrase(passphrase)
        with self._session() as gpg:
            gpg.on_data = self._collector(sink)
            result, feed_error = self._call(gpg, gpg.decrypt_file, src, passphrase=passphrase)
        error = decryption_error(result) if result is not None else None
        if error is not None:
            raise error
        if result is None or feed_error is not None:
            raise Tx9Error(
                f'The encrypted payload could not be read to its end ({feed_error}).', 'ARCHIVE_CORRUPT', CORRUPT_FIX
            )
        self._raise_sink_failure(result)

    @staticmethod
    def _call(
        gpg: Any, operation: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> tuple[Any, OSError | ValueError | None]:
        """(result, error feeding gpg) of a python-gnupg call.

        python-gnupg raises what went wrong while copying src into gpg (a
        broken pipe when gpg stopped early on a wrong passphrase, a read
        error) after gpg has finished, losing its verdict; the result object
        is caught on creation to keep that verdict.
        """
        made: list[Any] = []

        def crypt_result(owner: Any) -> Any:
            made.append(gnupg.Crypt(owner))
            return made[-1]

        gpg.result_map = dict(gpg.result_map, crypt=crypt_result)
        try:
            return operation(*args, **kwargs), None
        except (OSError, ValueError) as exc:
            return (made[-1] if made else None), exc

    # Files.

    def encrypt_file(self, src_path: str, dst_path: str, passphrase: str | None) -> tuple[str, int]:
        """Encrypt src_path into the new file dst_path; return (sha256 hex, size) of what was written."""
        return self._to_new_file(self.encrypt_stream, src_path, dst_path, passphrase)

    def decrypt_file(self, src_path: str, dst_path: str, passphrase: str | None) -> tuple[str, int]:
        """Decrypt src_path into the new file dst_path; return (sha256 hex, size) of the plaintext.

        dst_path never exists afterwards unless decryption fully succeeded.
        """
        return self._to_new_file(self.decrypt_stream, src_path, dst_path, passphrase)

    def _to_new_file(
        self, operation: Operation, src_path: str, dst_path: str, passphrase: str | None
    ) -> tuple[str, int]:
        check_passphrase(passphrase)
        try:
            src = open(src_path, 'rb')
        except OSError as exc:
            raise Tx9Error(
                f'{src_path} cannot be read: {exc.strerror or exc}.', 'INVALID_ARGUMENT', f'Check the path {src_path}.'
            ) from exc
        with src:
            handle = create_exclusive(dst_path)
            try:
                sink = HashingWriter(handle)
                operation(src, sink.write, passphrase)
                handle.flush()
                os.fsync(handle.fileno())
                handle.close()
            except BaseException:
                close_quietly(handle)
                remove_quietly(dst_path)
                raise
        return sink.hexdigest(), sink.size

    # Pipes, for callers that pull plaintext or push it.

    @contextlib.contextmanager
    def decrypting(self, src: Readable, passphrase: str | None) -> Iterator[IO[bytes]]:
        """A readable stream of src's plaintext, decrypted as it is read.

        On leaving the block the rest is read and gpg's verdict awaited: a
        wrong passphrase raises BAD_PASSWORD and a failed integrity check
        ARCHIVE_CORRUPT, even when the reader saw no problem, so nothing read
        here counts until the block ends without error.
        """
        check_passphrase(passphrase)
        read_fd, write_fd = os.pipe()
        reader = os.fdopen(read_fd, 'rb')
        gate = Gate(src)
        outcome = _Outcome()

        def run() -> None:
            try:
                self.decrypt_stream(gate, pipe_sink(write_fd), passphrase)
            except BaseException as exc:  # noqa: BLE001 - whatever it is, the caller's thread raises it below
                outcome.error = exc
            finally:
                outcome.done = True
                os.close(write_fd)

        worker = threading.Thread(target=run, name='tx9-gpg-decrypt')
        worker.daemon = True
        worker.start()
        try:
            yield reader
            if not reader.closed:
                while reader.read(CHUNK_SIZE):
                    pass
        except BaseException:
            # When gpg had already finished, its verdict explains the broken stream;
            # otherwise this block stopped gpg, and the block's own error is the one.
            finished = outcome.done
            gate.close()
            reader.close()
            worker.join()
            if finished and outcome.error is not None:
                raise outcome.error
            raise
        gate.close()
        reader.close()
        worker.join()
        if outcome.error is not None:
            raise outcome.error

    @contextlib.contextmanager
    def encrypting(self, sink: Sink, passphrase: str | None) -> Iterator[IO[bytes]]:
        """A writable stream whose bytes are encrypted into sink(chunk) as they are written.

        On an error inside the block the partial output must be discarded.
        """
        check_passphrase(passphrase)
        read_fd, write_fd = os.pipe()
        writer = os.fdopen(write_fd, 'wb')
        outcome = _Outcome()

        def run() -> None:
            reader = os.fdopen(read_fd, 'rb')
            try:
                self.encrypt_stream(reader, sink, passphrase)
            except BaseException as exc:  # noqa: BLE001 - whatever it is, the caller's thread raises it below
                outcome.error = exc
            finally:
                reader.close()

        worker = threading.Thread(target=run, name='tx9-gpg-encrypt')
        worker.daemon = True
        worker.start()
        try:
            yield writer
        except BaseException:
            close_quietly(writer)
            worker.join()
            if outcome.error is not None:
                # A write failed because gpg went away; gpg's error says why.
                raise outcome.error
            raise
        close_error: OSError | None = None
        try:
            writer.close()
        except OSError as exc:
            # gpg went away; its own error, when it has one, says why.
            close_error = exc
        worker.join()
        if outcome.error is not None:
            raise outcome.error
        if close_error is not None:
            raise Tx9Error(
                f'gpg stopped reading the payload before its end ({close_error}).',
                'GPG_FAILED',
                GPG_FAILED_FIX,
            )

    # One private GNUPGHOME per operation.

    @contextlib.contextmanager
    def _session(self) -> Iterator[Any]:
        parent = HOME_PARENT if os.path.isdir(HOME_PARENT) else tempfile.gettempdir()
        remove_stale_homes(parent)
        # The owner's PID in the name lets a later run remove the home of a killed one.
        try:
            home = tempfile.mkdtemp(prefix=f'{HOME_PREFIX}{os.getpid()}-', dir=parent)
        except OSError as exc:
            raise Tx9Error(
                f'gpg needs a private home in {parent}, which cannot be made: {exc.strerror or exc}.',
                'GPG_FAILED',
                f'Free space in {parent} or fix its permissions, then run again.',
            )
        env = gpg_environment(os.environ, home)
        try:
            try:
                gpg = gnupg.GPG(
                    gpgbinary=self.binary, gnupghome=home, options=list(GPG_OPTIONS), env=env, encoding='utf-8'
                )
            except OSError:
                raise Tx9Error(f'gpg ({self.binary}) cannot be run.', 'GPG_MISSING', MISSING_FIX)
            except ValueError as exc:
                raise Tx9Error(f'gpg does not work: {exc}', 'GPG_FAILED', 'Run gpg --version to see what is wrong.')
            gpg.buffer_size = CHUNK_SIZE
            yield gpg
        finally:
            self._stop_agent(home, env)
            shutil.rmtree(home, ignore_errors=True)

    def _stop_agent(self, home: str, env: dict[str, str]) -> None:
        """gpg starts an agent for the home; it must not outlive the operation."""
        if not os.path.exists(os.path.join(home, 'S.gpg-agent')):
            return
        gpgconf = shutil.which('gpgconf') or os.path.join(os.path.dirname(self.binary), 'gpgconf')
        try:
            subprocess.run(
                [gpgconf, '--homedir', home, '--kill', 'gpg-agent'],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            # The agent exits by itself once its socket is gone with the home.
            pass

    @staticmethod
    def _collector(sink: Sink) -> Callable[[bytes], bool]:
        def on_data(chunk: bytes) -> bool:
            if chunk:
                sink(chunk)
            # Tell python-gnupg not to keep the chunk: payloads can be gigabytes.
            return False

        return on_data

    @staticmethod
    def _raise_sink_failure(result: Any) -> None:
        failure = getattr(result, 'on_data_failure', None)
        if failure is None:
            return
        if isinstance(failure, Tx9Error):
            raise failure
        if isinstance(failure, OSError):
            raise Tx9Error(
                f'The gpg output could not be written: {failure.strerror or failure}.',
                'ARCHIVE_WRITE_FAILED',
                'Free space on the disk the archive is written to.',
            )
        raise failure
