# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_tools' pure parts: marker names, the scripts' argv, the check's reading, failure words; and the scripts
themselves in a real shell with npm, node and the tool faked."""


import json
import os
import shutil
import subprocess
import time

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box import tools
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error


def test_the_marker_changes_with_the_pin_and_is_a_plain_file_name():
    a = tools.marker_name('@openai/codex', '0.169.0')
    b = tools.marker_name('@openai/codex', '0.169.1')
    assert a != b
    assert a.startswith('.installed-') and a.endswith('.json')
    assert not any(c in a for c in '/@ '), a
    assert a == '.installed-openai-codex-0.169.0.json'


def test_the_install_argv_carries_every_variable_input_as_a_positional_parameter():
    argv = tools.install_argv('codex', '0.169.0', 540)
    assert argv[:4] == ['sh', '-c', tools.INSTALL_SCRIPT, 'tx9-tools-install']
    assert argv[4:] == [tools.TOOLS_ROOT, 'codex', '@openai/codex', '0.169.0', 'codex',
                        '.installed-openai-codex-0.169.0.json', '540']
    for variable in ('codex', '0.169.0', '@openai', tools.TOOLS_ROOT):
        assert variable not in tools.INSTALL_SCRIPT, variable


def test_a_limit_below_one_second_is_given_to_the_script_as_one():
    assert tools.install_argv('claude', 'latest', 0)[-1] == '1'


def test_the_check_argv_names_each_tool_and_its_command_after_the_root():
    argv = tools.check_argv(['codex', 'claude'])
    assert argv[2] == tools.CHECK_SCRIPT
    assert argv[4:] == [tools.TOOLS_ROOT, 'codex', 'codex', 'claude', 'claude']
    assert tools.remove_argv('claude')[4:] == [tools.TOOLS_ROOT, 'claude', 'claude']


def test_the_install_verifies_stages_and_swaps_in_order_and_writes_the_marker_last():
    script = tools.INSTALL_SCRIPT
    assert script.startswith('set -eu'), 'any failed step ends the script'
    order = [script.index(step) for step in (
        'rm -rf "$STAGE"\n',
        'timeout -k 10 "$LIMIT" npm install --prefix "$STAGE"',
        'reports "$STAGE/node_modules/.bin/$BIN" "$VERSION"',
        'rm -f "$DIR"/.installed-*',
        'rm -rf "$DIR/node_modules"',
        'mv "$STAGE/node_modules" "$DIR/node_modules"',
        'reports "$DIR/node_modules/.bin/$BIN" "$VERSION"',
        'mv "$STAGE/marker" "$DIR/$MARKER"',
    )]
    assert order == sorted(order)
    assert 'npm_config_cache="$STAGE/' in script, 'the npm cache stays out of the container layer and goes with staging'


def test_the_reap_kills_what_matches_and_waits_until_nothing_is_left():
    argv = tools.reap_argv()
    assert argv[2] == tools.REAP_SCRIPT
    assert argv[4] == '[n]pm install --prefix %s/' % tools.TOOLS_ROOT
    assert argv[5] == '[t]x9-tools-install %s' % tools.TOOLS_ROOT
    assert 'kill -KILL "-$g"' in tools.REAP_SCRIPT and 'if [ "$g" = "$p" ]' in tools.REAP_SCRIPT, \
        'only a group a matched process leads is killed'
    assert 'echo alive; exit 1' in tools.REAP_SCRIPT
    assert tools.reap_says_gone('gone\n') and not tools.reap_says_gone('alive\n') and not tools.reap_says_gone('')


def test_a_timeout_reads_as_stopped_only_when_the_reap_confirmed_it():
    assert tools.failure_detail(None, True, True, '') == 'the install took too long and was stopped'
    assert 'could not be stopped' in tools.failure_detail(None, True, False, '')
    for code in tools.TIMED_OUT_CODES:
        assert tools.failure_detail(code, False, True, 'npm warn x') == 'the install took too long and was stopped'


def test_an_ordinary_failure_shows_npms_last_lines_or_the_status():
    output = 'noise\n' * 50 + 'npm ERR! code ETARGET\nnpm ERR! notarget No matching version found for x@9.9.9.\n\n'
    detail = tools.failure_detail(1, False, None, output)
    assert detail.endswith('No matching version found for x@9.9.9.') and 'ETARGET' in detail
    assert detail.count('\n') < 8
    log = 'npm ERR! A complete log of this run can be found in:\nnpm ERR!     /x/.staging/.npm-cache/_logs/a-debug-0.log\n'
    assert tools.failure_detail(1, False, None, 'npm ERR! code ETARGET\n' + log) == 'npm ERR! code ETARGET'
    assert tools.failure_detail(1, False, None, '') == 'the install exited with status 1'
    assert tools.failure_detail(None, False, None, ' ') == 'the install exited with status unknown'


def test_the_output_tail_keeps_whole_lines_within_the_limit():
    tail = tools.output_tail('x' * 2000 + '\nlast one\nlast two', limit=40)
    assert tail == 'last one\nlast two'


def marker(version, requested=None, package='@openai/codex'):
    return json.dumps(dict(tool='codex', package=package, requested=requested or version, version=version))


def test_a_marker_counts_only_when_its_binary_reports_its_version():
    seen = tools.parse_check('codex\t1\t%s\tcodex-cli 0.169.0\tcodex-cli 0.171.0\n' % marker('0.169.0'))['codex']
    assert seen.installed('codex') == '0.169.0' and seen.satisfies('codex', '0.169.0')
    assert not seen.satisfies('codex', '0.169.1') and not seen.satisfies('codex', 'latest')
    assert seen.view('codex', '0.169.0')['source'] == 'box'
    broken = tools.parse_check('codex\t1\t%s\t-\tcodex-cli 0.171.0\n' % marker('0.169.0'))['codex']
    assert broken.installed('codex') is None and not broken.satisfies('codex', '0.169.0')
    assert broken.view('codex', '0.169.0') == dict(requested='0.169.0', installed='0.171.0', source='image',
                                                   package='@openai/codex')


def test_a_marker_of_another_package_or_not_json_counts_as_none():
    other = tools.parse_check('codex\t1\t%s\t0.169.0\t-\n' % marker('0.169.0', package='evil'))['codex']
    assert other.installed('codex') is None
    garbled = tools.parse_check('codex\t1\t{not json\t0.169.0\t0.171.0\njunk line\n')
    assert list(garbled) == ['codex'] and garbled['codex'].marker is None


def test_latest_is_satisfied_only_by_an_install_made_for_latest():
    seen = tools.parse_check('codex\t1\t%s\tcodex-cli 0.171.0\t-\n' % marker('0.171.0', 'latest'))['codex']
    assert seen.satisfies('codex', 'latest') and seen.satisfies('codex', '0.171.0')


def test_the_tools_option_is_read_strictly():
    assert tools.wanted_tools({'codex': '0.169.0', 'claude': 'latest'}, 'present') == dict(codex='0.169.0',
                                                                                           claude='latest')
    assert tools.wanted_tools({'codex': None}, 'absent') == dict(codex=None)
    for bad in ({}, ['codex'], {'vim': '1.0.0'}, {'codex': None}, {'codex': '0.169'}, {'codex': '1.0.0; rm -rf /'}):
        with pytest.raises(Tx9Error) as err:
            tools.wanted_tools(bad, 'present')
        assert err.value.cause == 'INVALID_ARGUMENT'


FAKE_NPM = r"""#!/bin/sh
while [ "$1" != "--prefix" ]; do shift; done
P="$2"; for a; do SPEC="$a"; done
if [ -e "$P/../../.hang" ]; then sleep 60 & echo $! > "$P/../../.child"; wait; fi
V="${SPEC##*@}"; [ "$V" = latest ] && V=3.0.0
[ "$V" = 9.9.9 ] && { echo "npm ERR! notarget No matching version found for $SPEC." >&2; exit 1; }
mkdir -p "$P/node_modules/.bin" "$P/node_modules/@openai/codex"
printf '{"name": "@openai/codex", "version": "%s"}\n' "$V" > "$P/node_modules/@openai/codex/package.json"
printf '#!/bin/sh\necho "codex-cli %s"\n' "$V" > "$P/node_modules/.bin/codex"
chmod +x "$P/node_modules/.bin/codex"
"""
FAKE_NODE = r"""#!/bin/sh
sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$3"
"""


@pytest.fixture
def shell(tmp_path):
    if shutil.which('timeout') is None:
        pytest.fail('the scripts run under coreutils timeout, as in the agent container; install coreutils')
    fake = tmp_path / 'fakebin'
    fake.mkdir()
    for name, text in (('npm', FAKE_NPM), ('node', FAKE_NODE)):
        (fake / name).write_text(text)
        (fake / name).chmod(0o755)
    root = tmp_path / 'tools'
    env = dict(os.environ, PATH='%s:%s' % (fake, os.environ.get('PATH', '')))

    def run(script, *args):
        proc = subprocess.run(['sh', '-c', script, 't', str(root)] + list(args), env=env, capture_output=True,
                              text=True, timeout=60, check=False)
        return proc.returncode, proc.stdout + proc.stderr

    return root, run


def install(run, version, limit='60'):
    return run(tools.INSTALL_SCRIPT, 'codex', '@openai/codex', version, 'codex',
               tools.marker_name('@openai/codex', version), limit)


def check(run):
    return tools.parse_check(run(tools.CHECK_SCRIPT, 'codex', 'codex')[1])['codex']


def test_the_scripts_install_swap_and_remove_in_a_real_shell(shell):
    root, run = shell
    assert check(run).present is False
    assert install(run, '1.2.3')[0] == 0
    assert json.loads((root / 'codex' / '.installed-openai-codex-1.2.3.json').read_text())['version'] == '1.2.3'
    assert os.readlink(str(root / 'bin' / 'codex')) == '../codex/node_modules/.bin/codex'
    assert check(run).satisfies('codex', '1.2.3')
    assert install(run, 'latest')[0] == 0
    assert sorted(p.name for p in (root / 'codex').iterdir()) == ['.installed-openai-codex-latest.json', 'node_modules']
    seen = check(run)
    assert seen.installed('codex') == '3.0.0' and seen.satisfies('codex', 'latest')
    assert run(tools.REMOVE_SCRIPT, 'codex', 'codex')[0] == 0
    assert not (root / 'codex').exists() and not os.path.lexists(str(root / 'bin' / 'codex'))
    assert check(run).present is False


def test_a_version_npm_lacks_fails_with_its_words_and_leaves_the_install_and_marker(shell):
    root, run = shell
    assert install(run, '1.2.3')[0] == 0
    code, output = install(run, '9.9.9')
    assert code != 0 and 'No matching version found' in tools.failure_detail(code, False, None, output)
    assert (root / 'codex' / '.installed-openai-codex-1.2.3.json').is_file()
    assert check(run).satisfies('codex', '1.2.3')
    assert not (root / 'codex' / '.staging').exists()


def test_a_hanging_npm_is_stopped_by_the_script_with_its_children_and_the_install_stays(shell):
    root, run = shell
    assert install(run, '1.2.3')[0] == 0
    (root / '.hang').write_text('')
    # The script's own limit (1 s here) stops npm; the words say so, and npm's children are gone below.
    code, output = install(run, '2.0.0', '1')
    assert tools.failure_detail(code, False, True, output) == 'the install took too long and was stopped'
    child = int((root / '.child').read_text())
    for unused in range(20):
        if not os.path.exists('/proc/%d' % child):
            break
        time.sleep(0.1)
    assert not os.path.exists('/proc/%d' % child), "npm's own children went with it"
    assert check(run).satisfies('codex', '1.2.3') and not (root / 'codex' / '.staging').exists()
