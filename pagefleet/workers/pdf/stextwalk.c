/* pagefleet: rung 1's walk over MuPDF's structured text page, in C (issue 15).
 *
 * Built by `python -m pagefleet.workers.pdf.fastwalk build` against the MuPDF headers and library that ship
 * in the installed PyMuPDF wheel, loaded with ctypes by pagefleet/workers/pdf/fastwalk.py (the sandbox child
 * only). It reads MuPDF's structs; it never allocates MuPDF objects or keeps pointers.
 *
 *   pf_blocks    the visible boxes of the images a text page holds and its line count
 *                (pagefleet.workers.pdf.stext.walk)
 *   pf_abi       the version of these functions' signatures (fastwalk refuses another)
 *   pf_chars     the characters PyMuPDF's extractRAWDICT would give, with their boxes and origins,
 *                line by line; PF_FALLBACK where it cannot answer alone (a vertical line, a
 *                zero-width box PyMuPDF widens by the glyph's advance, a block kind rung 1 never
 *                asks for, a code point outside Unicode): the caller takes the Python path
 *   pf_text      the string extractText gives (PyMuPDF's plain text), or PF_FALLBACK where a
 *                character's box or code point would need PyMuPDF's own handling; asked to, PF_RTL
 *                where a character lies in a Hebrew or Arabic block (such a page is read from its
 *                characters, not from its plain text)
 *   pf_evidence  per line: the x-order of RTL letters, glyph clusters, shared-origin runs
 *                (pagefleet.workers.pdf.mupdf._rtl_order, glyph_clusters, _shared_position_runs)
 *   pf_reorders  per line: the order pagefleet.workers.pdf.runs.run_order would return (the geometry
 *                reads the line's units in another order and proves it), for the lines Python's
 *                text test (runs.may_reorder) lets through
 *   pf_glyphs    pf_chars's characters with what the row reading needs besides: each character's
 *                font size, each line's block, direction and box (the rawdict line's bbox)
 *   pf_rows      (stextrows.c) the rows pagefleet.workers.pdf.glyphlines reads from those characters
 *
 * Every comparison is made in double on the float values PyMuPDF hands to Python, so the results
 * equal the Python path's (tests/unit/test_fastwalk.py compares them page by page).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mupdf/fitz.h"

#define PF_FALLBACK (-1)
#define PF_SMALL (-2)
#define PF_RTL (-3)
#define ZERO 0.01

const char *pf_version(void) { return FZ_VERSION; }

int pf_abi(void) { return 3; }

/* Image boxes (4 floats each, up to cap) and the text line count (-1 where a line is empty or
 * ends in a newline or NUL). Returns the number of image blocks (more than cap: call again). */
int pf_blocks(const fz_stext_page *page, float *boxes, int cap, int *lines)
{
	int n = 0, count = 0;
	for (const fz_stext_block *b = page->first_block; b; b = b->next) {
		if (b->type == FZ_STEXT_BLOCK_IMAGE) {
			if (n < cap) {
				boxes[4 * n] = b->bbox.x0; boxes[4 * n + 1] = b->bbox.y0;
				boxes[4 * n + 2] = b->bbox.x1; boxes[4 * n + 3] = b->bbox.y1;
			}
			n++;
		} else if (b->type == FZ_STEXT_BLOCK_TEXT && count >= 0) {
			for (const fz_stext_line *l = b->u.t.first_line; l; l = l->next) {
				if (!l->last_char || l->last_char->c == 0 || l->last_char->c == 10) {
					count = -1;
					break;
				}
				count++;
			}
		}
	}
	*lines = count;
	return n;
}

static int rtl_block(int c)
{
	return (c >= 0x0590 && c <= 0x08FF) || (c >= 0xFB1D && c <= 0xFDFF) || (c >= 0xFE70 && c <= 0xFEFF);
}

/* 1 where a character of the page's text blocks lies in a Hebrew or Arabic block (letters, marks,
 * digits and presentation forms alike: a superset of the RTL letters rung 1 looks for), else 0. */
static int pf_rtl_hint(const fz_stext_page *page)
{
	for (const fz_stext_block *b = page->first_block; b; b = b->next) {
		if (b->type != FZ_STEXT_BLOCK_TEXT)
			continue;
		for (const fz_stext_line *l = b->u.t.first_line; l; l = l->next)
			for (const fz_stext_char *ch = l->first_char; ch; ch = ch->next) {
				if (rtl_block(ch->c))
					return 1;
			}
	}
	return 0;
}

