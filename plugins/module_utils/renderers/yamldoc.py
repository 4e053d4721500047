# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Comment-preserving YAML round trip (ruamel.yaml), shared by every renderer.

Configuration files belong to their owners: a round trip must keep comments, key order,
quoting and unknown fields, and change only what a renderer changed.
"""

from __future__ import annotations

import io
import re
import traceback

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError

try:
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.error import YAMLError
except ImportError as import_error:  # reported by the caller with missing_required_lib
    HAS_RUAMEL = False
    RUAMEL_IMPORT_ERROR = import_error
    RUAMEL_IMPORT_TRACEBACK = traceback.format_exc()
    CommentedMap = dict
else:
    HAS_RUAMEL = True
    RUAMEL_IMPORT_ERROR = None
    RUAMEL_IMPORT_TRACEBACK = None

# Name for missing_required_lib() and the "requirements" section of the module docs.
RUAMEL_REQUIREMENT = "ruamel.yaml (Debian: python3-ruamel.yaml; pip: ruamel.yaml)"

_SEQUENCE_DASH = re.compile(r"^(\s*)- ")
_MAPPING_KEY = re.compile(r"^(\s*)[^\s#-][^:]*:(\s|$)")


def require_ruamel() -> None:
    if not HAS_RUAMEL:
        raise FileEditError(
            "the Python library ruamel.yaml is required on the managed host to edit YAML "
            f"without losing comments; install {RUAMEL_REQUIREMENT} (import error: {RUAMEL_IMPORT_ERROR})"
        )


def _guess_style(text: str) -> tuple[int, int]:
    """Return (mapping indent, dash offset) used by the text, so a dump looks like the original.

    kubeadm writes sequences flush with their parent key ("- item", offset 0);
    hand-written RKE2 configs often indent them ("  - item", offset 2).
    """
    mapping_indent = None
    dash_offset = None
    previous_key_indent = None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        dash = _SEQUENCE_DASH.match(line)
        if dash and dash_offset is None and previous_key_indent is not None:
            dash_offset = max(0, len(dash.group(1)) - previous_key_indent)
        key = _MAPPING_KEY.match(line)
        if key:
            indent = len(key.group(1))
            if mapping_indent is None and previous_key_indent is not None and indent > previous_key_indent:
                mapping_indent = indent - previous_key_indent
            previous_key_indent = indent
        if mapping_indent is not None and dash_offset is not None:
            break
    return mapping_indent or 2, dash_offset if dash_offset is not None else 0


def _yaml(text: str = "") -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # never fold long command lines
    mapping_indent, dash_offset = _guess_style(text)
    yaml.indent(mapping=mapping_indent, sequence=dash_offset + 2, offset=dash_offset)
    yaml.explicit_start = text.lstrip().startswith("---")
    # ruamel writes None as an empty value; Kubernetes files (kubeadm output) spell it "null".
    yaml.representer.add_representer(type(None), _represent_null)
    return yaml


def _represent_null(representer, _data):
    return representer.represent_scalar("tag:yaml.org,2002:null", "null")


def load(text: str, source: str):
    """Parse one YAML document whose top level is a mapping; FileEditError otherwise."""
    require_ruamel()
    try:
        document = _yaml(text).load(text)
    except YAMLError as error:
        raise FileEditError(f"{source} is not valid YAML: {error}") from None
    if document is None:
        return CommentedMap()
    if not isinstance(document, dict):
        raise FileEditError(
            f"{source} must hold a YAML mapping at the top level, found {type(document).__name__}"
        )
    return document


def dump(document, like_text: str = "") -> str:
    """Serialise a document in the indentation style of ``like_text`` (its original text)."""
    require_ruamel()
    stream = io.StringIO()
    _yaml(like_text).dump(document, stream)
    return stream.getvalue()


def new_mapping(items=None):
    """An empty (or pre-filled) mapping that keeps insertion order and can carry comments."""
    mapping = CommentedMap()
    for key, value in (items or {}).items():
        mapping[key] = value
    return mapping


def same_style(old, new: str):
    """``new`` quoted the way ``old`` was ("x", 'x' or plain), so a diff shows only the value."""
    style = type(old)
    if isinstance(old, str) and style is not str:
        try:
            return style(new)
        except TypeError:  # a ruamel type that needs more arguments: fall back to plain
            return new
    return new
