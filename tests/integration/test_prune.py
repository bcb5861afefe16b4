# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_prune removes what no box uses, and nothing else."""


import io
import os


def test_prune_lists_in_check_mode_then_removes_unused_images_and_orphan_state_files(
        built_image, playbooks, client, state_home, box_prefix):
    unused_tag = 'tx9-box:%s-unused' % box_prefix
    client.images.build(fileobj=io.BytesIO(('FROM %s\nLABEL tx9.test=%s\n' % (built_image['tag'], box_prefix)).encode()),
                        tag=unused_tag, rm=True)
    orphan = os.path.join(state_home, 'boxes', '%s-ghost.env' % box_prefix)
    with open(orphan, 'w') as handle:
        handle.write('EXECUTOR_MCP_TOKEN=%s\n' % ('0' * 64))
    live = box_prefix + '-live'
    playbooks.module('tx9_box', dict(name=live))
    try:
        preview = playbooks.module('tx9_prune', dict(), '--check')
        assert preview['changed'] is True
        assert unused_tag in preview['images']
        assert box_prefix + '-ghost' in preview['state_files']
        assert live not in preview['state_files']
        assert built_image['tag'] not in preview['images']
        assert client.images.list(name=unused_tag) and os.path.exists(orphan)

        result = playbooks.module('tx9_prune', dict())
        assert unused_tag in result['images'] and box_prefix + '-ghost' in result['state_files']
        assert not client.images.list(name=unused_tag)
        assert not os.path.exists(orphan)
        assert client.images.list(name=built_image['tag'])
        assert os.path.exists(os.path.join(state_home, 'boxes', '%s.env' % live))

        again = playbooks.module('tx9_prune', dict())
        assert again['changed'] is False
    finally:
        playbooks.module('tx9_box', dict(name=live, state='absent'))
        if client.images.list(name=unused_tag):
            client.images.remove(unused_tag, force=True)
