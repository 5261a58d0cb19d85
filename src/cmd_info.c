/*
 * cmd_info.c - what operators ask: INFO, FILTERS, SAVE, DBSIZE.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "session.h"
#include "config.h"
#include "filter.h"
#include "handler.h"
#include "log.h"
#include "persist.h"
#include "registry.h"
#include "resp.h"
#include "saver.h"
#include "core.h"
#include "snapshot.h"

/* The keys all filters answered new: Redis's key count, near enough. */
void
cmd_dbsize(struct session *s, struct op *op, struct result *r)
{
	const struct registry	*reg = s->core->reg;
	long long		 n = 0;

	(void)op;
	for (size_t i = 0; i < reg->nfilters; i++)
		n += (long long)filter_count(reg->filters[i]);
	result_int(r, n);
}

static void
filter_line(const struct filter *f)
{
	buf_printf(&result_buf, "%s capacity=%llu error_rate=%g count=%llu "
	    "bytes=%llu slices=%zu\r\n", f->name,
	    (unsigned long long)f->capacity, f->error_rate,
	    (unsigned long long)filter_count(f),
	    (unsigned long long)filter_bytes(f), filter_nall(f));
}

/* The growth factor as the config spells it. */
static const char *
growth_text(const struct filter *f, char *buf, size_t len)
{
	if (f->growth == 0)
		return "off";
	snprintf(buf, len, "%u", f->growth);
	return buf;
}

/* The lines that differ by type: a Bloom filter's bits and hashes, a
 * cuckoo filter's buckets and fingerprints (fill: slots in use). */
static void
info_layout(const struct filter *f)
{
	const struct slice	*h = f->head;
	double			 bits = (double)filter_bytes(f) * 8;
	uint64_t		 bits_set = 0, slots;

	if (filter_is_cuckoo(f)) {
		slots = filter_slots(f);
		buf_printf(&result_buf,
		    "buckets %llu\r\n"
		    "bucket_size %u\r\n"
		    "fingerprint_bits %u\r\n"
		    "layout cuckoo-packed4\r\n"
		    "slots_used %llu\r\n"
		    "fill_ratio %.6f\r\n"
		    "forgotten %llu\r\n",
		    (unsigned long long)filter_buckets(f), CUCKOO_SLOTS,
		    h ? h->cuckoo.fpbits : 0, (unsigned long long)filter_count(f),
		    slots ? (double)filter_count(f) / (double)slots : 0.0,
		    (unsigned long long)f->forgotten);
		return;
	}
	for (size_t i = 0; i < filter_nall(f); i++)
		bits_set += filter_slice_at(f, i)->bloom.bits_set;
	buf_printf(&result_buf,
	    "hashes %u\r\n"
	    "layout split-block-512\r\n"
	    "bits_set %llu\r\n"
	    "fill_ratio %.6f\r\n",
	    h ? h->bloom.hashes : 0, (unsigned long long)bits_set,
	    bits > 0 ? (double)bits_set / bits : 0.0);
}

static void
info_filter(const struct filter *f)
{
	double			 bits = (double)filter_bytes(f) * 8;
	uint64_t		 cap = filter_slice_capacity(f);
	char			 g[16];

	buf_printf(&result_buf,
	    "name %s\r\n"
	    "type %s\r\n"
	    "capacity %llu\r\n"
	    "error_rate %g\r\n"
	    "growth %s\r\n"
	    "expire %lld\r\n"
	    "normalize %s\r\n"
	    "state %s\r\n"
	    "count %llu\r\n"
	    "slices %zu\r\n"
	    "merged_slices %zu\r\n"
	    "slice_capacity %llu\r\n"
	    "bits %.0f\r\n"
	    "bytes %llu\r\n"
	    "mapped_bytes %llu\r\n"
	    "bits_per_key %.2f\r\n",
	    f->name, filter_is_cuckoo(f) ? "cuckoo" : "bloom",
	    (unsigned long long)f->capacity, f->error_rate,
	    growth_text(f, g, sizeof(g)), (long long)(f->expire_ms / 1000),
	    f->normalize ? "standard" : "off", filter_state_name(filter_state(f)),
	    (unsigned long long)filter_count(f), filter_nall(f), f->nmerged,
	    (unsigned long long)cap, bits, (unsigned long long)filter_bytes(f),
	    (unsigned long long)filter_mapped(f),
	    cap ? bits / (double)cap : 0.0);
	info_layout(f);
	buf_printf(&result_buf,
	    "estimated_fp_rate %.3g\r\n"
	    "fp_rate_at_capacity %.3g\r\n"
	    "seen_new %llu\r\n"
	    "seen_old %llu\r\n"
	    "checks %llu\r\n"
	    "refused_full %llu\r\n",
	    filter_fp_estimate(f), filter_fp_planned(f),
	    (unsigned long long)f->seen_new, (unsigned long long)f->seen_old,
	    (unsigned long long)f->checks, (unsigned long long)f->refused);
	buf_printf(&result_buf,
	    "dirty %d\r\n"
	    "snapshot_in_progress %d\r\n"
	    "last_snapshot_time %lld\r\n"
	    "last_snapshot_status %s\r\n"
	    "last_snapshot_duration_ms %.1f\r\n"
	    "last_snapshot_error %s\r\n"
	    "snapshots_ok %llu\r\n"
	    "snapshots_failed %llu\r\n",
	    filter_dirty(f), f->saving > 0,
	    (long long)f->last_save,
	    f->last_save_ok < 0 ? "none" : f->last_save_ok ? "ok" : "failed",
	    f->last_save_secs * 1000,
	    f->last_save_error[0] ? f->last_save_error : "-",
	    (unsigned long long)f->saves_ok,
	    (unsigned long long)f->saves_failed);
}

