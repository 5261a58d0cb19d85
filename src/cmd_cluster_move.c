/*
 * cmd_cluster_move.c - the node's part of a slot's move (cluster_move.h):
 * CLUSTER SLOTBITS <first> <last>, CLUSTER SLOTMERGE <image> [SAVE] and
 * CLUSTER HANDOFF START <first> <last> <node-id> | CANCEL <first> <last> |
 * LIST. seen-cli cluster reshard and fix send them; cmd_cluster.c
 * dispatches them here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cluster.h"
#include "cluster_handoff.h"
#include "cluster_move.h"
#include "config.h"
#include "core.h"
#include "fileio.h"
#include "filter.h"
#include "handler.h"
#include "keyslot.h"
#include "keyspace.h"
#include "log.h"
#include "persist.h"
#include "proto.h"
#include "registry.h"
#include "resp.h"
#include "saver.h"
#include "session.h"

/* Two slot arguments, first <= last: 0, or -1 with the error in r. */
static int
range_args(const struct op *op, int at, unsigned *first, unsigned *last,
    struct result *r)
{
	long long a, b;

	if (command_arg_ll(op->argv[at], op->argl[at], &a) == -1 ||
	    command_arg_ll(op->argv[at + 1], op->argl[at + 1], &b) == -1 ||
	    a < 0 || b < a || b >= CLUSTER_SLOTS) {
		result_error(r, "ERR", "Invalid slot range: two slots, the "
		    "first not above the second, in 0..%d", CLUSTER_SLOTS - 1);
		return -1;
	}
	*first = (unsigned)a;
	*last = (unsigned)b;
	return 0;
}

/* CLUSTER SLOTBITS <first> <last> [BITSONLY]: the image (a bulk string);
 * BITSONLY leaves the named filters out (a move's first copy, which the
 * target checks but does not take: cluster_move.h). */
void
cmd_cluster_slotbits(struct session *s, struct op *op, struct result *r)
{
	unsigned	 first, last;
	unsigned char	*img;
	size_t		 len;
	char		 err[512];
	struct buf	*b;

	if (op->argc != 4 && !(op->argc == 5 && proto_token_is(op->argv[4],
	    op->argl[4], "BITSONLY"))) {
		result_error(r, "ERR", "syntax error: CLUSTER SLOTBITS <first> "
		    "<last> [BITSONLY]");
		return;
	}
	if (range_args(op, 2, &first, &last, r) == -1)
		return;
	if ((img = cluster_move_export(s->core, first, last, op->argc == 5 ?
	    NULL : keyspace_deadline, &len, err, sizeof(err))) == NULL) {
		result_error(r, "ERR", "%s", err);
		return;
	}
	b = result_reset();
	if (resp_add_bulk(b, (const char *)img, len) == -1)
		result_error(r, "ERR", "out of memory");
	else
		result_scratch(r, RESULT_ARRAY);
	free(img);
}

/* The filters changed by a SLOTMERGE ... SAVE snapshotted; the reply
 * waits for them (0), or the error is in r (-1). */
static int
save_changed(struct session *s, const struct cluster_move_changed *changed,
    size_t n, struct result *r)
{
	struct core		*core = s->core;
	struct save_wait	*w;
	size_t			 queued = 0;

	if ((w = calloc(1, sizeof(*w))) == NULL) {
		result_error(r, "ERR", "merged, but out of memory for the "
		    "snapshots");
		return -1;
	}
	w->pending = 1;		/* held while the jobs are queued */
	for (size_t i = 0; i < n; i++) {
		if (saver_submit(core->saver, changed[i].f, core->cfg->data_dir,
		    w) == 0) {
			queued++;
			continue;
		}
		w->failed = 1;
		snprintf(w->err, sizeof(w->err), "merged, but the snapshot "
		    "of %s cannot be queued: out of memory", changed[i].f->name);
	}
	if (queued == 0) {
		saver_wait_done(core->saver, w);
		result_error(r, "ERR", "merged, but no snapshot could be "
		    "queued: out of memory");
		return -1;
	}
	w->pending--;		/* the jobs hold it now */
	r->kind = RESULT_WAIT;
	r->wait = w;
	return 0;
}

