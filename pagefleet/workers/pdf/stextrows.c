/* pagefleet: the rows pagefleet.workers.pdf.glyphlines reads from a page's glyphs, in C.
 *
 * Built into the same library as stextwalk.c (`python -m pagefleet.workers.pdf.fastwalk build`), called by
 * pagefleet/workers/pdf/fastrows.py on the characters pf_glyphs gathered. It does what glyphlines.read_rows
 * does: a page's lines (glyphrows.page_lines), the rows they join into (join_rows), which rows are
 * read again (read_rows, _in_order), and for each such row its units (_units, with
 * clusters.glyph_clusters), the line ends set aside, the units in visual order, the placeholder
 * spaces (glyphunits.placeholders) and the word gaps (glyphunits.mark_gaps) (pf_rows); once
 * stextorder.c has the order each row is read in, the rows' characters in that order and the gap
 * edits (pf_kept).
 *
 * What Unicode says of a character (space, mark, Hebrew or Arabic letter, Latin letter, letter,
 * letter or digit, decimal digit) comes from Python, one byte of bits per character, so both paths
 * ask the same database; the explicit character sets of glyphlines and glyphrows are written out
 * here. Every comparison is made in double on the float values PyMuPDF hands to Python, and every
 * sort is stable where Python's is, so the rows equal the Python path's
 * (tests/unit/test_fastrows.py compares them page by page).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ZERO 0.01
#define SPACE_GAP 0.16
#define TOUCH_GAP 0.03
#define MARKER_SPACE 0.5
#define BASELINE_SHARE 0.35
#define JOIN_GAP 0.6
#define MARKER_GAP 3.0

#include "stextrows.h"

int pf_glyph_clusters(const float *g, const char *kinds, int n, int at, uint8_t *joined,
                      int32_t *out);

typedef struct {
	int start, n, block, order;
	double x0, x1, baseline, size;
	int rtl, horizontal, marker;
} line_t;

typedef struct {
	int start, end, key, flags, under, placeholder;
	double x0, x1, centre;
} unit_t;

typedef struct {
	const float *geo, *size;
	const uint32_t *cps;
	const uint8_t *cls;
	char *kinds;	       /* glyph kinds (" " "M" "R" "o") of every character */
	double *values;	       /* scratch for medians */
	int32_t *ends, *order; /* per character: a cluster's end or -1; sort scratch */
	uint8_t *joined;
	int32_t *pairs;
	unit_t *units, *visual, *merge; /* merge: scratch for the visual sort */
} page_t;

#define GX0(p, i) ((double)(p)->geo[6 * (size_t)(i)])
#define GY0(p, i) ((double)(p)->geo[6 * (size_t)(i) + 1])
#define GX1(p, i) ((double)(p)->geo[6 * (size_t)(i) + 2])
#define GY1(p, i) ((double)(p)->geo[6 * (size_t)(i) + 3])
#define GOY(p, i) ((double)(p)->geo[6 * (size_t)(i) + 5])

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n) /* sorted(v)[len(v) // 2] */
{
	int sorted = 1;
	for (int i = 1; sorted && i < n; i++)
		sorted = v[i - 1] <= v[i];
	if (!sorted) /* most lines: one baseline, one size */
		qsort(v, (size_t)n, sizeof(double), cmp_double);
	return v[n / 2];
}

static int is_dot(uint32_t c) { return c == '.' || c == ')'; }

static int sentence_end(uint32_t c)
{
	return c == '.' || c == ',' || c == ':' || c == ';' || c == '!' || c == '?' || c == 0x060C
	       || c == 0x061B || c == 0x061F;
}

static int is_break(uint32_t c) { return c == '\n' || c == '\r' || c == 0x2028 || c == 0x2029 || c == 0; }

static int list_mark(uint32_t c) /* glyphunits._MARKS */
{
	return c == 0x2022 || c == 0x25E6 || c == 0x25AA || c == 0x25CF || c == '.' || c == ')';
}

