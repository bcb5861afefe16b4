# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host role's probe (roles/tx9_host/files/probe.sh), run by a real shell: what it reports in place."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = Path(__file__).resolve().parents[2] / 'roles' / 'tx9_host' / 'files' / 'probe.sh'
WANTED = json.dumps({'live-restore': True})


def probe(home: Path, config: Path, wanted: str = WANTED, *image: str) -> dict[str, object]:
    # An engine on a closed local port: refused at once, so the probe's `docker info` never waits out its timeout.
    env = dict(os.environ, TX9_HOME=str(home), DOCKER_HOST='tcp://127.0.0.1:9')
    proc = subprocess.run(
        ['sh', str(PROBE), sys.executable, wanted, str(config), *image],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def state_home(root: Path, mode: int = 0o700) -> Path:
    home = root / 'home'
    for path in (home, home / 'boxes', home / 'locks', home / 'logs'):
        path.mkdir()
        path.chmod(mode)
    return home


def test_a_state_home_with_its_three_directories_at_0700_is_reported_ready(tmp_path: Path) -> None:
    report = probe(state_home(tmp_path), tmp_path / 'daemon.json')
    assert report['state_home_ready'] is True
    assert report['state_home'] == str(tmp_path / 'home')


@pytest.mark.parametrize('missing', ['boxes', 'locks', 'logs'])
def test_a_state_home_without_one_of_its_directories_is_not_ready(tmp_path: Path, missing: str) -> None:
    home = state_home(tmp_path)
    (home / missing).rmdir()
    assert probe(home, tmp_path / 'daemon.json')['state_home_ready'] is False


def test_a_state_home_open_to_others_is_not_ready(tmp_path: Path) -> None:
    home = state_home(tmp_path)
    (home / 'locks').chmod(0o755)
    assert probe(home, tmp_path / 'daemon.json')['state_home_ready'] is False


def test_a_state_home_that_is_a_symlink_is_not_ready(tmp_path: Path) -> None:
    real = state_home(tmp_path)
    link = tmp_path / 'link'
    link.symlink_to(real)
    assert probe(link, tmp_path / 'daemon.json')['state_home_ready'] is False


def test_an_absent_state_home_is_not_ready(tmp_path: Path) -> None:
    assert probe(tmp_path / 'nothing', tmp_path / 'daemon.json')['state_home_ready'] is False


def test_an_engine_configuration_holding_every_setting_is_current(tmp_path: Path) -> None:
    config = tmp_path / 'daemon.json'
    config.write_text(json.dumps({'live-restore': True, 'log-driver': 'local'}))
    assert probe(tmp_path / 'home', config)['engine_config_current'] is True


@pytest.mark.parametrize(
    'text',
    [
        json.dumps({'live-restore': False}),
        json.dumps({'log-driver': 'local'}),
        json.dumps(['live-restore']),
        '{"live-restore": true',
        '',
    ],
    ids=['other value', 'setting missing', 'not an object', 'cut short', 'empty'],
)
def test_an_engine_configuration_without_the_settings_is_not_current(tmp_path: Path, text: str) -> None:
    config = tmp_path / 'daemon.json'
    config.write_text(text)
    assert probe(tmp_path / 'home', config)['engine_config_current'] is False


def test_an_absent_engine_configuration_is_not_current(tmp_path: Path) -> None:
    assert probe(tmp_path / 'home', tmp_path / 'daemon.json')['engine_config_current'] is False


def test_several_wanted_settings_must_all_be_in_place(tmp_path: Path) -> None:
    config = tmp_path / 'daemon.json'
    config.write_text(json.dumps({'live-restore': True}))
    wanted = json.dumps({'live-restore': True, 'userland-proxy': False})
    assert probe(tmp_path / 'home', config, wanted)['engine_config_current'] is False


def test_the_probe_reports_the_ca_bundles_sha256_and_no_image_label_when_no_engine_answers(tmp_path: Path) -> None:
    bundle = tmp_path / 'ca.crt'
    bundle.write_bytes(b'-----BEGIN CERTIFICATE-----\n')

    report = probe(tmp_path, tmp_path / 'daemon.json', WANTED, 'tx9-box:0.1.0', str(bundle))

    assert report['ca_sha256'] == hashlib.sha256(bundle.read_bytes()).hexdigest()
    assert report['box_image'] == 'tx9-box:0.1.0' and report['image_assets'] == ''


def test_without_a_ca_bundle_the_probe_reports_the_sha256_of_no_bytes(tmp_path: Path) -> None:
    report = probe(tmp_path, tmp_path / 'daemon.json', WANTED, 'tx9-box:0.1.0', str(tmp_path / 'absent.crt'))
    assert report['ca_sha256'] == hashlib.sha256(b'').hexdigest()


def test_an_image_reference_with_other_characters_is_neither_looked_up_nor_echoed(tmp_path: Path) -> None:
    report = probe(tmp_path, tmp_path / 'daemon.json', WANTED, 'x" "y$(id)', '')
    assert report['box_image'] == '' and report['image_assets'] == ''