/*
 * After SLOTMERGE ... SAVE of first..last (the final copy): a named filter
 * of those slots that this node does not serve and the image did not
 * bring is what a move rolled back after its SAVE left here; the filter
 * may have been deleted on the source since, and must not come back when
 * the slot is taken. Dropped as DEL does.
 */
static void
drop_stale_copies(struct core *core, unsigned first, unsigned last,
    const struct cluster_move_changed *changed, size_t n)
{
	for (size_t i = core->reg->nfilters; i-- > 0;) {
		struct filter	*f = core->reg->filters[i];
		unsigned	 slot = keyslot_of(f->name, f->namelen);
		size_t		 j;

		if (!f->runtime || f->slot_major || slot < first ||
		    slot > last || cluster_shard_owns(core->cluster, slot))
			continue;
		for (j = 0; j < n && changed[j].f != f; j++)
			;
		if (j == n)
			keyspace_drop_filter(core, f, "(a copy an earlier move "
			    "left, which the final copy of its slot does not "
			    "hold)");
	}
}

/*
 * CLUSTER SLOTMERGE <image> [SAVE [STREAM]]. STREAM: the replicas take the
 * image from the stream (primary.h), and seen-cli waits for their
 * acknowledgements; without it they resync fully, as an older seen-cli,
 * which waits for their full syncs, expects.
 */
void
cmd_cluster_slotmerge(struct session *s, struct op *op, struct result *r)
{
	struct core			*core = s->core;
	struct cluster_move_changed	*changed;
	size_t				 n = 0, whole = 0;
	int				 save = op->argc >= 4;
	int				 stream = op->argc == 5;
	char				 err[700];

	if (op->argc != 3 && !(op->argc == 4 &&
	    proto_token_is(op->argv[3], op->argl[3], "SAVE")) &&
	    !(op->argc == 5 && proto_token_is(op->argv[3], op->argl[3],
	    "SAVE") && proto_token_is(op->argv[4], op->argl[4], "STREAM"))) {
		result_error(r, "ERR", "syntax error: CLUSTER SLOTMERGE <image> "
		    "[SAVE [STREAM]]");
		return;
	}
	/* a replica's filters are its primary's: moved slots reach it from
	 * its primary's SLOTMERGE ... SAVE (in the stream, or a full sync) */
	if (core->repl.replica) {
		result_error(r, "READONLY", "You can't write against a read "
		    "only replica.");
		return;
	}
	if (cluster_move_import(core, (const unsigned char *)op->argv[2],
	    op->argl[2], save ? CLUSTER_MOVE_SAVE : 0,
	    persist_filter_reset_to, &changed, &n, err, sizeof(err)) == -1) {
		result_error(r, "ERR", "%s", err);
		return;
	}
	/* the replicas take the same image, in the stream where it was
	 * taken here: after the reset its import may have recorded, before
	 * the records that follow (the named filters' deadlines, the drops
	 * below) */
	if (save && n > 0) {
		s->wrote = 1;	/* a WAIT after it waits for the replicas */
		if (stream)
			persist_stream_slots(core, (const unsigned char *)
			    op->argv[2], op->argl[2]);
		else
			core->repl.resync_why = "moved slots arrived (CLUSTER "
			    "SLOTMERGE ... SAVE without STREAM)";
	}
	/* a named filter's EXPIRE deadline came with it; its 'r' record
	 * undoes at a replay an 'x' of the same seed from the time it left
	 * (persist.c) */
	for (size_t i = 0; i < n; i++)
		if (changed[i].whole) {
			keyspace_set_deadline(core, changed[i].f,
			    changed[i].deadline_ms);
			persist_filter_created(core, changed[i].f);
			whole++;
		}
	if (save)
		drop_stale_copies(core, get_le16((const unsigned char *)
		    op->argv[2] + 8), get_le16((const unsigned char *)
		    op->argv[2] + 10), changed, n);
	if (!save || n == 0) {
		result_status(r, "OK");
		free(changed);
		return;
	}
	log_info("client %llu (%s): moved slots merged into %zu filter(s), "
	    "%zu named filter(s) taken whole", (unsigned long long)s->id,
	    s->peer, n - whole, whole);
	(void)save_changed(s, changed, n, r);
	free(changed);
}

