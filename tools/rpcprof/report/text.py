"""Text from outside (frame, server, rule and file names) made safe for each place it is written.

Names come from profiles and run files that anyone can write: they may hold control characters (ESC,
NUL, CR), characters XML 1.0 forbids (U+FFFF, lone surrogates from a JSON `\\ud800`), `|` or `<&`.
Every sink takes them through one function here instead of escaping on its own:

    terminal(s)        ESC, CR, NUL... shown as escapes (`\\x1b`), never sent raw; lone surrogates and
                       bidirectional controls (U+202E...) too
    terminal_lines(s)  the same for a block of text whose line breaks and tabs are kept
    markdown_cell(s)   one table cell: escapes as terminal(), `\\` and `|` escaped, CR/LF become spaces
    csv_field(s)       for the csv module (which quotes): only what cannot be encoded is replaced
    xml_chars(s)       what XML 1.0 forbids replaced by U+FFFD (lines=True: every control character,
                       bidirectional ones included)
    xml(s), html(s)    xml_chars then escaped for an SVG or HTML text node or attribute
    plot_label(s)      a matplotlib label: XML-safe text, line breaks kept, `$` not read as mathtext
"""
from __future__ import annotations

import re
from html import escape as _escape      # `&<>"'` as entities, which both XML and HTML read

# the bidirectional controls (LRM, RLM, ALM, the embeddings, overrides and isolates): they reorder what is
# shown around them, so a frame name could display as another ("Trojan source")
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_TERMINAL_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f\ud800-\udfff{_BIDI}]")
_TERMINAL_UNSAFE_KEEP_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff{_BIDI}]")
_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_XML_FORBIDDEN_OR_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff{_BIDI}]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_BIDI_CONTROL = re.compile(f"[{_BIDI}]")
REPLACEMENT = "\ufffd"


def _escape_char(m: re.Match) -> str:
    return m.group(0).encode("unicode_escape", "backslashreplace").decode("ascii")


def terminal(s) -> str:
    """s with control characters and lone surrogates written as escapes (`\\x1b`, `\\n`, `\\ud800`)."""
    return _TERMINAL_UNSAFE.sub(_escape_char, str(s))


def terminal_lines(s) -> str:
    """terminal() for a block of lines: line feeds and tabs are kept, every other control escaped."""
    return _TERMINAL_UNSAFE_KEEP_LINES.sub(_escape_char, str(s))


def markdown_cell(s) -> str:
    """One markdown table cell: `\\` and `|` escaped (a backslash left alone would escape the backslash
    that escapes a `|` after it, and the `|` would split the row), CR and LF become spaces, other controls
    escaped."""
    return terminal(re.sub(r"\r\n|[\r\n]", " ", str(s)).replace("\\", "\\\\")).replace("|", "\\|")


def csv_field(value):
    """A value for the csv module, which quotes commas, quotes and line breaks itself: strings lose
    only what no encoding can write (lone surrogates become U+FFFD); other values pass unchanged."""
    return _SURROGATE.sub(REPLACEMENT, value) if isinstance(value, str) else value


def xml_chars(s, lines: bool = False) -> str:
    """s with the characters XML 1.0 forbids (C0 controls but tab and line breaks, lone surrogates, U+FFFE,
    U+FFFF) replaced by U+FFFD; lines=True replaces every control character too, bidirectional ones included (a
    name drawn on one line, or written into a line-based file such as folded stacks)."""
    return (_XML_FORBIDDEN_OR_CONTROL if lines else _XML_FORBIDDEN).sub(REPLACEMENT, str(s))


def xml(s) -> str:
    """s as SVG/XML text or attribute value: what XML forbids and control characters replaced, `<&>"'` escaped."""
    return _escape(xml_chars(s, lines=True))


def html(s) -> str:
    """s as HTML text or attribute value: forbidden characters and bidirectional controls replaced, `<&>"'` escaped."""
    return _escape(_BIDI_CONTROL.sub(REPLACEMENT, xml_chars(s)))


def plot_label(s) -> str:
    """s as a matplotlib text (breakdown.svg, timeline.svg): XML-safe, its line breaks kept as line breaks
    (matplotlib draws each line; every other control character is replaced), and `$` escaped, which
    matplotlib would otherwise parse as mathtext (and fail on, or draw as a formula)."""
    return "\n".join(xml_chars(line, lines=True) for line in str(s).split("\n")).replace("$", "\\$")