/* glyphlines._NOT_PLAIN: what the bidi algorithm may move in an RTL line */
static int not_plain(uint32_t c)
{
	if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))
		return 1;
	if ((c >= 0xC0 && c <= 0x24F) || (c >= 0x660 && c <= 0x669) || (c >= 0x6F0 && c <= 0x6F9))
		return 1;
	if (c < 0x80)
		return strchr("()[]{}<>\"'/\\+-%$#@&*=_|~^", (int)c) != NULL && c != 0;
	return c == 0x20AA || c == 0x20AC || c == 0xA3 || c == 0xAB || c == 0xBB || c == 0x2039
	       || c == 0x203A || (c >= 0x200C && c <= 0x200F) || (c >= 0x202A && c <= 0x202E)
	       || (c >= 0x2066 && c <= 0x2069) || c == 0xFFFD;
}

/* glyphrows._MARKER, matched against the line's text stripped of whitespace */
static int marker(const page_t *p, int a, int n)
{
	int lo = a, hi = a + n - 1;
	while (lo <= hi && (p->cls[lo] & C_SPACE))
		lo++;
	while (hi >= lo && (p->cls[hi] & C_SPACE))
		hi--;
	int m = hi - lo + 1;
	const uint32_t *c = p->cps;
	if (m == 1)
		return c[lo] == 0x2022 || c[lo] == 0x25E6 || c[lo] == 0x25AA || c[lo] == 0x25CF
		       || c[lo] == 0x2013 || c[lo] == '-' || is_dot(c[lo]);
	if (m < 2 || m > 4 || !is_dot(c[hi]))
		return 0;
	if (m == 2 && ((c[lo] >= 0x05D0 && c[lo] <= 0x05EA) || (c[lo] >= 0x0621 && c[lo] <= 0x064A)))
		return 1;
	for (int i = lo; i < hi; i++)
		if (!(p->cls[i] & C_DEC))
			return 0;
	return 1;
}

static int page_lines(page_t *p, int n_lines, const int32_t *line_len, const int32_t *info,
                      const float *box, line_t *lines)
{
	int found = 0;
	for (int l = 0, at = 0; l < n_lines; at += line_len[l], l++) {
		int n = line_len[l];
		if (!n)
			continue;
		line_t *ln = lines + found;
		ln->start = at;
		ln->n = n;
		ln->block = info[2 * l];
		ln->order = found;
		ln->horizontal = info[2 * l + 1];
		ln->x0 = box[4 * l];
		ln->x1 = box[4 * l + 2];
		for (int i = 0; i < n; i++)
			p->values[i] = GOY(p, at + i);
		ln->baseline = median(p->values, n);
		for (int i = 0; i < n; i++)
			p->values[i] = p->size[at + i];
		ln->size = median(p->values, n);
		if (ln->size == 0)
			ln->size = 1.0;
		ln->rtl = 0;
		for (int i = 0; ln->horizontal && !ln->rtl && i < n; i++)
			ln->rtl = (p->cls[at + i] & C_RTL) != 0;
		ln->marker = marker(p, at, n);
		found++;
	}
	return found;
}

static const line_t *sort_lines;

static int by_baseline(const void *a, const void *b) /* ties by index: Python's stable sorted */
{
	int i = *(const int32_t *)a, j = *(const int32_t *)b;
	double x = sort_lines[i].baseline, y = sort_lines[j].baseline;
	if (x != y)
		return (x > y) - (x < y);
	return (i > j) - (i < j);
}

static int find(int32_t *parent, int i)
{
	while (parent[i] != i) {
		parent[i] = parent[parent[i]];
		i = parent[i];
	}
	return i;
}

static int overprint(const page_t *p, const line_t *a, const line_t *b)
{
	if (!(fabs(a->x0 - b->x0) < 0.2 * a->size) || a->n != b->n)
		return 0;
	return memcmp(p->cps + a->start, p->cps + b->start, sizeof(uint32_t) * (size_t)a->n) == 0;
}

/* glyphrows.join_rows: parent[] of the union-find over the lines */
static void join_rows(const page_t *p, const line_t *lines, int n, int page_rtl, int32_t *parent,
                      int32_t *ordered)
{
	for (int i = 0; i < n; i++) {
		parent[i] = i;
		ordered[i] = i;
	}
	sort_lines = lines;
	qsort(ordered, (size_t)n, sizeof(int32_t), by_baseline);
	for (int k = 0; k < n; k++) {
		const line_t *a = lines + ordered[k];
		for (int m = k + 1; m < n; m++) {
			const line_t *b = lines + ordered[m];
			double size = fmin(a->size, b->size), big = fmax(a->size, b->size);
			if (b->baseline - a->baseline > BASELINE_SHARE * big)
				break;
			if (a->block != b->block || !(a->rtl || b->rtl || page_rtl)
			    || !(a->horizontal && b->horizontal) || fabs(a->size - b->size) > 0.25 * big)
				continue;
			double gap = fmax(a->x0, b->x0) - fmin(a->x1, b->x1);
			double room = a->marker || b->marker ? MARKER_GAP : JOIN_GAP;
			if (gap <= room * size && !overprint(p, a, b))
				parent[find(parent, ordered[m])] = find(parent, ordered[k]);
		}
	}
}

