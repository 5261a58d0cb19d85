/*
 * keyslot.c - the slot of a key, as Redis Cluster computes it: CRC16/XMODEM
 * with a byte table, eight bytes a step, or sixteen with PCLMULQDQ where
 * the CPU has it (a URL is long: the slot is most of what cluster mode adds
 * to a request). See keyslot.h.
 */
#include <stdint.h>
#include <string.h>

#include "keyslot.h"

/* CRC16/XMODEM, one byte at a time: crc = (crc << 8) ^ tab[(crc >> 8) ^ b]. */
static const uint16_t crc16tab[256] = {
	0x0000, 0x1021, 0x2042, 0x3063, 0x4084, 0x50a5, 0x60c6, 0x70e7,
	0x8108, 0x9129, 0xa14a, 0xb16b, 0xc18c, 0xd1ad, 0xe1ce, 0xf1ef,
	0x1231, 0x0210, 0x3273, 0x2252, 0x52b5, 0x4294, 0x72f7, 0x62d6,
	0x9339, 0x8318, 0xb37b, 0xa35a, 0xd3bd, 0xc39c, 0xf3ff, 0xe3de,
	0x2462, 0x3443, 0x0420, 0x1401, 0x64e6, 0x74c7, 0x44a4, 0x5485,
	0xa56a, 0xb54b, 0x8528, 0x9509, 0xe5ee, 0xf5cf, 0xc5ac, 0xd58d,
	0x3653, 0x2672, 0x1611, 0x0630, 0x76d7, 0x66f6, 0x5695, 0x46b4,
	0xb75b, 0xa77a, 0x9719, 0x8738, 0xf7df, 0xe7fe, 0xd79d, 0xc7bc,
	0x48c4, 0x58e5, 0x6886, 0x78a7, 0x0840, 0x1861, 0x2802, 0x3823,
	0xc9cc, 0xd9ed, 0xe98e, 0xf9af, 0x8948, 0x9969, 0xa90a, 0xb92b,
	0x5af5, 0x4ad4, 0x7ab7, 0x6a96, 0x1a71, 0x0a50, 0x3a33, 0x2a12,
	0xdbfd, 0xcbdc, 0xfbbf, 0xeb9e, 0x9b79, 0x8b58, 0xbb3b, 0xab1a,
	0x6ca6, 0x7c87, 0x4ce4, 0x5cc5, 0x2c22, 0x3c03, 0x0c60, 0x1c41,
	0xedae, 0xfd8f, 0xcdec, 0xddcd, 0xad2a, 0xbd0b, 0x8d68, 0x9d49,
	0x7e97, 0x6eb6, 0x5ed5, 0x4ef4, 0x3e13, 0x2e32, 0x1e51, 0x0e70,
	0xff9f, 0xefbe, 0xdfdd, 0xcffc, 0xbf1b, 0xaf3a, 0x9f59, 0x8f78,
	0x9188, 0x81a9, 0xb1ca, 0xa1eb, 0xd10c, 0xc12d, 0xf14e, 0xe16f,
	0x1080, 0x00a1, 0x30c2, 0x20e3, 0x5004, 0x4025, 0x7046, 0x6067,
	0x83b9, 0x9398, 0xa3fb, 0xb3da, 0xc33d, 0xd31c, 0xe37f, 0xf35e,
	0x02b1, 0x1290, 0x22f3, 0x32d2, 0x4235, 0x5214, 0x6277, 0x7256,
	0xb5ea, 0xa5cb, 0x95a8, 0x8589, 0xf56e, 0xe54f, 0xd52c, 0xc50d,
	0x34e2, 0x24c3, 0x14a0, 0x0481, 0x7466, 0x6447, 0x5424, 0x4405,
	0xa7db, 0xb7fa, 0x8799, 0x97b8, 0xe75f, 0xf77e, 0xc71d, 0xd73c,
	0x26d3, 0x36f2, 0x0691, 0x16b0, 0x6657, 0x7676, 0x4615, 0x5634,
	0xd94c, 0xc96d, 0xf90e, 0xe92f, 0x99c8, 0x89e9, 0xb98a, 0xa9ab,
	0x5844, 0x4865, 0x7806, 0x6827, 0x18c0, 0x08e1, 0x3882, 0x28a3,
	0xcb7d, 0xdb5c, 0xeb3f, 0xfb1e, 0x8bf9, 0x9bd8, 0xabbb, 0xbb9a,
	0x4a75, 0x5a54, 0x6a37, 0x7a16, 0x0af1, 0x1ad0, 0x2ab3, 0x3a92,
	0xfd2e, 0xed0f, 0xdd6c, 0xcd4d, 0xbdaa, 0xad8b, 0x9de8, 0x8dc9,
	0x7c26, 0x6c07, 0x5c64, 0x4c45, 0x3ca2, 0x2c83, 0x1ce0, 0x0cc1,
	0xef1f, 0xff3e, 0xcf5d, 0xdf7c, 0xaf9b, 0xbfba, 0x8fd9, 0x9ff8,
	0x6e17, 0x7e36, 0x4e55, 0x5e74, 0x2e93, 0x3eb2, 0x0ed1, 0x1ef0,
};

