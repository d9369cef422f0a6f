"""The BM25 text index: tokenization, and scores equal to a textbook BM25 written here."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from hotkv_server.stores.text import STOP_WORDS, TextIndex, doc_terms, query_terms

# --- tokenization ----------------------------------------------------------------------------


def test_words_are_case_folded_and_stop_words_left_out() -> None:
    assert doc_terms(b"The Refund is issued WITHIN five days") == [
        "refund", "issued", "within", "five", "day"]
    assert doc_terms("Straße") == doc_terms("STRASSE") == ["strasse"]
    assert doc_terms("not no") == ["not", "no"]  # negations are kept
    assert "the" in STOP_WORDS and "not" not in STOP_WORDS


def test_unicode_words_nfkc_and_ideographs() -> None:
    # full-width letters and digits fold to ASCII, half-width katakana to full-width
    assert doc_terms("\uff21\uff22\uff23\uff11\uff12 \uff83\uff7d\uff84") == ["abc12", "テスト"]
    # Han and Hiragana are written without spaces: one term per character
    assert doc_terms("東京都の天気") == ["東", "京", "都", "の", "天", "気"]
    assert doc_terms("Ünïcödé café naïve") == ["ünïcödé", "café", "naïve"]
    # bytes that are not UTF-8 are separators, never an error
    assert doc_terms(b"abc\xffdef") == ["abc", "def"]


def test_compounds_are_indexed_whole_and_by_their_words() -> None:
    assert doc_terms("Invoice INV-2024-0042 totals $1,250.00.") == [
        "invoice", "inv-2024-0042", "inv", "2024", "0042", "total", "1,250.00", "1", "250", "00"]
    assert doc_terms("mail bob@acme.com on 2024-03-15") == [
        "mail", "bob@acme.com", "bob", "acme", "com", "2024-03-15", "2024", "03", "15"]
    # a trailing joiner is punctuation, not part of the word
    assert doc_terms("end. next, -dash") == ["end", "next", "dash"]


def test_plural_folding_only_for_plain_ascii_words() -> None:
    assert doc_terms("invoices companies boxes days status class bus") == [
        "invoice", "company", "boxe", "day", "status", "class", "bus"]
    assert doc_terms("les cafés") == ["les", "cafés"]  # 3 letters / not ASCII: unchanged


def test_query_compounds_resolve_against_the_index() -> None:
    assert query_terms("INV-2024-0042 invoices the") == ["inv-2024-0042", "invoice"]
    known = {"inv-2024-0042"}.__contains__
    assert query_terms("INV-2024-0042", known) == ["inv-2024-0042"]
    # a compound no fact holds whole is searched by its words
    assert query_terms("INV-2024-9999", known) == ["inv", "2024", "9999"]
    # repeated terms count once
    assert query_terms("refund refund Refunds") == ["refund"]


# --- the reference: textbook BM25 (Okapi, Lucene's IDF) over token lists ------------------

K1, B = 1.2, 0.75


def reference_bm25(corpus: dict[int, list[str]], query: list[str]) -> dict[int, float]:
    """Every document's score, straight from the definition (no index)."""
    n = len(corpus)
    avgdl = sum(len(d) for d in corpus.values()) / n
    scores: dict[int, float] = {}
    for doc, terms in corpus.items():
        tf = Counter(terms)
        total = 0.0
        for q in dict.fromkeys(query):
            if tf[q] == 0:
                continue
            df = sum(1 for other in corpus.values() if q in other)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            total += idf * tf[q] * (K1 + 1) / (tf[q] + K1 * (1 - B + B * len(terms) / avgdl))
        if total:
            scores[doc] = total
    return scores


CORPUS = [
    "Invoice INV-2024-0042 for Acme Corp totals 1,250.00 EUR, due 2024-03-15.",
    "Invoice INV-2024-0043 for Globex totals 99.00 EUR.",
    "Acme Corp prefers invoices by email to billing@acme.com.",
    "The user prefers short answers and dislikes emojis.",
    "Refunds are issued within 5 business days; refunds over 1,000.00 EUR need approval.",
    "Globex pays by bank transfer, usually late.",
    "Support is open on weekdays from 9 to 17.",
    "Acme Acme Acme: a customer since 2019.",
    "",
    "東京都の天気は晴れ",
]
QUERIES = ["acme invoice", "INV-2024-0042", "refund EUR", "globex late payment",
           "prefers answers", "1,250.00", "天気", "nothing matches this", "the of and"]


def scores_of(index: TextIndex, query: list[str]) -> dict[int, float]:
    docs, scores = index.scores(query)
    return dict(zip(docs.tolist(), scores.tolist(), strict=True))


