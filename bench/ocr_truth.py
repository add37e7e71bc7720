"""OCR ground truth: pages rendered from known logical text, degraded the ways real scans are.

    known sentences (bench/ocr_texts.py) ─► HTML, PyMuPDF `insert_htmlbox` (HarfBuzz shaping,
    DejaVu Sans: Hebrew, Arabic, Latin) ─► grayscale raster at 150/200/300 DPI
    ─► show-through · skew ±3° · blur · low contrast · noise · JPEG ─► image-only PDF at its DPI

Every page is seeded from (seed, index): every run writes the same pixels and the same text.
`truth.json` lists, per page: id, kind (he, ar, en, mixed_he, mixed_ar), the Tesseract language
data the fleet's CPU chain uses for it, variant, dpi, the PDF and PNG names and the logical text.

    python bench/ocr_truth.py OUT [--seed 12] [--quick]
"""

from __future__ import annotations

import argparse
import io
import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pymupdf
from PIL import Image, ImageFilter

from bench.ocr_texts import LANGS, POOLS

FONT_DIR = "/usr/share/fonts/truetype/dejavu"
FONTS = ("DejaVuSans.ttf", "DejaVuSansCondensed.ttf")
PAGE_W, PAGE_H = 595.0, 842.0  # A4 in points, filled as a real scanned page is
MARGIN = 56.0
KINDS = ("he", "ar", "en", "mixed")  # "mixed" alternates mixed_he / mixed_ar


@dataclass(frozen=True)
class Variant:
    name: str
    dpi: int
    blur: float = 0.0  # Gaussian radius in pixels at 300 DPI (scaled to the page's DPI)
    noise: float = 0.0  # Gaussian sigma in grey levels
    skew: float = 0.0  # degrees, counter-clockwise
    jpeg: int = 0  # JPEG quality, 0: lossless
    contrast: float = 1.0  # 1: black on white; lower: grey ink on grey paper
    show_through: float = 0.0  # opacity of the mirrored back page


VARIANTS = (
    Variant("clean300", 300),
    Variant("clean200", 200),
    Variant("clean150", 150),
    Variant("blur300", 300, blur=1.6),
    Variant("noise200", 200, noise=22),
    Variant("skew+2.5_300", 300, skew=2.5),
    Variant("skew-3_200", 200, skew=-3.0),
    Variant("jpeg150", 150, jpeg=30),
    Variant("lowcontrast300", 300, contrast=0.4),
    Variant("showthrough200", 200, show_through=0.28),
    Variant("blur_noise150", 150, blur=1.0, noise=14),
    Variant("skew+1.5_jpeg200", 200, skew=1.5, jpeg=40),
    Variant("lowcontrast_noise300", 300, contrast=0.45, noise=12),
    Variant("skew-2_showthrough150", 150, skew=-2.0, show_through=0.22),
    Variant("blur_jpeg200", 200, blur=1.2, jpeg=45),
    Variant("worn300", 300, skew=1.0, blur=0.9, noise=10, jpeg=50, contrast=0.7, show_through=0.15),
)


@dataclass(frozen=True)
class TruthPage:
    id: str
    kind: str
    langs: str
    variant: str
    dpi: int
    pdf: str
    png: str
    text: str


def compose(kind: str, rng: random.Random) -> tuple[list[str], str]:
    """A heading and five paragraphs of known sentences (each used at most twice on a page), a
    mixed page's Latin paragraphs between its RTL ones; and the page direction."""
    main, second, direction = POOLS[kind]
    pool = rng.sample(main, k=len(main)) + rng.sample(main, k=len(main))
    size = 4 if second else 5
    paragraphs = [pool[0].rstrip(".")] + [
        " ".join(pool[1 + i * size : 1 + (i + 1) * size]) for i in range(5)
    ]
    if second:
        extra = rng.sample(second, k=len(second))
        for i, at in enumerate((2, 4, 6)):
            paragraphs.insert(at, " ".join(extra[i * 3 : i * 3 + 3]))
    return [p for p in paragraphs if p], direction