static inline int overlaps(fz_rect a, fz_rect b) /* PyMuPDF's JM_rects_overlap */
{
	return !(a.x0 >= b.x1 || a.y0 >= b.y1 || a.x1 <= b.x0 || a.y1 <= b.y0);
}

/* MuPDF's fz_transform_quad for a quad of finite coordinates, operation for operation: each point
 * becomes (x * a + y * c) + e, (x * b + y * d) + f in float (the build turns off fused
 * multiply-adds, so every product is rounded as MuPDF's own are). A quad holding a NaN or an
 * infinity goes to MuPDF itself (it leaves some of those unchanged). A call per point cost more
 * than the walk around it: ~0.25 ms of a Latin page's ~0.5. */
static inline int finite_quad(fz_quad q)
{
	/* v - v is 0 for a finite v and NaN for an infinity or a NaN, which the sum carries */
	float z = (q.ul.x - q.ul.x) + (q.ul.y - q.ul.y) + (q.ur.x - q.ur.x) + (q.ur.y - q.ur.y) +
		(q.ll.x - q.ll.x) + (q.ll.y - q.ll.y) + (q.lr.x - q.lr.x) + (q.lr.y - q.lr.y);
	return z == 0;
}

static fz_point point_by(fz_point p, fz_matrix m)
{
	fz_point out;
	out.x = p.x * m.a + p.y * m.c + m.e;
	out.y = p.x * m.b + p.y * m.d + m.f;
	return out;
}

static inline fz_quad quad_by(fz_quad q, fz_matrix m)
{
	if (!finite_quad(q))
		return fz_transform_quad(q, m);
	q.ul = point_by(q.ul, m);
	q.ur = point_by(q.ur, m);
	q.ll = point_by(q.ll, m);
	q.lr = point_by(q.lr, m);
	return q;
}

#define MIN4(a, b, c, d) fz_min(fz_min(a, b), fz_min(c, d))
#define MAX4(a, b, c, d) fz_max(fz_max(a, b), fz_max(c, d))

/* fz_rect_from_quad for a quad of finite coordinates (its corners' extremes); MuPDF's own for any
 * other. */
static inline fz_rect quad_rect(fz_quad q)
{
	if (!finite_quad(q))
		return fz_rect_from_quad(q);
	fz_rect r;
	r.x0 = MIN4(q.ll.x, q.lr.x, q.ul.x, q.ur.x);
	r.y0 = MIN4(q.ll.y, q.lr.y, q.ul.y, q.ur.y);
	r.x1 = MAX4(q.ll.x, q.lr.x, q.ul.x, q.ur.x);
	r.y1 = MAX4(q.ll.y, q.lr.y, q.ul.y, q.ur.y);
	return r;
}

/* char_quad's four transforms on a line of direction (1, 0), float for float: x * 1 + y * 0 + e is
 * x + e (a zero's sign aside), and the rotations add 0, which makes a zero positive; so the quad is
 * shifted to the origin, plus 0, the new box set, plus 0, and shifted back. -1 where a coordinate
 * on the way is not finite (char_quad's own transforms take it). */
static int horizontal_quad(const fz_stext_char *ch, float asc, float dsc, fz_quad *out)
{
	fz_quad q = ch->quad;
	float ox = ch->origin.x, oy = ch->origin.y;
	if (!finite_quad(q))
		return -1;
	fz_quad t; /* to the origin: finite, as char_quad's derotation asks */
	t.ul.x = q.ul.x - ox; t.ul.y = q.ul.y - oy; t.ur.x = q.ur.x - ox; t.ur.y = q.ur.y - oy;
	t.ll.x = q.ll.x - ox; t.ll.y = q.ll.y - oy; t.lr.x = q.lr.x - ox; t.lr.y = q.lr.y - oy;
	if (!finite_quad(t) || asc - asc != 0 || dsc - dsc != 0)
		return -1;
	float left = t.ll.x + 0.0f, ul = t.ul.x + 0.0f, right = t.lr.x + 0.0f, ur = t.ur.x + 0.0f;
	int up = t.ul.y + 0.0f > 0;
	float top = (up ? asc : -asc) + 0.0f, bottom = (up ? dsc : -dsc) + 0.0f;
	if (left < 0)
		left = ul = 0;
	if (right - left < FLT_EPSILON)
		return 0;
	out->ul.x = (ul + 0.0f) + ox; out->ul.y = top + oy;
	out->ur.x = (ur + 0.0f) + ox; out->ur.y = top + oy;
	out->ll.x = (left + 0.0f) + ox; out->ll.y = bottom + oy;
	out->lr.x = (right + 0.0f) + ox; out->lr.y = bottom + oy;
	return 1;
}

