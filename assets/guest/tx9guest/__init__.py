# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9guest: the runtime inside a tx9 box's containers (hb, tx9-logs and the entrypoints).

Standard library only: it runs under the image's system Python.
"""
