/*
 * result.h - what a command answers, and the one reply layer that writes
 * it in the protocol of the connection: a line, RESP2 or RESP3.
 *
 * A handler never formats bytes for a protocol. It fills a struct result
 * (an integer, a status, an error, a null, an array of answers, INFO's
 * text...) and result_encode writes it. Replies of richer shape (HELLO's
 * map, BF.INFO, CONFIG GET, COMMAND's tables) are built once, in RESP3 -
 * the richer form, with maps, sets, nulls and booleans - into result_buf
 * with the resp_add_* functions; a RESP2 connection gets them through
 * resp_downgrade, which writes what Redis writes for the same value to a
 * RESP2 client (a map as a flat array, a set as an array, a null as $-1,
 * a boolean as 0 or 1, a verbatim string as a bulk string). So a handler
 * learns no third format, and the line protocol never sees those shapes.
 */
#ifndef SEEND_RESULT_H
#define SEEND_RESULT_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct save_wait;

/* The protocol a reply is written in. */
#define REPLY_LINE	1
#define REPLY_RESP2	2
#define REPLY_RESP3	3

enum result_kind {
	RESULT_NONE,	/* no reply (an empty request) */
	RESULT_INT,	/* n                 line "n"     RESP ":n" (bool: "#t") */
	RESULT_STATUS,	/* text              line "text"  RESP "+text" */
	RESULT_ERROR,	/* code, text        line "ERR text" RESP "-code text" */
	RESULT_BULK,	/* text, len                      RESP "$len text" */
	RESULT_NULL,	/*                                RESP2 "$-1", RESP3 "_" */
	RESULT_INTS,	/* len answers of 0/1 at text     RESP "*len :a ..." */
	RESULT_TEXT,	/* "name value" lines line: + "END" RESP2: a bulk,
			 * RESP3: a verbatim string (INFO) */
	RESULT_ARRAY,	/* text, len: a RESP3 value built in result_buf,
			 * downgraded for RESP2; RESP only */
	RESULT_WAIT,	/* wait: the reply comes when it completes (SAVE) */
};

struct result {
	enum result_kind	 kind;
	/* RESULT_ERROR: Redis's code ("ERR", "NOAUTH", "WRONGPASS"), or NULL
	 * for a bare RedisBloom text whose first word is its code */
	const char		*code;
	const char		*text;	/* static, the request, or scratch */
	size_t			 len;
	long long		 n;
	/* RESULT_INT, RESULT_INTS: the answers are booleans, which RESP3
	 * writes "#t"/"#f" (RedisBloom's BF.ADD, BF.EXISTS ...) */
	int			 boolean;
	int			 close;	/* close once the reply is sent */
	int			 need_auth; /* refused for want of AUTH */
	/* PSYNC: the connection becomes a replica's link (no reply here:
	 * the link answers) */
	int			 handover;
	/* SHUTDOWN: no reply, no further request; the connection stays open
	 * until the process exits (so a client returns once it has) */
	int			 linger;
	struct save_wait	*wait;	/* RESULT_WAIT */
};

/*
 * Long results (INFO, FILTERS, arrays) are built here: the loop is
 * single-threaded and a result is encoded before the next request runs.
 */
extern struct buf	 result_buf;

void	 result_int(struct result *, long long);
void	 result_bool(struct result *, int);
void	 result_status(struct result *, const char *);
/* An error: "ERR text" on a line, "-code text" in RESP. */
void	 result_error(struct result *, const char *code, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/* A RedisBloom error sent as is: its first word is its code. */
void	 result_bare(struct result *, const char *text);
void	 result_null(struct result *);
void	 result_bulk(struct result *, const char *, size_t);
/* Empties result_buf for a value built with resp_add_*; returns it. */
struct buf *result_reset(void);
/* r takes what result_buf holds, as kind. */
void	 result_scratch(struct result *, enum result_kind);
/* Room for n answers of 0/1, one byte each (RESULT_INTS), or NULL. */
uint8_t	*result_answers(struct result *, size_t n);
/* Writes r into out in proto's encoding (REPLY_*). 0, or -1 out of
 * memory. */
int	 result_encode(struct buf *out, int proto, const struct result *);

#endif