/* glyphlines._in_order: an RTL line MuPDF already gives right to left, nothing in it to move */
static int in_order(const page_t *p, const line_t *ln)
{
	if (!ln->rtl)
		return 0;
	for (int i = ln->start; i < ln->start + ln->n; i++)
		if (not_plain(p->cps[i]))
			return 0;
	double prev = 0, size = ln->size;
	for (int i = ln->start; i < ln->start + ln->n; i++) {
		double x0 = GX0(p, i), x1 = GX1(p, i);
		if (x1 - x0 <= ZERO)
			return 0;
		if (i > ln->start && (x1 > prev + TOUCH_GAP * size || prev - x1 > SPACE_GAP * size))
			return 0;
		prev = x0;
	}
	return 1;
}

/* glyphrows.tail_of_rtl and has_letters of a row (its lines' indices in `row`, ascending) */
static int row_flags(const page_t *p, const line_t *lines, const int32_t *row, int count)
{
	int chars = 0, left = -1, right = -1, letters = 0;
	for (int r = 0; r < count; r++) {
		const line_t *ln = lines + row[r];
		for (int i = ln->start; i < ln->start + ln->n; i++) {
			letters |= (p->cls[i] & C_ALPHA) != 0;
			if (p->cls[i] & C_SPACE)
				continue;
			chars++;
			if (left < 0 || GX0(p, i) < GX0(p, left))
				left = i;
			if (right < 0 || GX1(p, i) > GX1(p, right))
				right = i;
		}
	}
	int tail = chars >= 2 && lines[row[0]].horizontal && sentence_end(p->cps[left])
		   && !sentence_end(p->cps[right]);
	return (letters ? R_HAS_LETTERS : 0) | (tail ? R_TAIL : 0);
}

/* glyphlines._units of one line, appended at units[count]; returns the new count */
static int line_units(page_t *p, const line_t *ln, unit_t *units, int count)
{
	const char *k = p->kinds + ln->start;
	int n = ln->n, a = ln->start;
	for (int i = 0; i < n; i++)
		p->ends[i] = -1;
	if (n > 0 && memchr(k, 'R', (size_t)n)) {
		int found = pf_glyph_clusters(p->geo + 6 * (size_t)a, k, n, 0, p->joined, p->pairs);
		for (int c = 0; c < found; c++)
			p->ends[p->pairs[2 * c]] = p->pairs[2 * c + 1];
	}
	for (int i = 0; i < n;) {
		int end = p->ends[i] >= 0 ? p->ends[i] : i + 1;
		while (end < n && k[end] == 'M')
			end++;
		unit_t *u = units + count++;
		u->start = a + i;
		u->end = a + end;
		u->flags = k[i] == ' ' ? U_SPACE : 0;
		u->under = -1;
		u->placeholder = 0;
		u->key = a + i;
		if (end == i + 1) {
			u->x0 = GX0(p, a + i);
			u->x1 = GX1(p, a + i);
			i = end;
			continue;
		}
		int wide = 0;
		for (int j = i; j < end; j++) {
			if (!(GX1(p, a + j) - GX0(p, a + j) > ZERO))
				continue;
			u->x0 = wide && u->x0 <= GX0(p, a + j) ? u->x0 : GX0(p, a + j);
			u->x1 = wide && u->x1 >= GX1(p, a + j) ? u->x1 : GX1(p, a + j);
			wide = 1;
		}
		if (!wide) {
			u->x0 = GX0(p, a + i);
			u->x1 = GX1(p, a + i);
		}
		for (int j = i; j < end; j++)
			if (k[j] != 'M') {
				u->key = a + j;
				break;
			}
		i = end;
	}
	return count;
}

