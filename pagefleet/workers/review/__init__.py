"""Reviewer decisions and what they change downstream (the review loop).

decisions    review.json (schema 2): approve / reject / flag per page, each with reviewer, time,
             note, reason and the hash of the page text it was made on; staleness
corrections  a corrected text (or table cells) → an edit map on `raw_text`, kind `review`,
             composed onto the page's own edits; block offsets carried through the correction
store        review.json read and written so that a concurrent reviewer is never lost (a lock
             file on a local folder, a conditional put on the ETag on S3)
reviewed     THE function that turns document.json + review.json into the reviewed artifacts
             (document.reviewed.json, document.reviewed.md, text.reviewed.txt, chunks.jsonl,
             report.json's review counts and status); the CLI, the studio and the fleet call it
"""