/* A character's box height as JM_char_quad finds it from its font and size, for the last font and
 * size seen (a line's characters mostly share both): `whole` where the font's ascender and
 * descender span an em (the character keeps MuPDF's quad), else the box's top and bottom. */
typedef struct {
	const fz_font *font;
	float size, asc, dsc;
	int whole;
} extent_t;

static void font_extent(fz_font *font, float fsize, extent_t *e)
{
	float asc = fz_font_ascender(NULL, font), dsc = fz_font_descender(NULL, font);
	float asc_dsc = asc - dsc + FLT_EPSILON;
	e->font = font;
	e->size = fsize;
	e->whole = asc_dsc >= 1;
	if (e->whole)
		return;
	if (asc < 1e-3) { /* probably a glyphless font */
		dsc = -0.1f;
		asc = 0.9f;
		asc_dsc = 1.0f;
	}
	if (asc_dsc < 1) {
		dsc = dsc / asc_dsc;
		asc = asc / asc_dsc;
	}
	asc_dsc = asc - dsc;
	e->asc = asc * fsize / asc_dsc;
	e->dsc = dsc * fsize / asc_dsc;
}

/* The quad PyMuPDF gives a character (its JM_char_quad, float for float): a font whose ascender
 * and descender span less than one em gets a box of that span around the baseline, no left edge
 * before the origin. 0 where PyMuPDF would ask the font for the glyph's advance (a zero-width box):
 * that takes a context, so the Python path reads the page. `e`: the walk's extent_t, font NULL at
 * first. */
static int char_quad(const fz_stext_line *l, const fz_stext_char *ch, fz_quad *out, extent_t *e)
{
	uint32_t size, seen;
	memcpy(&size, &ch->size, sizeof size);
	memcpy(&seen, &e->size, sizeof seen);
	if (ch->font != e->font || size != seen) /* the bits: a size of -0 is not one of 0 */
		font_extent(ch->font, ch->size, e);
	if (e->whole) {
		*out = ch->quad;
		return 1;
	}
	float asc = e->asc, dsc = e->dsc;
	float c = l->dir.x, s = l->dir.y;
	int found = c == 1 && s == 0 ? horizontal_quad(ch, asc, dsc, out) : -1;
	if (found >= 0)
		return found;
	fz_matrix derotate = fz_make_matrix(c, -s, s, c, 0, 0), rotate = fz_make_matrix(c, s, -s, c, 0, 0);
	if (c == -1) {
		derotate.d = 1;
		rotate.d = 1;
	}
	fz_matrix to_origin = fz_make_matrix(1, 0, 0, 1, -ch->origin.x, -ch->origin.y);
	fz_matrix back = fz_make_matrix(1, 0, 0, 1, ch->origin.x, ch->origin.y);
	fz_quad q = quad_by(quad_by(ch->quad, to_origin), derotate);
	int up = c == 1 && q.ul.y > 0;
	q.ul.y = q.ur.y = up ? asc : -asc;
	q.ll.y = q.lr.y = up ? dsc : -dsc;
	if (q.ll.x < 0)
		q.ll.x = q.ul.x = 0;
	float width = q.lr.x - q.ll.x;
	if (width < FLT_EPSILON)
		return 0;
	*out = quad_by(quad_by(q, rotate), back);
	return 1;
}

/* A block or line PyMuPDF leaves out of its dicts: outside the page's mediabox (an infinite
 * mediabox keeps everything). */
static int off_page(fz_rect tp, int inf, fz_rect box)
{
	return !inf && fz_is_empty_rect(fz_intersect_rect(tp, box));
}

/* What the rawdict walks (pf_chars, pf_glyphs) do with a block: 1 read it, 0 skip it (off the
 * page, or an image), PF_FALLBACK for any other kind of block. */
