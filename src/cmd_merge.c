/*
 * cmd_merge.c - MERGE <dst> <src> [<src> ...]: afterwards dst answers
 * seen for every key any source answered seen (merge.h says how).
 *
 * The request is checked whole and planned at once (nothing changes if
 * it is refused); the work is then done a step per loop turn
 * (command_work, the turn's last step), so merging big filters never
 * stalls the other clients, and the client's +OK waits, as SAVE's does,
 * until the merge is done and dst's snapshot written and fsynced: an
 * acknowledged merge is durable. A missing dst is made for the merge
 * from the first source's settings and seed, invisible until the end.
 * Merges run one at a time, in the order they came.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "config.h"
#include "core.h"
#include "filter.h"
#include "handler.h"
#include "keyslot.h"
#include "log.h"
#include "merge.h"
#include "persist.h"
#include "registry.h"
#include "saver.h"
#include "session.h"

/* Bytes ORed per loop turn: a few milliseconds at worst (a new slice's
 * pages are faulted in as they are first written). */
#define MERGE_STEP	((size_t)1 << 20)
/* Merges waiting their turn: a bound, as for every queue. */
#define MERGES_MAX	64

struct merge_job {
	struct merge		*m;
	struct save_wait	*w;		/* the client's reply */
	int			 fresh;		/* dst made for this merge */
	uint64_t		 client;
	struct merge_job	*next;
};

static struct merge_job	*queue, **queue_tail = &queue;
static int		 nqueued;

/* Whether a merge into that name is queued or under way. */
static int
in_progress(const char *name, size_t len)
{
	for (struct merge_job *j = queue; j != NULL; j = j->next) {
		const char *d = merge_dst(j->m)->name;

		if (strlen(d) == len && memcmp(d, name, len) == 0)
			return 1;
	}
	return 0;
}

/* The sources, each once checked against ref's window and normalize. */
static int
find_sources(struct session *s, struct op *op, struct filter **srcs,
    struct result *r)
{
	const struct registry	*reg = s->core->reg;
	char			 tok[80];

	for (int i = 2; i < op->argc; i++) {
		if (op->argl[i] == op->argl[1] &&
		    memcmp(op->argv[i], op->argv[1], op->argl[1]) == 0) {
			result_error(r, "ERR", "the destination cannot be a "
			    "source");
			return -1;
		}
		srcs[i - 2] = registry_find(reg, op->argv[i], op->argl[i]);
		if (srcs[i - 2] == NULL) {
			result_error(r, "ERR", "no such filter '%s'",
			    command_printable(op->argv[i], op->argl[i], tok,
			    sizeof(tok)));
			return -1;
		}
	}
	return 0;
}

static int
same_kind(const struct filter *ref, struct filter *const *srcs, size_t n,
    struct result *r)
{
	for (size_t i = 0; i < n; i++) {
		if (filter_is_cuckoo(srcs[i]) || filter_is_cuckoo(ref)) {
			/* a table's fingerprints cannot be OR-ed; moving
			 * them one by one is not built */
			result_error(r, "ERR", "filter %s is a cuckoo filter: "
			    "MERGE takes bloom filters only",
			    filter_is_cuckoo(srcs[i]) ? srcs[i]->name :
			    ref->name);
			return -1;
		}
		if (srcs[i]->expire_ms != ref->expire_ms) {
			result_error(r, "ERR", "filter %s has expire %llds, "
			    "%s %llds: merged filters share their window",
			    srcs[i]->name,
			    (long long)(srcs[i]->expire_ms / 1000), ref->name,
			    (long long)(ref->expire_ms / 1000));
			return -1;
		}
		if (srcs[i]->normalize != ref->normalize) {
			result_error(r, "ERR", "filter %s has normalize %s, %s "
			    "%s: merged filters hash keys alike",
			    srcs[i]->name, srcs[i]->normalize ? "standard" :
			    "off", ref->name, ref->normalize ? "standard" :
			    "off");
			return -1;
		}
		if (srcs[i]->slot_major != ref->slot_major) {
			result_error(r, "ERR", "filter %s is %s, %s is %s: "
			    "merged filters lay their bits out alike",
			    srcs[i]->name, srcs[i]->slot_major ?
			    "partitioned by slot" : "whole", ref->name,
			    ref->slot_major ? "partitioned by slot" : "whole");
			return -1;
		}
	}
	return 0;
}