def page_html(paragraphs: list[str], direction: str, kinds: list[str]) -> str:
    parts = []
    for i, (text, para_dir) in enumerate(zip(paragraphs, kinds)):
        tag = "h3" if i == 0 else "p"
        align = "right" if para_dir == "rtl" else "left"
        parts.append(f'<{tag} dir="{para_dir}" style="text-align:{align}">{text}</{tag}>')
    return "\n".join(parts)


def paragraph_dirs(paragraphs: list[str], kind: str, direction: str) -> list[str]:
    """A mixed page's English paragraph runs left to right; everything else follows the page."""
    if not kind.startswith("mixed"):
        return [direction] * len(paragraphs)
    english = set(POOLS["en"][0])
    return ["ltr" if all(s in english for s in _sentences(p)) else direction for p in paragraphs]


def _sentences(paragraph: str) -> list[str]:
    return [s if s.endswith(".") else s + "." for s in paragraph.replace(". ", ".\n").splitlines()]


def render_text(
    paragraphs: list[str], kind: str, direction: str, dpi: int, font: str, size: float
) -> tuple[np.ndarray, list[str]]:
    """The clean page: shaped text rasterised in grayscale at `dpi`, and the paragraphs on it (the
    last ones dropped until the rest fit the page)."""
    css = (
        f"@font-face {{font-family: body; src: url({font});}} "
        f"body {{font-family: body; font-size: {size}pt; line-height: 1.45;}} h3 {{font-size: {size + 3}pt;}}"
    )
    doc = pymupdf.open()
    while True:
        html = page_html(paragraphs, direction, paragraph_dirs(paragraphs, kind, direction))
        page = doc.new_page(width=PAGE_W, height=PAGE_H)
        spare, _ = page.insert_htmlbox(
            pymupdf.Rect(MARGIN, MARGIN, PAGE_W - MARGIN, PAGE_H - MARGIN),
            html,
            css=css,
            archive=pymupdf.Archive(FONT_DIR),
            scale_low=1,
        )
        if spare >= 0 or len(paragraphs) <= 2:
            break
        doc.delete_page(-1)
        paragraphs = paragraphs[:-1]
    pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
    return np.frombuffer(pix.samples, dtype=np.uint8).reshape(
        pix.height, pix.width
    ).copy(), paragraphs


def degrade(
    img: np.ndarray, v: Variant, rng: np.random.Generator, back: np.ndarray | None
) -> np.ndarray:
    """Show-through, skew, blur, low contrast, noise — in the order a scanner meets them."""
    out = img.astype(np.float32)
    if v.show_through and back is not None:
        ghost = Image.fromarray(back[:, ::-1]).filter(ImageFilter.GaussianBlur(1.5 * v.dpi / 300))
        out *= 1.0 - v.show_through * (1.0 - np.asarray(ghost, dtype=np.float32) / 255.0)
    if v.skew:
        pil = Image.fromarray(out.clip(0, 255).astype(np.uint8))
        out = np.asarray(
            pil.rotate(v.skew, resample=Image.Resampling.BICUBIC, fillcolor=255), dtype=np.float32
        )
    if v.blur:
        pil = Image.fromarray(out.clip(0, 255).astype(np.uint8))
        out = np.asarray(
            pil.filter(ImageFilter.GaussianBlur(v.blur * v.dpi / 300)), dtype=np.float32
        )
    if v.contrast < 1.0:
        paper, ink = 236.0, 236.0 - 236.0 * v.contrast
        out = ink + (paper - ink) * out / 255.0
    if v.noise:
        out += rng.normal(0.0, v.noise, size=out.shape).astype(np.float32)
    return out.clip(0, 255).astype(np.uint8)


