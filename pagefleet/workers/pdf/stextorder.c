/* pagefleet: the order a row of units is read in (pagefleet.workers.pdf.glyphunits.letters_order_of, with
 * pagefleet.routing.bidi_order.logical_order), in C: the second half of what stextrows.c reads.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "stextrows.h"

/* The order of a row's units by the Unicode bidirectional algorithm (pagefleet.routing.bidi_order).
 *
 * pagefleet.routing.bidi_order.logical_order resolves the levels with python-bidi and applies rules L1 and
 * L2 itself. Here GNU FriBidi resolves them, loaded at run time (libfribidi.so.0: no headers or
 * link-time dependency, and without it the Python reading runs). Its levels are taken only where
 * both libraries can be trusted to agree: every code point's bidi class, as FriBidi gives it,
 * must be the one Python's unicodedata gives (`classes`, from fastrows), and one of the classes
 * of text and numbers (L R AL EN ES ET AN CS NSM ON WS): no explicit embedding or isolate, no
 * boundary neutral, no separator. Otherwise -1: Python reads the row. */

typedef void (*fb_types_t)(const uint32_t *, int, uint32_t *);
typedef void (*fb_brackets_t)(const uint32_t *, int, const uint32_t *, uint32_t *);
typedef signed char (*fb_levels_t)(const uint32_t *, const uint32_t *, int, uint32_t *,
                                   signed char *);

enum { B_OTHER, B_L, B_R, B_AL, B_EN, B_ES, B_ET, B_AN, B_CS, B_NSM, B_ON, B_WS, B_CLASSES };

static struct {
	int state; /* 0 not tried, 1 loaded, -1 not there */
	fb_types_t types;
	fb_brackets_t brackets;
	fb_levels_t levels;
	uint32_t type_of[B_CLASSES]; /* FriBidi's type for each class, from a character of it */
} fb;

