# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write a stand-in for ansible-test's pip bootstrap script at PATH.

ansible-test downloads a pip bootstrap script into its cache before it makes
each sanity venv. Where that download fails (no route to the download site),
ansible-test stops and says where the script may be saved by hand:

    The bootstrap script can be manually downloaded and saved to: PATH

scripts/sanity.sh reads PATH from that message and runs this script with it,
then runs ansible-test again; machines with a normal network never get here
and use the real script. The stand-in bootstraps pip with ensurepip, makes
that pip trust the host's CA bundle (ansible-test runs pip with a scrubbed
environment and no pip config, so a TLS-inspecting proxy would otherwise be
refused), then installs what ansible-test asked for.

Usage: python ansible-test-bootstrap.py PATH
"""

import os
import sys

CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt'
MARKER = '# tx9 stand-in for the pip bootstrap script'

STAND_IN = MARKER + '''
import os
import subprocess
import sys

CA_BUNDLE = %(bundle)r


def trust_host_bundle():
    """Append the host's CA bundle to the venv pip's own CA file, once."""
    if not os.path.exists(CA_BUNDLE):
        return
    where = subprocess.check_output(
        [sys.executable, '-c', 'import pip._vendor.certifi as c; print(c.where())'],
        universal_newlines=True).strip()
    with open(CA_BUNDLE) as handle:
        extra = handle.read()
    with open(where) as handle:
        current = handle.read()
    if extra not in current:
        with open(where, 'a') as handle:
            handle.write('\\n' + extra)


def main():
    args = [arg for arg in sys.argv[1:] if arg not in ('--no-setuptools', '--no-wheel')]
    subprocess.check_call([sys.executable, '-m', 'ensurepip', '--default-pip'])
    trust_host_bundle()
    subprocess.check_call([sys.executable, '-m', 'pip', 'install'] + args)
    # The install may have replaced pip, and with it pip's CA file.
    trust_host_bundle()


if __name__ == '__main__':
    main()
'''


def main(argv):
    if len(argv) != 1 or not argv[0].endswith('.py'):
        sys.exit('usage: ansible-test-bootstrap.py PATH  (the .py path ansible-test named for its pip bootstrap script)')
    cache_path = os.path.abspath(os.path.expanduser(argv[0]))
    if os.path.exists(cache_path):
        print('ansible-test-bootstrap: %s exists; left as it is' % cache_path)
        return
    os.makedirs(os.path.dirname(cache_path), exist_ok=True)
    with open(cache_path + '.stand-in', 'w') as handle:
        handle.write(STAND_IN % dict(bundle=CA_BUNDLE))
    os.rename(cache_path + '.stand-in', cache_path)
    print('ansible-test-bootstrap: wrote a pip bootstrap stand-in to %s' % cache_path)


if __name__ == '__main__':
    main(sys.argv[1:])