/* CLUSTER HANDOFF LIST: "<first> <last> <node-id>" lines, one bulk
 * string (built in the result's scratch buffer: result_bulk keeps a
 * pointer). */
static void
handoff_list(const struct cluster *c, struct result *r)
{
	struct buf *b = result_reset(), text = { 0 };
	int	    rc = 0;

	for (size_t i = 0; i < c->nhandoffs && rc == 0; i++)
		rc = buf_printf(&text, "%u %u %s\n", c->handoffs[i].first,
		    c->handoffs[i].last, c->handoffs[i].to);
	if (rc == -1 || resp_add_bulk(b, text.data ? (const char *)text.data :
	    "", text.len) == -1)
		result_error(r, "ERR", "out of memory");
	else
		result_scratch(r, RESULT_ARRAY);
	buf_free(&text);
}

/* CLUSTER HANDOFF START <first> <last> <node-id> | CANCEL <first> <last> |
 * LIST */
void
cmd_cluster_handoff(struct session *s, struct op *op, struct result *r)
{
	struct cluster	*c = s->core->cluster;
	const char	*dir = s->core->cfg->data_dir;
	unsigned	 first, last;
	char		 err[512], id[CLUSTER_ID_LEN + 1];
	const char	*merging;
	int		 rc;

	if (op->argc == 3 && proto_token_is(op->argv[2], op->argl[2], "LIST")) {
		handoff_list(c, r);
		return;
	}
	if (op->argc == 6 && proto_token_is(op->argv[2], op->argl[2],
	    "START")) {
		if (range_args(op, 3, &first, &last, r) == -1)
			return;
		if (!cluster_id_valid(op->argv[5], op->argl[5])) {
			result_error(r, "ERR", "Invalid node name");
			return;
		}
		memcpy(id, op->argv[5], CLUSTER_ID_LEN);
		id[CLUSTER_ID_LEN] = '\0';
		if ((merging = cmd_merge_into_slots(first, last)) != NULL) {
			result_error(r, "ERR", "a MERGE into filter %s is under "
			    "way: hand slots %u-%u over once it is done",
			    merging, first, last);
			return;
		}
		rc = cluster_handoff_start(c, dir, first, last, id, err,
		    sizeof(err));
		if (rc == 0)
			log_info("client %llu (%s): slots %u-%u paused for "
			    "their hand-over to %s", (unsigned long long)s->id,
			    s->peer, first, last, id);
	} else if (op->argc == 5 && proto_token_is(op->argv[2], op->argl[2],
	    "CANCEL")) {
		if (range_args(op, 3, &first, &last, r) == -1)
			return;
		rc = cluster_handoff_cancel(c, dir, first, last, err,
		    sizeof(err));
		if (rc == 0)
			log_info("client %llu (%s): the hand-over of slots "
			    "%u-%u cancelled: served here again",
			    (unsigned long long)s->id, s->peer, first, last);
	} else {
		result_error(r, "ERR", "syntax error: CLUSTER HANDOFF START "
		    "<first> <last> <node-id> | CANCEL <first> <last> | LIST");
		return;
	}
	if (rc == -1)
		result_error(r, "ERR", "%s", err);
	else
		result_status(r, "OK");
}
