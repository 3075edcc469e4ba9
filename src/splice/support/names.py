"""People's and agents' names, as Splice stores and compares them.

A name decides things (who proposed, who may approve), so two spellings that look the same
must be the same name, and a name must not smuggle invisible characters: ``"maria"`` with a
zero-width space appended is ``"maria"``. A name is normalised once, when it enters Splice
(NFKC, format and control characters removed, runs of white space made one space, trimmed),
stored in that form and shown exactly so; names are compared by their case-folded form.

>>> normalise_name("  Maria\\u200b ")
'Maria'
>>> normalise_name("ｍａｒｉａ")  # full-width letters
'maria'
>>> name_key("MARIA") == name_key("maria\\u2060")
True
>>> printable("lee\\x1b[31m")
'lee\\\\x1b[31m'
"""

from __future__ import annotations

import unicodedata

#: Unicode categories removed from names: control, format (zero-width, bidi marks), surrogate,
#: private use and unassigned code points.
_DROP = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})


def normalise_name(raw: str) -> str:
    """The stored form of a name (see the module docstring); may be empty."""
    text = unicodedata.normalize("NFKC", raw or "")
    kept = "".join(
        " " if ch.isspace() else ch for ch in text if unicodedata.category(ch) not in _DROP
    )
    return " ".join(kept.split())


def name_key(raw: str) -> str:
    """The form two names are compared in: normalised, then case-folded."""
    return normalise_name(raw).casefold()


def printable(text: str) -> str:
    """``text`` with control and format characters shown as escapes (for a terminal)."""
    out = []
    for ch in text:
        if unicodedata.category(ch) in ("Cc", "Cf") and ch not in "\n\t":
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)
