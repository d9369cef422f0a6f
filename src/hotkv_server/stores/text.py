"""A small incremental BM25 index: the text side of a semantic namespace's hybrid recall.

Batch BM25 libraries build once and score a fixed corpus; a namespace changes on every
STORE, DEL, expiry and eviction, so this index is updated one document at a time (add and
remove are O(terms of the document)) and scores straight from its postings with numpy.

Documents are integers (a namespace uses each fact's index label, and a posting of tf 1
is that very int object, so a term held by one fact costs no int of its own). The index
keeps no copy of a document's terms: the caller removes a document by handing back the terms it
was added with (it re-tokenizes the fact, which the tokenizer makes deterministic).

Tokenization (the same for facts and queries, apart from compounds, see below):

* text is UTF-8 (undecodable bytes become separators), normalised to NFKC (full-width
  letters and digits, ligatures) and case-folded (``str.casefold``: ``Straße`` = ``STRASSE``);
* a *word* is a run of Unicode letters and digits (``[^\\W_]+``); Han ideographs and
  Hiragana, which are written without spaces, are one word per character;
* words joined by one of ``- _ . , : / @ & '`` with no space (``INV-2024-0042``,
  ``1,250.00``, ``bob@acme.com``, ``2024-03-15``) form a *compound*. A fact is indexed
  under the whole compound **and** under each of its words, so ``0042`` finds it too. A
  query looks a compound up whole when some fact holds it whole (an exact id or amount
  then matches only the facts that contain it), and by its words otherwise;
* a small stop-word list (:data:`STOP_WORDS`, Lucene's English list without ``no`` and
  ``not``, which change a fact's meaning) is left out of plain words and compound parts;
* plain ASCII words longer than three letters lose an English plural ending (the
  "S-stemmer": ``invoices`` -> ``invoice``, ``companies`` -> ``company``); other scripts
  are left as they are. There is no other stemming.

Scoring is BM25 "Okapi" with Lucene's IDF, which is never negative::

    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(D, Q) = sum over distinct terms t of Q present in D of
                  idf(t) * tf(t, D) * (k1 + 1) / (tf(t, D) + k1 * (1 - b + b * |D| / avgdl))

with ``k1 = 1.2``, ``b = 0.75``, ``N`` the documents indexed (facts with no words
included), ``|D|`` the terms indexed for D (compounds and their parts both count) and
``avgdl`` the mean of ``|D|``. A query term repeated counts once.
"""

from __future__ import annotations

import math
import re
import unicodedata
from array import array
from collections import Counter
from collections.abc import Callable, Iterable

import numpy as np

K1 = 1.2
B = 0.75

#: left out of plain words and compound parts (Lucene's English stop set minus no / not)
STOP_WORDS: frozenset[str] = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
    "it", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they",
    "this", "to", "was", "will", "with",
})

# Han ideographs (with extensions and compatibility forms) and Hiragana: one token each
_SINGLE_CHARS = re.compile(
    "([\u3040-\u309f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f])"
)
_WORD = r"[^\W_]+"
_JOINERS = "-_.,:/@&'\u2019"
_COMPOUND = re.compile(rf"{_WORD}(?:[{re.escape(_JOINERS)}]{_WORD})*")
_PARTS = re.compile(_WORD)


def _normalise(text: bytes | str) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = unicodedata.normalize("NFKC", text).casefold()
    if not text.isascii():
        text = _SINGLE_CHARS.sub(r" \1 ", text)
    return text


def _stem(word: str) -> str:
    """English plural folding (Harman's S-stemmer) for plain ASCII words of 4+ letters."""
    if len(word) <= 3 or word[-1] != "s" or not (word.isascii() and word.isalpha()):
        return word
    if word.endswith("ies") and word[-4] not in "ae":
        return word[:-3] + "y"
    if word.endswith("es") and word[-3] not in "aeo":
        return word[:-1]
    if word[-2] in "us":
        return word
    return word[:-1]


#: word -> its term (None for a stop word): words repeat, so each is worked out once.
#: Words with a digit are their own term (no stop word or plural ending has one) and are
#: left out: they are the unbounded part of a vocabulary (ids, amounts, dates), and caching
#: each one cost some 40 bytes per fact for a word usually seen once.
_WORD_TERMS: dict[str, str | None] = {}
_WORD_TERMS_MAX = 200_000


