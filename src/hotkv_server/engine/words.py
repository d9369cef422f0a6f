"""Splitting a line into words as Redis's sdssplitargs does: inline requests and config lines.

Words are separated by blanks; a word may be quoted with ``"..."`` (escapes ``\\n``,
``\\r``, ``\\t``, ``\\b``, ``\\a``, ``\\xHH``, ``\\"``) or ``'...'`` (only ``\\'``);
a closing quote must be followed by a blank or the end of the line.
"""

from __future__ import annotations


class UnbalancedQuotes(ValueError):
    """A quote left open, or a closing quote followed by more of the same word."""


#: the blanks between words (sdssplitargs's isspace)
_BLANKS = b" \t\r\n\v\f"


def split_args(line: bytes) -> list[bytes]:
    """Split a line into words as Redis's sdssplitargs does (quotes, escapes)."""
    if b'"' not in line and b"'" not in line:
        # without quotes a word is a run of non-blanks, and bytes.split's blanks are
        # exactly sdssplitargs's (space, \t, \n, \r, \v, \f): one C call (inline PING)
        return line.split()
    words: list[bytes] = []
    i, n = 0, len(line)
    while True:
        while i < n and line[i] in _BLANKS:
            i += 1
        if i >= n:
            return words
        current = bytearray()
        quote = 0
        closed = False
        while i < n:
            c = line[i]
            if quote:
                if c == 0x5C and i + 1 < n:  # backslash: escapes in "...", only \' in '...'
                    nxt = line[i + 1]
                    if quote == 0x22:
                        if nxt == 0x78 and i + 3 < n and _is_hex(line[i + 2]) and _is_hex(line[i + 3]):
                            current.append(int(line[i + 2 : i + 4], 16))
                            i += 4
                            continue
                        current.append({0x6E: 10, 0x72: 13, 0x74: 9, 0x62: 8, 0x61: 7}.get(nxt, nxt))
                        i += 2
                        continue
                    if nxt == 0x27:
                        current.append(0x27)
                        i += 2
                        continue
                if c == quote:  # the closing quote must end the word
                    if i + 1 < n and line[i + 1] not in _BLANKS:
                        raise UnbalancedQuotes("unbalanced quotes")
                    closed = True
                    i += 1
                    break
                current.append(c)
            else:
                if c in _BLANKS:
                    break
                if c in b"\"'" and not current:
                    quote = c
                else:
                    current.append(c)
            i += 1
        if quote and not closed:
            raise UnbalancedQuotes("unbalanced quotes")
        words.append(bytes(current))


def _is_hex(c: int) -> bool:
    return c in b"0123456789abcdefABCDEF"
