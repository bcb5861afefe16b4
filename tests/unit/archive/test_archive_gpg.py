# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Symmetric OpenPGP through the Gpg seam, against the real gpg binary and its CLI."""


import hashlib
import io
import os
import shutil
import stat
import subprocess
import tempfile
import threading
import time

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._archive import envelope as archive
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import gpg as _gpg
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import gpgsupport
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import validator
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.tests.unit.archive.tx9_archive_kit import payload, regular, symlink


PASSPHRASE = 'correct horse – pässwörd 日本'


@pytest.fixture
def gpg():
    return _gpg.Gpg()


@pytest.fixture
def cli_home():
    """A short private home for the plain gpg CLI (its agent socket path must stay short)."""
    home = tempfile.mkdtemp(prefix='tx9t-', dir='/tmp')
    yield home
    subprocess.run(['gpgconf', '--homedir', home, '--kill', 'gpg-agent'], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(home, ignore_errors=True)


def cli(home, *args, **kwargs):
    return subprocess.run(['gpg', '--homedir', home, '--batch', '--pinentry-mode', 'loopback'] + list(args),
                          check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs).stdout


@pytest.fixture(scope='module')
def sample():
    """A payload and its encryption, made once: each encryption costs a key derivation."""
    data = payload(regular('./home/agent/notes', os.urandom(20000)))
    sealed = io.BytesIO()
    _gpg.Gpg().encrypt_stream(io.BytesIO(data), sealed.write, PASSPHRASE)
    return data, sealed.getvalue()


@pytest.fixture
def plain(sample, tmp_path):
    path = tmp_path / 'data.tar.gz'
    path.write_bytes(sample[0])
    return path


@pytest.fixture
def encrypted(sample, tmp_path):
    path = tmp_path / 'data.tar.gz.gpg'
    path.write_bytes(sample[1])
    os.chmod(str(path), 0o600)
    return path


def flip(path, offset):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def test_a_file_round_trips_and_both_sides_report_what_they_wrote(gpg, plain, tmp_path):
    sealed, opened = tmp_path / 'sealed', tmp_path / 'opened'

    sealed_digest = gpg.encrypt_file(str(plain), str(sealed), PASSPHRASE)
    opened_digest = gpg.decrypt_file(str(sealed), str(opened), PASSPHRASE)

    assert opened.read_bytes() == plain.read_bytes()
    assert sealed_digest == (hashlib.sha256(sealed.read_bytes()).hexdigest(), sealed.stat().st_size)
    assert opened_digest == (hashlib.sha256(plain.read_bytes()).hexdigest(), plain.stat().st_size)


def test_encrypted_output_is_binary_openpgp_with_a_symmetric_key_packet_and_is_private(gpg, plain, tmp_path):
    sealed = tmp_path / 'sealed'
    gpg.encrypt_file(str(plain), str(sealed), PASSPHRASE)

    assert sealed.read_bytes()[:1] in (b'\x8c', b'\xc3')
    assert archive.sniff(sealed.read_bytes()[:2]) == 'openpgp'
    assert stat.S_IMODE(sealed.stat().st_mode) == 0o600


def test_the_gpg_cli_decrypts_what_we_encrypt_with_aes256(encrypted, plain, cli_home):
    out = cli(cli_home, '--passphrase', PASSPHRASE, '--decrypt', str(encrypted))

    assert out == plain.read_bytes()
    packets = cli(cli_home, '--passphrase', PASSPHRASE, '--list-packets', str(encrypted)).decode('utf-8', 'replace')
    # Symmetric-key session key packet with cipher 9, AES-256.
    assert 'symkey enc packet: version 4, cipher 9' in packets


def test_we_decrypt_what_the_gpg_cli_encrypts(gpg, plain, cli_home, tmp_path):
    sealed, opened = tmp_path / 'cli.gpg', tmp_path / 'opened'
    # A fixed s2k count only spares the test gpg's two-second calibration.
    cli(cli_home, '--passphrase', PASSPHRASE, '--symmetric', '--cipher-algo', 'AES256', '--s2k-count', '65011712',
        '-o', str(sealed), str(plain))

    gpg.decrypt_file(str(sealed), str(opened), PASSPHRASE)

    assert opened.read_bytes() == plain.read_bytes()


def test_a_wrong_passphrase_is_bad_password_and_leaves_no_output(gpg, encrypted, tmp_path):
    opened = tmp_path / 'opened'

    with pytest.raises(Tx9Error) as info:
        gpg.decrypt_file(str(encrypted), str(opened), 'not the passphrase')

    assert info.value.cause == 'BAD_PASSWORD'
    assert not opened.exists()
    assert 'not the passphrase' not in str(info.value)


@pytest.mark.parametrize('where', [lambda size: size // 2, lambda size: size - 5], ids=['middle', 'near-the-end'])
def test_one_flipped_byte_in_the_ciphertext_is_corrupt_and_leaves_no_output(gpg, encrypted, tmp_path, where):
    flip(encrypted, where(encrypted.stat().st_size))
    opened = tmp_path / 'opened'

    with pytest.raises(Tx9Error) as info:
        gpg.decrypt_file(str(encrypted), str(opened), PASSPHRASE)

    assert info.value.cause == 'ARCHIVE_CORRUPT'
    assert not opened.exists()


@pytest.mark.parametrize('damage', [lambda data: data[:len(data) // 2], lambda data: b'\x1f\x8b not openpgp'],
                         ids=['cut-short', 'not-openpgp'])
def test_ciphertext_that_is_cut_short_or_not_openpgp_is_corrupt(gpg, encrypted, tmp_path, damage):
    encrypted.write_bytes(damage(encrypted.read_bytes()))

    with pytest.raises(Tx9Error) as info:
        gpg.decrypt_file(str(encrypted), str(tmp_path / 'opened'), PASSPHRASE)

    assert info.value.cause == 'ARCHIVE_CORRUPT'
    assert not (tmp_path / 'opened').exists()


@pytest.mark.parametrize('operation', ['encrypt_file', 'decrypt_file'])
def test_an_existing_output_file_is_never_overwritten(gpg, encrypted, tmp_path, operation):
    taken = tmp_path / 'taken'
    taken.write_bytes(b'precious')

    with pytest.raises(Tx9Error) as info:
        getattr(gpg, operation)(str(encrypted), str(taken), PASSPHRASE)

    assert info.value.cause == 'ARCHIVE_WRITE_FAILED' and 'never overwrites' in info.value.reason
    assert taken.read_bytes() == b'precious'


@pytest.mark.parametrize('passphrase, cause', [('', 'PASSWORD_REQUIRED'), (None, 'PASSWORD_REQUIRED'),
                                               ('two\nlines', 'INVALID_ARGUMENT'), ('nul\0byte', 'INVALID_ARGUMENT')],
                         ids=['empty', 'none', 'newline', 'nul'])
def test_a_passphrase_gpg_cannot_take_is_refused_before_any_output_exists(gpg, plain, tmp_path, passphrase, cause):
    with pytest.raises(Tx9Error) as info:
        gpg.encrypt_file(str(plain), str(tmp_path / 'out'), passphrase)

    assert info.value.cause == cause
    assert not (tmp_path / 'out').exists()
    if passphrase:
        assert passphrase not in str(info.value)


def test_a_missing_gpg_binary_is_gpg_missing_and_says_how_to_do_without():
    with pytest.raises(Tx9Error) as info:
        _gpg.Gpg(binary='/nonexistent/gpg')

    assert info.value.cause == 'GPG_MISSING'
    assert 'gnupg' in info.value.fix and 'encrypt=false' in info.value.fix


def test_the_passphrase_never_reaches_argv_or_the_environment(gpg, plain, tmp_path, monkeypatch):
    seen = []
    real_popen = _gpg.gnupg.Popen

    def recording_popen(cmd, *args, **kwargs):
        seen.append((list(cmd), dict(kwargs.get('env') or {})))
        return real_popen(cmd, *args, **kwargs)

    monkeypatch.setattr(_gpg.gnupg, 'Popen', recording_popen)
    monkeypatch.setenv('TX9_PASSWORD', PASSPHRASE)
    gpg.encrypt_file(str(plain), str(tmp_path / 'sealed'), PASSPHRASE)
    gpg.decrypt_file(str(tmp_path / 'sealed'), str(tmp_path / 'opened'), PASSPHRASE)

    operations = [(cmd, env) for cmd, env in seen if '--symmetric' in cmd or '--decrypt' in cmd]
    assert len(operations) == 2
    for cmd, env in seen:
        assert not any(PASSPHRASE in arg for arg in cmd)
        assert 'TX9_PASSWORD' not in env and PASSPHRASE not in env.values()
    for cmd, _env in operations:
        assert '--no-symkey-cache' in cmd and cmd[cmd.index('--passphrase-fd') + 1] == '0'
    encrypt_cmd = operations[0][0]
    assert encrypt_cmd[encrypt_cmd.index('--cipher-algo') + 1] == 'AES256'
    assert '--armor' not in encrypt_cmd


def running_with(home):
    """Pids of processes whose command line mentions home."""
    pids = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as handle:
                if home.encode() in handle.read():
                    pids.append(int(pid))
        except OSError:
            continue
    return pids


def test_each_operation_uses_a_short_private_home_that_is_gone_afterwards_with_its_agent(gpg, plain, tmp_path, monkeypatch):
    homes = []
    real_mkdtemp = _gpg.tempfile.mkdtemp

    def recording_mkdtemp(*args, **kwargs):
        homes.append(real_mkdtemp(*args, **kwargs))
        return homes[-1]

    monkeypatch.setattr(_gpg.tempfile, 'mkdtemp', recording_mkdtemp)
    gpg.encrypt_file(str(plain), str(tmp_path / 'sealed'), PASSPHRASE)
    gpg.decrypt_file(str(tmp_path / 'sealed'), str(tmp_path / 'opened'), PASSPHRASE)

    assert len(homes) == 2
    for home in homes:
        assert len(home) < 40 and not os.path.exists(home)
        deadline = time.time() + 5
        while running_with(home) and time.time() < deadline:
            time.sleep(0.05)
        assert running_with(home) == []


# Streams.

def test_decrypting_feeds_the_validator_without_plaintext_on_disk(gpg, encrypted):
    with open(str(encrypted), 'rb') as src:
        with gpg.decrypting(src, PASSPHRASE) as stream:
            summary = validator.validate_stream(stream)

    assert summary.files == 1


def test_decrypting_with_a_wrong_passphrase_is_bad_password_even_though_the_reader_saw_an_empty_stream(gpg, tmp_path):
    big = tmp_path / 'big.gpg'
    # Larger than any pipe buffer, so gpg stops reading before the end.
    with open(str(big), 'wb') as out:
        gpg.encrypt_stream(io.BytesIO(os.urandom(3 * 1024 * 1024)), out.write, PASSPHRASE)

    with pytest.raises(Tx9Error) as info:
        with open(str(big), 'rb') as src:
            with gpg.decrypting(src, 'wrong') as stream:
                validator.validate_stream(stream)

    assert info.value.cause == 'BAD_PASSWORD'


def test_decrypting_tampered_ciphertext_is_corrupt_even_when_the_plaintext_looked_fine(gpg, encrypted):
    flip(encrypted, encrypted.stat().st_size - 5)

    with pytest.raises(Tx9Error) as info:
        with open(str(encrypted), 'rb') as src:
            with gpg.decrypting(src, PASSPHRASE) as stream:
                validator.validate_stream(stream)

    assert info.value.cause == 'ARCHIVE_CORRUPT'


def test_decrypting_an_unsafe_payload_reports_the_unsafe_member(gpg, tmp_path):
    unsafe = tmp_path / 'unsafe.gpg'
    evil = payload(symlink('./home/agent/out', '../../..'), regular('./home/agent/big', os.urandom(2 * 1024 * 1024)))
    with open(str(unsafe), 'wb') as out:
        gpg.encrypt_stream(io.BytesIO(evil), out.write, PASSPHRASE)

    with pytest.raises(Tx9Error) as info:
        with open(str(unsafe), 'rb') as src:
            with gpg.decrypting(src, PASSPHRASE) as stream:
                validator.validate_stream(stream)

    assert info.value.cause == 'ARCHIVE_UNSAFE' and '"./home/agent/out"' in info.value.reason


def test_encrypting_a_written_stream_gives_ciphertext_that_decrypts_to_it(gpg, plain):
    sealed = io.BytesIO()

    with gpg.encrypting(sealed.write, PASSPHRASE) as sink:
        with open(str(plain), 'rb') as src:
            shutil.copyfileobj(src, sink)

    opened = io.BytesIO()
    gpg.decrypt_stream(io.BytesIO(sealed.getvalue()), opened.write, PASSPHRASE)
    assert opened.getvalue() == plain.read_bytes()


def test_encrypting_into_a_file_gives_bytes_that_plain_gpg_decrypts(gpg, plain, tmp_path, cli_home):
    sealed = tmp_path / 'data.tar.gz.gpg'

    with open(str(sealed), 'wb') as out:
        with gpg.encrypting(out.write, PASSPHRASE) as sink:
            with open(str(plain), 'rb') as src:
                shutil.copyfileobj(src, sink)

    assert cli(cli_home, '--passphrase', PASSPHRASE, '--decrypt', str(sealed)) == plain.read_bytes()


def test_a_full_disk_under_the_encrypted_output_is_a_write_failure_not_a_gpg_failure(gpg, full_disk):
    with pytest.raises(Tx9Error) as info:
        with open(str(full_disk / 'data.tar.gz.gpg'), 'wb', buffering=0) as out:
            with gpg.encrypting(out.write, PASSPHRASE) as sink:
                for _chunk in range(4):
                    sink.write(os.urandom(1024 * 1024))

    assert info.value.cause == 'ARCHIVE_WRITE_FAILED' and 'No space left on device' in info.value.reason


def test_gpg_speaks_english_in_the_locales_character_set_without_the_callers_passphrase_or_home():
    given = {'LC_ALL': 'de_DE.UTF-8', 'LANGUAGE': 'de', 'TX9_PASSWORD': 'x', 'GNUPGHOME': '/root/.gnupg', 'PATH': '/usr/bin'}
    env = gpgsupport.gpg_environment(given, '/tmp/tx9g-1-home')
    assert env == {'LC_CTYPE': 'de_DE.UTF-8', 'LC_MESSAGES': 'C', 'GNUPGHOME': '/tmp/tx9g-1-home', 'PATH': '/usr/bin'}


def test_decrypting_stops_gpg_early_when_the_reader_refuses_the_first_member(gpg):
    sealed = io.BytesIO()
    gpg.encrypt_stream(io.BytesIO(payload(regular('../evil', b'x'), regular('./home/agent/big', os.urandom(3 * 1024 * 1024)))),
                       sealed.write, PASSPHRASE)

    with pytest.raises(Tx9Error) as info:
        with gpg.decrypting(io.BytesIO(sealed.getvalue()), PASSPHRASE) as stream:
            validator.validate_stream(stream)

    assert info.value.cause == 'ARCHIVE_UNSAFE' and '"../evil"' in info.value.reason
    assert [thread.name for thread in threading.enumerate() if thread.name.startswith('tx9-gpg')] == []


def test_an_error_while_encrypting_a_written_stream_reaches_the_caller(gpg):
    sealed = io.BytesIO()

    with pytest.raises(RuntimeError):
        with gpg.encrypting(sealed.write, PASSPHRASE) as sink:
            sink.write(b'half a payload')
            raise RuntimeError('the container went away')

    assert [thread.name for thread in threading.enumerate() if thread.name.startswith('tx9-gpg')] == []