def encode(img: np.ndarray, v: Variant) -> tuple[bytes, np.ndarray]:
    """The bytes the PDF embeds (JPEG for a JPEG variant, else PNG) and the pixels they decode to."""
    pil = Image.fromarray(img)
    buf = io.BytesIO()
    if v.jpeg:
        pil.save(buf, format="JPEG", quality=v.jpeg)
        data = buf.getvalue()
        return data, np.asarray(Image.open(io.BytesIO(data)).convert("L"))
    pil.save(buf, format="PNG", dpi=(v.dpi, v.dpi))
    return buf.getvalue(), img


def wrap_pdf(data: bytes, width_px: int, height_px: int, dpi: int, path: Path) -> None:
    """An image-only PDF whose one image fills the page at its own DPI."""
    doc = pymupdf.open()
    page = doc.new_page(width=width_px * 72.0 / dpi, height=height_px * 72.0 / dpi)
    page.insert_image(page.rect, stream=data)
    doc.set_metadata(
        {"producer": "pagefleet ocr_truth", "creator": "", "creationDate": "", "modDate": ""}
    )
    doc.save(path, garbage=3, deflate=True, no_new_id=True)
    doc.close()


def page_kind(kind: str, index: int) -> str:
    return ("mixed_he", "mixed_ar")[(index // 4) % 2] if kind == "mixed" else kind


def make_page(out: Path, index: int, kind: str, v: Variant, seed: int) -> TruthPage:
    rng = random.Random(seed * 100_003 + index)
    font, size = rng.choice(FONTS), rng.choice((11.0, 12.0, 13.0))
    paragraphs, direction = compose(kind, rng)
    clean, paragraphs = render_text(paragraphs, kind, direction, v.dpi, font, size)
    back = None
    if v.show_through:
        back_paragraphs, _ = compose(kind, rng)
        back, _ = render_text(back_paragraphs, kind, direction, v.dpi, font, size)
    img = degrade(clean, v, np.random.default_rng(seed * 100_003 + index), back)
    data, pixels = encode(img, v)
    page_id = f"{index:03d}_{kind}_{v.name}"
    Image.fromarray(pixels).save(out / f"{page_id}.png", dpi=(v.dpi, v.dpi))
    wrap_pdf(data, img.shape[1], img.shape[0], v.dpi, out / f"{page_id}.pdf")
    text = "\n".join(paragraphs)
    return TruthPage(
        page_id, kind, LANGS[kind], v.name, v.dpi, f"{page_id}.pdf", f"{page_id}.png", text
    )


def plan(quick: bool = False) -> list[tuple[int, str, Variant]]:
    """(index, kind, variant) for every page: every kind under every variant; `quick` keeps a
    quarter that still covers every kind, every DPI and every degradation."""
    items = []
    for k, kind in enumerate(KINDS):
        for j, v in enumerate(VARIANTS):
            index = k * len(VARIANTS) + j
            items.append((index, page_kind(kind, j), v))
    if quick:
        items = [it for it in items if (it[0] % len(VARIANTS)) % 4 == it[0] // len(VARIANTS)]
    return items


def generate(out: Path, *, seed: int = 12, quick: bool = False) -> list[TruthPage]:
    out.mkdir(parents=True, exist_ok=True)
    pages = [make_page(out, index, kind, v, seed) for index, kind, v in plan(quick)]
    (out / "truth.json").write_text(
        json.dumps([asdict(p) for p in pages], ensure_ascii=False, indent=1), encoding="utf-8"
    )
    return pages


def load(out: Path) -> list[TruthPage]:
    return [
        TruthPage(**item) for item in json.loads((out / "truth.json").read_text(encoding="utf-8"))
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--quick", action="store_true", help="16 pages instead of 64")
    args = parser.parse_args()
    pages = generate(Path(args.out), seed=args.seed, quick=args.quick)
    print(f"{len(pages)} pages in {args.out}")


if __name__ == "__main__":
    main()
