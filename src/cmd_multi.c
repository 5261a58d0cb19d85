/*
 * cmd_multi.c - MULTI, EXEC, DISCARD as Redis 7 answers them: commands
 * sent after MULTI are queued (+QUEUED) and EXEC runs them in order,
 * answering an array of their replies; a command refused while queued
 * (unknown, wrong arity) makes EXEC answer -EXECABORT. What Redis Sentinel
 * wraps its failover commands in. No WATCH.
 *
 * Only sessions in MULTI pay for this: the dispatcher looks at the queue
 * only when session_general says so, and the pipelined fast paths are
 * skipped while it is there (conn.c).
 */
#include <stdlib.h>
#include <string.h>

#include "session.h"
#include "config.h"
#include "core.h"
#include "handler.h"
#include "resp.h"

/* One queued command: its arguments copied (the input they came in is
 * consumed once answered). */
struct queued {
	const struct command	*cmd;
	int			 argc;
	const char		**argv;
	size_t			*argl;
};

struct multi {
	struct queued	*q;
	size_t		 n, cap;
	size_t		 bytes;		/* what the queue holds */
	int		 dirty;		/* a command was refused: EXECABORT */
};

/* The most a queue may hold: a client cannot make the daemon grow
 * without bound by never sending EXEC. */
static size_t
queue_limit(const struct session *s)
{
	size_t lim = s->core->cfg->output_buffer_limit;

	return 16 * (lim > ((size_t)1 << 20) ? lim : (size_t)1 << 20);
}

/* The queue goes (DISCARD, EXEC, the session's end). */
static void
multi_end(struct session *s)
{
	struct multi *m = s->multi;

	if (m == NULL)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->q[i].argv);	/* one block: argv, argl, bytes */
	free(m->q);
	free(m);
	s->multi = NULL;
}

/* A command refused inside MULTI (unknown, arity): EXEC will abort. */
static void
multi_refuse(struct session *s)
{
	if (s->multi != NULL)
		s->multi->dirty = 1;
}

/* A command sent inside MULTI: queued, +QUEUED (or an error that makes
 * EXEC answer -EXECABORT). */
static void
multi_queue(struct session *s, struct op *op, struct result *r)
{
	struct multi	*m = s->multi;
	struct queued	*e;
	size_t		 size = 0, ptrs;
	char		*p;

	for (int i = 0; i < op->argc; i++)
		size += op->argl[i] + 1;
	ptrs = (size_t)op->argc * (sizeof(char *) + sizeof(size_t));
	if (m->bytes + size + ptrs > queue_limit(s)) {
		m->dirty = 1;
		result_error(r, "ERR", "MULTI queue over its limit (%zu bytes)",
		    queue_limit(s));
		return;
	}
	if (m->n == m->cap) {
		size_t	 cap = m->cap ? m->cap * 2 : 8;
		void	*q = realloc(m->q, cap * sizeof(*m->q));

		if (q == NULL)
			goto oom;
		m->q = q;
		m->cap = cap;
	}
	e = &m->q[m->n];
	if ((e->argv = malloc(ptrs + size)) == NULL)
		goto oom;
	e->argl = (size_t *)(e->argv + op->argc);
	p = (char *)(e->argl + op->argc);
	for (int i = 0; i < op->argc; i++) {
		memcpy(p, op->argv[i], op->argl[i]);
		p[op->argl[i]] = '\0';
		e->argv[i] = p;
		e->argl[i] = op->argl[i];
		p += op->argl[i] + 1;
	}
	e->argc = op->argc;
	e->cmd = op->cmd;
	m->n++;
	m->bytes += size + ptrs;
	result_status(r, "QUEUED");
	return;
oom:
	m->dirty = 1;
	result_error(r, "ERR", "out of memory");
}

/* What the table runs for MULTI: the dispatcher hands a session's
 * commands to the queue while s->multi is set, and the queue goes with
 * the session. */
const struct command_hooks cmd_multi_hooks = {
	.session_end = multi_end,
	.queue = multi_queue,
	.refuse = multi_refuse,
};

void
cmd_multi(struct session *s, struct op *op, struct result *r)
{
	(void)op;
	if (s->multi != NULL) {
		result_error(r, "ERR", "MULTI calls can not be nested");
		return;
	}
	if ((s->multi = calloc(1, sizeof(*s->multi))) == NULL) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	result_status(r, "OK");
}

void
cmd_discard(struct session *s, struct op *op, struct result *r)
{
	(void)op;
	if (s->multi == NULL) {
		result_error(r, "ERR", "DISCARD without MULTI");
		return;
	}
	multi_end(s);
	result_status(r, "OK");
}

/*
 * Runs the queue in order. Each reply is encoded in the session's
 * protocol as it comes (a handler's scratch is the next one's), into an
 * array that becomes this result.
 */
void
cmd_exec(struct session *s, struct op *op, struct result *r)
{
	static struct buf	 out;
	struct multi		*m = s->multi;
	int			 proto = s->resp3 ? REPLY_RESP3 : REPLY_RESP2;
	int			 bad = 0;

	(void)op;
	if (m == NULL) {
		result_error(r, "ERR", "EXEC without MULTI");
		return;
	}
	if (m->dirty) {
		multi_end(s);
		result_error(r, "EXECABORT", "Transaction discarded because of "
		    "previous errors.");
		return;
	}
	s->multi = NULL;	/* what it runs is not queued again */
	buf_consume(&out, buf_used(&out));
	bad |= resp_add_array(&out, (long long)m->n);
	for (size_t i = 0; i < m->n; i++) {
		struct queued	*e = &m->q[i];
		struct op	 one;
		struct result	 sub;

		memset(&one, 0, sizeof(one));
		one.proto = COMMAND_RESP;
		one.resp3 = s->resp3;
		one.status = PROTO_OK;
		one.argc = e->argc;
		one.argv = e->argv;
		one.argl = e->argl;
		one.cmd = e->cmd;
		command_run(s, &one, &sub);
		bad |= result_encode(&out, proto, &sub);
		if (sub.close)
			r->close = 1;
	}
	s->multi = m;
	multi_end(s);
	if (bad) {
		buf_free(&out);
		result_error(r, "ERR", "out of memory");
		return;
	}
	result_reset();
	if (buf_append(&result_buf, buf_head(&out), buf_used(&out)) == -1) {
		buf_free(&out);
		result_error(r, "ERR", "out of memory");
		return;
	}
	buf_consume(&out, buf_used(&out));
	buf_shrink(&out, 65536);
	result_scratch(r, RESULT_ARRAY);
}