def _word_term(word: str) -> str | None:
    if not word.isalpha():  # has a digit: itself (see _stem and STOP_WORDS)
        return word
    term = _WORD_TERMS.get(word, word)
    if term is not word:
        return term
    term = None if word in STOP_WORDS else _stem(word)
    if len(_WORD_TERMS) >= _WORD_TERMS_MAX:
        _WORD_TERMS.clear()  # unbounded vocabularies (ids, amounts) must not grow it forever
    _WORD_TERMS[word] = term
    return term


def doc_terms(text: bytes | str) -> list[str]:
    """The terms a document is indexed under (repeats kept: they are its term counts)."""
    terms: list[str] = []
    add = terms.append
    word_term = _word_term
    for compound in _COMPOUND.findall(_normalise(text)):
        if compound.isalnum():  # one word (the common case)
            term = word_term(compound)
            if term is not None:
                add(term)
            continue
        parts = _PARTS.findall(compound)
        if len(parts) > 1:
            add(compound)
        for part in parts:
            term = word_term(part)
            if term is not None:
                add(term)
    return terms


def query_terms(text: bytes | str, known: Callable[[str], bool] | None = None) -> list[str]:
    """The distinct terms of a query. A compound is looked up whole when ``known`` says an
    indexed document holds it, else by its words (always whole without ``known``)."""
    terms: dict[str, None] = {}
    for compound in _COMPOUND.findall(_normalise(text)):
        parts = _PARTS.findall(compound)
        if len(parts) > 1 and (known is None or known(compound)):
            terms[compound] = None
            continue
        for part in parts:
            term = _word_term(part)
            if term is not None:
                terms[term] = None
    return list(terms)


def idf(docs: int, df: int) -> float:
    """Lucene's BM25 IDF (never negative)."""
    return math.log(1.0 + (docs - df + 0.5) / (df + 0.5))


# A posting is one integer, ``(tf - 1) << 32 | doc``: for the usual tf of 1 that is the
# document number itself, the very int object the caller passed (a namespace passes each
# fact's label, which the fact holds anyway). A term held by one document (most ids,
# amounts and dates) keeps that integer as it is; a term of several keeps an array of them
# (unordered): 4-byte ("I") while every tf is 1, 8-byte ("Q") from the first tf above 1.
# That is about 100 bytes per distinct term instead of some 300, and 4 bytes per posting.
_DOC_MASK = 0xFFFFFFFF
_TF_MAX = 0xFFFFFFFF
Postings = int | array


def _entry(doc: int, tf: int) -> int:
    return doc if tf == 1 else min(tf - 1, _TF_MAX) << 32 | doc


def _add_posting(postings: dict[str, Postings], term: str, doc: int, tf: int) -> None:
    entry = _entry(doc, tf)
    held = postings.get(term)
    if held is None:
        postings[term] = entry
    elif isinstance(held, int):
        narrow = held <= _DOC_MASK and entry <= _DOC_MASK
        postings[term] = array("I" if narrow else "Q", (held, entry))
    elif held.typecode == "I" and entry > _DOC_MASK:  # the first tf above 1: widen
        wide = array("Q")
        wide.frombytes(np.frombuffer(held, dtype=np.uint32).astype(np.uint64).tobytes())
        wide.append(entry)
        postings[term] = wide
    else:
        held.append(entry)


def _docs_and_tfs(postings: Postings) -> tuple[np.ndarray, np.ndarray]:
    """Documents (intp) and term counts (float64) of the postings, as copies (a live view
    would stop the array growing)."""
    if isinstance(postings, int):
        return (np.array([postings & _DOC_MASK], dtype=np.intp),
                np.array([(postings >> 32) + 1], dtype=np.float64))
    if postings.typecode == "I":
        docs = np.array(postings, dtype=np.intp)
        return docs, np.ones(len(docs))
    entries = np.array(postings, dtype=np.uint64)
    return ((entries & np.uint64(_DOC_MASK)).astype(np.intp),
            (entries >> np.uint64(32)).astype(np.float64) + 1.0)


