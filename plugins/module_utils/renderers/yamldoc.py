# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Comment-preserving YAML round trip (ruamel.yaml), shared by every renderer.

Configuration files belong to their owners: a round trip must keep comments, key order,
quoting and unknown fields, and change only what a renderer changed.
"""

from __future__ import annotations

import difflib
import io
import re
import traceback
from collections import Counter, namedtuple

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

# One line of a YAML file, after its indentation and any "- " item markers: an optional key, then the value.
_CONTENT = re.compile(
    r"""^(?P<indent> *)(?P<dashes>(?:-(?: +|$))*)"""
    r"""(?:(?P<key>"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#"'{\[\]},&*!|>%@`-][^#]*?|-[^\s#][^#]*?)\s*:(?=\s|$))?"""
    r"""\s*(?P<value>.*)$"""
)
_BLOCK_SCALAR = re.compile(r"^[|>][0-9+-]*\s*(?:#.*)?$")
BLANK, COMMENT, SCALAR, MARKER, CONTENT = "blank", "comment", "scalar", "marker", "content"
DEFAULT_STYLE = (2, 0)  # (mapping indent, dash offset) of kubeadm output


def require_ruamel() -> None:
    if not HAS_RUAMEL:
        raise FileEditError(
            "the Python library ruamel.yaml is required on the managed host to edit YAML "
            f"without losing comments; install {RUAMEL_REQUIREMENT} (import error: {RUAMEL_IMPORT_ERROR})"
        )


class Line:
    """What one line of a YAML file is: blank, comment, block scalar text, document marker or content."""

    def __init__(self, kind, indent=0, dash=None, key_column=None, opens_block=False):
        self.kind = kind
        self.indent = indent
        self.dash = dash  # column of the last "- " item marker, or None
        self.key_column = key_column  # column where the key starts, or None
        self.opens_block = opens_block  # "key:" with nothing after it: a nested block follows


def scan(lines: list) -> list:
    """Classify each line, so indentation and comments can be found without being fooled by block scalars."""
    kinds = []
    scalar_owner = None  # lines indented deeper than this column belong to a block scalar (| or >)
    for line in lines:
        text = line.rstrip("\r\n")
        indent = len(text) - len(text.lstrip(" "))
        if not text.strip():
            kinds.append(Line(BLANK, indent))
            continue
        if scalar_owner is not None and indent > scalar_owner:
            kinds.append(Line(SCALAR, indent))
            continue
        scalar_owner = None
        if text.lstrip().startswith("#"):
            kinds.append(Line(COMMENT, indent))
            continue
        if text.startswith(("---", "...", "%")):
            kinds.append(Line(MARKER, indent))
            continue
        match = _CONTENT.match(text)
        dashes = match.group("dashes")
        dash = text.rindex("-", 0, indent + len(dashes)) if dashes else None
        key_column = indent + len(dashes) if match.group("key") else None
        value = match.group("value")
        kinds.append(Line(CONTENT, indent, dash, key_column, key_column is not None and (not value or value.startswith("#"))))
        if _BLOCK_SCALAR.match(value):
            scalar_owner = key_column if key_column is not None else dash
    return kinds


def _guess_style(kinds: list):
    """(mapping indent, dash offset) these lines use, each None when the lines do not show it.

    Both are measured from a "key:" line that opens a block to the first line of that block:
    a nested key gives the mapping indent, an item marker gives the dash offset. kubeadm writes
    sequences flush with their parent key ("- item", offset 0); hand-written RKE1 and RKE2 files
    often indent them ("  - item", offset 2). The content of a list item ("- address: x" /
    "  user: y") says nothing about either.
    """
    indents, offsets = Counter(), Counter()
    previous = None
    for line in kinds:
        if line.kind != CONTENT:
            continue
        if previous is not None and previous.opens_block:
            if line.dash is not None and line.indent >= previous.key_column:
                offsets[line.indent - previous.key_column] += 1
            elif line.dash is None and line.indent > previous.key_column:
                indents[line.indent - previous.key_column] += 1
        previous = line
    return (indents.most_common(1)[0][0] if indents else None, offsets.most_common(1)[0][0] if offsets else None)


def _segments(lines: list, kinds: list) -> list:
    """[(top-level key line or None, first, end)]: the lines before the first top-level key, then one block per key."""
    segments = [[None, 0, 0]]
    for number, (line, kind) in enumerate(zip(lines, kinds)):
        if kind.kind == CONTENT and kind.indent == 0 and kind.dash is None and kind.key_column is not None:
            segments.append([line.split(":", 1)[0], number, number])
        segments[-1][2] = number + 1
    return [tuple(segment) for segment in segments]


def _styles(text: str):
    """The file's default style and the style of each top-level block that shows one of its own."""
    lines = _lines(text)
    kinds = scan(lines)
    whole = _guess_style(kinds)
    default = (whole[0] or DEFAULT_STYLE[0], whole[1] if whole[1] is not None else DEFAULT_STYLE[1])
    per_block = {}
    for key, first, end in _segments(lines, kinds):
        mapping, offset = _guess_style(kinds[first:end])
        per_block[key] = (mapping or default[0], offset if offset is not None else default[1])
    return default, per_block


def _lines(text: str) -> list:
    """Lines with their "\\n" (only "\\n" ends a line in YAML files here, unlike str.splitlines)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _yaml(style=DEFAULT_STYLE, explicit_start: bool = False) -> YAML:
    mapping_indent, dash_offset = style
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # never fold long command lines
    yaml.indent(mapping=mapping_indent, sequence=dash_offset + 2, offset=dash_offset)
    yaml.explicit_start = explicit_start
    # ruamel writes None as an empty value; Kubernetes files (kubeadm output) spell it "null".
    yaml.representer.add_representer(type(None), _represent_null)
    return yaml


def _represent_null(representer, _data):
    return representer.represent_scalar("tag:yaml.org,2002:null", "null")


def _yaml_error(error, source: str) -> FileEditError:
    """What is wrong and where, without quoting the file (the offending line may hold a token)."""
    problem = getattr(error, "problem", None) or type(error).__name__
    problem = re.sub(r" with value .*", "", problem.splitlines()[0])  # duplicate keys: name the key, not its values
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    context = getattr(error, "context", None)
    context = f" ({context})" if context else ""
    return FileEditError(f"{source} is not valid YAML: {problem}{where}{context}")


def load(text: str, source: str):
    """Parse one YAML document whose top level is a mapping; FileEditError otherwise."""
    require_ruamel()
    try:
        document = _yaml().load(text)
    except YAMLError as error:
        raise _yaml_error(error, source) from None
    if document is None:
        return CommentedMap()
    if not isinstance(document, dict):
        found = "a list" if isinstance(document, list) else "a single value"
        raise FileEditError(f"{source} must hold a YAML mapping (key: value lines) at the top level, found {found}")
    return document


def is_empty(text: str) -> bool:
    """True when the text holds no YAML at all: nothing, blank lines or comments only."""
    return all(line.kind in (BLANK, COMMENT, MARKER) for line in scan(_lines(text)))


def _dump_with(document, style, explicit_start: bool) -> str:
    stream = io.StringIO()
    _yaml(style, explicit_start).dump(document, stream)
    return stream.getvalue().replace("\r\n", "\n")  # comments read from a CR LF file keep their CR; _dump puts line ends back


def _dump_styled(document, like_text: str) -> str:
    """ruamel's text of the document, each top-level block in the indentation style that block has in ``like_text``."""
    explicit_start = like_text.lstrip().startswith("---")
    default, per_block = _styles(like_text)
    text = _dump_with(document, default, explicit_start)
    styles = set(per_block.values()) - {default}
    if not styles:
        return text
    texts = {default: text}
    texts.update((style, _dump_with(document, style, explicit_start)) for style in styles)
    split = {}
    for style, styled in texts.items():
        lines = _lines(styled)
        split[style] = (lines, _segments(lines, scan(lines)))
    keys = [key for key, _first, _end in split[default][1]]
    if any([key for key, _first, _end in segments] != keys for _lines_, segments in split.values()):
        return text  # the blocks do not line up (unusual keys): one style for the whole file
    assembled = []
    for number, key in enumerate(keys):
        lines, segments = split[per_block.get(key, default)]
        _key, first, end = segments[number]
        assembled.extend(lines[first:end])
    return "".join(assembled)


# Where one text replaces base[first:end] with lines; is_change: the renderer's change, not the owner's style.
_Hunk = namedtuple("_Hunk", "first end lines is_change")


def _hunks(base: list, other: list) -> list:
    """[(first, end, lines)]: where ``other`` replaces base[first:end] with ``lines``."""
    matcher = difflib.SequenceMatcher(None, base, other, autojunk=False)
    return [(i1, i2, other[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def _keep_comments(hunk, base: list, kinds: list):
    """The hunk without removing comment lines and the blank lines that separate blocks: they are the owner's.

    ruamel hangs the comment and blank lines that follow a list item or a value on that item, so
    removing the last list item (or a whole key) would remove the comment or blank line that
    introduces the next key. Kept: every comment line, a blank line after a kept comment, and the
    blank lines among the comments and blank lines that end the removed lines (unless a blank line
    is already right before them).
    """
    first, end, lines = hunk
    if all(kinds[number].kind == CONTENT or kinds[number].kind == SCALAR for number in range(first, end)):
        return hunk
    new_lines = []
    matcher = difflib.SequenceMatcher(None, base[first:end], lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("equal", "insert"):
            new_lines.extend(lines[j1:j2])
            continue
        removed = range(first + i1, first + i2)
        trailing = first + i2
        while trailing > removed.start and kinds[trailing - 1].kind in (BLANK, COMMENT):
            trailing -= 1
        blank_before = removed.start > 0 and kinds[removed.start - 1].kind == BLANK
        before, after, seen_comment, seen_content = [], [], False, False
        for number in removed:
            kind = kinds[number].kind
            keep = kind == COMMENT or (kind == BLANK and (seen_comment or (number >= trailing and not blank_before)))
            keep = keep and (kind == BLANK or base[number] not in lines[j1:j2])  # not when the change moved it
            seen_comment = seen_comment or kind == COMMENT
            seen_content = seen_content or kind in (CONTENT, SCALAR)
            if keep:
                (after if seen_content else before).append(base[number])
        new_lines.extend(before + lines[j1:j2] + after)
    return first, end, new_lines


def _place_new_lines(hunk, kinds: list):
    """New list items and keys go before the comment or blank lines that end their block.

    ruamel hangs those lines on the last item of the block, so it writes what is added to the block
    after them, where they introduce the next key. Moved up only over comment and blank lines, and
    only when the line above them is at least as deep as the new lines (so still inside the block).
    """
    first, end, lines = hunk
    new = scan(lines[:1])[0] if first == end and lines else None
    if new is None or new.kind != CONTENT:
        return hunk
    position = first
    while position > 0 and kinds[position - 1].kind in (COMMENT, BLANK):
        position -= 1
    if position == first or position == 0 or kinds[position - 1].indent < new.indent:
        return hunk
    return position, position, lines


def _merge(original: str, base: str, edited: str) -> str:
    """``edited`` with every line the change did not touch taken byte for byte from ``original``.

    A three-way merge. ``base`` is ruamel's text of the unchanged document, ``edited`` its text of
    the changed one. Where ``original`` differs from ``base`` (trailing spaces, flow-list spacing,
    indentation ruamel cannot reproduce, a missing final newline), that is the owner's style and is
    kept; where ``edited`` differs from ``base``, that is the change and is applied. Where both
    touch the same lines, the change wins for those lines only.
    """
    no_final_newline = bool(original) and not original.endswith("\n")
    original_lines = _lines(original + "\n" if no_final_newline else original)
    base_lines, edited_lines = _lines(base), _lines(edited)
    kinds = scan(base_lines)
    ours = [_Hunk(first, end, lines, False) for first, end, lines in _hunks(base_lines, original_lines)]
    theirs = [
        _Hunk(*_place_new_lines(_keep_comments(hunk, base_lines, kinds), kinds), True)
        for hunk in _hunks(base_lines, edited_lines)
    ]
    groups = []  # hunks that overlap; an insertion at the edge of a range does not overlap it
    for hunk in sorted(ours + theirs, key=lambda hunk: (hunk.first, hunk.end, hunk.is_change)):
        if groups and hunk.first < max(other.end for other in groups[-1]):
            groups[-1].append(hunk)
        else:
            groups.append([hunk])
    merged, position = [], 0
    for group in groups:
        first, end = group[0].first, max(hunk.end for hunk in group)
        merged.extend(base_lines[position:first])
        changes = [hunk for hunk in group if hunk.is_change]
        if len(group) == 1:
            merged.extend(group[0].lines)
        else:  # the owner's style and the change meet: the change's text for these lines
            cursor = first
            for change in changes:
                merged.extend(base_lines[cursor:change.first])
                merged.extend(change.lines)
                cursor = max(cursor, change.end)
            merged.extend(base_lines[cursor:end])
        position = max(position, end)
    merged.extend(base_lines[position:])
    text = "".join(merged)
    return text[:-1] if no_final_newline and text.endswith("\n") else text


def dump(document, like_text: str = "", source: str = "the document") -> str:
    """Serialise a document that was loaded from ``like_text`` (empty for a new file).

    Each top-level block is written in the indentation style it has in ``like_text``, and every line
    the change did not touch comes out byte for byte as it was: trailing spaces, flow lists, block
    scalars, comments, the final newline or its absence. A value ruamel.yaml cannot write is a
    FileEditError naming ``source`` and the key.
    """
    require_ruamel()
    try:
        return _dump(document, like_text)
    except YAMLError as error:
        where = _unwritable(document) or "a value"
        raise FileEditError(f"{source}: cannot write {where} as YAML ({type(error).__name__})") from None


def line_ending(text: str) -> str:
    """"\r\n" when most lines of ``text`` end that way (a file written on Windows), else "\n"."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"


def _dump(document, like_text: str) -> str:
    """``dump`` for a file with any line endings: the merge works on "\n", the result gets the file's own."""
    newline = line_ending(like_text)
    if newline == "\n":
        return _dump_lf(document, like_text)
    return _dump_lf(document, like_text.replace("\r\n", "\n")).replace("\n", newline)


def _dump_lf(document, like_text: str) -> str:
    edited = _dump_styled(document, like_text)
    if not like_text.strip():
        return edited
    try:
        base = _dump_styled(load(like_text, "the original text"), like_text)
    except FileEditError:
        return edited
    merged = _merge(like_text, base, edited)
    if merged != edited and _yaml().load(merged) != document:
        return edited  # safety net: never write a text that does not hold the rendered document
    return merged


def plain(value, where: str, key: str = ""):
    """``value`` as built-in Python types, for values that come from outside a file (playbook variables).

    Ansible 2.19 hands filters and modules tagged strings and numbers (subclasses of ``str``, ``int`` and
    ``float`` that carry where they came from); ruamel.yaml cannot write those. Such subclasses become the
    plain type, mappings and lists are converted item by item. Anything else fails here, naming ``where``
    and the key.
    """
    if value is None or isinstance(value, bool):  # bool cannot be subclassed
        return value
    for kind in (str, int, float):
        if isinstance(value, kind):
            return kind(value) if type(value) is not kind else value
    if isinstance(value, dict):
        return {plain(name, where, key): plain(item, where, f"{key}.{name}" if key else str(name)) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item, where, f"{key}[{number}]") for number, item in enumerate(value)]
    raise FileEditError(
        f"{where}: {key or 'the value'} is a {type(value).__name__}; give a string, number, boolean, null, list or mapping"
    )


def _unwritable(document, path: str = ""):
    """The key path of the first value in ``document`` that ruamel.yaml cannot write, or None."""
    items = document.items() if isinstance(document, dict) else enumerate(document) if isinstance(document, list) else ()
    for key, value in items:
        where = f"{path}[{key}]" if isinstance(document, list) else f"{path}.{key}" if path else str(key)
        if isinstance(value, (dict, list)):
            found = _unwritable(value, where)
            if found:
                return found
            continue
        try:
            _yaml().dump([value], io.StringIO())
        except Exception:  # noqa: BLE001 - any representer failure marks the value
            return f"{where} ({type(value).__name__})"
    return None


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
