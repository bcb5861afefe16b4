"""Make sure ansible-test can bootstrap pip in the venvs it creates.

ansible-test downloads a pip bootstrap script into its cache before it makes
each sanity venv. Where that download works, this script saves the real one
there and changes nothing else. Where it fails (no route to the download
site), a stand-in goes in its place: it bootstraps pip with ensurepip, makes
that pip trust the host's CA bundle (ansible-test runs pip with a scrubbed
environment and no pip config, so a TLS-inspecting proxy would otherwise be
refused), then installs what ansible-test asked for.

Run it with the Python that has ansible-test installed.
"""

import os
import re
import sys
import urllib.request

import ansible_test
from ansible_test._internal.python_requirements import get_venv_packages

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


def bootstrap_source():
    path = os.path.join(os.path.dirname(ansible_test.__file__), '_util', 'target', 'setup', 'requirements.py')
    with open(path) as handle:
        return handle.read()


def main():
    class Python(object):
        version = '%d.%d' % sys.version_info[:2]

    pip_version = get_venv_packages(Python())['pip']
    source = bootstrap_source()
    url_match = re.search(r"url = '(https://[^']*%s[^']*)'", source)
    cache_match = re.search(r"cache_path = os\.path\.expanduser\('([^']*%s[^']*)'", source)
    if not cache_match:
        sys.exit('ansible-test-bootstrap: this ansible-test keeps its pip bootstrap script elsewhere; '
                 'update scripts/ansible-test-bootstrap.py')
    cache_path = os.path.expanduser(cache_match.group(1) % pip_version.replace('.', '_'))
    if os.path.exists(cache_path):
        return

    os.makedirs(os.path.dirname(cache_path), exist_ok=True)
    if url_match:
        url = url_match.group(1) % pip_version
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                data = response.read()
        except Exception as exc:  # any failure to download means: use the stand-in
            print('ansible-test-bootstrap: the pip bootstrap download failed (%s); using a stand-in' % exc)
        else:
            with open(cache_path + '.download', 'wb') as handle:
                handle.write(data)
            os.rename(cache_path + '.download', cache_path)
            print('ansible-test-bootstrap: saved the pip bootstrap script to %s' % cache_path)
            return

    with open(cache_path + '.download', 'w') as handle:
        handle.write(STAND_IN % dict(bundle=CA_BUNDLE))
    os.rename(cache_path + '.download', cache_path)
    print('ansible-test-bootstrap: wrote a pip bootstrap stand-in to %s' % cache_path)


if __name__ == '__main__':
    main()