static int rawdict_block(fz_rect tp, int inf, const fz_stext_block *b)
{
	if (off_page(tp, inf, b->bbox) || b->type == FZ_STEXT_BLOCK_IMAGE)
		return 0;
	return b->type == FZ_STEXT_BLOCK_TEXT ? 1 : PF_FALLBACK;
}

/* ... and with a line of a block it reads: 1 read it, 0 skip it (off the page), PF_FALLBACK for
 * a vertical one. */
static int rawdict_line(fz_rect tp, int inf, const fz_stext_line *l)
{
	if (off_page(tp, inf, l->bbox))
		return 0;
	return l->wmode ? PF_FALLBACK : 1;
}

/* A rawdict walk's answer once it counted n characters in nl lines: n, or PF_SMALL with what the
 * arrays must hold (need[0] characters, need[1] lines). */
static int walked(int n, int nl, int cap_chars, int cap_lines, int *n_lines, int *need)
{
	*n_lines = nl;
	if (n > cap_chars || nl > cap_lines) {
		need[0] = n;
		need[1] = nl;
		return PF_SMALL;
	}
	return n;
}

/* Characters as extractRAWDICT keeps them: code points, and per character x0 y0 x1 y1 (its box)
 * and the origin's x y; the character count of every line kept. Returns the characters written,
 * PF_FALLBACK, or PF_SMALL with need[0] characters and need[1] lines required. */
int pf_chars(const fz_stext_page *page, uint32_t *cps, float *geo, int32_t *line_len,
             int cap_chars, int cap_lines, int *n_lines, int *need)
{
	fz_rect tp = page->mediabox;
	int inf = fz_is_infinite_rect(tp);
	extent_t extent = {NULL, 0, 0, 0, 0};
	int n = 0, nl = 0;
	for (const fz_stext_block *b = page->first_block; b; b = b->next) {
		int read = rawdict_block(tp, inf, b);
		if (read == PF_FALLBACK)
			return PF_FALLBACK;
		if (!read)
			continue;
		for (const fz_stext_line *l = b->u.t.first_line; l; l = l->next) {
			read = rawdict_line(tp, inf, l);
			if (read == PF_FALLBACK)
				return PF_FALLBACK;
			if (!read)
				continue;
			int start = n;
			for (const fz_stext_char *ch = l->first_char; ch; ch = ch->next) {
				fz_quad quad;
				if (!ch->font || ch->c < 0 || ch->c > 0x10FFFF || !char_quad(l, ch, &quad, &extent))
					return PF_FALLBACK;
				fz_rect r = quad_rect(quad);
				if (!inf && !overlaps(tp, r))
					continue;
				if (n < cap_chars) {
					float *g = geo + 6 * (size_t)n;
					cps[n] = (uint32_t)ch->c;
					g[0] = r.x0; g[1] = r.y0; g[2] = r.x1; g[3] = r.y1;
					g[4] = ch->origin.x; g[5] = ch->origin.y;
				}
				n++;
			}
			if (nl < cap_lines)
				line_len[nl] = n - start;
			nl++;
		}
	}
	return walked(n, nl, cap_chars, cap_lines, n_lines, need);
}

/* pf_chars's characters, with each character's font size (its rawdict span's "size") and, per
 * line, its block's index on the page, whether it runs left to right (dir exactly (1, 0); a
 * direction a hair off that PyMuPDF rounds to it is PF_FALLBACK) and its box: fz_union_rect of its
 * characters' boxes, as PyMuPDF unions them into the rawdict line's bbox. line_info: block, flags
 * (1: horizontal) per line; line_box: 4 floats per line. */
