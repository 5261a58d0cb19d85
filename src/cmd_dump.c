/*
 * cmd_dump.c - moving a filter: BF.SCANDUMP and BF.LOADCHUNK, with
 * RedisBloom's call pattern over seend's own chunks (dump.h).
 *
 * BF.SCANDUMP f 0 captures the filter - a reference on each slice and
 * its count, as a snapshot job does (saver.c) - and answers the header
 * chunk; each call with the iterator it got answers the next chunk,
 * read from the captured slices then; the last is followed by [0, ""]
 * (CF.SCANDUMP: [0, nil], which is also its whole answer for an empty
 * cuckoo filter, as RedisBloom's).
 * Every call copies at most DUMP_PAYLOAD bytes, so a filter of any size
 * dumps without stalling the loop, and keys arriving meanwhile neither
 * stop the dump nor make it inconsistent (bits only go from 0 to 1 in a
 * slice, and dropped or reset slices stay held). A dump no client has
 * asked for in DUMP_IDLE_SECS is dropped (cmd_dump_tick), as is the
 * oldest idle one when DUMPS_MAX are in progress.
 *
 * BF.LOADCHUNK f iter data builds the filter on the session, out of
 * sight (not in FILTERS, not answering); the first refused chunk drops
 * the partial load, and so does the connection closing. The last chunk
 * registers the filter and its reply waits, as SAVE's does, for its
 * snapshot to be written and fsynced.
 *
 * Bad iterators and refused chunks get RedisBloom 2.4's texts where
 * RedisBloom meets the same case (rebloom.c, sb.c: "Second argument must
 * be numeric", "ERR received bad data"; "Invalid position", "Invalid
 * header", "Couldn't create filter!", "Couldn't load chunk!" for CF.*);
 * dump.c's precise reason for a refused chunk goes to the log. Cases
 * RedisBloom has no word for (an iterator of no dump in progress, a load
 * of another name in progress, a dump of the other type, a dump too big
 * for max_memory) keep seend's texts: seend(8), "Differences from
 * RedisBloom".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bloom.h"
#include "config.h"
#include "core.h"
#include "dump.h"
#include "filter.h"
#include "handler.h"
#include "log.h"
#include "persist.h"
#include "registry.h"
#include "resp.h"
#include "saver.h"
#include "session.h"
#include "snapshot.h"

#define DUMPS_MAX	16
#define DUMP_IDLE_SECS	60
/* Bytes of bits per chunk: a few milliseconds of copying per call. */
#define DUMP_PAYLOAD	((4u << 20) - DUMP_CHUNK_HEADER)

/* A dump in progress. The iterator a client gets back names its slot,
 * the slot's generation (a stale iterator of an earlier dump there is
 * refused) and the next chunk. */
struct dump_out {
	int			 used;
	uint8_t			 gen;
	uint64_t		 id;
	char			 name[FILTER_NAME_MAX + 1];
	struct slice		**owners;
	struct dump_image	 img;
	uint32_t		 nchunks;
	uint32_t		 next;		/* the chunk the next call sends */
	time_t			 last;		/* the last call */
};

static struct dump_out	 dumps[DUMPS_MAX];

/* RedisBloom 2.4's texts (rebloom.c, sb.c): bare, or after "ERR" */
#define BF_ITER_TEXT	"Second argument must be numeric"
#define BF_BAD_TEXT	"received bad data"
#define CF_POS_TEXT	"Invalid position"
#define CF_HEADER_TEXT	"Invalid header"
#define CF_CREATE_TEXT	"Couldn't create filter!"
#define CF_CHUNK_TEXT	"Couldn't load chunk!"

/* 1 for CF.SCANDUMP and CF.LOADCHUNK. */
static int
is_cf(const struct op *op)
{
	return op->cmd->lname[0] == 'c';
}

static long long
iter_of(int slot, const struct dump_out *d, uint32_t index)
{
	return (long long)(((uint64_t)(slot + 1) << 40) |
	    ((uint64_t)d->gen << 32) | index);
}

static void
dump_release(struct dump_out *d)
{
	filter_dump_release(&d->img, d->owners);
	d->owners = NULL;
	d->used = 0;
}

static void
cmd_dump_tick(time_t now)
{
	for (int i = 0; i < DUMPS_MAX; i++)
		if (dumps[i].used && now - dumps[i].last >= DUMP_IDLE_SECS) {
			log_info("filter %s: dump dropped after %d s without "
			    "a BF.SCANDUMP", dumps[i].name, DUMP_IDLE_SECS);
			dump_release(&dumps[i]);
		}
}

/* A free slot, or the longest idle one's if it is past DUMP_IDLE_SECS;
 * -1 if every slot is busy. */