/* glyphunits.placeholders over the units in visual order; returns how many it found */
static int placeholders(unit_t *units, int n)
{
	int found = 0;
	for (int i = 0; i < n; i++) {
		unit_t *u = units + i;
		double width = u->x1 - u->x0;
		if (!(u->flags & U_SPACE) || width <= ZERO)
			continue;
		int hi = i + 4 < n ? i + 4 : n;
		for (int j = i - 3 > 0 ? i - 3 : 0; j < hi; j++) {
			unit_t *o = units + j;
			if (j == i || o->under >= 0 || ((o->flags & U_SPACE) && o->placeholder))
				continue;
			if (fmin(u->x1, o->x1) - fmax(u->x0, o->x0) >= 0.6 * width) {
				u->under = j;
				u->placeholder = 1;
				found++;
				break;
			}
		}
	}
	return found;
}

static int word_gap(const page_t *p, int left, int right, double share)
{
	uint8_t a = p->cls[left], b = p->cls[right];
	if ((a & C_ALNUM) && (b & C_ALNUM))
		return 1;
	return share > MARKER_SPACE && ((a & C_ALNUM) || list_mark(p->cps[left]))
	       && ((b & C_ALNUM) || list_mark(p->cps[right]));
}

static int same_word(const page_t *p, int a, int b)
{
	uint8_t x = p->cls[a], y = p->cls[b];
	return ((x & C_RTL) && (y & C_RTL)) || ((x & C_LATIN) && (y & C_LATIN));
}

static int32_t *put(int32_t *rec, int start, int end, int flags, int key)
{
	rec[0] = start;
	rec[1] = end;
	rec[2] = flags;
	rec[3] = key;
	return rec + 4;
}

/* A unit of the visual order, then the placeholders lying under it (in the order found). */
static int32_t *put_unit(int32_t *rec, const unit_t *sorted, int n, int index, int placeheld)
{
	const unit_t *u = sorted + index;
	rec = put(rec, u->start, u->end, u->flags, u->key);
	for (int j = 0; placeheld && j < n; j++)
		if (sorted[j].placeholder && sorted[j].under == index)
			rec = put(rec, sorted[j].start, sorted[j].end, sorted[j].flags | U_AFTER, sorted[j].key);
	return rec;
}

/* glyphunits.mark_gaps, written out as records: the units in visual order with a synthetic space
 * at each word gap drawn without one, a space between two touching glyphs marked dropped, each
 * unit followed by the placeholders under it. */
static int32_t *mark_gaps(const page_t *p, unit_t *sorted, int n, double size, int32_t *rec,
                          int placeheld)
{
	int prev = -1, spaces = 0, first_space = -1;
	for (int i = 0; i < n; i++) {
		unit_t *u = sorted + i;
		if (u->placeholder)
			continue;
		if (u->flags & U_SPACE) {
			first_space = spaces++ ? first_space : i;
			continue;
		}
		if (prev >= 0) {
			double gap = u->x0 - sorted[prev].x1;
			if (!spaces && gap > SPACE_GAP * size
			    && word_gap(p, sorted[prev].key, u->key, gap / size))
				rec = put(rec, -1, -1, U_SYNTHETIC | U_SPACE, -1);
			else if (spaces == 1 && gap < TOUCH_GAP * size && same_word(p, sorted[prev].key, u->key))
				sorted[first_space].flags |= U_DROPPED;
		}
		for (int j = prev + 1; j < i; j++) /* the spaces between, in visual order */
			if (!sorted[j].placeholder && (sorted[j].flags & U_SPACE))
				rec = put_unit(rec, sorted, n, j, placeheld);
		spaces = 0;
		rec = put_unit(rec, sorted, n, i, placeheld);
		prev = i;
	}
	for (int j = prev + 1; j < n; j++)
		if (!sorted[j].placeholder && (sorted[j].flags & U_SPACE))
			rec = put_unit(rec, sorted, n, j, placeheld);
	return rec;
}

/* Units sorted by centre, stably (Python's sorted): a bottom-up merge sort, taking from the right
 * run only what is strictly smaller (an RTL row comes in falling x: insertion would be quadratic). */