int pf_glyphs(const fz_stext_page *page, uint32_t *cps, float *geo, float *size, int32_t *line_len,
              int32_t *line_info, float *line_box, int cap_chars, int cap_lines, int *n_lines,
              int *need)
{
	fz_rect tp = page->mediabox;
	int inf = fz_is_infinite_rect(tp);
	extent_t extent = {NULL, 0, 0, 0, 0};
	int n = 0, nl = 0, block = -1;
	for (const fz_stext_block *b = page->first_block; b; b = b->next) {
		block++;
		int read = rawdict_block(tp, inf, b);
		if (read == PF_FALLBACK)
			return PF_FALLBACK;
		if (!read)
			continue;
		for (const fz_stext_line *l = b->u.t.first_line; l; l = l->next) {
			read = rawdict_line(tp, inf, l);
			if (read == PF_FALLBACK)
				return PF_FALLBACK;
			if (!read)
				continue;
			int horizontal = l->dir.x == 1 && l->dir.y == 0;
			if (!horizontal && fabsf(l->dir.x - 1) < 0.001f && fabsf(l->dir.y) < 0.001f)
				return PF_FALLBACK;
			int start = n;
			fz_rect box = fz_empty_rect;
			for (const fz_stext_char *ch = l->first_char; ch; ch = ch->next) {
				fz_quad quad;
				if (!ch->font || ch->c < 0 || ch->c > 0x10FFFF || (ch->c >= 0xD800 && ch->c <= 0xDFFF)
				    || !char_quad(l, ch, &quad, &extent) || !finite_quad(quad) || !(ch->size == ch->size)
				    || ch->origin.x - ch->origin.x != 0 || ch->origin.y - ch->origin.y != 0)
					return PF_FALLBACK;
				fz_rect r = quad_rect(quad);
				if (!inf && !overlaps(tp, r))
					continue;
				box = fz_union_rect(box, r);
				if (n < cap_chars) {
					float *g = geo + 6 * (size_t)n;
					cps[n] = (uint32_t)ch->c;
					g[0] = r.x0; g[1] = r.y0; g[2] = r.x1; g[3] = r.y1;
					g[4] = ch->origin.x; g[5] = ch->origin.y;
					size[n] = ch->size;
				}
				n++;
			}
			if (n > start && !(box.x0 == box.x0 && box.x1 == box.x1 && fz_is_valid_rect(box)))
				return PF_FALLBACK;
			if (nl < cap_lines) {
				line_len[nl] = n - start;
				line_info[2 * nl] = block;
				line_info[2 * nl + 1] = horizontal;
				line_box[4 * nl] = box.x0; line_box[4 * nl + 1] = box.y0;
				line_box[4 * nl + 2] = box.x1; line_box[4 * nl + 3] = box.y1;
			}
			nl++;
		}
	}
	return walked(n, nl, cap_chars, cap_lines, n_lines, need);
}

/* pf_text's answer for a page it leaves to extractText: PF_RTL instead where asked to stop at an
 * RTL character and the page holds one further on. */
static int declined(const fz_stext_page *page, int stop_at_rtl)
{
	return stop_at_rtl && pf_rtl_hint(page) ? PF_RTL : PF_FALLBACK;
}

/* The string PyMuPDF's extractText gives (its JM_print_stext_page_as_text), as code points: every
 * character of the text blocks whose box overlaps the page, each line followed by a newline
 * unless the last character written is one (a line with none written gets none). Returns the code
 * points written, PF_SMALL with need[0] of them required, or PF_FALLBACK (a vertical line, a
 * character without a font, a code point that is NUL, a surrogate or outside Unicode, a box PyMuPDF
 * widens: the caller calls extractText). With stop_at_rtl, PF_RTL instead of either where pf_rtl_hint
 * would find an RTL character: a page read from its characters needs no plain text, and a Latin
 * page is walked once instead of twice. */
int pf_text(const fz_stext_page *page, uint32_t *cps, int cap, int *need, int stop_at_rtl)
{
	fz_rect tp = page->mediabox;
	int inf = fz_is_infinite_rect(tp);
	extent_t extent = {NULL, 0, 0, 0, 0};
	int n = 0;
	for (const fz_stext_block *b = page->first_block; b; b = b->next) {
		if (b->type != FZ_STEXT_BLOCK_TEXT)
			continue;
		for (const fz_stext_line *l = b->u.t.first_line; l; l = l->next) {
			if (l->wmode)
				return declined(page, stop_at_rtl);
			int last = 0;
			for (const fz_stext_char *ch = l->first_char; ch; ch = ch->next) {
				int c = ch->c;
				fz_quad quad;
				if (stop_at_rtl && rtl_block(c))
					return PF_RTL;
				if (!ch->font || c <= 0 || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF) || !char_quad(l, ch, &quad, &extent))
					return declined(page, stop_at_rtl);
				if (!inf && !overlaps(tp, quad_rect(quad)))
					continue;
				if (n < cap)
					cps[n] = (uint32_t)c;
				n++;
				last = c;
			}
			if (last != 10 && last > 0) {
				if (n < cap)
					cps[n] = 10;
				n++;
			}
		}
	}
	if (n > cap) {
		need[0] = n;
		return PF_SMALL;
	}
	return n;
}

