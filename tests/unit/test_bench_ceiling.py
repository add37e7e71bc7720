"""bench/bench_ceiling.py: rung 1 alone covers every page exactly once, whole documents split by
page and files dealt out whole, and really reads and decides them (real MuPDF, real gate, two
real processes). No timing is asserted."""

from __future__ import annotations

from pathlib import Path

from bench.bench_ceiling import document_jobs, file_jobs, rung1_alone
from tests.support.pdfs import text_pages


def test_document_jobs_cover_every_page_once() -> None:
    jobs = document_jobs(Path("doc.pdf"), 7, 2)
    assert jobs == [[("doc.pdf", 1, 3)], [("doc.pdf", 4, 7)]]
    covered = [
        p for (job,) in document_jobs(Path("doc.pdf"), 1000, 3) for p in range(job[1], job[2] + 1)
    ]
    assert covered == list(range(1, 1001))


def test_file_jobs_deal_whole_files_in_turn() -> None:
    files = [Path(f"{i}.pdf") for i in range(5)]
    jobs = file_jobs(files, 2)
    assert [[j[0] for j in job] for job in jobs] == [
        ["0.pdf", "2.pdf", "4.pdf"],
        ["1.pdf", "3.pdf"],
    ]
    assert all(first == 1 and last >= 1 for job in jobs for _, first, last in job)


def test_rung1_alone_reads_and_decides_every_page(tmp_path: Path) -> None:
    doc = text_pages(tmp_path / "doc.pdf", 5)
    one = [text_pages(tmp_path / f"one{i}.pdf", 1) for i in range(3)]
    wall, pages, cpu = rung1_alone(document_jobs(doc, 5, 2))
    assert pages == 5 and wall > 0 and cpu > 0
    assert rung1_alone(file_jobs(one, 2))[1] == 3