static int fribidi(void)
{
	if (fb.state)
		return fb.state > 0;
	fb.state = -1;
	void *lib = dlopen("libfribidi.so.0", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return 0;
	fb.types = (fb_types_t)dlsym(lib, "fribidi_get_bidi_types");
	fb.brackets = (fb_brackets_t)dlsym(lib, "fribidi_get_bracket_types");
	fb.levels = (fb_levels_t)dlsym(lib, "fribidi_get_par_embedding_levels_ex");
	if (!fb.types || !fb.brackets || !fb.levels)
		return 0;
	/* one character of each class: L R AL EN ES ET AN CS NSM ON WS */
	static const uint32_t sample[B_CLASSES] = {0, 'A', 0x05D0, 0x0627, '1', '+', '%', 0x0663,
	                                           ',', 0x05B0, '!', ' '};
	fb.types(sample + 1, B_CLASSES - 1, fb.type_of + 1);
	for (int i = 1; i < B_CLASSES; i++)
		for (int j = 1; j < i; j++)
			if (fb.type_of[i] == fb.type_of[j])
				return 0; /* not the FriBidi this was written for */
	fb.state = 1;
	return 1;
}

/* The logical order of a visual line's units (one code point each), as indices into `keys`:
 * pagefleet.routing.bidi_order.logical_order's first answer. `classes`: Python's bidi class of each key
 * (B_*, in the low 7 bits). Returns 0, or -1 where Python must read the line. */
int pf_bidi_order(const uint32_t *keys, int n, int rtl, const uint8_t *classes, int32_t *order)
{
	if (n <= 0)
		return n == 0 ? 0 : -1;
	if (!fribidi())
		return -1;
	uint32_t *types = malloc(sizeof(uint32_t) * 2 * (size_t)n);
	signed char *levels = malloc((size_t)n);
	int ok = types && levels;
	if (ok)
		fb.types(keys, n, types);
	for (int i = 0; ok && i < n; i++) {
		int c = classes[i] & 0x7F;
		ok = c != B_OTHER && c < B_CLASSES && fb.type_of[c] == types[i];
	}
	uint32_t base = fb.type_of[rtl ? B_R : B_L];
	if (ok) {
		fb.brackets(keys, n, types, types + n);
		ok = fb.levels(types, types + n, n, &base, levels) > 0;
	}
	if (ok) {
		int lowest = 127, highest = 0;
		for (int i = n - 1, trailing = 1; i >= 0; i--) { /* rule L1: whitespace at the end */
			if (trailing && (classes[i] & 0x7F) == B_WS)
				levels[i] = (signed char)(rtl ? 1 : 0);
			else
				trailing = 0;
		}
		for (int i = 0; i < n; i++) {
			order[i] = i;
			highest = levels[i] > highest ? levels[i] : highest;
			if (levels[i] % 2 && levels[i] < lowest)
				lowest = levels[i];
		}
		for (int level = highest; lowest < 127 && level >= lowest; level--) /* rule L2 */
			for (int i = 0; i < n;) {
				if (levels[order[i]] < level) {
					i++;
					continue;
				}
				int j = i;
				while (j < n && levels[order[j]] >= level)
					j++;
				for (int a = i, b = j - 1; a < b; a++, b--) {
					int32_t t = order[a];
					order[a] = order[b];
					order[b] = t;
				}
				i = j;
			}
	}
	free(types);
	free(levels);
	return ok ? 0 : -1;
}


/* ---- which of a row's two readings a reader takes (glyphunits.letters_order_of) ---- */

#define CLEAR_FAULTS 2

typedef struct {
	uint32_t c;
	uint8_t bits; /* C_* */
} tch;

#define SP(i) (t[i].bits & C_SPACE)			  /* \s */
#define ALNUM(i) (t[i].bits & C_ALNUM)			  /* [^\W_] */
#define WORD(i) (ALNUM(i) || t[i].c == '_')		  /* \w */
#define LETTER(i) (ALNUM(i) && !(t[i].bits & C_DEC)) /* [^\W\d_] */
#define DIGIT(i) (t[i].bits & C_DEC)			  /* \d */

static int in(uint32_t c, const uint32_t *set)
{
	for (; *set; set++)
		if (c == *set)
			return 1;
	return 0;
}

static const uint32_t CLOSING[] = {':', ';', ',', '.', '!', '?', ')', ']', '}', 0x060C, 0x061B, 0x061F, 0};
static const uint32_t OPENING[] = {'(', '[', '{', 0};
static const uint32_t CLOSE_BRACKET[] = {')', ']', '}', 0};
static const uint32_t GLUED[] = {':', ';', ',', 0x060C, 0x061B, 0};
static const uint32_t STARTING[] = {'.', ',', ':', ';', '!', '?', 0x060C, 0x061B, 0x061F, 0};
static const uint32_t BULLETS[] = {0x2022, 0x25E6, 0x25AA, 0x25CF, 0};

/* Where a match of pagefleet.routing.bidi_order._FAULTS starting at `pos` ends (its alternatives tried in
 * their order, as the regex does), or -1. No alternative can match empty or backtrack into
 * another length: a run of spaces is never a mark, a digit never a dot. */
/* A character some alternative of _FAULTS can start at (not counting a space or the text's start):
 * an opening, closing or glued mark, or a bullet. */
static int fault_mark(uint32_t c)
{
	switch (c) {
	case '(': case '[': case '{': case ')': case ']': case '}': case ':': case ';': case ',':
	case 0x060C: case 0x061B: case 0x2022: case 0x25E6: case 0x25AA: case 0x25CF:
		return 1;
	default:
		return 0;
	}
}

static int fault_at(const tch *t, int n, int pos)
{
	/* every alternative below needs pos 0, a space at pos, a fault mark at pos or an opening
	 * bracket after it: most characters of a row are none of these */
	if (pos > 0 && !SP(pos) && !fault_mark(t[pos].c) && !(pos + 1 < n && in(t[pos + 1].c, OPENING)))
		return -1;
	if (t[pos].c == ' ' && pos + 1 < n && in(t[pos + 1].c, CLOSING) && (pos + 2 == n || SP(pos + 2)))
		return pos + 2;
	if (in(t[pos].c, OPENING) && pos + 1 < n && t[pos + 1].c == ' ')
		return pos + 2;
	if (ALNUM(pos) && pos + 1 < n && in(t[pos + 1].c, OPENING))
		return pos + 2;
	if (in(t[pos].c, CLOSE_BRACKET) && pos + 1 < n && ALNUM(pos + 1))
		return pos + 2;
	if (pos > 0 && SP(pos - 1) && in(t[pos].c, GLUED) && pos + 1 < n && LETTER(pos + 1))
		return pos + 1;
	if (pos == 0) { /* ^\s*[.,:;!?،؛؟](?=\s*\w) */
		int i = 0, j;
		while (i < n && SP(i))
			i++;
		if (i < n && in(t[i].c, STARTING)) {
			for (j = i + 1; j < n && SP(j); j++)
				;
			if (j < n && WORD(j))
				return i + 1;
		}
	}
	if (pos > 0 && !SP(pos - 1)) { /* (?<=\S)\s*[•◦▪●]\s*$ */
		int i = pos, j;
		while (i < n && SP(i))
			i++;
		if (i < n && in(t[i].c, BULLETS)) {
			for (j = i + 1; j < n && SP(j); j++)
				;
			if (j == n)
				return n;
		}
	}
	if (pos > 0 && LETTER(pos - 1) && SP(pos)) { /* (?<=L)\s+\d{1,3}[.)]\s*(?=L) */
		int i = pos, d = 0, j;
		while (i < n && SP(i))
			i++;
		while (i + d < n && DIGIT(i + d))
			d++;
		if (d >= 1 && d <= 3 && i + d < n && (t[i + d].c == '.' || t[i + d].c == ')')) {
			for (j = i + d + 1; j < n && SP(j); j++)
				;
			if (j < n && LETTER(j))
				return j;
		}
	}
	return -1;
}

/* pagefleet.routing.bidi_order.attachment_faults: len(_FAULTS.findall(text)) */
static int faults(const tch *t, int n)
{
	int count = 0;
	for (int pos = 0; pos < n;) {
		int end = fault_at(t, n, pos);
		if (end > pos) {
			count++;
			pos = end;
		} else {
			pos++;
		}
	}
	return count;
}

static uint32_t swap_bracket(uint32_t c)
{
	switch (c) {
	case '(': return ')';
	case ')': return '(';
	case '[': return ']';
	case ']': return '[';
	case '{': return '}';
	case '}': return '{';
	default: return c;
	}
}

/* pagefleet.routing.brackets.brackets_balanced, of the text with its brackets swapped where `swap` */
static int balanced(const tch *t, int n, int swap, uint32_t *stack)
{
	int depth = 0;
	for (int i = 0; i < n; i++) {
		uint32_t c = swap ? swap_bracket(t[i].c) : t[i].c;
		if (c == '(' || c == '[' || c == '{')
			stack[depth++] = c == '(' ? ')' : c == '[' ? ']' : '}';
		else if (c == ')' || c == ']' || c == '}')
			if (!depth || stack[--depth] != c)
				return 0;
	}
	return depth == 0;
}

/* glyphunits.balanced_brackets, in place */
static void balance(tch *t, int n, uint32_t *stack)
{
	if (balanced(t, n, 0, stack) || !balanced(t, n, 1, stack))
		return;
	for (int i = 0; i < n; i++)
		t[i].c = swap_bracket(t[i].c);
}

/* text.split() == other.split() */
static int same_words(const tch *a, int na, const tch *b, int nb)
{
	int i = 0, j = 0;
	for (;;) {
		while (i < na && (a[i].bits & C_SPACE))
			i++;
		while (j < nb && (b[j].bits & C_SPACE))
			j++;
		if (i == na || j == nb)
			return i == na && j == nb;
		while (i < na && j < nb && !(a[i].bits & C_SPACE) && !(b[j].bits & C_SPACE)) {
			if (a[i].c != b[j].c)
				return 0;
			i++;
			j++;
		}
		if ((i < na && !(a[i].bits & C_SPACE)) || (j < nb && !(b[j].bits & C_SPACE)))
			return 0;
	}
}

typedef struct {
	const int32_t *unit; /* per visual unit: its record (4 ints) */
	int n;
	const uint32_t *cps;
	const uint8_t *cls;
	uint32_t *stack;
} row_t;

/* The row's text in `order` (a synthetic unit a space), its brackets balanced; returns its length. */
static int reading_text(const row_t *r, const int32_t *order, tch *t)
{
	int k = 0;
	for (int i = 0; i < r->n; i++) {
		const int32_t *u = r->unit + 4 * (size_t)order[i];
		if (u[2] & U_SYNTHETIC) {
			t[k].c = ' ';
			t[k++].bits = C_SPACE;
			continue;
		}
		for (int c = u[0]; c < u[1]; c++) {
			t[k].c = r->cps[c];
			t[k++].bits = r->cls[c];
		}
	}
	balance(t, k, r->stack);
	return k;
}

/* pagefleet.routing.bidi_order.line_direction of the keys: 1 RTL, 0 LTR, -1 the ends disagree or no letter */
static int line_direction(const row_t *r)
{
	int first = -1, last = -1;
	for (int i = 0; i < r->n; i++) {
		int key = r->unit[4 * i + 3];
		uint8_t bits = key >= 0 ? r->cls[key] : C_SPACE;
		if ((bits & C_ALNUM) && !(bits & C_DEC)) {
			last = bits & C_RTL ? 1 : 0;
			if (first < 0)
				first = last;
		}
	}
	return first < 0 || first != last ? -1 : first;
}

/* glyphunits.letters_order_of for one row: its order in `order`, the other reading's in `other`
 * where it comes back too. Returns 1 | 2 (RTL) | 4 (the other reading), or 0 where FriBidi does
 * not answer (Python reads the row). texts: scratch for two readings of the row. */
static int letters_order(const row_t *r, const uint32_t *keys, const uint8_t *classes, int page_rtl,
                         int aligned, int32_t *order, int32_t *other, tch *texts, int room)
{
	int ends = line_direction(r);
	int dirs[2] = {ends != 0, ends == 0}; /* the end letters' direction first; RTL without one */
	int32_t *orders[2] = {order, other};
	int key[2][5], len[2];
	tch *text[2] = {texts, texts + room};
	for (int d = 0; d < 2; d++) {
		int rtl = dirs[d];
		if (pf_bidi_order(keys, r->n, rtl, classes, orders[d]) < 0)
			return 0;
		len[d] = reading_text(r, orders[d], text[d]);
		int f = faults(text[d], len[d]);
		if (d == 0 && rtl == ends && f == 0)
			return 1 | (rtl ? 2 : 0);
		key[d][0] = key[d][2] = f;
		key[d][1] = ends >= 0 ? rtl != ends : 0;
		key[d][3] = aligned >= 0 ? rtl != aligned : 0;
		key[d][4] = rtl != page_rtl;
	}
	if (abs(key[0][0] - key[1][0]) < CLEAR_FAULTS)
		key[0][0] = key[1][0] = 0;
	int best = 0;
	for (int i = 0; i < 5; i++)
		if (key[0][i] != key[1][i]) {
			best = key[1][i] < key[0][i]; /* sorted() is stable: the first wins a tie */
			break;
		}
	int worse = 1 - best, tie = 1;
	for (int i = 0; i < 4; i++)
		tie &= key[best][i] == key[worse][i];
	for (int i = 0; best == 1 && i < r->n; i++) { /* the chosen order goes in `order` */
		int32_t kept = order[i];
		order[i] = other[i];
		other[i] = kept;
	}
	int two = tie && !same_words(text[best], len[best], text[worse], len[worse]);
	return 1 | (dirs[best] ? 2 : 0) | (two ? 4 : 0);
}

/* glyphunits.mirrored_number of a row's units: 1 or 0, or -1 where it turns on a character that is
 * a number but not a decimal digit (str.isdigit is Python's to answer) */
static int mirrored_number(const row_t *r)
{
	int first = -1, last = -1, inked = 0;
	for (int i = 0; i < r->n; i++) {
		const int32_t *u = r->unit + 4 * i;
		if (u[2] & U_SPACE)
			continue;
		uint32_t c = r->cps[u[3]];
		if ((c >= 0x0660 && c <= 0x0669) || (c >= 0x06F0 && c <= 0x06F9))
			return 1;
		first = first < 0 ? u[3] : first;
		last = u[3];
		inked++;
	}
	if (inked < 2)
		return 0;
	int ends[2] = {first, last}, digit[2];
	for (int e = 0; e < 2; e++) {
		uint8_t bits = r->cls[ends[e]];
		if (bits & C_DEC)
			digit[e] = 1;
		else if (!(bits & C_ALNUM))
			digit[e] = 0;
		else
			return -1;
	}
	return digit[0] && !digit[1];
}

/* The order of every read row's units (pf_rows's table, records and keys): orders[k] and
 * others[k] at the row's first key. keys_classes: Python's bidi class of each key (B_*, as
 * pf_bidi_order takes them). status per row: 1 | 2 (read right to left) | 4 (the other reading
 * is in `others`), or 0 where Python reads the row (FriBidi does not answer for it, or
 * mirrored_number cannot). Returns -1 if out of memory. */
int pf_orders(int n_rows, const int32_t *rows, const int32_t *recs, const uint32_t *keys,
              const uint8_t *key_classes, const uint32_t *cps, const uint8_t *cls, int page_rtl,
              int32_t *orders, int32_t *others, int32_t *status)
{
	int units = 1, chars = 1;
	for (int i = 0; i < n_rows; i++) {
		const int32_t *row = rows + ROW_INTS * i;
		int c = 0;
		for (int k = 0; row[0] && k < row[4]; k++)
			c += recs[4 * (row[3] + k) + 1] - recs[4 * (row[3] + k)] + 1;
		units = row[7] > units ? row[7] : units;
		chars = c > chars ? c : chars;
	}
	int32_t *unit = malloc(sizeof(int32_t) * 4 * (size_t)units);
	uint32_t *stack = malloc(sizeof(uint32_t) * (size_t)chars);
	tch *texts = malloc(sizeof(tch) * 2 * (size_t)chars);
	int ok = unit && stack && texts;
	for (int i = 0; ok && i < n_rows; i++) {
		const int32_t *row = rows + ROW_INTS * i, *rec = recs + 4 * (size_t)row[3];
		status[i] = 0;
		if (!row[0])
			continue;
		row_t r = {unit, 0, cps, cls, stack};
		for (int k = 0; k < row[4]; k++)
			if (!(rec[4 * k + 2] & (U_AFTER | U_BREAK)))
				memcpy(unit + 4 * r.n++, rec + 4 * k, sizeof(int32_t) * 4);
		const uint32_t *k = keys + row[6];
		const uint8_t *classes = key_classes + row[6];
		int flags = row[5];
		if (flags & R_LETTERS) {
			int aligned = flags & R_ALIGNED ? (flags & R_RIGHT) != 0 : -1;
			status[i] = letters_order(&r, k, classes, page_rtl, aligned, orders + row[6],
			                          others + row[6], texts, chars);
		} else {
			int rtl = !page_rtl ? 0 : flags & R_HAS_LETTERS ? (flags & R_TAIL) != 0 : mirrored_number(&r);
			if (rtl >= 0 && pf_bidi_order(k, r.n, rtl, classes, orders + row[6]) == 0)
				status[i] = 1 | (rtl ? 2 : 0);
		}
	}
	free(unit);
	free(stack);
	free(texts);
	return ok ? 0 : -1;
}

/* attachment_faults of a text given by its code points and their C_* bits (tests/unit/test_fastrows.py
 * compares it with the regex on random text). */
int pf_faults(const uint32_t *cps, const uint8_t *bits, int n)
{
	tch *t = malloc(sizeof(tch) * (size_t)(n > 0 ? n : 1));
	if (!t)
		return -1;
	for (int i = 0; i < n; i++) {
		t[i].c = cps[i];
		t[i].bits = bits[i];
	}
	int found = faults(t, n);
	free(t);
	return found;
}