#define X0(i) ((double)g[6 * (i)])
#define Y0(i) ((double)g[6 * (i) + 1])
#define X1(i) ((double)g[6 * (i) + 2])
#define Y1(i) ((double)g[6 * (i) + 3])
#define OX(i) ((double)g[6 * (i) + 4])
#define OY(i) ((double)g[6 * (i) + 5])
#define BASE(k) ((k) == 'R' || (k) == 'o')

/* [increasing, decreasing] steps between the centres of consecutive RTL letters; a mark keeps a
 * run going, anything else ends it. */
static void rtl_order(const float *g, const char *kinds, int n, int32_t *out)
{
	int inc = 0, dec = 0, have = 0;
	double prev = 0;
	for (int i = 0; i < n; i++) {
		if (kinds[i] == 'M')
			continue;
		if (kinds[i] != 'R') {
			have = 0;
			continue;
		}
		double centre = (X0(i) + X1(i)) / 2;
		if (have) {
			double step = centre - prev;
			inc += step > 0.5;
			dec += step < -0.5;
		}
		prev = centre;
		have = 1;
	}
	out[0] = inc;
	out[1] = dec;
}

static int zero_width_partner(const float *g, const char *kinds, int n, int i)
{
	double x = X0(i), best = 0;
	int found = -1;
	int order[2] = {i + 1, i - 1}; /* the next one first: ties go to it */
	for (int t = 0; t < 2; t++) {
		int j = order[t];
		if (j < 0 || j >= n || !BASE(kinds[j]) || !(X1(j) - X0(j) > ZERO))
			continue;
		double distance = fabs(X1(j) - x);
		if (distance < 1.0 && (found < 0 || distance < best)) {
			best = distance;
			found = j;
		}
	}
	return found;
}

static int same_box(const float *g, int i, int j)
{
	return fabs(X0(i) - X0(j)) <= ZERO && fabs(Y0(i) - Y0(j)) <= ZERO
	       && fabs(X1(i) - X1(j)) <= ZERO && fabs(Y1(i) - Y1(j)) <= ZERO;
}

/* Spans [a, b) of code points from one glyph holding an RTL letter, at offset `at`; returns the
 * pairs written. `joined` is scratch of n bytes. stextrows.c's units use it too. */
int pf_glyph_clusters(const float *g, const char *kinds, int n, int at, uint8_t *joined,
                          int32_t *out)
{
	if (n <= 0)
		return 0;
	memset(joined, 0, (size_t)n);
	int any = 0;
	for (int i = 0; i < n; i++) {
		int zero = X1(i) - X0(i) <= ZERO;
		if (zero && BASE(kinds[i])) {
			int partner = zero_width_partner(g, kinds, n, i);
			if (partner >= 0) {
				joined[partner < i ? partner : i] = 1;
				any = 1;
			}
		}
		if (!zero && i + 1 < n && fabs(X0(i) - X0(i + 1)) <= ZERO && BASE(kinds[i])
		    && BASE(kinds[i + 1]) && same_box(g, i, i + 1)) {
			joined[i] = 1;
			any = 1;
		}
	}
	int found = 0;
	for (int i = 0; any && i < n; i++) {
		if (!joined[i] || (i > 0 && joined[i - 1]))
			continue;
		int j = i, rtl = 0;
		while (j < n && joined[j])
			j++;
		for (int k = i; k <= j && k < n; k++)
			rtl |= kinds[k] == 'R';
		if (rtl) {
			out[2 * found] = at + i;
			out[2 * found + 1] = at + j + 1;
			found++;
		}
	}
	return found;
}

static double round1(double v) /* Python's round(v, 1): correctly rounded, like printf's %.1f */
{
	char buf[64];
	snprintf(buf, sizeof buf, "%.1f", v);
	return strtod(buf, NULL);
}

/* Runs of >= 3 base letters drawn at one origin (rounded to 0.1 pt). */
static int shared_runs(const float *g, const char *kinds, int n)
{
	int runs = 0, count = 0, have = 0;
	double px = 0, py = 0;
	for (int i = 0; i < n; i++) {
		if (kinds[i] == ' ' || kinds[i] == 'M')
			continue;
		double x = OX(i), y = OY(i);
		/* equal coordinates round alike: most shared origins skip the printf round trip */
		if (have && fabs(x - px) < 0.11 && fabs(y - py) < 0.11
		    && (x == px || round1(x) == round1(px)) && (y == py || round1(y) == round1(py))) {
			if (++count == 3)
				runs++;
		} else {
			count = 1;
		}
		px = x;
		py = y;
		have = 1;
	}
	return runs;
}

