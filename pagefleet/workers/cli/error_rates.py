"""Error rates of a reading against its reference text, both NFKC-folded with their whitespace
collapsed: CER and WER (order-sensitive edit distances) and the bag error (order-free, 1 − F1 of
the word multisets). `pagefleet eval` and `make eval-ocr` report them.
"""

from __future__ import annotations

import unicodedata


def fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split())


def cer(hypothesis: str, reference: str) -> float:
    from rapidfuzz.distance import Levenshtein

    ref = fold(reference)
    return Levenshtein.distance(fold(hypothesis), ref) / max(len(ref), 1)


def wer(hypothesis: str, reference: str) -> float:
    """Word error rate: word-level edit distance over the reference's word count (folded text)."""
    from rapidfuzz.distance import Levenshtein

    ref = fold(reference).split()
    return Levenshtein.distance(fold(hypothesis).split(), ref) / max(len(ref), 1)


def bag_error(hypothesis: str, reference: str) -> float:
    """1 − F1 of the word multisets: an order-free view (tables are read in different orders)."""
    from collections import Counter as Bag

    hyp, ref = Bag(fold(hypothesis).split()), Bag(fold(reference).split())
    common = sum((hyp & ref).values())
    if not common:
        return 1.0
    precision, recall = common / sum(hyp.values()), common / sum(ref.values())
    return 1 - 2 * precision * recall / (precision + recall)