/* A destination made for the merge: the first source's settings and
 * seed, no slice yet. */
static struct filter *
fresh_dst(struct op *op, const struct filter *first, struct result *r)
{
	struct filter_shape	 shape;
	struct filter		*f;
	char			 name[FILTER_NAME_MAX + 1], tok[80];

	if (!registry_valid_name(op->argv[1], op->argl[1])) {
		result_error(r, "ERR", "bad filter name '%s'",
		    command_printable(op->argv[1], op->argl[1], tok,
		    sizeof(tok)));
		return NULL;
	}
	memcpy(name, op->argv[1], op->argl[1]);
	name[op->argl[1]] = '\0';
	/* a new filter lives whole on its name's node, and this node holds
	 * only its own slots' part of a partitioned one */
	if (first->slot_major) {
		result_error(r, "ERR", "filter %s is partitioned by slot: MERGE "
		    "makes no new filter of it (merge into a config filter "
		    "of the same layout)", first->name);
		return NULL;
	}
	memset(&shape, 0, sizeof(shape));
	shape.capacity = first->capacity;
	shape.error_rate = first->error_rate;
	shape.growth = first->growth;
	shape.expire = (uint64_t)first->expire_ms / 1000;
	shape.normalize = first->normalize ? FILTER_NORMALIZE_STANDARD :
	    FILTER_NORMALIZE_OFF;
	if ((f = filter_new_empty(name, &shape, first->seed)) == NULL) {
		result_error(r, "ERR", "out of memory");
		return NULL;
	}
	f->expire_ms = first->expire_ms;
	return f;
}

void
cmd_merge(struct session *s, struct op *op, struct result *r)
{
	struct filter		*dst, **srcs;
	struct merge_job	*job;
	size_t			 n = (size_t)op->argc - 2;
	char			 err[512];

	if (nqueued >= MERGES_MAX) {
		result_error(r, "ERR", "too many merges waiting (%d)",
		    MERGES_MAX);
		return;
	}
	if ((srcs = calloc(n, sizeof(*srcs))) == NULL) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	dst = registry_find(s->core->reg, op->argv[1], op->argl[1]);
	if (find_sources(s, op, srcs, r) == -1 ||
	    same_kind(dst != NULL ? dst : srcs[0], srcs, n, r) == -1)
		goto out;
	/* a partitioned filter spans every slot: while some are paused for
	 * a hand-over, bits merged into them would miss its final copy */
	if ((dst != NULL ? dst : srcs[0])->slot_major &&
	    s->core->cluster != NULL && s->core->cluster->nhandoffs > 0) {
		result_error(r, op->proto == COMMAND_LINE ? "ERR" : "TRYAGAIN",
		    "%sslots of this node are being handed over to another "
		    "node, try again", op->proto == COMMAND_LINE ?
		    "TRYAGAIN " : "");
		goto out;
	}
	if (in_progress(op->argv[1], op->argl[1])) {
		result_error(r, "ERR", "a merge into %.*s is in progress",
		    (int)op->argl[1], op->argv[1]);
		goto out;
	}
	if ((job = calloc(1, sizeof(*job))) == NULL ||
	    (job->w = calloc(1, sizeof(*job->w))) == NULL) {
		free(job);
		result_error(r, "ERR", "out of memory");
		goto out;
	}
	job->fresh = dst == NULL;
	if (job->fresh && (dst = fresh_dst(op, srcs[0], r)) == NULL) {
		free(job->w);
		free(job);
		goto out;
	}
	job->m = merge_plan(dst, job->fresh, srcs, n, err, sizeof(err));
	if (job->fresh)
		filter_unref(dst);	/* the merge holds it */
	if (job->m == NULL) {
		result_error(r, "ERR", "%s", err);
		free(job->w);
		free(job);
		goto out;
	}
	job->w->pending = 1;	/* held until the merge is done */
	job->client = s->id;
	*queue_tail = job;
	queue_tail = &job->next;
	nqueued++;
	log_info("client %llu (%s): merge of %zu filter(s) into %s started: "
	    "%llu bytes", (unsigned long long)s->id, s->peer, n,
	    merge_dst(job->m)->name, (unsigned long long)merge_bytes(job->m));
	r->kind = RESULT_WAIT;
	r->wait = job->w;
out:
	free(srcs);
}