/* The evidence of the lines pf_chars returned. `kinds`: one code per character of the page's text
 * (the lines joined by newlines). geometry: 2 per line; clusters: pairs, room for as many as the
 * page has characters; scratch: a byte per character. Returns the shared-origin runs. */
int pf_evidence(int n_lines, const int32_t *line_len, const float *geo, const char *kinds,
                int32_t *geometry, int32_t *clusters, int *n_clusters, uint8_t *scratch)
{
	int shared = 0, pairs = 0, pos = 0;
	const float *g = geo;
	for (int l = 0; l < n_lines; l++) {
		int n = line_len[l];
		const char *k = kinds + pos;
		int rtl = memchr(k, 'R', (size_t)n) != NULL;
		geometry[2 * l] = geometry[2 * l + 1] = 0;
		if (rtl) {
			rtl_order(g, k, n, geometry + 2 * l);
			pairs += pf_glyph_clusters(g, k, n, pos, scratch, clusters + 2 * pairs);
		}
		shared += shared_runs(g, k, n);
		g += 6 * (size_t)n;
		pos += n + 1;
	}
	*n_clusters = pairs;
	return shared;
}

/* Units of one line (pagefleet/workers/pdf/runs.py): an Arabic word or an LTR run with their marks, or one
 * other character with its marks; `kinds` holds runs.py's codes (R L N S M). Writes each unit's
 * start, kind and centre x; returns the count. */
static int units(const float *g, const char *kinds, int n, int32_t *start, char *kind, double *centre,
                 double *left, double *right)
{
	int count = 0;
	for (int a = 0; a < n;) {
		char k = kinds[a];
		int b = a + 1;
		if (k == 'R' || k == 'L') {
			while (b < n && (kinds[b] == k || kinds[b] == 'M'))
				b++;
		} else {
			while (b < n && kinds[b] == 'M')
				b++;
		}
		double x0 = X0(a), x1 = X1(a);
		for (int i = a + 1; i < b; i++) {
			x0 = X0(i) < x0 ? X0(i) : x0;
			x1 = X1(i) > x1 ? X1(i) : x1;
		}
		start[count] = a;
		kind[count] = k == 'M' ? 'N' : k;
		left[count] = x0;
		right[count] = x1;
		centre[count] = (x0 + x1) / 2;
		if (centre[count] != centre[count])
			return -1; /* NaN: Python's sort decides */
		count++;
		a = b;
	}
	return count;
}

/* x falls along an Arabic word and rises along an LTR run, zero-width code points and marks
 * skipped (runs.py's _inside_agrees). */
static int inside_agrees(const float *g, const char *kinds, int a, int b, int sign)
{
	int have = 0;
	double prev = 0;
	for (int i = a; i < b; i++) {
		if (!(X1(i) - X0(i) > ZERO) || kinds[i] == 'M')
			continue;
		double centre = (X0(i) + X1(i)) / 2;
		if (have && !(sign * (centre - prev) >= -0.5))
			return 0;
		prev = centre;
		have = 1;
	}
	return 1;
}

typedef struct {
	int32_t *start, *visual, *bounds;
	char *kind;
	double *centre, *left, *right;
} scratch_t;

/* runs.py's _proven: one baseline, every word's and LTR run's inside agrees with its direction,
 * no two inked units overlap. */
static int proven(const float *g, const char *kinds, int n, int count, const scratch_t *t)
{
	double lo = OY(0), hi = OY(0);
	for (int i = 1; i < n; i++) {
		lo = OY(i) < lo ? OY(i) : lo;
		hi = OY(i) > hi ? OY(i) : hi;
	}
	if (hi - lo > 2.0)
		return 0;
	for (int u = 0; u < count; u++) {
		int end = u + 1 < count ? t->start[u + 1] : n;
		if ((t->kind[u] == 'R' || t->kind[u] == 'L')
		    && !inside_agrees(g, kinds, t->start[u], end, t->kind[u] == 'R' ? -1 : 1))
			return 0;
	}
	int inked = 0; /* inked units by left edge, stable (Python's sorted) */
	for (int u = 0; u < count; u++) {
		if (t->kind[u] == 'S')
			continue;
		int j = inked++;
		while (j > 0 && t->left[t->visual[j - 1]] > t->left[u]) {
			t->visual[j] = t->visual[j - 1];
			j--;
		}
		t->visual[j] = u;
	}
	for (int j = 1; j < inked; j++)
		if (!(t->left[t->visual[j]] >= t->right[t->visual[j - 1]] - 0.5))
			return 0;
	return 1;
}