/*
 * Slicing by 8: crc8[k][b] is the CRC of byte b followed by k zero bytes
 * (crc8[0] is crc16tab), so that eight bytes take eight independent loads
 * instead of a chain of eight; a key is hashed on every request of a node
 * that holds a map. Made at first use. Long keys go 16 bytes a step where
 * the CPU multiplies without carries (below).
 */
static uint16_t	crc8[8][256];
static int	crc8_ready;
#if defined(__x86_64__) && defined(__GNUC__)
static void	clmul_make(void);
#endif

static void
crc8_make(void)
{
	for (int b = 0; b < 256; b++) {
		crc8[0][b] = crc16tab[b];
		for (int k = 1; k < 8; k++)
			crc8[k][b] = (uint16_t)(crc8[k - 1][b] << 8) ^
			    crc16tab[crc8[k - 1][b] >> 8];
	}
#if defined(__x86_64__) && defined(__GNUC__)
	clmul_make();
#endif
	crc8_ready = 1;
}

/* The table's CRC from crc on, over len bytes at b. */
static uint16_t
crc16_tables(uint16_t crc, const unsigned char *b, size_t len)
{
	/* the register only reaches the first two bytes of eight */
	for (; len >= 8; b += 8, len -= 8)
		crc = crc8[7][b[0] ^ (crc >> 8)] ^ crc8[6][b[1] ^ (crc & 0xff)] ^
		    crc8[5][b[2]] ^ crc8[4][b[3]] ^ crc8[3][b[4]] ^
		    crc8[2][b[5]] ^ crc8[1][b[6]] ^ crc8[0][b[7]];
	for (size_t i = 0; i < len; i++)
		crc = (uint16_t)(crc << 8) ^ crc16tab[((crc >> 8) ^ b[i]) & 0xff];
	return crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/*
 * Keys of 32 bytes or more, on a CPU with carry-less multiplication: 16
 * bytes a step, folded (Intel's "Fast CRC Computation for Generic
 * Polynomials Using PCLMULQDQ"). The message is a polynomial, its first
 * byte's top bit the highest power; the CRC is M * x^16 mod P. A holds
 * 128 bits congruent to what was read so far: A * x^128 + B, the next 16
 * bytes, is congruent to A_hi * (x^192 mod P) + A_lo * (x^128 mod P) + B,
 * which fits in 128 bits again; a tail of t bytes likewise, with x^8t.
 * What A holds at the end is folded to 64 bits W the same way, and W *
 * x^16 mod P is taken by Barrett's reduction: two more multiplications
 * (the table's eight lookups cost three times the instructions, and a
 * URL's slot is most of what cluster mode adds to a request).
 */
static int		clmul_ok;	/* 1: the CPU has it, 0: no */
static uint64_t		k64_, k128, k192;	/* x^64, x^128, x^192 mod P */
static uint64_t		mu;	/* x^80 / P, without its x^64 term */
/* kt[t]: x^(64 + 8t) mod P and x^8t mod P, for a tail of t bytes */
static __m128i		kt[16];
/* 16 bytes 0xff then 16 0: the mask of the t low bytes at 16 - t */
static const unsigned char low_bytes[32] = {
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
};

#define CRC16_POLY	0x11021u	/* P = x^16 + x^12 + x^5 + 1 */

/* x^n mod P. */
static uint64_t
xpow_mod(unsigned n)
{
	uint32_t r = 1;

	while (n-- > 0) {
		r <<= 1;
		if (r & 0x10000)
			r ^= CRC16_POLY;
	}
	return r;
}

/* The quotient x^80 / P: degree 64, returned without its top term. */
static uint64_t
x80_div(void)
{
	unsigned __int128	r = (unsigned __int128)1 << 80;
	uint64_t		q = 0;

	for (int i = 80; i >= 16; i--)
		if ((r >> i) & 1) {
			r ^= (unsigned __int128)CRC16_POLY << (i - 16);
			if (i - 16 < 64)
				q |= (uint64_t)1 << (i - 16);
		}
	return q;
}

static void
clmul_make(void)
{
	__builtin_cpu_init();
	k64_ = xpow_mod(64);
	for (unsigned t = 0; t < 16; t++)
		kt[t] = _mm_set_epi64x((long long)xpow_mod(64 + 8 * t),
		    (long long)xpow_mod(8 * t));
	k128 = xpow_mod(128);
	k192 = xpow_mod(192);
	mu = x80_div();
	/* last: keyslot_of takes the folding path on this flag alone */
	clmul_ok = __builtin_cpu_supports("pclmul") &&
	    __builtin_cpu_supports("ssse3");
}

/*
 * The CRC of len >= 32 bytes at b, or -1 if a "{" is among them
 * (keyslot_of then looks for a hash tag) and brace is set.
 */
__attribute__((target("pclmul,ssse3"))) static inline int
crc16_clmul(const unsigned char *b, size_t len, int brace)
{
	const __m128i	 rev = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
			    10, 11, 12, 13, 14, 15);
	const __m128i	 k = _mm_set_epi64x((long long)k192, (long long)k128);
	const __m128i	 k64 = _mm_set_epi64x(0, (long long)k64_);
	const __m128i	 kb = _mm_set_epi64x(CRC16_POLY & 0xffff,
			    (long long)mu);
	const __m128i	 open = _mm_set1_epi8('{');
	__m128i		 a, x, seen, q;

	x = _mm_loadu_si128((const void *)b);
	seen = _mm_cmpeq_epi8(x, open);
	a = _mm_shuffle_epi8(x, rev);
	for (b += 16, len -= 16; len >= 16; b += 16, len -= 16) {
		x = _mm_loadu_si128((const void *)b);
		seen = _mm_or_si128(seen, _mm_cmpeq_epi8(x, open));
		a = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x11),
		    _mm_clmulepi64_si128(a, k, 0x00)),
		    _mm_shuffle_epi8(x, rev));
	}
	if (len > 0) {
		/* the last t bytes: A * x^8t + T, T read in the 16 bytes
		 * that end the key (it is 32 or more), the others masked */
		__m128i tail;

		x = _mm_loadu_si128((const void *)(b + len - 16));
		seen = _mm_or_si128(seen, _mm_cmpeq_epi8(x, open));
		tail = _mm_and_si128(_mm_shuffle_epi8(x, rev),
		    _mm_loadu_si128((const void *)(low_bytes + 16 - len)));
		a = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(a,
		    kt[len], 0x11), _mm_clmulepi64_si128(a, kt[len], 0x00)),
		    tail);
	}
	if (brace && _mm_movemask_epi8(seen) != 0)
		return -1;
	/* A_hi * x^64 + A_lo: A_hi * (x^64 mod P), 80 bits, folded twice
	 * to the 64 bits of W */
	a = _mm_xor_si128(_mm_clmulepi64_si128(a, k64, 0x01),
	    _mm_move_epi64(a));
	a = _mm_xor_si128(_mm_clmulepi64_si128(a, k64, 0x01),
	    _mm_move_epi64(a));
	/* Barrett: W * x^16 / P is floor(W * (x^64 + mu) / x^64) = W + the
	 * top half of W * mu; the remainder is the low 16 bits of that
	 * quotient times P, where P's x^16 adds nothing */
	q = _mm_xor_si128(a, _mm_srli_si128(_mm_clmulepi64_si128(a, kb, 0x00),
	    8));
	return (uint16_t)_mm_cvtsi128_si32(_mm_clmulepi64_si128(q, kb, 0x10));
}

