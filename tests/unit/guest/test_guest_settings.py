# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Settings and paths: box.env values, and every path of a box below its data volume."""

import os

from guest_helpers import GUEST
from tx9guest import settings


def test_box_env_values_are_read_without_quotes_or_comments():
    text = '# pins\nA=1\nB="two words"\nexport C=3 # note\nnot a line\n'
    assert settings.parse_env_file(text) == {'A': '1', 'B': 'two words', 'C': '3'}


def test_every_path_of_a_box_lives_below_its_data_volume_but_the_runtime_state():
    paths = settings.Paths({'TX9_DATA_DIR': '/srv/box', 'TX9_RUNTIME_DIR': '/run/x'})
    assert (paths.data, paths.logs, paths.home) == ('/srv/box', '/srv/box/logs', '/srv/box/home/agent')
    assert paths.quiesced == '/srv/box/home/agent/.config/hermes-box/quiesced'
    assert paths.services_dir == '/srv/box/home/agent/.config/hermes-box/services.d'
    assert paths.executor_data == '/srv/box/home/agent/.executor'
    assert paths.service_state('web') == '/run/x/services/web.state'


def test_without_settings_the_paths_are_the_images():
    paths = settings.Paths({})
    assert (paths.data, paths.logs, paths.runtime) == ('/data', '/data/logs', '/run/tx9')
    assert paths.claude_json == '/data/home/agent/.claude/.claude.json'
    assert paths.hermes_yaml == '/data/home/agent/.hermes/config.yaml'


def test_a_relative_xdg_config_home_is_ignored_for_the_services_directory():
    paths = settings.Paths({'XDG_CONFIG_HOME': 'relative'})
    assert paths.services_dir == '/data/home/agent/.config/hermes-box/services.d'


def test_a_launcher_is_found_beside_the_package_when_it_is_not_installed():
    launcher = settings.Paths({}).launcher('hb')
    assert launcher == '/opt/tx9/bin/hb' or launcher == os.path.join(GUEST, 'hb')
    assert os.path.isfile(launcher)


def test_the_environment_overrides_box_env_and_numbers_fall_back_to_their_default(tmp_path):
    box_env = tmp_path / 'box.env'
    box_env.write_text('TX9_LOG_MAX_FILES=5\nTX9_LOG_MAX_BYTES=lots\n')
    values = settings.load_settings({'TX9_LOG_MAX_FILES': '7'}, str(box_env))
    assert settings.number(values, 'TX9_LOG_MAX_FILES', 5) == 7
    assert settings.number(values, 'TX9_LOG_MAX_BYTES', 1024) == 1024
    assert settings.number(values, 'TX9_SERVICE_RESTART_DELAY', 1.0) == 1.0