/* runs.run_order: reading the units right to left by their centres (LTR units joined with the
 * neutrals between them into one group, read left to right) gives another order of inked units
 * than the extracted one, and the geometry proves it. Returns the number of units, with their
 * [start, end) spans in reading order in `spans`; 0 where the order stands; -1 where a coordinate
 * is not a number (Python decides). */
static int reorders(const float *g, const char *kinds, int n, const scratch_t *t, int32_t *spans)
{
	int count = units(g, kinds, n, t->start, t->kind, t->centre, t->left, t->right);
	for (int i = 0; i < n; i++)
		if (OY(i) != OY(i))
			return -1;
	if (count < 0)
		return -1;
	if (count < 2)
		return 0;
	int32_t *visual = t->visual, *bounds = t->bounds;
	const char *kind = t->kind;
	for (int i = 0; i < count; i++) { /* stable insertion sort by centre, as Python's sorted */
		int j = i;
		while (j > 0 && t->centre[visual[j - 1]] > t->centre[i]) {
			visual[j] = visual[j - 1];
			j--;
		}
		visual[j] = i;
	}
	int groups = 0;
	for (int i = 0; i < count;) {
		int j = i + 1;
		if (kind[visual[i]] == 'L') {
			while (j < count) {
				int k = j;
				while (k < count && (kind[visual[k]] == 'N' || kind[visual[k]] == 'S'))
					k++;
				if (k >= count || kind[visual[k]] != 'L')
					break;
				j = k + 1;
			}
		}
		bounds[2 * groups] = i;
		bounds[2 * groups + 1] = j;
		groups++;
		i = j;
	}
	int next = 0, moved = 0, w = 0; /* next: the next extracted unit that is not a space */
	for (int gi = groups - 1; gi >= 0; gi--) {
		for (int p = bounds[2 * gi]; p < bounds[2 * gi + 1]; p++) {
			int u = visual[p];
			spans[w++] = t->start[u];
			spans[w++] = u + 1 < count ? t->start[u + 1] : n;
			if (kind[u] == 'S' || moved)
				continue;
			while (kind[next] == 'S')
				next++;
			moved = t->start[u] != t->start[next];
			next++;
		}
	}
	return moved && proven(g, kinds, n, count, t) ? count : 0;
}

/* reorders() for every line of the page pf_chars returned; `kinds`: runs.py's codes for the page's
 * text (lines joined by newlines). counts[l]: the units of line l in `spans` (pairs, packed line
 * after line: room for as many as the page has characters), 0 where its order stands, -1 where
 * Python must decide. Returns -1 if out of memory (the caller asks Python for every line). */
int pf_reorders(int n_lines, const int32_t *line_len, const float *geo, const char *kinds,
                int32_t *counts, int32_t *spans)
{
	size_t longest = 1;
	for (int l = 0; l < n_lines; l++)
		longest = (size_t)line_len[l] > longest ? (size_t)line_len[l] : longest;
	int32_t *ints = malloc(sizeof(int32_t) * 4 * longest);
	double *doubles = malloc(sizeof(double) * 3 * longest);
	char *kind = malloc(longest);
	scratch_t t = {ints, ints + longest, ints + 2 * longest, kind, doubles, doubles + longest,
	               doubles + 2 * longest};
	int ok = ints && doubles && kind;
	const float *g = geo;
	for (int l = 0, pos = 0; ok && l < n_lines; l++) {
		int n = line_len[l];
		counts[l] = n > 0 ? reorders(g, kinds + pos, n, &t, spans) : 0;
		spans += counts[l] > 0 ? 2 * counts[l] : 0;
		g += 6 * (size_t)n;
		pos += n + 1;
	}
	free(ints);
	free(doubles);
	free(kind);
	return ok ? 0 : -1;
}