static void
info_server(struct core *core)
{
	const struct stats	*st = &core->stats;
	const struct registry	*reg = core->reg;
	time_t			 now = time(NULL);
	buf_printf(&result_buf,
	    "version %s\r\n"
	    "pid %ld\r\n"
	    "run_id %s\r\n"
	    "uptime_seconds %lld\r\n"
	    "connections_current %u\r\n"
	    "connections_total %llu\r\n"
	    "connections_refused %llu\r\n"
	    "max_clients %u\r\n"
	    "commands_total %llu\r\n",
	    PACKAGE_VERSION, (long)getpid(), command_run_id(),
	    (long long)(now - st->started),
	    st->clients, (unsigned long long)st->conns_total,
	    (unsigned long long)st->conns_refused, core->cfg->max_clients,
	    (unsigned long long)st->commands);
	for (int i = 0; i < CMD_COUNT; i++) {
		char name[16];
		size_t j;

		for (j = 0; command_name(i)[j] && j < sizeof(name) - 1; j++)
			name[j] = (char)(command_name(i)[j] | 0x20);
		name[j] = '\0';
		buf_printf(&result_buf, "cmd_%s %llu\r\n", name,
		    (unsigned long long)st->by_cmd[i]);
	}
	buf_printf(&result_buf,
	    "errors_total %llu\r\n"
	    "keys_new %llu\r\n"
	    "keys_seen %llu\r\n"
	    "check_hits %llu\r\n"
	    "check_misses %llu\r\n"
	    "lines_too_long %llu\r\n"
	    "idle_closed %llu\r\n"
	    "auth_failures %llu\r\n"
	    "filters %zu\r\n"
	    "filter_memory_bytes %llu\r\n"
	    "max_memory %llu\r\n"
	    "connection_memory_bytes %zu\r\n"
	    "rss_bytes %zu\r\n"
	    "snapshots_in_progress %d\r\n"
	    "last_reload_time %lld\r\n"
	    "last_reload_status %s\r\n",
	    (unsigned long long)st->errors,
	    (unsigned long long)st->keys_new,
	    (unsigned long long)st->keys_seen,
	    (unsigned long long)st->check_hits,
	    (unsigned long long)st->check_misses,
	    (unsigned long long)st->lines_too_long,
	    (unsigned long long)st->idle_closed,
	    (unsigned long long)st->auth_failures,
	    reg->nfilters, (unsigned long long)filter_memory_used,
	    (unsigned long long)filter_memory_limit, (size_t)st->conn_bytes,
	    stats_rss_bytes(),
	    saver_busy(core->saver), (long long)st->last_reload,
	    st->last_reload_ok < 0 ? "none" :
	    st->last_reload_ok ? "ok" : "failed");
	persist_info(core, &result_buf);
}

void
cmd_filters(struct session *s, struct op *op, struct result *r)
{
	const struct registry *reg = s->core->reg;

	result_reset();
	for (size_t i = 0; i < reg->nfilters; i++)
		filter_line(reg->filters[i]);
	result_scratch(r, op->proto == COMMAND_RESP ? RESULT_BULK : RESULT_TEXT);
}

/* INFO's sections over RESP. */
#define SECTION_SERVER	1	/* seend's own fields, run_id among them */
#define SECTION_REPL	2	/* "# Replication" */
#define SECTION_OTHER	4	/* one of Redis's that seend has no fields of */
#define SECTION_STATS	8	/* "# Stats": the replication counters */

/* The sections a word of RESP INFO names when it is one of Redis's section
 * names (0: it is not; then it names a filter). */
