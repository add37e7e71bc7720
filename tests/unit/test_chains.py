"""Routing decisions are values: hint first, then visual votes in order, then the safe default."""

from __future__ import annotations

from pagefleet.routing.chains import VisualVote, decide, reads_script
from pagefleet.workers.engines.base import scripts_by_entry
from pagefleet.workers.settings import Chains

CHAINS = Chains().model_dump()


def test_text_layer_hint_wins() -> None:
    d = decide("he", 0.4, [VisualVote("osd", "latin", 9.0)], CHAINS, gpu=False)
    assert (d.source, d.script, d.margin, d.chain) == (
        "text_layer",
        "he",
        0.4,
        ("tesseract:heb+eng",),
    )


def test_first_decisive_visual_vote_wins() -> None:
    votes = [VisualVote("siglip2", None, None, "unavailable"), VisualVote("osd", "ar", 2.5)]
    d = decide(None, None, votes, CHAINS, gpu=True)
    assert (d.source, d.script) == ("osd", "ar")
    assert d.chain == ("dots", "qwen", "paddle:arabic", "tesseract:ara+eng")
    assert d.tried == ("siglip2:undecided", "osd:ar")


def test_nobody_decides_safe_default() -> None:
    d = decide(None, None, [VisualVote("osd", None)], CHAINS, gpu=False)
    assert (d.source, d.script, d.chain) == ("default", "default", ("tesseract:heb+ara+eng",))


def test_every_rtl_chain_ends_with_an_engine_that_reads_it() -> None:
    entries = [entry for chain in CHAINS.values() for entry in chain]
    reads = scripts_by_entry(entries)
    for script in ("he", "ar"):
        for gpu in (True, False):
            chain = decide(script, 0.5, [], CHAINS, gpu=gpu).chain
            assert reads_script(chain[-1], script, reads), (script, gpu, chain)


def test_engines_declare_what_they_read() -> None:
    reads = scripts_by_entry(
        [
            "tesseract:eng",
            "lightonocr",
            "paddle:arabic",
            "paddle",
            "tesseract:heb+ara+eng",
            "dots",
            "http:lightonocr",
            "http:some/model",
            "no-such-engine",
        ]
    )
    assert not reads_script("tesseract:eng", "he", reads) and not reads_script(
        "lightonocr", "ar", reads
    )
    assert reads_script("paddle:arabic", "ar", reads) and not reads_script("paddle", "ar", reads)
    assert reads_script("tesseract:heb+ara+eng", "he", reads) and reads_script(
        "tesseract:eng", "latin", reads
    )
    assert reads_script("dots", "he", reads) and not reads_script("http:lightonocr", "he", reads)
    assert reads_script("http:some/model", "ar", reads)
    assert reads["no-such-engine"] == frozenset()  # an unknown entry reads nothing