static void merge_sort(unit_t *a, unit_t *tmp, int n)
{
	for (int width = 1; width < n; width *= 2) {
		for (int lo = 0; lo < n; lo += 2 * width) {
			int mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
			int i = lo, j = mid, k = lo;
			while (i < mid && j < hi)
				tmp[k++] = a[j].centre < a[i].centre ? a[j++] : a[i++];
			while (i < mid)
				tmp[k++] = a[i++];
			while (j < hi)
				tmp[k++] = a[j++];
		}
		memcpy(a, tmp, sizeof(unit_t) * (size_t)n);
	}
}

/* One row read again (glyphlines._read_row up to the bidi reading): its records. */
static int32_t *read_row(page_t *p, const line_t *lines, const int32_t *row, int count,
                         int32_t *rec)
{
	int n = 0;
	for (int r = 0; r < count; r++)
		n = line_units(p, lines + row[r], p->units, n);
	int kept = 0;
	for (int i = 0; i < n; i++) { /* line ends left out */
		if (is_break(p->cps[p->units[i].key]))
			continue;
		p->visual[kept] = p->units[i];
		p->visual[kept].centre = (p->units[i].x0 + p->units[i].x1) / 2;
		kept++;
	}
	merge_sort(p->visual, p->merge, kept);
	for (int r = 0; r < count; r++)
		p->values[r] = lines[row[r]].size;
	double size = median(p->values, count);
	int placeheld = count > 1 ? placeholders(p->visual, kept) : 0;
	rec = mark_gaps(p, p->visual, kept, size, rec, placeheld);
	for (int i = 0; i < n; i++)
		if (is_break(p->cps[p->units[i].key]))
			rec = put(rec, p->units[i].start, p->units[i].end, p->units[i].flags | U_BREAK,
			          p->units[i].key);
	return rec;
}

/* glyphlines._aligned: R_ALIGNED | R_RIGHT where the row stands flush with the page's right text
 * edge and not its left one, R_ALIGNED alone for the other way round, 0 where it says nothing */
static int aligned(const line_t *lines, const int32_t *row, int count, double lo, double hi)
{
	double size = lines[row[0]].size, x0 = lines[row[0]].x0, x1 = lines[row[0]].x1;
	for (int r = 1; r < count; r++) {
		const line_t *ln = lines + row[r];
		size = ln->size > size ? ln->size : size;
		x0 = ln->x0 < x0 ? ln->x0 : x0;
		x1 = ln->x1 > x1 ? ln->x1 : x1;
	}
	int left = x0 - lo < 0.5 * size, right = hi - x1 < 0.5 * size;
	return left == right ? 0 : R_ALIGNED | (right ? R_RIGHT : 0);
}

/* The kind glyphlines gives a character (fastwalk.GLYPH_KINDS) from its bits. */
static char glyph_kind(uint8_t bits)
{
	return bits & C_SPACE ? ' ' : bits & C_MARK ? 'M' : bits & C_RTL ? 'R' : 'o';
}

/* A read row's keys (the code point the bidi algorithm sees of each unit in visual order, a space
 * for a synthetic one) at keys[at]; returns how many, and R_SIMPLE in *simple where every unit's
 * text is its key (one code point, or a synthetic space). */
static int row_keys(const int32_t *rec, int count, const uint32_t *cps, uint32_t *keys, int *simple)
{
	int k = 0, one = 1;
	for (int r = 0; r < count; r++, rec += 4) {
		if (rec[2] & (U_AFTER | U_BREAK))
			continue;
		keys[k++] = rec[3] >= 0 ? cps[rec[3]] : ' ';
		one &= (rec[2] & U_SYNTHETIC) || rec[1] - rec[0] == 1;
	}
	*simple = one ? R_SIMPLE : 0;
	return k;
}

/* Rows of the page in reading order (glyphlines.read_rows), ROW_INTS ints each: read (1: read
 * again from its records, 0: MuPDF's line as it is), first character and count (the line kept as
 * it is), first record and count, the row's flags (R_*), first key and count (`keys`: row_keys).
 * Records, 4 ints each: first character, end, flags (U_*), the character the bidi algorithm sees
 * (-1: a synthetic space). `rows` has room for a row per line, `recs` for 2 records per character
 * and one more, `keys` for 2 per character and one more. Returns the rows, 0 where no line holds
 * a Hebrew or Arabic letter (the page stays as MuPDF gives it), -1 if out of memory; *page_rtl:
 * glyphrows.page_is_rtl. */
