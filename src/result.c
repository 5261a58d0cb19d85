/*
 * result.c - the one reply layer: a struct result in the line protocol,
 * RESP2 or RESP3 (see result.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "resp.h"
#include "result.h"

struct buf		 result_buf;
/* Error texts formatted for a result. */
static char		 errtext[600];

void
result_int(struct result *r, long long n)
{
	r->kind = RESULT_INT;
	r->n = n;
}

void
result_bool(struct result *r, int yes)
{
	r->kind = RESULT_INT;
	r->n = yes != 0;
	r->boolean = 1;
}

void
result_status(struct result *r, const char *text)
{
	r->kind = RESULT_STATUS;
	r->text = text;
	r->len = strlen(text);
}

void
result_error(struct result *r, const char *code, const char *fmt, ...)
{
	va_list	 ap;
	int	 n;

	va_start(ap, fmt);
	n = vsnprintf(errtext, 512, fmt, ap);
	va_end(ap);
	r->kind = RESULT_ERROR;
	r->code = code;
	r->text = errtext;
	r->len = n < 0 ? 0 : (size_t)n < 512 ? (size_t)n : 511;
}

void
result_bare(struct result *r, const char *text)
{
	r->kind = RESULT_ERROR;
	r->code = NULL;
	r->text = text;
	r->len = strlen(text);
}

void
result_null(struct result *r)
{
	r->kind = RESULT_NULL;
}

void
result_bulk(struct result *r, const char *p, size_t len)
{
	r->kind = RESULT_BULK;
	r->text = p;
	r->len = len;
}

/* A scratch buffer above this is let go at the next reset: a slot
 * image (CLUSTER SLOTBITS, up to 528 MiB) or a dump's chunk is made once
 * in a while, and its size should not stay with the process. */
#define RESULT_KEEP	((size_t)4 << 20)

struct buf *
result_reset(void)
{
	if (result_buf.cap > RESULT_KEEP)
		buf_free(&result_buf);
	result_buf.off = result_buf.len = 0;
	return &result_buf;
}

void
result_scratch(struct result *r, enum result_kind kind)
{
	r->kind = kind;
	r->text = buf_head(&result_buf);
	r->len = buf_used(&result_buf);
}

uint8_t *
result_answers(struct result *r, size_t n)
{
	result_reset();
	if (buf_reserve(&result_buf, n ? n : 1) == -1)
		return NULL;
	r->kind = RESULT_INTS;
	r->text = result_buf.data;
	r->len = n;
	return (uint8_t *)result_buf.data;
}

/*
 * INFO's "name value" lines as Redis's "name:value", under a section
 * header redis-py's info() skips: a bulk string in RESP2, a verbatim
 * string ("txt") in RESP3, as Redis 7 sends INFO.
 */
static int
encode_text_resp(struct buf *out, const struct result *r, int resp3)
{
	const char	*p = r->text, *end = r->text + r->len, *d;
	struct buf	 t = { 0 };
	int		 rc;

	/* nothing (an unknown INFO section) is an empty string; text that
	 * begins with its own section header has no "# Seend" */
	if (r->len > 0 && r->text[0] != '#' &&
	    buf_append_str(&t, "# Seend\r\n") == -1)
		return -1;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *sp;
		size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);

		if (buf_append(&t, p, n) == -1) {
			buf_free(&t);
			return -1;
		}
		sp = memchr(t.data + t.len - n, ' ', n);
		/* a section header ("# Replication") stays as it is */
		if (sp != NULL && p[0] != '#')
			t.data[sp - t.data] = ':';
		p += n;
	}
	d = t.data != NULL ? buf_head(&t) : "";
	rc = resp3 ? resp_add_verbatim(out, "txt", d, buf_used(&t)) :
	    resp_add_bulk(out, d, buf_used(&t));
	buf_free(&t);
	return rc;
}

static int
encode_line(struct buf *out, const struct result *r)
{
	switch (r->kind) {
	case RESULT_NONE:
	case RESULT_WAIT:
		return 0;
	case RESULT_INT:
		if (r->n == 0 || r->n == 1)
			return buf_append(out, r->n ? "1\r\n" : "0\r\n", 3);
		return buf_printf(out, "%lld\r\n", r->n);
	case RESULT_STATUS:
		return buf_append(out, r->text, r->len) == -1 ? -1 :
		    buf_append(out, "\r\n", 2);
	case RESULT_ERROR:
		return buf_printf(out, "ERR %.*s\r\n", (int)r->len, r->text);
	case RESULT_TEXT:
		return buf_append(out, r->text, r->len) == -1 ? -1 :
		    buf_append(out, "END\r\n", 5);
	default:
		/* RESP-only shapes never come from line commands */
		return buf_append(out, "ERR internal error\r\n", 20);
	}
}

int
result_encode(struct buf *out, int proto, const struct result *r)
{
	int resp3 = proto == REPLY_RESP3;

	if (proto == REPLY_LINE)
		return encode_line(out, r);
	switch (r->kind) {
	case RESULT_NONE:
	case RESULT_WAIT:
		return 0;
	case RESULT_INT:
		if (resp3 && r->boolean)
			return resp_add_bool(out, r->n != 0);
		return resp_add_int(out, r->n);
	case RESULT_STATUS:
		return buf_append(out, "+", 1) == -1 ||
		    buf_append(out, r->text, r->len) == -1 ? -1 :
		    buf_append(out, "\r\n", 2);
	case RESULT_ERROR:
		if (r->code == NULL)
			return buf_append(out, "-", 1) == -1 ||
			    buf_append(out, r->text, r->len) == -1 ? -1 :
			    buf_append(out, "\r\n", 2);
		return resp_add_error(out, r->code, r->text, r->len);
	case RESULT_BULK:
		return resp_add_bulk(out, r->text, r->len);
	case RESULT_NULL:
		return resp3 ? resp_add_null3(out) : resp_add_null(out);
	case RESULT_INTS:
		if (resp_add_array(out, (long long)r->len) == -1)
			return -1;
		for (size_t i = 0; i < r->len; i++) {
			int a = (unsigned char)r->text[i];

			if ((resp3 && r->boolean ? resp_add_bool(out, a) :
			    resp_add_int(out, a)) == -1)
				return -1;
		}
		return 0;
	case RESULT_TEXT:
		return encode_text_resp(out, r, resp3);
	case RESULT_ARRAY:
		if (resp3)
			return buf_append(out, r->text, r->len);
		return resp_downgrade(out, r->text, r->len) == 0 ? 0 : -1;
	}
	return 0;
}