static int
dump_slot(time_t now)
{
	int oldest = -1;

	for (int i = 0; i < DUMPS_MAX; i++) {
		if (!dumps[i].used)
			return i;
		if (oldest < 0 || dumps[i].last < dumps[oldest].last)
			oldest = i;
	}
	if (now - dumps[oldest].last < DUMP_IDLE_SECS)
		return -1;
	dump_release(&dumps[oldest]);
	return oldest;
}

/* The filter as it is now: each slice held, with its count. */
static int
dump_capture(struct dump_out *d, struct filter *f)
{
	return filter_dump_capture(f, &d->img, &d->owners);
}

/* [iter, chunk] in result_buf, the chunk written in place: one copy
 * of the bits here, one into the connection's output. */
static void
reply_chunk(struct result *r, long long iter, const struct dump_out *d,
    uint32_t index)
{
	struct buf	*b = result_reset();
	size_t		 len = dump_chunk_len(&d->img, DUMP_PAYLOAD, index);

	resp_add_array(b, 2);
	resp_add_int(b, iter);
	buf_printf(b, "$%zu\r\n", len);
	if (buf_reserve(b, len + 2) == -1) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	b->len += dump_chunk(&d->img, d->id, DUMP_PAYLOAD, index,
	    (unsigned char *)b->data + b->len);
	buf_append(b, "\r\n", 2);
	result_scratch(r, RESULT_ARRAY);
}

static void
scandump_start(struct session *s, struct filter *f, struct result *r)
{
	time_t		 now = time(NULL);
	struct dump_out	*d;
	int		 slot;

	if ((slot = dump_slot(now)) < 0) {
		result_error(r, "ERR", "too many dumps in progress (%d); "
		    "finish one or wait %d s", DUMPS_MAX, DUMP_IDLE_SECS);
		return;
	}
	d = &dumps[slot];
	if (dump_capture(d, f) == -1) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	d->used = 1;
	d->gen++;
	do
		d->id = bloom_random_seed();
	while (d->id == 0);
	snprintf(d->name, sizeof(d->name), "%s", f->name);
	if ((d->nchunks = dump_chunk_count(&d->img, DUMP_PAYLOAD)) == 0) {
		dump_release(d);
		result_error(r, "ERR", "filter %s cannot be dumped (too many "
		    "slices)", f->name);
		return;
	}
	d->next = 1;
	d->last = now;
	log_debug("client %llu (%s): dump of %s started: %u chunks, %llu "
	    "bytes", (unsigned long long)s->id, s->peer, f->name, d->nchunks,
	    (unsigned long long)dump_bits_bytes(&d->img));
	reply_chunk(r, iter_of(slot, d, 1), d, 0);
}

/*
 * The filter a dump command names, of the command's type (BF.* a bloom
 * filter, CF.* a cuckoo one): BF_FOUND with *fp, else r is set.
 */
static int
dump_lookup(struct session *s, struct op *op, struct filter **fp,
    struct result *r)
{
	int type = is_cf(op) ? FILTER_TYPE_CUCKOO : FILTER_TYPE_BLOOM;

	switch (command_typed_lookup(s, op, type, fp)) {
	case BF_FOUND:
		return 0;
	case BF_WRONGTYPE:
		result_bare(r, WRONGTYPE_TEXT);
		return -1;
	case BF_MISSING:
		break;
	}
	result_error(r, "ERR", "not found");
	return -1;
}

/* The end of a dump: [0, ""] (BF.SCANDUMP), [0, nil] (CF.SCANDUMP), as
 * RedisBloom ends each. */
static void
reply_end(struct result *r, int cf)
{
	struct buf *b = result_reset();

	resp_add_array(b, 2);
	resp_add_int(b, 0);
	if (cf)
		resp_add_null3(b);
	else
		resp_add_bulk(b, "", 0);
	result_scratch(r, RESULT_ARRAY);
}

/*
 * BF.SCANDUMP f iter, CF.SCANDUMP f iter, with RedisBloom's order of
 * checks: BF.SCANDUMP finds the filter, then reads the iterator (not an
 * integer: "Second argument must be numeric"; negative: the end, as
 * RedisBloom's chain has no link there); CF.SCANDUMP reads the iterator
 * first (not an integer, or negative: "Invalid position") and answers an
 * empty filter [0, nil] at once.
 */
