"""Glob-style matching with Redis's rules, for MATCH in AMEM.SCAN, SCAN and KEYS.

The rules are those of Redis's ``stringmatchlen`` (case-sensitive):

* ``*`` any run of bytes (also none), ``?`` any one byte;
* ``[abc]`` one byte of the set, ``[^abc]`` one byte not in it, ``[a-z]`` a range (written
  backwards, ``[z-a]``, it is the same range), ``\\x`` inside a class a literal ``x``;
  ``]`` right after ``[`` (or ``[^``) closes an empty class, which matches nothing
  (``[^]`` matches any byte); ``[a-]`` takes ``]`` as the range's end and the class runs on;
  a class left open at the end of the pattern ends there;
* ``\\x`` outside a class is a literal ``x``; a lone ``\\`` at the very end is itself.

One difference on purpose: Redis compares class ranges as C ``char`` (signed on x86), so a
range with a byte >= 0x80 at one end is odd there; here bytes are 0..255 throughout.

``compile_glob(pattern)`` parses a pattern once (cached) into a test function: ``*`` and
plain bytes and ``prefix*`` become a constant, an equality and a ``startswith``; anything
else a list of one-byte matchers and stars, matched by the greedy "back up to the last
star" walk: O(len(pattern) * len(subject)) at worst, never exponential, whatever the
number of stars.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from functools import lru_cache, partial

#: a pattern element: None is a star, else the set of bytes one subject byte may be
Token = Container[int] | None

_ANY = range(256)
_SPECIAL = frozenset(b"*?[\\")


def _compile(pattern: bytes) -> tuple[Token, ...]:
    tokens: list[Token] = []
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == 0x2A:  # *
            if not tokens or tokens[-1] is not None:  # a run of stars is one star
                tokens.append(None)
            i += 1
        elif c == 0x3F:  # ?
            tokens.append(_ANY)
            i += 1
        elif c == 0x5B:  # [
            i = _compile_class(pattern, i + 1, tokens)
        elif c == 0x5C and i + 1 < n:  # backslash escapes the next byte
            tokens.append((pattern[i + 1],))
            i += 2
        else:
            tokens.append((c,))
            i += 1
    return tuple(tokens)


def _compile_class(pattern: bytes, i: int, tokens: list[Token]) -> int:
    """Parse a class whose body starts at ``i``; append its matcher; return the next index."""
    n = len(pattern)
    negate = i < n and pattern[i] == 0x5E  # ^
    if negate:
        i += 1
    members: set[int] = set()
    while i < n:
        c = pattern[i]
        if c == 0x5C and n - i >= 2:
            members.add(pattern[i + 1])
            i += 2
        elif c == 0x5D:  # ]
            i += 1
            break
        elif n - i >= 3 and pattern[i + 1] == 0x2D:  # a-z
            lo, hi = sorted((c, pattern[i + 2]))
            members.update(range(lo, hi + 1))
            i += 3
        else:
            members.add(c)
            i += 1
    tokens.append(frozenset(set(_ANY) - members) if negate else frozenset(members))
    return i


def glob_match(pattern: bytes, subject: bytes) -> bool:
    """Whether ``subject`` matches the glob ``pattern`` (Redis rules, case-sensitive)."""
    return compile_glob(pattern)(subject)


@lru_cache(maxsize=256)
def compile_glob(pattern: bytes) -> Callable[[bytes], bool]:
    """A reusable test for one pattern (hoist it out of a loop over many keys)."""
    if pattern == b"*":
        return _always
    if not _SPECIAL.intersection(pattern):
        return pattern.__eq__
    tokens = _compile(pattern)
    head = tokens[:-1]
    if tokens[-1] is None and all(isinstance(tok, tuple) for tok in head):
        # literal bytes then one star ("tenant-a:*"), the common case: a prefix test
        prefix = bytes(tok[0] for tok in head if isinstance(tok, tuple))
        return lambda subject: subject.startswith(prefix)
    return partial(_match, tokens)


def _always(subject: bytes) -> bool:
    return True


def _match(tokens: tuple[Token, ...], subject: bytes) -> bool:
    ti = si = 0
    nt = len(tokens)
    ns = len(subject)
    star_ti = -1  # the last star seen, and the subject position it was tried at
    star_si = 0
    while si < ns:
        if ti < nt:
            tok = tokens[ti]
            if tok is None:
                star_ti = ti
                star_si = si
                ti += 1
                continue
            if subject[si] in tok:
                ti += 1
                si += 1
                continue
        if star_ti < 0:
            return False
        # let the last star swallow one more byte and retry what follows it
        star_si += 1
        si = star_si
        ti = star_ti + 1
    while ti < nt and tokens[ti] is None:
        ti += 1
    return ti == nt