class TextIndex:
    """BM25 over integer documents, updated one document at a time."""

    def __init__(self, k1: float = K1, b: float = B) -> None:
        self.k1 = k1
        self.b = b
        self._postings: dict[str, Postings] = {}
        self._lengths = array("I")  # terms per document, by document number
        self.docs = 0
        self.total_terms = 0

    # --- updates ----------------------------------------------------------------------
    def add(self, doc: int, terms: Iterable[str]) -> None:
        """Index ``doc`` (which must not be indexed) under ``terms`` (see :func:`doc_terms`)."""
        counts = Counter(terms)
        postings = self._postings
        for term, tf in counts.items():
            _add_posting(postings, term, doc, tf)
        lengths = self._lengths
        if doc >= len(lengths):  # grow by doubling: labels mostly arrive one by one
            grow = max(doc + 1, 2 * len(lengths)) - len(lengths)
            lengths.extend(array("I", bytes(lengths.itemsize * grow)))
        length = sum(counts.values())
        lengths[doc] = length
        self.docs += 1
        self.total_terms += length

    def remove(self, doc: int, terms: Iterable[str]) -> None:
        """Forget ``doc``, given the ``terms`` it was added with."""
        postings = self._postings
        for term, tf in Counter(terms).items():
            held = postings[term]
            if isinstance(held, int):
                del postings[term]
                continue
            i = _position(held, _entry(doc, tf))
            last = len(held) - 1
            if i != last:  # order does not matter: move the last entry into the hole
                held[i] = held[last]
            held.pop()
            if len(held) == 1:
                postings[term] = held[0]
        length = self._lengths[doc]
        self._lengths[doc] = 0
        self.docs -= 1
        self.total_terms -= length

    # --- reads ------------------------------------------------------------------------
    def __contains__(self, term: str) -> bool:
        return term in self._postings

    def df(self, term: str) -> int:
        held = self._postings.get(term)
        if held is None:
            return 0
        return 1 if isinstance(held, int) else len(held)

    def terms(self) -> int:
        """Distinct terms held."""
        return len(self._postings)

    def query(self, text: bytes | str) -> list[str]:
        """The terms of a query against this index (compounds resolved, see module notes)."""
        return query_terms(text, self._postings.__contains__)

    def scores(self, terms: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(docs, scores)`` of every document matching at least one term (unordered)."""
        if not self.docs or not self.total_terms:
            return np.zeros(0, dtype=np.intp), np.zeros(0)
        n = self.docs
        k1, b = self.k1, self.b
        avgdl = self.total_terms / n
        lengths = np.array(self._lengths, dtype=np.float64)
        acc = np.zeros(len(lengths))
        for term in dict.fromkeys(terms):
            held = self._postings.get(term)
            if held is None:
                continue
            docs, tf = _docs_and_tfs(held)
            weight = idf(n, len(docs))
            acc[docs] += weight * tf * (k1 + 1.0) / (
                tf + k1 * (1.0 - b + b * lengths[docs] / avgdl))
        hit = np.flatnonzero(acc)
        return hit, acc[hit]

    def score(self, terms: Iterable[str], doc_terms_: Iterable[str]) -> float:
        """The score of one indexed document, given the terms it was added with."""
        counts = Counter(doc_terms_)
        if not self.docs or not self.total_terms:
            return 0.0
        length = sum(counts.values())
        avgdl = self.total_terms / self.docs
        k1, b = self.k1, self.b
        total = 0.0
        for term in dict.fromkeys(terms):
            tf = counts.get(term, 0)
            if tf:
                total += (idf(self.docs, self.df(term)) * tf * (k1 + 1.0)
                          / (tf + k1 * (1.0 - b + b * length / avgdl)))
        return total

    # --- bulk -------------------------------------------------------------------------
    @classmethod
    def build(cls, documents: Iterable[tuple[int, list[str]]]) -> TextIndex:
        """An index of many documents at once (a namespace loaded from a snapshot)."""
        index = cls()
        postings = index._postings
        lengths: dict[int, int] = {}
        total = 0
        for doc, terms in documents:
            for term, tf in Counter(terms).items():
                _add_posting(postings, term, doc, tf)
            lengths[doc] = len(terms)
            total += len(terms)
        if lengths:
            table = [0] * (max(lengths) + 1)
            for doc, length in lengths.items():
                table[doc] = length
            index._lengths = array("I", table)
        index.docs = len(lengths)
        index.total_terms = total
        return index


def _position(held: array, entry: int) -> int:
    """Where ``entry`` (a document's posting, known exactly) is in a postings array."""
    if len(held) < 64:
        return held.index(entry)
    # the temporary view is released before the caller changes the array
    i = int(np.argmax(np.frombuffer(held, dtype=f"u{held.itemsize}") == entry))
    if held[i] != entry:
        raise KeyError(entry)
    return i
