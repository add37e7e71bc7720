"""Structure decisions over plain data (no I/O, no PDF library): what a page's lines are.

lines (text, box, font size, bold)          from the text layer, OCR TSV or a VLM's Markdown
    │
    ├─ furniture.py     running headers / footers / page numbers, by repetition across pages
    ├─ headings.py      heading levels from document-level font statistics
    ├─ markers.py       list markers: bullets, Latin / Arabic-Indic numbers, Hebrew and Arabic letters
    ├─ reading_order.py reading order: columns by XY-cut, right to left on RTL pages
    ├─ grid.py          ruled tables from vector paths: rulings → corners → cells → tables
    ├─ tables.py        cells in logical order, GFM Markdown, aligned-row (unruled table) evidence
    └─ blocks.py        lines → blocks {type, text, bbox, direction, start, end}
offsets.py            display offsets ↔ raw offsets through the edit map (citations replay)
chunking.py           heading-aware chunks of accepted pages with citations
"""