static int
redis_section(const char *w, size_t l)
{
	static const char *const other[] = { "CLIENTS", "MEMORY",
	    "PERSISTENCE", "CPU", "KEYSPACE" };

	if (name_is(w, l, "SERVER", 6))
		return SECTION_SERVER;
	if (name_is(w, l, "REPLICATION", 11))
		return SECTION_REPL;
	if (name_is(w, l, "STATS", 5))
		return SECTION_STATS;
	if (name_is(w, l, "ALL", 3) || name_is(w, l, "DEFAULT", 7) ||
	    name_is(w, l, "EVERYTHING", 10))
		return SECTION_SERVER | SECTION_REPL | SECTION_STATS;
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		if (name_is(w, l, other[i], strlen(other[i])))
			return SECTION_OTHER;
	return 0;
}

/*
 * INFO [<filter>]. Over RESP, INFO <word> is Redis's section when the
 * word is one of Redis's section names, otherwise the filter of that name
 * (seend: seend's own fields); several words, their sections.
 */
void
cmd_info(struct session *s, struct op *op, struct result *r)
{
	struct filter	*f;
	char		 tok[80];
	int		 sec = 0;

	result_reset();
	if (op->proto == COMMAND_LINE) {
		if (op->argc == 2) {
			if ((f = registry_find(s->core->reg, op->argv[1],
			    op->argl[1])) == NULL) {
				result_error(r, "ERR", "no such filter '%s'",
				    command_printable(op->argv[1], op->argl[1],
				    tok, sizeof(tok)));
				return;
			}
			info_filter(f);
		} else {
			info_server(s->core);
			command_info_replication(s->core, &result_buf);
			command_info_repl_stats(s->core, &result_buf);
		}
		result_scratch(r, RESULT_TEXT);
		return;
	}
	if (op->argc == 1)
		sec = SECTION_SERVER | SECTION_REPL;
	else if (op->argc == 2 && (sec = redis_section(op->argv[1],
	    op->argl[1])) == 0) {
		if ((f = registry_find(s->core->reg, op->argv[1],
		    op->argl[1])) != NULL) {
			info_filter(f);
			result_scratch(r, RESULT_TEXT);
			return;
		}
		if (name_is(op->argv[1], op->argl[1], "SEEND", 5))
			sec = SECTION_SERVER;
	} else
		for (int i = 1; i < op->argc; i++)
			sec |= redis_section(op->argv[i], op->argl[i]);
	if (sec & SECTION_SERVER)
		info_server(s->core);
	if (sec & SECTION_REPL) {
		/* a header line goes as it is (result.c); a blank line
		 * between sections, as Redis writes them */
		if (sec & SECTION_SERVER)
			buf_append(&result_buf, "\r\n", 2);
		buf_append_str(&result_buf, "# Replication\r\n");
		command_info_replication(s->core, &result_buf);
	}
	if (sec & SECTION_STATS) {
		if (sec & (SECTION_SERVER | SECTION_REPL))
			buf_append(&result_buf, "\r\n", 2);
		buf_append_str(&result_buf, "# Stats\r\n");
		command_info_repl_stats(s->core, &result_buf);
	}
	/* nothing (an unknown section, or one seend has no fields of) is
	 * an empty string, as Redis answers an unknown one */
	result_scratch(r, RESULT_TEXT);
	if (r->len == 0)
		r->text = "";
}

/*
 * SAVE answers only once every file is written and fsynced, so the
 * connection waits (its later requests too, to keep replies in order)
 * while the worker thread writes; other clients are served meanwhile.
 * The result is a wait token the connection holds until it completes.
 */
void
cmd_save(struct session *s, struct op *op, struct result *r)
{
	struct core *core = s->core;
	struct save_wait	*w;
	struct filter		*one = NULL;
	char			 tok[80];

	if (op->argc == 2 &&
	    (one = registry_find(core->reg, op->argv[1], op->argl[1])) == NULL) {
		result_error(r, "ERR", "no such filter '%s'",
		    command_printable(op->argv[1], op->argl[1], tok, sizeof(tok)));
		return;
	}
	if ((w = calloc(1, sizeof(*w))) == NULL) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	w->pending = 1;		/* held until every job is queued */
	for (size_t i = 0; i < core->reg->nfilters; i++) {
		struct filter *f = core->reg->filters[i];

		if (one != NULL && f != one)
			continue;
		if (saver_submit(core->saver, f, core->cfg->data_dir, w) == -1) {
			w->failed = 1;
			snprintf(w->err, sizeof(w->err), "out of memory");
		}
	}
	if (--w->pending == 0) {
		int failed = w->failed;

		free(w);
		if (failed)
			result_error(r, "ERR", "out of memory");
		else
			result_status(r, "OK");
		return;
	}
	r->kind = RESULT_WAIT;
	r->wait = w;
}
