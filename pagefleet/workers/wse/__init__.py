"""Word Shape Encoding (seed 000, issue 10): let strong left-to-right parsers read RTL tables.

shapes    English words by box shape at 10 pt (Helvetica = Arial metrics), a KD-tree per weight
words     a page's words with boxes, style and repaired text
mapping   one token per distinct word; the JSON stored beside an encoded PDF
mirror    the page without its text, mirrored; words drawn at their mirrored places
encode    encode_pdf / encode_document
parsers   LTR parsers by name (pymupdf table finder, pymupdf4llm)
decode    parser output → original words (exact, glued, Levenshtein)
recover   recover_tables_wse (the structured-recovery route), run_wse / run_direct
child     the route in a sandboxed child for pagefleet.workers.ladder.recovery
metrics   cell accuracy and TEDS for bench/wse_eval.py
"""
