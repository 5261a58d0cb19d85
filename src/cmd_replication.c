/*
 * cmd_replication.c - replication as clients and Redis Sentinel ask of
 * it, in Redis 7's words: ROLE, REPLICAOF/SLAVEOF, WAIT, INFO's
 * replication fields and run_id, and a replica's handshake (REPLCONF,
 * PSYNC). The links themselves are primary.c's and replica.c's: a
 * handler only says what it wants (core->repl), and the server acts on
 * it at the turn's end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>

#include "cluster.h"
#include "core.h"
#include "saver.h"
#include "session.h"
#include "handler.h"
#include "resp.h"

/* 40 hex digits, random, made once per start. */
static void
random_hex(char out[41])
{
	unsigned char	 r[20];
	size_t		 got = 0;
	ssize_t		 n;

	while (got < sizeof(r) && (n = getrandom(r + got, sizeof(r) - got,
	    0)) > 0)
		got += (size_t)n;
	if (got < sizeof(r)) {
		/* no entropy to be had: time and pid still differ per start */
		unsigned long long x = (unsigned long long)time(NULL) ^
		    ((unsigned long long)getpid() << 32);

		for (size_t i = 0; i < sizeof(r); i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			r[i] = (unsigned char)(x >> 56);
		}
	}
	for (size_t i = 0; i < sizeof(r); i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
}

const char *
command_run_id(void)
{
	static char id[41];

	if (id[0] == '\0')
		random_hex(id);
	return id;
}

void
command_new_replid(char out[41])
{
	random_hex(out);
}

/* INFO's "name value" lines of a replica's link. */
static void
info_link(const struct core_repl *r, struct buf *b, time_t now)
{
	buf_printf(b,
	    "role slave\r\n"
	    "master_host %s\r\n"
	    "master_port %u\r\n"
	    "master_link_status %s\r\n"
	    "master_last_io_seconds_ago %lld\r\n"
	    "master_sync_in_progress %d\r\n"
	    "slave_read_repl_offset %llu\r\n"
	    "slave_repl_offset %llu\r\n",
	    r->host, r->port, r->link_up ? "up" : "down",
	    r->link_up && r->last_io ? (long long)(now - r->last_io) : -1LL,
	    r->syncing,
	    (unsigned long long)r->offset, (unsigned long long)r->offset);
	if (!r->link_up)
		buf_printf(b, "master_link_down_since_seconds %lld\r\n",
		    r->down_since ? (long long)(now - r->down_since) : -1LL);
	if (r->link_error[0] != '\0')
		buf_printf(b, "master_link_error %s\r\n", r->link_error);
	buf_printf(b,
	    "slave_priority %u\r\n"
	    "slave_read_only 1\r\n"
	    "replica_announced 1\r\n"
	    "connected_slaves 0\r\n", r->priority);
}

void
command_info_replication(const struct core *core, struct buf *b)
{
	const struct core_repl	*r = &core->repl;
	time_t			 now = time(NULL);
	size_t			 n = 0;

	if (r->replica)
		info_link(r, b, now);
	else {
		buf_printf(b, "role master\r\nconnected_slaves %zu\r\n",
		    r->online);
		for (size_t i = 0; i < r->nreplicas; i++) {
			const struct core_replica *c = &r->replicas[i];

			if (!c->online)
				continue;
			buf_printf(b, "slave%zu ip=%s,port=%u,state=online,"
			    "offset=%llu,lag=%lld\r\n", n++, c->ip, c->port,
			    (unsigned long long)c->ack,
			    (long long)(now - c->ack_at));
		}
	}
	buf_printf(b,
	    "master_failover_state no-failover\r\n"
	    "master_replid %s\r\n"
	    "master_replid2 %s\r\n"
	    "master_repl_offset %llu\r\n"
	    "second_repl_offset %lld\r\n"
	    "repl_backlog_active %d\r\n"
	    "repl_backlog_size %llu\r\n"
	    "repl_backlog_first_byte_offset %llu\r\n"
	    "repl_backlog_histlen %llu\r\n",
	    r->replid, r->replid2[0] ? r->replid2 :
	    "0000000000000000000000000000000000000000",
	    (unsigned long long)r->offset,
	    r->replid2[0] ? (long long)r->second_offset + 1 : -1LL,
	    core->stream != NULL || r->replica,
	    (unsigned long long)r->backlog_size,
	    (unsigned long long)r->backlog_first,
	    (unsigned long long)(r->offset - r->backlog_first));
}

void
command_info_repl_stats(const struct core *core, struct buf *b)
{
	buf_printf(b,
	    "sync_full %llu\r\n"
	    "sync_partial_ok %llu\r\n"
	    "sync_partial_err %llu\r\n",
	    (unsigned long long)core->repl.sync_full,
	    (unsigned long long)core->repl.sync_partial_ok,
	    (unsigned long long)core->repl.sync_partial_err);
}

/* ROLE: ["master", offset, [[ip, port, offset]...]], or ["slave", host,
 * port, state, offset], as Redis 7. */
void
cmd_role(struct session *s, struct op *op, struct result *r)
{
	static const char *const states[] = { "connect", "connecting", "sync",
	    "connected" };
	const struct core_repl	*rp = &s->core->repl;
	struct buf		*b = result_reset();
	char			 num[32];

	(void)op;
	if (rp->replica) {
		resp_add_array(b, 5);
		resp_add_bulk(b, "slave", 5);
		resp_add_bulk(b, rp->host, strlen(rp->host));
		resp_add_int(b, rp->port);
		resp_add_bulk(b, states[rp->state], strlen(states[rp->state]));
		resp_add_int(b, (long long)rp->offset);
		result_scratch(r, RESULT_ARRAY);
		return;
	}
	resp_add_array(b, 3);
	resp_add_bulk(b, "master", 6);
	resp_add_int(b, (long long)rp->offset);
	resp_add_array(b, rp->online);
	for (size_t i = 0; i < rp->nreplicas; i++) {
		const struct core_replica *c = &rp->replicas[i];

		if (!c->online)
			continue;
		resp_add_array(b, 3);
		resp_add_bulk(b, c->ip, strlen(c->ip));
		snprintf(num, sizeof(num), "%u", c->port);
		resp_add_bulk(b, num, strlen(num));
		snprintf(num, sizeof(num), "%llu", (unsigned long long)c->ack);
		resp_add_bulk(b, num, strlen(num));
	}
	result_scratch(r, RESULT_ARRAY);
}

/* A port as REPLICAOF takes one: 1-65535. */
static int
parse_port(const char *p, size_t len, unsigned *out)
{
	unsigned long v = 0;

	if (len == 0 || len > 5)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (unsigned long)(p[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/*
 * REPLICAOF NO ONE: a primary. REPLICAOF <host> <port>: a replica of it.
 * The server acts on the change at the turn's end (role.c), and keeps it
 * in data_dir.
 */
void
cmd_replicaof(struct session *s, struct op *op, struct result *r)
{
	struct core_repl	*rp = &s->core->repl;
	unsigned		 port;

	if (name_is(op->argv[1], op->argl[1], "NO", 2) &&
	    name_is(op->argv[2], op->argl[2], "ONE", 3)) {
		if (rp->replica) {
			rp->want_replica = 0;
			rp->changed = 1;
		}
		result_status(r, "OK");
		return;
	}
	if (op->argl[1] == 0 || op->argl[1] >= sizeof(rp->want_host) ||
	    memchr(op->argv[1], ' ', op->argl[1]) != NULL) {
		result_error(r, "ERR", "Invalid master host");
		return;
	}
	if (parse_port(op->argv[2], op->argl[2], &port) == -1) {
		result_error(r, "ERR", "Invalid master port");
		return;
	}
	if (rp->replica && strlen(rp->host) == op->argl[1] &&
	    memcmp(rp->host, op->argv[1], op->argl[1]) == 0 &&
	    rp->port == port) {
		result_status(r, "OK Already connected to specified master");
		return;
	}
	memcpy(rp->want_host, op->argv[1], op->argl[1]);
	rp->want_host[op->argl[1]] = '\0';
	rp->want_port = port;
	rp->want_replica = 1;
	rp->changed = 1;
	result_status(r, "OK");
}

/* REPLCONF listening-port <port> | node-id <id> | ip-address <ip> | capa
 * ... | ACK ...: a replica's handshake (node-id: a seend replica in
 * cluster mode, listed under this primary by CLUSTER SLOTS; ip-address:
 * the host it announces, as Redis's replica-announce-ip, in place of its
 * connection's; capa seend-slots: it takes moved slots' images in the
 * stream, primary.h); what seend does not use is accepted, as Redis
 * does. */
/* A word INFO and CLUSTER NODES can show: 1 to max - 1 bytes, printable,
 * no blank, comma or '@'. */
static int
printable_word(const char *p, size_t len, size_t max)
{
	if (len == 0 || len >= max)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (p[i] <= ' ' || p[i] > '~' || p[i] == ',' || p[i] == '@')
			return 0;
	return 1;
}

void
cmd_replconf(struct session *s, struct op *op, struct result *r)
{
	unsigned port;

	for (int i = 1; i + 1 < op->argc; i += 2)
		if (name_is(op->argv[i], op->argl[i], "LISTENING-PORT", 14)) {
			if (parse_port(op->argv[i + 1], op->argl[i + 1],
			    &port) == -1) {
				result_error(r, "ERR", "value is not an "
				    "integer or out of range");
				return;
			}
			s->repl_port = port;
		} else if (name_is(op->argv[i], op->argl[i], "NODE-ID", 7) &&
		    cluster_id_valid(op->argv[i + 1], op->argl[i + 1])) {
			memcpy(s->repl_node_id, op->argv[i + 1],
			    op->argl[i + 1]);
			s->repl_node_id[op->argl[i + 1]] = '\0';
		} else if (name_is(op->argv[i], op->argl[i], "IP-ADDRESS", 10) &&
		    printable_word(op->argv[i + 1], op->argl[i + 1],
		    sizeof(s->repl_ip))) {
			memcpy(s->repl_ip, op->argv[i + 1], op->argl[i + 1]);
			s->repl_ip[op->argl[i + 1]] = '\0';
		} else if (name_is(op->argv[i], op->argl[i], "CAPA", 4) &&
		    name_is(op->argv[i + 1], op->argl[i + 1], "SEEND-SLOTS",
		    11))
			s->repl_slots = 1;
	result_status(r, "OK");
}

/* PSYNC <replid> <offset>: the connection becomes the replica's link. */
void
cmd_psync(struct session *s, struct op *op, struct result *r)
{
	long long	 o;

	if (s->core->repl.replica) {
		/* no chains: a replica's replicas would copy a copy */
		result_error(r, "ERR", "this seend is a replica: connect to "
		    "its primary");
		return;
	}
	if (op->argl[1] == 0 || op->argl[1] > 40) {
		result_error(r, "ERR", "bad PSYNC replication id");
		return;
	}
	/* -1 with "?": no history, a full sync */
	if (command_arg_ll(op->argv[2], op->argl[2], &o) == -1) {
		result_error(r, "ERR", "bad PSYNC offset");
		return;
	}
	memcpy(s->psync_replid, op->argv[1], op->argl[1]);
	s->psync_replid[op->argl[1]] = '\0';
	s->psync_offset = o < 0 ? 0 : (uint64_t)o;
	r->handover = 1;
}

/*
 * WAIT <numreplicas> <timeout_ms>: how many replicas acknowledged every
 * write made before it. The target is this turn's stream end, known at
 * the turn's end (primary.c); the connection waits as for a SAVE.
 */
void
cmd_wait(struct session *s, struct op *op, struct result *r)
{
	struct core_repl	*rp = &s->core->repl;
	struct core_wait	*w;
	long long		 want, ms;

	if (command_arg_ll(op->argv[1], op->argl[1], &want) == -1 ||
	    command_arg_ll(op->argv[2], op->argl[2], &ms) == -1) {
		result_error(r, "ERR", "value is not an integer or out of "
		    "range");
		return;
	}
	if (ms < 0) {
		result_error(r, "ERR", "timeout is negative");
		return;
	}
	if (rp->replica) {
		result_error(r, "ERR", "WAIT cannot be used with replica "
		    "instances. Please also note that since Redis 4.0 if a "
		    "replica is configured to be writable (which is not the "
		    "default) writes to replicas are just local and are not "
		    "propagated.");
		return;
	}
	/* this connection wrote nothing: every connected replica holds all
	 * it wrote, so WAIT answers at once, as Redis's for a client whose
	 * woff is 0; what other connections wrote is theirs to WAIT for */
	if (!s->wrote && !s->journaled && (long long)rp->online >= want) {
		result_int(r, (long long)rp->online);
		return;
	}
	if ((w = calloc(1, sizeof(*w))) == NULL ||
	    (w->w = calloc(1, sizeof(*w->w))) == NULL) {
		free(w);
		result_error(r, "ERR", "out of memory");
		return;
	}
	w->w->pending = 1;
	w->target = UINT64_MAX;
	w->want = want;
	w->timeout_ms = (uint64_t)ms;
	w->next = rp->waits;
	rp->waits = w;
	r->kind = RESULT_WAIT;
	r->wait = w->w;
}
