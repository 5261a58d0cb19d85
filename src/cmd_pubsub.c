/*
 * cmd_pubsub.c - SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE and
 * PUBLISH, with Redis 7's replies: one ["subscribe", channel, count] per
 * channel (a push in RESP3), count being the session's channels and
 * patterns. The channels and the delivery are pubsub.c's.
 */
#include <string.h>

#include "session.h"
#include "handler.h"
#include "pubsub.h"
#include "resp.h"

/* Whether the command is the pattern kind (PSUBSCRIBE, PUNSUBSCRIBE). */
static int
is_pattern(const struct op *op)
{
	return op->cmd->name[0] == 'P';
}

/* One ["word", name, count] (name NULL: a null) into b. */
static void
confirm(struct buf *b, const char *word, const char *name, size_t len,
    unsigned count)
{
	buf_append(b, ">3\r\n", 4);
	resp_add_bulk(b, word, strlen(word));
	if (name != NULL)
		resp_add_bulk(b, name, len);
	else
		resp_add_null3(b);
	resp_add_int(b, count);
}

void
cmd_subscribe(struct session *s, struct op *op, struct result *r)
{
	int		 pat = is_pattern(op);
	struct buf	*b = result_reset();

	for (int i = 1; i < op->argc; i++) {
		if (pubsub_subscribe(s, op->argv[i], op->argl[i], pat) == -1) {
			result_error(r, "ERR", "out of memory");
			return;
		}
		confirm(b, pat ? "psubscribe" : "subscribe", op->argv[i],
		    op->argl[i], s->nsubs);
	}
	result_scratch(r, RESULT_ARRAY);
}

void
cmd_unsubscribe(struct session *s, struct op *op, struct result *r)
{
	int		 pat = is_pattern(op);
	const char	*word = pat ? "punsubscribe" : "unsubscribe", *name;
	struct buf	*b = result_reset();
	size_t		 len;
	int		 any = 0;

	if (op->argc > 1) {
		for (int i = 1; i < op->argc; i++) {
			pubsub_unsubscribe(s, op->argv[i], op->argl[i], pat);
			confirm(b, word, op->argv[i], op->argl[i], s->nsubs);
		}
	} else {
		/* all of them, each confirmed; none: one with a null */
		while ((name = pubsub_session_name(s, pat, 0, &len)) != NULL) {
			/* confirmed first: the name goes with the channel */
			confirm(b, word, name, len, s->nsubs - 1);
			pubsub_unsubscribe(s, name, len, pat);
			any = 1;
		}
		if (!any)
			confirm(b, word, NULL, 0, s->nsubs);
	}
	result_scratch(r, RESULT_ARRAY);
}

void
cmd_publish(struct session *s, struct op *op, struct result *r)
{
	(void)s;
	result_int(r, pubsub_publish(op->argv[1], op->argl[1], op->argv[2],
	    op->argl[2]));
}