/* The slot of a key of 32 bytes or more without "{", or -1. */
__attribute__((target("pclmul,ssse3"))) static int
slot_clmul(const unsigned char *b, size_t len)
{
	int crc = crc16_clmul(b, len, 1);

	return crc < 0 ? -1 : crc & (KEYSLOT_COUNT - 1);
}

/* The CRC of a key of 32 bytes or more, whatever it holds. */
__attribute__((target("pclmul,ssse3"))) static uint16_t
crc16_long(const unsigned char *b, size_t len)
{
	return (uint16_t)crc16_clmul(b, len, 0);
}
#endif

uint16_t
keyslot_crc16(const void *p, size_t len)
{
	if (__builtin_expect(!crc8_ready, 0))
		crc8_make();
#if defined(__x86_64__) && defined(__GNUC__)
	if (len >= 32 && clmul_ok)
		return crc16_long(p, len);
#endif
	return crc16_tables(0, p, len);
}

/* keyslot_of's case of a hash tag, a short key or an older CPU (out of
 * line: inlined, its registers' saving would cost every URL's slot) */
__attribute__((noinline)) static unsigned
keyslot_tagged(const char *key, size_t len)
{
	const char	*open, *close;
	size_t		 rest;

	open = memchr(key, '{', len);
	if (open != NULL) {
		rest = len - (size_t)(open - key) - 1;
		close = memchr(open + 1, '}', rest);
		/* "{}" or no "}": the whole key, as Redis */
		if (close != NULL && close > open + 1)
			return keyslot_crc16(open + 1,
			    (size_t)(close - open - 1)) & (KEYSLOT_COUNT - 1);
	}
	return keyslot_crc16(key, len) & (KEYSLOT_COUNT - 1);
}

unsigned
keyslot_of(const char *key, size_t len)
{
#if defined(__x86_64__) && defined(__GNUC__)
	/* a long key without "{" (a URL, mostly): one pass (clmul_ok is
	 * set with the tables, at the first CRC) */
	if (len >= 32 && clmul_ok) {
		int slot = slot_clmul((const unsigned char *)key, len);

		if (slot >= 0)
			return (unsigned)slot;
	}
#endif
	return keyslot_tagged(key, len);
}