int pf_rows(int n_lines, const int32_t *line_len, const int32_t *line_info, const float *line_box,
            const float *geo, const float *size, const uint32_t *cps, const uint8_t *cls,
            int32_t *rows, int32_t *recs, uint32_t *keys, int *page_rtl)
{
	int n_keys = 0;
	int n = 0;
	for (int l = 0; l < n_lines; l++)
		n += line_len[l];
	size_t most = (size_t)(n > n_lines ? n : n_lines) + 1;
	page_t p = {geo, size, cps, cls};
	p.kinds = malloc(most);
	p.values = malloc(sizeof(double) * most);
	p.ends = malloc(sizeof(int32_t) * most);
	p.order = malloc(sizeof(int32_t) * 5 * most);
	p.joined = malloc(most);
	p.pairs = malloc(sizeof(int32_t) * 2 * most);
	p.units = malloc(sizeof(unit_t) * most);
	p.visual = malloc(sizeof(unit_t) * most);
	p.merge = malloc(sizeof(unit_t) * most);
	line_t *lines = malloc(sizeof(line_t) * most);
	int found = -1;
	if (!p.kinds || !p.values || !p.ends || !p.order || !p.joined || !p.pairs || !p.units
	    || !p.visual || !p.merge || !lines)
		goto out;
	for (int i = 0; i < n; i++)
		p.kinds[i] = glyph_kind(cls[i]);
	int count = page_lines(&p, n_lines, line_len, line_info, line_box, lines), rtl = 0;
	for (int i = 0; i < count; i++)
		rtl |= lines[i].rtl;
	found = 0;
	if (!rtl)
		goto out;
	int r_letters = 0, l_letters = 0;
	double lo = lines[0].x0, hi = lines[0].x1;
	for (int i = 0; i < count; i++) {
		for (int c = lines[i].start; c < lines[i].start + lines[i].n; c++) {
			r_letters += (cls[c] & C_RTL) != 0;
			l_letters += (cls[c] & (C_RTL | C_LATIN)) == C_LATIN;
		}
		lo = lines[i].x0 < lo ? lines[i].x0 : lo;
		hi = lines[i].x1 > hi ? lines[i].x1 : hi;
	}
	*page_rtl = r_letters >= l_letters;
	int32_t *parent = p.order, *roots = p.order + most, *head = p.order + 2 * most;
	int32_t *members = p.order + 3 * most, *next = p.order + 4 * most;
	join_rows(&p, lines, count, *page_rtl, parent, roots);
	/* rows in order of their first line, each row's lines ascending: a list per root */
	for (int i = 0; i < count; i++) {
		head[i] = -1;
		roots[i] = find(parent, i);
	}
	for (int i = count - 1; i >= 0; i--) {
		next[i] = head[roots[i]];
		head[roots[i]] = i;
	}
	int32_t *rec = recs;
	for (int i = 0; i < count; i++) {
		if (head[roots[i]] != i)
			continue;
		int m = 0;
		for (int j = i; j >= 0; j = next[j])
			members[m++] = j;
		int32_t *row = rows + ROW_INTS * found++;
		int flags = row_flags(&p, lines, members, m);
		int letters = 0;
		for (int j = 0; j < m; j++)
			letters |= lines[members[j]].rtl;
		int read = !(m == 1 && in_order(&p, lines + members[0]))
			   && (letters || (*page_rtl && (m > 1 || (flags & R_TAIL) || !(flags & R_HAS_LETTERS))));
		row[0] = read;
		row[1] = lines[i].start;
		row[2] = lines[i].n;
		row[3] = (int32_t)((rec - recs) / 4);
		if (read)
			rec = read_row(&p, lines, members, m, rec);
		row[4] = (int32_t)((rec - recs) / 4) - row[3];
		row[5] = flags | (letters ? R_LETTERS : 0) | (read ? aligned(lines, members, m, lo, hi) : 0);
		int simple = 0;
		row[6] = n_keys;
		row[7] = read ? row_keys(recs + 4 * (size_t)row[3], row[4], cps, keys + n_keys, &simple) : 0;
		row[5] |= simple;
		n_keys += row[7];
	}
out:
	free(p.kinds);
	free(p.values);
	free(p.ends);
	free(p.order);
	free(p.joined);
	free(p.pairs);
	free(p.units);
	free(p.visual);
	free(p.merge);
	free(lines);
	return found;
}

