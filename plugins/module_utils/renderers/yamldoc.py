# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Comment-preserving YAML round trip (ruamel.yaml), shared by every renderer.

Configuration files belong to their owners: a round trip must keep comments, key order,
quoting and unknown fields, and change only what a renderer changed.
"""

from __future__ import annotations

import difflib
import io
import json
import re
import traceback
from collections import Counter

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
_TAB_BEFORE_COMMENT = re.compile(r"(?<=\S)[ \t]*\t[ \t]*(?=#)")
_BLOCK_SCALAR = re.compile(r"^[|>][0-9+-]*\s*(?:#.*)?$")
BLANK, COMMENT, SCALAR, MARKER, CONTENT = "blank", "comment", "scalar", "marker", "content"
BOM = "\ufeff"
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


def _parsable(text: str) -> str:
    """``text`` as ruamel.yaml can read it: a tab before a trailing comment (``10s<TAB># stock``) becomes spaces.

    YAML takes tabs as the white space before a comment, and so does go-yaml, which the kubelet, RKE2 and k3s read
    their files with; ruamel.yaml refuses them. Same length, so error positions stay right; the file keeps its tabs
    (``dump`` writes the lines it does not change as they were, and a changed line keeps the old spacing).
    """
    if "\t" not in text:
        return text
    lines = _lines(text)
    return "".join(_untab_comment(line) if kind.kind == CONTENT else line for line, kind in zip(lines, scan(lines)))


def _untab_comment(line: str) -> str:
    for match in _TAB_BEFORE_COMMENT.finditer(line):
        before = line[: match.start()]
        if before.count('"') % 2 == 0 and before.count("'") % 2 == 0:  # not inside a quoted value
            return before + " " * len(match.group()) + line[match.end():]
    return line


def load(text: str, source: str):
    """Parse one YAML document whose top level is a mapping; FileEditError otherwise."""
    require_ruamel()
    try:
        document = _yaml().load(_parsable(text))
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
    is already right before them). A kept comment belongs to the line below it: when the change
    rewrites that line, the comment stays right above the new one; when the change removes that line,
    the comment goes with it (``_take_comments_above`` puts those comment lines into the hunk).
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
        replacement = lines[j1:j2]
        written, pending, comments = 0, [], 0  # replacement[:written] is out; pending: kept lines waiting for their line
        for number in removed:
            kind = kinds[number].kind
            if kind in (CONTENT, SCALAR):
                rewritten = _rewritten_as(base[number], replacement, written)
                if rewritten is not None:
                    new_lines.extend(replacement[written:rewritten])
                    new_lines.extend(base[kept] for kept in pending)
                    new_lines.append(replacement[rewritten])
                    written = rewritten + 1
                else:  # the line is gone, and so are the comment lines right above it; the rest stays where it was
                    own = [kept for kept in pending if kind == CONTENT and _comments_above(kept, number, kinds)]
                    new_lines.extend(base[kept] for kept in pending if kept not in own)
                    comments -= len(own)
                pending = []
                continue
            keep = kind == COMMENT or (kind == BLANK and (comments or (number >= trailing and not blank_before)))
            keep = keep and (kind == BLANK or base[number] not in replacement)  # not when the change moved it
            comments += kind == COMMENT
            if keep:
                pending.append(number)
        new_lines.extend(replacement[written:] + [base[kept] for kept in pending])
    return first, end, new_lines


def _comments_above(first: int, number: int, kinds: list) -> bool:
    """True when lines first..number-1 are comments right above line ``number``, at its indentation: they are about it."""
    return first < number and all(kinds[line].kind == COMMENT and kinds[line].indent == kinds[number].indent for line in range(first, number))


def _take_comments_above(hunk, base: list, kinds: list):
    """The hunk, grown upwards over the comment lines right above the first line it removes.

    ruamel hangs a comment on the line before it, so when the change removes a flag, the comment written
    above that flag is outside the hunk and would stay, above whatever follows. It is about the removed
    line: it goes with it (``_keep_comments`` drops it; a rewritten line keeps it).
    """
    first, end, lines = hunk
    if first == end or kinds[first].kind != CONTENT or _rewritten_as(base[first], lines, 0) is not None:
        return hunk
    start = first
    while start > 0 and _comments_above(start - 1, first, kinds):
        start -= 1
    return start, end, lines


def _line_key(line: str):
    """What a content line is about: its key, or for a "- name=value" list item its name."""
    match = _CONTENT.match(line.rstrip("\n"))
    if match.group("key"):
        return "key", match.group("key").strip("\"'")
    return "item", match.group("value").strip().strip("\"'").split("=", 1)[0]


def _rewritten_as(line: str, replacement: list, start: int):
    """The number of the line in replacement[start:] that rewrites ``line`` (same key or flag name), or None."""
    key = _line_key(line)
    return next((number for number in range(start, len(replacement)) if _line_key(replacement[number]) == key), None)


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
    """``original`` with the change applied: every line the change does not own is ``original``'s, byte for byte.

    ``base`` is ruamel's text of the unchanged document, ``edited`` its text of the changed one; the
    change is where they differ. Each line of ``base`` is matched with its line in ``original`` (the same
    text but for spaces, so a re-indented block, flow-list spacing or trailing spaces still match), the
    change is put in the place of the ``original`` lines it replaces, and its new lines take the
    indentation those ``original`` lines have. Lines outside the change come from ``original`` only.
    """
    no_final_newline = bool(original) and not original.endswith("\n")
    original_lines = _lines(original + "\n" if no_final_newline else original)
    base_lines, edited_lines = _lines(base), _lines(edited)
    kinds = scan(base_lines)
    where = _align(base_lines, original_lines)
    merged, cursor = [], 0
    for hunk in _hunks(base_lines, edited_lines):
        hunk = _place_new_lines(_keep_comments(_take_comments_above(hunk, base_lines, kinds), base_lines, kinds), kinds)
        first, end, lines = _over_unmatched(hunk, base_lines, where)
        start, stop = _span(where, first, end, len(original_lines))
        start = max(start, cursor)
        merged.extend(original_lines[cursor:start])
        merged.extend(_fit(lines, first, end, base_lines, original_lines, where, kinds))
        cursor = max(cursor, stop)
    merged.extend(original_lines[cursor:])
    text = "".join(merged)
    return text[:-1] if no_final_newline and text.endswith("\n") else text


def _same_but_spaces(line: str) -> str:
    return "".join(line.split())


def _align(base: list, original: list) -> list:
    """For each line of ``base``, the number of its line in ``original``, or None when it has none.

    Lines match when they are equal but for spaces. Where a run of lines differs in more than spaces
    (``key:`` written ``key: null`` by ruamel, say) and both runs have the same length, they match in order.
    """
    where = [None] * len(base)
    matcher = difflib.SequenceMatcher(
        None, [_same_but_spaces(line) for line in base], [_same_but_spaces(line) for line in original], autojunk=False
    )
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            for offset in range(i2 - i1):
                where[i1 + offset] = j1 + offset
    return where


def _span(where: list, first: int, end: int, original_length: int):
    """The lines of ``original`` that base[first:end] stands for: [start, stop)."""
    before = next((where[number] + 1 for number in range(first - 1, -1, -1) if where[number] is not None), 0)
    after = next((where[number] for number in range(end, len(where)) if where[number] is not None), original_length)
    if first == end:  # an insertion: before the line that follows it, else after the one before it
        position = where[first] if first < len(where) and where[first] is not None else before
        return position, position
    start = where[first] if where[first] is not None else before  # an unmatched line stands for all between
    return start, (where[end - 1] + 1 if where[end - 1] is not None else after)


def _over_unmatched(hunk, base: list, where: list):
    """The hunk, grown over the unchanged lines next to it that have no line in ``original``.

    A line of ``base`` without a line in ``original`` (ruamel writes a flow list over several lines on one)
    stands for every ``original`` line between its matched neighbours. A hunk that starts or ends with one
    replaces all of those lines, so the unchanged unmatched lines among them must come with it.
    """
    first, end, lines = hunk
    if first == end:
        return hunk
    while first > 0 and where[first] is None and where[first - 1] is None:
        first -= 1
        lines = [base[first], *lines]
    while end < len(base) and where[end - 1] is None and where[end] is None:
        lines = [*lines, base[end]]
        end += 1
    return first, end, lines


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _fit(lines: list, first: int, end: int, base: list, original: list, where: list, kinds: list) -> list:
    """The change's lines as they go into ``original``: its own lines kept, new lines indented like their neighbours.

    A line the change keeps (a comment it does not own) is ``original``'s line. A line that replaces one
    line keeps that line's spaces before its comment and at its end. A new line is shifted by as much as
    ``original`` shifts the nearest line of the same depth (the line it replaces, else its neighbours),
    else its parent: the nearest shallower line, or the key an item written flush with it belongs to (a new
    ``key:`` with its first ``- item`` in a file that has no block list yet).
    """
    kept = {base[number]: original[where[number]] for number in range(first, end) if where[number] is not None}
    neighbours = list(range(first, end)) + list(range(first - 1, -1, -1)) + list(range(end, len(base)))
    references = [
        (kinds[number].indent, kinds[number].dash is not None, _indent(original[where[number]]) - kinds[number].indent)
        for number in neighbours
        if where[number] is not None and kinds[number].kind == CONTENT
    ]
    replaces_one = end - first == 1 and len(lines) == 1 and where[first] is not None
    fitted = []
    for line in lines:
        if line in kept:
            fitted.append(kept[line])
            continue
        if replaces_one:
            line = _keep_spacing(line, original[where[first]])
        new = scan([line])[0]
        if new.kind not in (CONTENT, COMMENT):
            fitted.append(line)
            continue
        is_dash = new.dash is not None
        shift = next((shift for indent, dash, shift in references if indent == new.indent and dash == is_dash), None)
        if shift is None:  # its parent: a shallower line, or for "- item" under "key:" (dash offset 0) that key
            shift = next((shift for indent, dash, shift in references if indent < new.indent or (is_dash and not dash and indent == new.indent)), 0)
        shifted = " " * max(new.indent + shift, 0) + line[new.indent:]
        references.insert(0, (new.indent, is_dash, shift))
        fitted.append(shifted)
    return fitted


def _keep_spacing(line: str, old: str) -> str:
    """``line`` with the spaces ``old`` has before the same trailing comment and at its end."""
    body, old_body = line.rstrip("\n").rstrip(" "), old.rstrip("\n")
    trailing = old_body[len(old_body.rstrip(" ")):]
    old_body = old_body.rstrip(" ")
    comment = re.search(r"\s(#.*)$", old_body)
    if comment and body.endswith(comment.group(1)):
        gap = re.search(r"(\s*)$", old_body[: comment.start(1)]).group(1)
        body = body[: -len(comment.group(1))].rstrip(" ") + gap + comment.group(1)
    return body + trailing + line[len(line.rstrip("\n")):]


def dump(document, like_text: str = "", source: str = "the document") -> str:
    """Serialise a document that was loaded from ``like_text`` (empty for a new file).

    Each top-level block is written in the indentation style it has in ``like_text``, and every line
    the change did not touch comes out byte for byte as it was: trailing spaces, flow lists, block
    scalars, comments, the final newline or its absence. A value ruamel.yaml cannot write is a
    FileEditError naming ``source`` and the key.

    A file written in JSON (the kubelet reads its --config file in JSON or YAML) stays JSON in its own layout
    (``_dump_json``).
    """
    require_ruamel()
    try:
        return _dump(document, like_text, source)
    except YAMLError as error:
        where = _unwritable(document) or "a value"
        raise FileEditError(f"{source}: cannot write {where} as YAML ({type(error).__name__})") from None


def line_ending(text: str) -> str:
    """"\r\n" when most lines of ``text`` end that way (a file written on Windows), else "\n"."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"


def _dump(document, like_text: str, source: str) -> str:
    """``dump`` for a file with any line endings and a byte order mark or none: the merge works on "\n" without
    one, the result gets the file's own (a BOM: UTF-8 files from some Windows editors)."""
    bom = BOM if like_text.startswith(BOM) else ""
    like_text = like_text[len(bom):]
    newline = line_ending(like_text)
    if newline == "\n":
        return bom + _dump_lf(document, like_text, source)
    return bom + _dump_lf(document, like_text.replace("\r\n", "\n"), source).replace("\n", newline)


def _dump_lf(document, like_text: str, source: str) -> str:
    if _is_json(like_text):
        return _dump_json(document, like_text, source)
    if like_text.strip() and is_empty(like_text):  # comments only: they stay, the document follows them
        if not document:
            return like_text
        return like_text + ("" if like_text.endswith("\n") else "\n") + _dump_styled(document, "")
    edited = _dump_styled(document, like_text)
    if not like_text.strip():
        return edited
    try:
        base = _dump_styled(load(like_text, "the original text"), like_text)
    except FileEditError:
        return edited
    merged = _merge(like_text, base, edited)
    if merged != edited and _yaml().load(_parsable(merged)) != document:
        return edited  # safety net: never write a text that does not hold the rendered document
    return merged


def _is_json(text: str) -> bool:
    """True when ``text`` is a JSON object (JSON is YAML too, so it loaded; it must be written back as JSON)."""
    if not text.lstrip().startswith("{"):
        return False
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _json_layouts(body: str):
    """The json.dumps layouts (indent, separators, ensure_ascii) that could have written ``body``."""
    lines = body.split("\n")
    if len(lines) > 1:  # one key a line, indented by what the second line starts with
        indent = lines[1][: len(lines[1]) - len(lines[1].lstrip(" \t"))]
        spacings = [(indent, (",", ": ")), (indent, (",", ":"))]
    else:
        spacings = [(None, (", ", ": ")), (None, (",", ":"))]
    return [(indent, separators, ascii_only) for indent, separators in spacings for ascii_only in (False, True)]


def _dump_json(document, like_text: str, source: str) -> str:
    """The document as JSON in the layout of ``like_text``: its indentation, spacing and escapes, its key order
    (new keys last), its leading and trailing white space. Every line the change does not touch is as it was.

    Only a layout json.dumps reproduces byte for byte is written; any other (a space before the colon, two keys
    on a line) is a FileEditError before anything is written.
    """
    body = like_text.strip()
    head, tail = like_text[: len(like_text) - len(like_text.lstrip())], like_text[len(like_text.rstrip()):]
    original = json.loads(body)
    for indent, separators, ascii_only in _json_layouts(body):
        if json.dumps(original, indent=indent, separators=separators, ensure_ascii=ascii_only) == body:
            return head + json.dumps(document, indent=indent, separators=separators, ensure_ascii=ascii_only) + tail
    raise FileEditError(
        f"{source} is JSON in a layout this module cannot write back without changing lines it does not own; nothing "
        "changed. Lay the file out as jq or kubectl -o json write it (one key a line, indented by spaces or a tab, "
        "\"key\": value), or set the fields by hand"
    )


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
            return kind(value)  # the plain type (the same object when it already is one)
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


def copy_document(document):
    """A copy of a loaded document to change, with its anchors, aliases and merge keys (``<<: *name``) kept.

    copy.deepcopy would turn every alias into a copy of its values and every merge key into the keys it
    merges, so the file would be rewritten far beyond the change; a ruamel round trip keeps them.
    """
    if not document:
        return CommentedMap()
    return _yaml().load(_dump_with(document, DEFAULT_STYLE, False))


def refuse_shared(node, where: str) -> None:
    """FileEditError when ``node`` has an anchor (``&name``): its aliases elsewhere would change with it."""
    anchor = getattr(getattr(node, "anchor", None), "value", None)
    if anchor:
        raise FileEditError(
            f"{where} is shared through the YAML anchor &{anchor}: every alias *{anchor} in the file would change with it. "
            "Give the values here their own list or mapping (or edit the file by hand); nothing changed."
        )


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
