# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the collection's EDA event sources reach the collection's Python code (plugins/module_utils).

ansible-rulebook runs a source by the path of its file (extensions/eda/plugins/event_source/<name>.py), not as a
module of a package, so a source cannot import its collection by name until the directory above
``ansible_collections`` is on ``sys.path``. A source loads this file by its path, then:

- ``import_module_utils(plugin_file, plugin, modules)`` imports the collection's module_utils it names;
- ``load_file(plugin_file, relative, name)`` loads one pure file of the collection (no imports from the collection)
  by its path, e.g. plugins/module_utils/power/redfish_messages.py.

Pure Python, standard library only.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

COLLECTION = ("ansible_collections", "nodeguard", "failover")
PACKAGE = "ansible_collections.nodeguard.failover.plugins.module_utils"


def collection_root(plugin_file: str) -> Path:
    """The collection's directory: four levels above a plugin file (extensions/eda/plugins/<kind>/<file>). Not
    resolved: an installed collection may be a link to a checkout."""
    return Path(os.path.abspath(plugin_file)).parents[4]


def import_module_utils(plugin_file: str, plugin: str, modules: dict[str, str]) -> dict:
    """{key: module} for ``modules`` ({key: "k8s.names", ...}, below plugins/module_utils), imported from the collections
    path ``plugin_file`` is installed in; ImportError naming what is missing when it is not installed in one."""
    root = collection_root(plugin_file)
    if len(root.parents) > 2 and (root.parents[1].name, root.parent.name, root.name) == COLLECTION:
        above = str(root.parents[2])
        if above not in sys.path:
            sys.path.insert(0, above)
    try:
        return {key: importlib.import_module(f"{PACKAGE}.{name}") for key, name in modules.items()}
    except ImportError as e:
        raise ImportError(
            f"{plugin} needs the collection nodeguard.failover installed in a collections path "
            f"(.../ansible_collections/nodeguard/failover) and ansible-core; run it by FQCN, not by path ({e.name} not found)"
        ) from None


def load_file(plugin_file: str, relative: str, name: str):
    """The pure Python file ``relative`` (to the collection's directory), loaded by its path as module ``name``."""
    spec = importlib.util.spec_from_file_location(name, collection_root(plugin_file) / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
