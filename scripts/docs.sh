#!/usr/bin/env bash
# The collection's HTML documentation site, built with antsibull-docs and Sphinx
# into .cache/docsite/build/html: every module, role entry point, filter, lookup
# and the inventory plugin, as ansible-doc reads them from the collection link,
# with docs/docsite/links.yml on the collection's page, and the guides of docs/
# (Markdown, read by myst-parser) under "Guides". Any warning fails the build
# (sphinx-build -W), as does any docs error antsibull-docs finds.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${VENV:-$ROOT/.venv}
SITE=$ROOT/.cache/docsite
export PATH=$VENV/bin:$PATH
export ANSIBLE_CONFIG=$ROOT/ansible.cfg
cd "$ROOT"

# antsibull-docs wants its destination owned by the user and writable by nobody else.
rm -rf "$SITE"
mkdir -p "$(dirname "$SITE")"
mkdir -m 700 "$SITE"
antsibull-docs sphinx-init --use-current --squash-hierarchy --fail-on-error --no-add-antsibull-docs-version \
    --dest-dir "$SITE" --project col_agents.tx9 --copyright 'col_agents.tx9 contributors' \
    --title col_agents.tx9 col_agents.tx9 >/dev/null
chmod 700 "$SITE/rst"
antsibull-docs --config-file "$SITE/antsibull-docs.cfg" collection --cleanup everything --fail-on-error \
    --use-current --squash-hierarchy --no-add-antsibull-docs-version --dest-dir "$SITE/rst" col_agents.tx9

# The pages refer to a few labels and environment variables of Ansible's own
# documentation. This machine reaches no other site, so instead of its
# inventory (objects.inv) a small one of those names is written here; their
# links still lead to docs.ansible.com.
"$VENV/bin/python" - "$SITE/ansible_devel.inv" <<'INVENTORY'
import glob
import re
import sys
import zlib

CONFIG = 'reference_appendices/config.html'
ENTRIES = [
    ('common_return_values', 'std:label', 'reference_appendices/common_return_values.html', 'Return Values'),
    ('action_plugins', 'std:label', 'plugins/action.html', 'Action plugins'),
    ('ansible_configuration_settings', 'std:label', CONFIG, 'Ansible Configuration Settings'),
] + [
    (name, 'std:envvar', '%s#envvar-%s' % (CONFIG, name), '-')
    for name in ('ANSIBLE_CACHE_PLUGIN', 'ANSIBLE_CACHE_PLUGIN_CONNECTION', 'ANSIBLE_CACHE_PLUGIN_PREFIX',
                 'ANSIBLE_CACHE_PLUGIN_TIMEOUT')
] + [
    # The ansible.builtin modules the collection's docs name with M(...).
    ('ansible_collections.ansible.builtin.%s_module' % name, 'std:label',
     'collections/ansible/builtin/%s_module.html' % name, name)
    for name in sorted({found for path in glob.glob('plugins/**/*.py', recursive=True) + glob.glob('roles/*/meta/*.yml')
                        for found in re.findall(r'M\(ansible\.builtin\.(\w+)\)', open(path).read())})
]
header = '# Sphinx inventory version 2\n# Project: Ansible\n# Version: devel\n' \
    '# The remainder of this file is compressed using zlib.\n'
body = ''.join('%s %s -1 %s %s\n' % (name, kind, uri, title) for name, kind, uri, title in ENTRIES)
with open(sys.argv[1], 'wb') as out:
    out.write(header.encode() + zlib.compress(body.encode()))
INVENTORY

# The guides are Markdown.
cat >>"$SITE/conf.py" <<CONF

intersphinx_mapping = {
    'ansible_devel': ('https://docs.ansible.com/projects/ansible/devel/', '$SITE/ansible_devel.inv'),
}
extensions.append('myst_parser')
source_suffix = {'.rst': 'restructuredtext', '.md': 'markdown'}
myst_heading_anchors = 3
CONF

mkdir "$SITE/rst/guides"
cp docs/*.md "$SITE/rst/guides/"
{
    printf 'Guides\n======\n\n.. toctree::\n   :maxdepth: 1\n\n'
    for guide in docs/*.md; do
        name=$(basename "$guide" .md)
        printf '   guides/%s\n' "$name"
    done
} >"$SITE/rst/guides.rst"
cat >>"$SITE/rst/index.rst" <<'INDEX'

.. toctree::
   :maxdepth: 1
   :caption: Guides:

   guides
INDEX

start=$SECONDS
sphinx-build -q -W --keep-going -b html -c "$SITE" "$SITE/rst" "$SITE/build/html"
echo "docs: built $SITE/build/html/index.html in $((SECONDS - start)) s (sphinx-build)"
