# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The argument spec of component_health_info, the one declaration of its options.

Documented by the doc fragment plugins/doc_fragments/component_health.py (a unit test keeps the two in step).
"""

from __future__ import annotations

COMPONENT_HEALTH_ARGUMENT_SPEC = {
    "check": {"type": "str", "choices": ["restart", "answers", "still", "restored", "detection"], "default": "restart"},
    "name": {"type": "str"},
    "unit": {"type": "str"},
    "flags": {"type": "dict"},
    "pid": {"type": "int"},
    "after": {"type": "str", "default": ""},
    "health_url": {"type": "str", "default": ""},
    "ca_path": {"type": "path"},
    "stable_seconds": {"type": "int", "default": 10},
    "timeout": {"type": "int", "default": 180},
    "interval": {"type": "int", "default": 2},
    "components": {
        "type": "list",
        "elements": "dict",
        "default": [],
        "options": {
            "name": {"type": "str", "required": True, "aliases": ["component"]},
            "health_url": {"type": "str", "required": True, "aliases": ["url"]},
            "ca_path": {"type": "str", "default": "", "aliases": ["ca"]},
            "path": {"type": "str", "default": ""},
        },
    },
    "started": {"type": "float"},
    "lease": {"type": "dict"},
}