/* ---- the rows' characters in their reading order, and the edits against them ---- */

enum { E_SPACE = 1, E_REJOINED, E_UNDER, E_LIGATURE };
#define ALEF 0x0627
#define LAM 0x0644
#define X0(i) ((double)g[6 * (size_t)(i)])
#define X1(i) ((double)g[6 * (size_t)(i) + 2])

/* glyphunits.swapped_ligature of the unit of two code points at s, after `before` (-1: none) */
static int swapped(const float *g, const uint32_t *cps, const uint8_t *cls, int s, int before)
{
	if (before < 0 || cps[before] != ALEF || cps[s] != ALEF || X1(s) - X0(s) > ZERO)
		return 0;
	return X1(s + 1) - X0(s + 1) > ZERO && (cls[s + 1] & C_RTL) && cps[s + 1] != ALEF
	       && cps[s + 1] != LAM;
}

static int32_t *edit(int32_t *e, int row, int start, int end, int kind, int c1, int c2)
{
	e[0] = row; e[1] = start; e[2] = end; e[3] = kind; e[4] = c1; e[5] = c2;
	return e + 6;
}

/* glyphlines._read_row's characters and edits for every row pf_rows gave, in page order: a read
 * row's units in `orders` (its indices into the row's visual units, at the row's first key),
 * each unit followed by the placeholders under it, then the row's line ends; a row
 * kept as MuPDF gives it, its line. chars: the characters (n of them, every character of the
 * rows); lengths: per row; edits: 6 ints each (row, start, end, E_*, the two code points of a
 * ligature's replacement), room for one per record. Returns the edits, -1 if out of memory. */
int pf_kept(int n_rows, const int32_t *rows, const int32_t *recs, const int32_t *orders,
            const float *geo, const uint32_t *cps, const uint8_t *cls, int32_t *chars,
            int32_t *lengths, int32_t *edits)
{
	int most = 1;
	for (int r = 0; r < n_rows; r++)
		most = rows[ROW_INTS * r + 7] > most ? rows[ROW_INTS * r + 7] : most;
	int32_t *visual = malloc(sizeof(int32_t) * (size_t)most);
	if (!visual)
		return -1;
	const float *g = geo;
	int32_t *e = edits, *out = chars;
	for (int r = 0; r < n_rows; r++) {
		const int32_t *row = rows + ROW_INTS * r, *rec = recs + 4 * (size_t)row[3];
		const int32_t *order = orders + row[6];
		int32_t *begin = out;
		if (!row[0]) {
			for (int i = row[1]; i < row[1] + row[2]; i++)
				*out++ = i;
			lengths[r] = row[2];
			continue;
		}
		for (int k = 0, v = 0; k < row[4]; k++)
			if (!(rec[4 * k + 2] & (U_AFTER | U_BREAK)))
				visual[v++] = k;
		for (int u = 0; u < row[7]; u++) {
			for (int k = visual[order[u]]; k < row[4]; k++) {
				const int32_t *x = rec + 4 * k;
				if (k > visual[order[u]] && !(x[2] & U_AFTER))
					break;
				int at = (int)(out - begin), s = x[0], m = x[1] - x[0];
				if (x[2] & U_SYNTHETIC) {
					e = edit(e, r, at, at, E_SPACE, 0, 0);
					continue;
				}
				if (x[2] & U_DROPPED)
					e = edit(e, r, at, at + m, E_REJOINED, 0, 0);
				else if (x[2] & U_AFTER)
					e = edit(e, r, at, at + m, E_UNDER, 0, 0);
				else if (m == 2 && swapped(g, cps, cls, s, at ? out[-1] : -1))
					e = edit(e, r, at, at + 2, E_LIGATURE, (int)cps[s + 1], (int)cps[s]);
				for (int i = s; i < x[1]; i++)
					*out++ = i;
			}
		}
		for (int k = 0; k < row[4]; k++)
			if (rec[4 * k + 2] & U_BREAK)
				for (int i = rec[4 * k]; i < rec[4 * k + 1]; i++)
					*out++ = i;
		lengths[r] = (int)(out - begin);
	}
	free(visual);
	return (int)((e - edits) / 6);
}