void
cmd_bf_scandump(struct session *s, struct op *op, struct result *r)
{
	struct filter	*f;
	long long	 iter;
	struct dump_out	*d;
	uint64_t	 slot, index;
	int		 cf = is_cf(op), numeric;

	numeric = command_arg_ll(op->argv[2], op->argl[2], &iter) == 0;
	if (cf && (!numeric || iter < 0)) {
		result_bare(r, CF_POS_TEXT);
		return;
	}
	if (dump_lookup(s, op, &f, r) == -1)
		return;
	if (!numeric) {
		result_bare(r, BF_ITER_TEXT);
		return;
	}
	if (iter < 0) {
		reply_end(r, 0);
		return;
	}
	if (iter == 0) {
		/* RedisBloom has nothing to dump of a cuckoo filter that
		 * holds no item; a dump in progress goes on from its image */
		if (cf && filter_count(f) == 0)
			reply_end(r, 1);
		else
			scandump_start(s, f, r);
		return;
	}
	slot = ((uint64_t)iter >> 40) - 1;
	index = (uint64_t)iter & 0xffffffffu;
	d = slot < DUMPS_MAX ? &dumps[slot] : NULL;
	if (d == NULL || !d->used || d->gen != (((uint64_t)iter >> 32) & 0xff) ||
	    strcmp(d->name, f->name) != 0 || index == 0 ||
	    index > d->nchunks || (index != d->next && index + 1 != d->next)) {
		/* RedisBloom reads its filter at any offset; seend's chunks
		 * come from the image a dump took at 0, and a wrong one must
		 * not look like the end */
		result_error(r, "ERR", "no dump of this filter at this "
		    "iterator (start again at 0)");
		return;
	}
	d->last = time(NULL);
	if (index == d->nchunks) {
		reply_end(r, cf);
		dump_release(d);
		return;
	}
	/* index + 1 == next: the same chunk again (a client retrying) */
	d->next = (uint32_t)index + 1;
	reply_chunk(r, iter_of((int)slot, d, d->next), d, (uint32_t)index);
}

/* ---- loading ---- */

static void
load_drop(struct session *s)
{
	dump_load_free(s->load);
	s->load = NULL;
	s->load_name[0] = '\0';
}

static void
cmd_dump_session_end(struct session *s)
{
	if (s->load != NULL) {
		log_info("client %llu (%s): load of %s dropped: the "
		    "connection closed", (unsigned long long)s->id, s->peer,
		    s->load_name);
		load_drop(s);
	}
}

/* What the table runs for BF.SCANDUMP, BF.LOADCHUNK and their CF twins. */
const struct command_hooks cmd_dump_hooks = {
	.tick = cmd_dump_tick,
	.session_end = cmd_dump_session_end,
};

/* The last chunk is in: the filter joins the registry, and the reply
 * waits for its first snapshot. */
static void
load_finish(struct session *s, struct result *r)
{
	struct core		*core = s->core;
	struct dump_image	*img = dump_load_image(s->load);
	struct save_wait	*w;
	struct filter		*f;
	char			 err[512];

	f = filter_from_dump(s->load_name, img, err, sizeof(err));
	load_drop(s);
	if (f == NULL) {
		result_error(r, "ERR", "%s", err);
		return;
	}
	if (registry_adopt(core->reg, core->cfg, f, err, sizeof(err)) == -1) {
		filter_unref(f);
		result_error(r, "ERR", "%s", err);
		return;
	}
	/* before its snapshot, so that a replay keeps that snapshot against
	 * an earlier DEL of the same filter */
	persist_filter_restored(core, f);
	s->journaled = 1;
	/* replicas take it from a full sync */
	core->repl.resync_why = "a filter was loaded from a dump";
	log_info("client %llu (%s): filter %s loaded from a dump: %llu keys, "
	    "%zu slice(s)", (unsigned long long)s->id, s->peer, f->name,
	    (unsigned long long)filter_count(f), f->nslices);
	if ((w = calloc(1, sizeof(*w))) == NULL ||
	    saver_submit(core->saver, f, core->cfg->data_dir, w) == -1) {
		/* the filter is there; its snapshot comes with the next
		 * periodic round */
		free(w);
		result_error(r, "ERR", "filter %s loaded, but its snapshot "
		    "cannot be queued: out of memory", f->name);
		return;
	}
	r->kind = RESULT_WAIT;
	r->wait = w;
}

/* A refused chunk as RedisBloom words it: BF.LOADCHUNK's "ERR received
 * bad data", CF.LOADCHUNK's "Couldn't load chunk!". */
static void
chunk_refused(struct op *op, struct result *r)
{
	if (is_cf(op))
		result_bare(r, CF_CHUNK_TEXT);
	else
		result_error(r, "ERR", BF_BAD_TEXT);
}

/*
 * A chunk that would start a load is refused (err: dump_load_start's
 * reason, logged): as RedisBloom answers a missing key given a data
 * chunk ("ERR not found"), a header it cannot use (BF: "ERR received
 * bad data"; CF: "Invalid header" when the length is wrong, else
 * "Couldn't create filter!"); a dump too big for max_memory or memory
 * keeps seend's reason.
 */
static void
start_refused(struct session *s, struct op *op, const char *err,
    struct result *r)
{
	const void	*data = op->argv[3];
	size_t		 len = op->argl[3];
	uint32_t	 kind;
	char		 why[512], tok[80];

