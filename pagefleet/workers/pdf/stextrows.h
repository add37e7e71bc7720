/* pagefleet: what stextrows.c and stextorder.c share (the rows workers/pdf/fastrows.py reads). */
#ifndef PF_STEXTROWS_H
#define PF_STEXTROWS_H
#include <stdint.h>

/* the character bits fastrows.py computes (CHAR_BITS) */
enum { C_SPACE = 1, C_MARK = 2, C_RTL = 4, C_LATIN = 8, C_ALPHA = 16, C_ALNUM = 32, C_DEC = 64 };
/* a record's flags (fastrows.py reads them) */
enum { U_SYNTHETIC = 1, U_DROPPED = 2, U_SPACE = 4, U_AFTER = 8, U_BREAK = 16 };
/* a row's flags */
enum { R_LETTERS = 1, R_HAS_LETTERS = 2, R_TAIL = 4, R_ALIGNED = 8, R_RIGHT = 16, R_SIMPLE = 32 };
/* ints per row in pf_rows's table */
#define ROW_INTS 8

int pf_bidi_order(const uint32_t *keys, int n, int rtl, const uint8_t *classes, int32_t *order);

#endif