def assert_matches_reference(index: TextIndex, corpus: dict[int, list[str]]) -> None:
    for text in QUERIES:
        query = index.query(text)
        got = scores_of(index, query)
        want = reference_bm25(corpus, query)
        assert got.keys() == want.keys(), text
        for doc, score in want.items():
            assert got[doc] == pytest.approx(score, rel=1e-12), (text, doc)
            assert index.score(query, corpus[doc]) == pytest.approx(score, rel=1e-12)


def test_scores_equal_the_reference_on_a_fixed_corpus() -> None:
    corpus = {doc: doc_terms(text) for doc, text in enumerate(CORPUS)}
    index = TextIndex()
    for doc, terms in corpus.items():
        index.add(doc, terms)
    assert index.docs == len(CORPUS)
    assert_matches_reference(index, corpus)
    # a hand-checked value: "globex" is in 2 of 10 documents, once in doc 5 (6 terms, "by" is a stop word)
    avgdl = sum(len(t) for t in corpus.values()) / 10
    idf = math.log(1 + (10 - 2 + 0.5) / (2 + 0.5))
    want = idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 6 / avgdl))
    assert len(corpus[5]) == 6
    assert scores_of(index, ["globex"])[5] == pytest.approx(want, rel=1e-12)


def test_bulk_build_equals_one_by_one() -> None:
    corpus = {doc * 3: doc_terms(text) for doc, text in enumerate(CORPUS)}
    built = TextIndex.build(corpus.items())
    assert_matches_reference(built, corpus)
    assert built.terms() == len({t for terms in corpus.values() for t in terms})


def test_updates_and_removals_match_a_rebuilt_reference() -> None:
    rnd = random.Random(7)
    words = ["acme", "globex", "invoice", "refund", "eur", "INV-1", "INV-2", "late", "paid",
             "東京", "answers", "prefers"]
    index = TextIndex()
    corpus: dict[int, list[str]] = {}
    for step in range(400):
        doc = rnd.randrange(40)
        if doc in corpus and rnd.random() < 0.4:
            index.remove(doc, corpus.pop(doc))
        else:
            terms = doc_terms(" ".join(rnd.choices(words, k=rnd.randrange(0, 9))))
            if doc in corpus:  # a replacement: out with the old terms, in with the new
                index.remove(doc, corpus[doc])
            index.add(doc, terms)
            corpus[doc] = terms
        if step % 50 == 49 and corpus:
            assert index.docs == len(corpus)
            assert index.total_terms == sum(len(t) for t in corpus.values())
            for query in (["acme"], ["invoice", "eur"], ["inv-1", "late"], ["東", "paid"]):
                got = scores_of(index, query)
                want = reference_bm25(corpus, query)
                assert got.keys() == want.keys()
                for d, s in want.items():
                    assert got[d] == pytest.approx(s, rel=1e-12)
    for doc in list(corpus):
        index.remove(doc, corpus.pop(doc))
    assert index.docs == 0 and index.total_terms == 0 and index.terms() == 0
    assert len(index.scores(["acme"])[0]) == 0


def test_empty_documents_count_in_n_but_never_match() -> None:
    index = TextIndex()
    index.add(0, [])
    assert len(index.scores(["x"])[0]) == 0
    index.add(5, ["x"])
    assert scores_of(index, ["x"]) == pytest.approx(
        {5: math.log(1 + 1.5 / 1.5) * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 1 / 0.5))})


def test_long_postings_and_term_counts_survive_removals() -> None:
    """Terms held by hundreds of documents (the numpy lookup) and by one (a bare integer)."""
    rnd = random.Random(3)
    index = TextIndex()
    corpus: dict[int, list[str]] = {}
    for doc in range(500):
        corpus[doc] = ["common"] * (1 + doc % 4) + [f"id-{doc}", "half" if doc % 2 else "other"]
        index.add(doc, corpus[doc])
    for doc in rnd.sample(range(500), 300):
        index.remove(doc, corpus.pop(doc))
    assert index.df("common") == 200
    assert index.df("half") == sum(1 for d in corpus if d % 2)
    assert index.terms() == len({t for terms in corpus.values() for t in terms})
    for query in (["common"], ["half", "id-7"], ["other", "common"]):
        got = scores_of(index, query)
        want = reference_bm25(corpus, query)
        assert got.keys() == want.keys()
        for doc, score in want.items():
            assert got[doc] == pytest.approx(score, rel=1e-12)
    assert {index.df(f"id-{doc}") for doc in range(500)} == {0, 1}