	log_info("client %llu (%s): load of %s refused: %s",
	    (unsigned long long)s->id, s->peer, command_printable(op->argv[1],
	    op->argl[1], tok, sizeof(tok)), err);
	if (!dump_refused_bad(err))
		result_error(r, "ERR", "%s", err);
	else if (dump_chunk_verify(data, len, &kind, why, sizeof(why)) == 0 &&
	    kind == DUMP_KIND_BITS)
		result_error(r, "ERR", "not found");
	else if (!is_cf(op))
		result_error(r, "ERR", BF_BAD_TEXT);
	else if (!dump_chunk_framed(data, len))
		result_bare(r, CF_HEADER_TEXT);
	else
		result_bare(r, CF_CREATE_TEXT);
}

/*
 * An iterator RedisBloom gives no chunk a place at (BF: 0 or below, CF:
 * below 0): refused as its chunk would be for a filter there (a load in
 * progress is dropped), WRONGTYPE for one of the other type, "ERR not
 * found" where there is none.
 */
static void
iter_refused(struct session *s, struct op *op, struct result *r)
{
	struct filter	*f;

	if (s->load != NULL) {
		log_info("client %llu (%s): load of %s dropped: iterator %.*s",
		    (unsigned long long)s->id, s->peer, s->load_name,
		    (int)(op->argl[2] < 32 ? op->argl[2] : 32), op->argv[2]);
		load_drop(s);
		chunk_refused(op, r);
		return;
	}
	switch (command_typed_lookup(s, op, is_cf(op) ? FILTER_TYPE_CUCKOO :
	    FILTER_TYPE_BLOOM, &f)) {
	case BF_FOUND:
		chunk_refused(op, r);
		break;
	case BF_WRONGTYPE:
		result_bare(r, WRONGTYPE_TEXT);
		break;
	case BF_MISSING:
		result_error(r, "ERR", "not found");
		break;
	}
}

/* BF.LOADCHUNK f iter data, CF.LOADCHUNK f iter data */
void
cmd_bf_loadchunk(struct session *s, struct op *op, struct result *r)
{
	const char	*name = op->argv[1];
	size_t		 namel = op->argl[1];
	struct filter	*f;
	long long	 iter;
	char		 err[512], tok[80];
	int		 rc, cf = is_cf(op), numeric;

	numeric = command_arg_ll(op->argv[2], op->argl[2], &iter) == 0;
	if (!numeric || (cf && iter == 0)) {
		if (cf)
			result_bare(r, CF_POS_TEXT);
		else
			result_error(r, "ERR", BF_ITER_TEXT);
		return;
	}
	if (s->load != NULL && (strlen(s->load_name) != namel ||
	    memcmp(s->load_name, name, namel) != 0)) {
		result_error(r, "ERR", "a load of %s is in progress on this "
		    "connection", s->load_name);
		return;
	}
	if (iter < 0 || (!cf && iter == 0)) {
		iter_refused(s, op, r);
		return;
	}
	if (s->load == NULL) {
		if (!registry_valid_name(name, namel)) {
			result_error(r, "ERR", "bad filter name '%s'",
			    command_printable(name, namel, tok, sizeof(tok)));
			return;
		}
		switch (command_typed_lookup(s, op, cf ? FILTER_TYPE_CUCKOO :
		    FILTER_TYPE_BLOOM, &f)) {
		case BF_FOUND:
			result_error(r, "ERR", "item exists");
			return;
		case BF_WRONGTYPE:
			result_bare(r, WRONGTYPE_TEXT);
			return;
		case BF_MISSING:
			break;
		}
		if ((s->load = dump_load_start(op->argv[3], op->argl[3],
		    filter_memory_room(), err, sizeof(err))) == NULL) {
			start_refused(s, op, err, r);
			return;
		}
		if (dump_load_is_cuckoo(s->load) != cf) {
			result_error(r, "ERR", "the dump is of a %s filter: "
			    "load it with %s", dump_load_is_cuckoo(s->load) ?
			    "cuckoo" : "bloom", dump_load_is_cuckoo(s->load) ?
			    "CF.LOADCHUNK" : "BF.LOADCHUNK");
			load_drop(s);
			return;
		}
		memcpy(s->load_name, name, namel);
		s->load_name[namel] = '\0';
		/* a filter of no slice (an empty window) is its header */
		if (dump_load_complete(s->load))
			load_finish(s, r);
		else
			result_status(r, "OK");
		return;
	}
	rc = dump_load_add(s->load, op->argv[3], op->argl[3], err, sizeof(err));
	if (rc == -1) {
		log_info("client %llu (%s): load of %s dropped: %s",
		    (unsigned long long)s->id, s->peer, s->load_name, err);
		load_drop(s);
		chunk_refused(op, r);
		return;
	}
	if (rc == 0) {
		result_status(r, "OK");
		return;
	}
	load_finish(s, r);
}