/* The merge is done: dst takes it (a fresh one joins the registry), and
 * the reply waits for dst's snapshot. */
static void
job_finish(struct core *core, struct merge_job *job)
{
	struct filter	*dst = merge_dst(job->m);
	char		 err[512] = "";

	if (job->fresh) {
		filter_ref(dst);
		if (registry_adopt(core->reg, core->cfg, dst, err,
		    sizeof(err)) == -1)
			filter_unref(dst);
	} else if (!registry_contains(core->reg, dst))
		snprintf(err, sizeof(err), "filter %s was dropped during the "
		    "merge", dst->name);
	if (err[0] == '\0')
		(void)merge_finish(job->m, err, sizeof(err));
	/* a new filter joined the registry: an image's, whose snapshot is
	 * queued below, or, the merge failed, one that stays (a replay
	 * makes it again empty: the client had an error) */
	if (job->fresh && registry_contains(core->reg, dst)) {
		if (err[0] == '\0')
			persist_filter_restored(core, dst);
		else
			persist_filter_created(core, dst);
	}
	if (err[0] == '\0' && saver_submit(core->saver, dst,
	    core->cfg->data_dir, job->w) == -1)
		snprintf(err, sizeof(err), "merged, but the snapshot of %s "
		    "cannot be queued: out of memory", dst->name);
	if (err[0] != '\0') {
		job->w->failed = 1;
		snprintf(job->w->err, sizeof(job->w->err), "%s", err);
		log_warn("client %llu: merge into %s failed: %s",
		    (unsigned long long)job->client, dst->name, err);
	} else {
		log_info("client %llu: merge into %s done: %llu keys, %zu "
		    "slice(s), %zu merged", (unsigned long long)job->client,
		    dst->name, (unsigned long long)filter_count(dst),
		    dst->nslices, dst->nmerged);
		/* the stream says keys, not slices: replicas take the
		 * merged filter from a full sync */
		core->repl.resync_why = "MERGE changed a filter whole";
	}
	saver_wait_done(core->saver, job->w);
}

static int
cmd_merge_work(struct core *core)
{
	struct merge_job *job = queue;

	if (job == NULL)
		return 0;
	if (!merge_step(job->m, MERGE_STEP))
		return 1;
	job_finish(core, job);
	if ((queue = job->next) == NULL)
		queue_tail = &queue;
	nqueued--;
	merge_free(job->m);
	free(job);
	return queue != NULL;
}

const char *
cmd_merge_into_slots(unsigned first, unsigned last)
{
	for (struct merge_job *j = queue; j != NULL; j = j->next) {
		const struct filter	*d = merge_dst(j->m);
		unsigned		 slot = keyslot_of(d->name, d->namelen);

		if (d->slot_major || (slot >= first && slot <= last))
			return d->name;
	}
	return NULL;
}

/* What the table runs for MERGE: a step of the merge under way each loop
 * turn. */
const struct command_hooks cmd_merge_hooks = {
	.work = cmd_merge_work,
};
