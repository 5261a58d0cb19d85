/*
 * cmd_info.c - what operators ask: INFO (Redis 7's sections over RESP),
 * FILTERS, SAVE, DBSIZE.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "session.h"
#include "backlog.h"
#include "config.h"
#include "filter.h"
#include "handler.h"
#include "keyspace.h"
#include "log.h"
#include "peer.h"
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
 * cuckoo filter's buckets and fingerprints (fill: slots in use, of the
 * node's part of a partitioned filter). */
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
		    "layout %s\r\n"
		    "slots_used %llu\r\n"
		    "fill_ratio %.6f\r\n"
		    "forgotten %llu\r\n",
		    (unsigned long long)filter_buckets(f), CUCKOO_SLOTS,
		    h ? h->cuckoo.fpbits : 0, f->slot_major ?
		    "slot-major-cuckoo-packed4" : "cuckoo-packed4",
		    (unsigned long long)filter_count(f),
		    slots ? (double)filter_count(f) / ((double)slots *
		    filter_part_share(f)) : 0.0,
		    (unsigned long long)f->forgotten);
		return;
	}
	for (size_t i = 0; i < filter_nall(f); i++)
		bits_set += filter_slice_at(f, i)->bloom.bits_set;
	buf_printf(&result_buf,
	    "hashes %u\r\n"
	    "layout %s\r\n"
	    "bits_set %llu\r\n"
	    "fill_ratio %.6f\r\n",
	    h ? h->bloom.hashes : 0, f->slot_major ?
	    "slot-major-split-block-512" : "split-block-512",
	    (unsigned long long)bits_set,
	    bits > 0 ? (double)bits_set / (bits * filter_part_share(f)) : 0.0);
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

/* The filters made by commands (BF.RESERVE, SADD...), not config ones. */
static size_t
runtime_filters(const struct registry *reg)
{
	size_t n = 0;

	for (size_t i = 0; i < reg->nfilters; i++)
		n += reg->filters[i]->runtime != 0;
	return n;
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
	    "runtime_filters %zu\r\n"
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
	    reg->nfilters, runtime_filters(reg),
	    (unsigned long long)filter_memory_used,
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

/*
 * INFO over RESP: Redis 7's sections, with Redis's field names, for the
 * tools that read Redis (redis-cli --stat, Sentinel, redis_exporter,
 * RedisInsight), then seend's own fields under "# Seend". Each line is
 * written "name value", as the line protocol's are: result.c turns the
 * first space into Redis's ':' and leaves a "# Section" header as it is.
 * A field is here only when its value is true of seend; Redis's fields of
 * what seend does not have (Lua, forks, defragmentation...) are left out
 * rather than shown as a made-up figure.
 */

/* The Redis whose replies seend follows (command_docs.c, HELLO). */
#define INFO_REDIS_VERSION	"7.0.15"

/* Redis's bytesToHuman: "894.80K", "0B". */
static const char *
human(char *b, size_t len, unsigned long long n)
{
	static const char units[] = "KMGTP";
	double d = (double)n;
	int u = -1;

	if (n < 1024) {
		snprintf(b, len, "%lluB", n);
		return b;
	}
	while (d >= 1024 && u < 4) {
		d /= 1024;
		u++;
	}
	snprintf(b, len, "%.2f%c", d, units[u]);
	return b;
}

/* The port of the TCP listener ("host:port", "[v6]:port"), 0 if none. */
static unsigned
listen_port(const struct config *cfg)
{
	const char *c;

	if (cfg->listen == NULL || (c = strrchr(cfg->listen, ':')) == NULL)
		return 0;
	return (unsigned)strtoul(c + 1, NULL, 10);
}

static void
sec_server(struct core *core)
{
	static struct utsname	 un;
	static int		 have_un;
	const struct config	*cfg = core->cfg;
	const char		*ns = getenv("NOTIFY_SOCKET");
	char			 exe[PATH_MAX], conf[PATH_MAX];
	struct timespec		 ts;
	ssize_t			 n;
	long long		 up = (long long)(time(NULL) -
				    core->stats.started);

	if (!have_un)		/* it does not change: asked once, as Redis */
		have_un = uname(&un) == 0;
	if ((n = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) < 0)
		n = 0;
	exe[n] = '\0';
	if (cfg->path == NULL)
		conf[0] = '\0';
	else if (realpath(cfg->path, conf) == NULL)
		snprintf(conf, sizeof(conf), "%s", cfg->path);
	clock_gettime(CLOCK_REALTIME, &ts);
	buf_printf(&result_buf,
	    "# Server\r\n"
	    "redis_version " INFO_REDIS_VERSION "\r\n"
	    "redis_git_sha1 00000000\r\n"
	    "redis_git_dirty 0\r\n"
	    "redis_mode %s\r\n"
	    "os %s %s %s\r\n"
	    "arch_bits %d\r\n"
	    "gcc_version %d.%d.%d\r\n"
	    "process_id %ld\r\n"
	    "process_supervised %s\r\n"
	    "run_id %s\r\n"
	    "tcp_port %u\r\n"
	    "server_time_usec %lld\r\n"
	    "uptime_in_seconds %lld\r\n"
	    "uptime_in_days %lld\r\n"
	    "hz 1\r\n"
	    "configured_hz 1\r\n"
	    "executable %s\r\n"
	    "config_file %s\r\n"
	    "io_threads_active 0\r\n",
	    core->cluster != NULL ? "cluster" : "standalone",
	    have_un ? un.sysname : "", have_un ? un.release : "",
	    have_un ? un.machine : "", (int)sizeof(long) * 8,
#if defined(__GNUC__) && !defined(__clang__)
	    __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__,
#else
	    0, 0, 0,
#endif
	    (long)getpid(), ns != NULL && ns[0] != '\0' ? "systemd" : "no",
	    command_run_id(), listen_port(cfg),
	    (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000, up,
	    up / 86400, exe, conf);
}

static void
sec_clients(struct core *core)
{
	const struct core_wait	*w;
	int			 blocked = 0;

	/* WAIT is what blocks a client in seend, as in Redis; a WAIT whose
	 * client has gone stays listed until it completes, but blocks no one */
	for (w = core->repl.waits; w != NULL; w = w->next)
		blocked += w->w != NULL && w->w->owner != NULL;
	buf_printf(&result_buf,
	    "# Clients\r\n"
	    "connected_clients %u\r\n"
	    "cluster_connections 0\r\n"
	    "maxclients %u\r\n"
	    "blocked_clients %d\r\n"
	    "tracking_clients 0\r\n",
	    core->stats.clients, core->cfg->max_clients, blocked);
}

static void
sec_memory(struct core *core)
{
	uint64_t	 mapped = __atomic_load_n(&filter_memory_used,
			    __ATOMIC_RELAXED);
	size_t		 used = stats_used_memory(&core->stats, mapped);
	size_t		 peak = core->stats.mem_peak, rss = stats_rss_bytes();
	long		 pages = sysconf(_SC_PHYS_PAGES);
	unsigned long long sys = pages > 0 ? (unsigned long long)pages *
			    (unsigned long long)sysconf(_SC_PAGESIZE) : 0;
	char		 h1[32], h2[32], h3[32], h4[32], h5[32];

	buf_printf(&result_buf,
	    "# Memory\r\n"
	    "used_memory %zu\r\n"
	    "used_memory_human %s\r\n"
	    "used_memory_rss %zu\r\n"
	    "used_memory_rss_human %s\r\n"
	    "used_memory_peak %zu\r\n"
	    "used_memory_peak_human %s\r\n"
	    "used_memory_peak_perc %.2f%%\r\n"
	    "used_memory_dataset %llu\r\n"
	    "total_system_memory %llu\r\n"
	    "total_system_memory_human %s\r\n"
	    "maxmemory %llu\r\n"
	    "maxmemory_human %s\r\n"
	    "maxmemory_policy noeviction\r\n"
	    "mem_fragmentation_ratio %.2f\r\n"
	    "mem_replication_backlog %zu\r\n"
	    "mem_clients_normal %llu\r\n"
	    "mem_allocator libc\r\n",
	    used, human(h1, sizeof(h1), used), rss,
	    human(h2, sizeof(h2), rss), peak, human(h3, sizeof(h3), peak),
	    peak ? (double)used * 100 / (double)peak : 0.0,
	    (unsigned long long)mapped, sys, human(h4, sizeof(h4), sys),
	    (unsigned long long)filter_memory_limit,
	    human(h5, sizeof(h5), filter_memory_limit),
	    used ? (double)rss / (double)used : 0.0,
	    core->repl.backlog != NULL ? core->repl.backlog->size : 0,
	    (unsigned long long)core->stats.conn_bytes);
}

/* Snapshots as Redis's RDB saves: the newest one of any filter. */
static void
sec_persistence(struct core *core)
{
	const struct registry	*reg = core->reg;
	const char		*journal = persist_status(core);
	const struct filter	*last = NULL;
	uint64_t		 changes = 0, saves = 0;
	int			 failed = 0;

	for (size_t i = 0; i < reg->nfilters; i++) {
		const struct filter *f = reg->filters[i];
		uint64_t m = filter_mutations(f);

		changes += m > f->saved ? m - f->saved : 0;
		saves += f->saves_ok;
		if (f->last_save_ok == 0)
			failed = 1;
		if (f->last_save_ok == 1 &&
		    (last == NULL || f->last_save > last->last_save))
			last = f;
	}
	buf_printf(&result_buf,
	    "# Persistence\r\n"
	    "loading 0\r\n"
	    "async_loading 0\r\n"
	    "rdb_changes_since_last_save %llu\r\n"
	    "rdb_bgsave_in_progress %d\r\n"
	    "rdb_last_save_time %lld\r\n"
	    "rdb_last_bgsave_status %s\r\n"
	    "rdb_last_bgsave_time_sec %lld\r\n"
	    "rdb_saves %llu\r\n"
	    "aof_enabled %d\r\n"
	    "aof_rewrite_in_progress 0\r\n"
	    "aof_rewrite_scheduled 0\r\n"
	    "aof_last_write_status %s\r\n",
	    (unsigned long long)changes, saver_busy(core->saver) > 0,
	    (long long)(last ? last->last_save : core->stats.started),
	    failed ? "err" : "ok",
	    last ? (long long)(last->last_save_secs + 0.5) : -1LL,
	    (unsigned long long)saves, strcmp(journal, "off") != 0,
	    strncmp(journal, "error", 5) == 0 ? "err" : "ok");
}

static void
sec_stats(struct core *core)
{
	const struct stats *st = &core->stats;

	/* this INFO is counted already; Redis counts a command once it
	 * has run */
	buf_printf(&result_buf,
	    "# Stats\r\n"
	    "total_connections_received %llu\r\n"
	    "total_commands_processed %llu\r\n"
	    "instantaneous_ops_per_sec %lld\r\n"
	    "rejected_connections %llu\r\n",
	    (unsigned long long)st->conns_total,
	    (unsigned long long)(st->commands ? st->commands - 1 : 0),
	    stats_rate(&st->ops_rate),
	    (unsigned long long)st->conns_refused);
	command_info_repl_stats(core, &result_buf);
	buf_printf(&result_buf,
	    "evicted_keys 0\r\n"
	    "keyspace_hits %llu\r\n"
	    "keyspace_misses %llu\r\n"
	    "total_error_replies %llu\r\n"
	    "acl_access_denied_auth %llu\r\n"
	    "unknown_commands %llu\r\n",
	    (unsigned long long)st->check_hits,
	    (unsigned long long)st->check_misses,
	    (unsigned long long)st->errors,
	    (unsigned long long)st->acl_denied_auth,
	    (unsigned long long)st->unknown_commands);
	/* seend's own: with tls_listen, or once a TLS client came to the
	 * plain port (Redis's Stats has none of it otherwise) */
	if (core->cfg->tls_listen != NULL || st->tls_handshake_failures > 0)
		buf_printf(&result_buf, "tls_handshake_failures %llu\r\n",
		    (unsigned long long)st->tls_handshake_failures);
	/* seend's own, in cluster mode: MOVED answers, and the nodes of the
	 * map not yet known to hold this node's (issue 33) */
	if (core->cluster != NULL)
		buf_printf(&result_buf, "cluster_redirections %llu\r\n"
		    "cluster_peers_behind %zu\r\n",
		    (unsigned long long)st->cluster_redirections,
		    peer_behind(core));
}

static void
sec_replication(struct core *core)
{
	buf_append_str(&result_buf, "# Replication\r\n");
	command_info_replication(core, &result_buf);
}

static void
sec_cpu(struct core *core)
{
	struct rusage	 self, kids, main;

	(void)core;
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	getrusage(RUSAGE_THREAD, &main);	/* INFO runs on the loop */
	buf_printf(&result_buf,
	    "# CPU\r\n"
	    "used_cpu_sys %ld.%06ld\r\n"
	    "used_cpu_user %ld.%06ld\r\n"
	    "used_cpu_sys_children %ld.%06ld\r\n"
	    "used_cpu_user_children %ld.%06ld\r\n"
	    "used_cpu_sys_main_thread %ld.%06ld\r\n"
	    "used_cpu_user_main_thread %ld.%06ld\r\n",
	    (long)self.ru_stime.tv_sec, (long)self.ru_stime.tv_usec,
	    (long)self.ru_utime.tv_sec, (long)self.ru_utime.tv_usec,
	    (long)kids.ru_stime.tv_sec, (long)kids.ru_stime.tv_usec,
	    (long)kids.ru_utime.tv_sec, (long)kids.ru_utime.tv_usec,
	    (long)main.ru_stime.tv_sec, (long)main.ru_stime.tv_usec,
	    (long)main.ru_utime.tv_sec, (long)main.ru_utime.tv_usec);
}

static void
sec_cluster(struct core *core)
{
	buf_printf(&result_buf, "# Cluster\r\ncluster_enabled %d\r\n",
	    core->cluster != NULL);
}

/* One database: its keys the filters, its volatile keys the filters
 * with an EXPIRE deadline; no line when there are none, as Redis. */
static void
sec_keyspace(struct core *core)
{
	const struct registry	*reg = core->reg;
	size_t			 expires = 0;

	buf_append_str(&result_buf, "# Keyspace\r\n");
	for (size_t i = 0; i < reg->nfilters; i++)
		expires += keyspace_deadline(reg->filters[i]) != 0;
	if (reg->nfilters > 0 || expires > 0)
		buf_printf(&result_buf, "db0 keys=%zu,expires=%zu,avg_ttl=0\r\n",
		    reg->nfilters, expires);
}

/* seend's own fields, the line protocol's INFO names. */
static void
sec_seend(struct core *core)
{
	/* cluster_move_stream: CLUSTER SLOTMERGE ... SAVE STREAM is
	 * understood (seen-cli asks before it sends one: an older seend
	 * drops the connection at a fifth argument after an image) */
	buf_append_str(&result_buf, "# Seend\r\nseend_version "
	    PACKAGE_VERSION "\r\ncluster_move_stream 1\r\n");
	info_server(core);
}

/* In the order Redis writes them; seend's last. */
static const struct section {
	const char	*name;		/* upper case, for name_is */
	void		(*write)(struct core *);
} sections[] = {
	{ "SERVER", sec_server },
	{ "CLIENTS", sec_clients },
	{ "MEMORY", sec_memory },
	{ "PERSISTENCE", sec_persistence },
	{ "STATS", sec_stats },
	{ "REPLICATION", sec_replication },
	{ "CPU", sec_cpu },
	{ "CLUSTER", sec_cluster },
	{ "KEYSPACE", sec_keyspace },
	{ "SEEND", sec_seend },
};
#define NSECTIONS	(sizeof(sections) / sizeof(sections[0]))
#define SECTION_SEEND	(1u << (NSECTIONS - 1))
#define SECTIONS_ALL	((1u << NSECTIONS) - 1)

/* The sections a word of RESP INFO names when it is one of Redis's
 * section names, or "all", "default", "everything" (all of them, seend's
 * too); 0: it is not (then a single word names a filter). */
static unsigned
redis_section(const char *w, size_t l)
{
	if (name_is(w, l, "ALL", 3) || name_is(w, l, "DEFAULT", 7) ||
	    name_is(w, l, "EVERYTHING", 10))
		return SECTIONS_ALL;
	for (size_t i = 0; i < NSECTIONS; i++)
		if ((1u << i) != SECTION_SEEND &&
		    name_is(w, l, sections[i].name, strlen(sections[i].name)))
			return 1u << i;
	return 0;
}

/*
 * INFO [<filter>]. Over RESP, INFO [<section> ...] as Redis 7: a word that
 * is one of Redis's section names is that section, several words their
 * sections (unknown ones ignored); a single other word is the filter of
 * that name, else "seend" is seend's own section, else nothing.
 */
void
cmd_info(struct session *s, struct op *op, struct result *r)
{
	struct filter	*f;
	char		 tok[80];
	unsigned	 sec = 0;
	int		 n = 0;

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
		sec = SECTIONS_ALL;
	else if (op->argc == 2 && (sec = redis_section(op->argv[1],
	    op->argl[1])) == 0) {
		if ((f = registry_find(s->core->reg, op->argv[1],
		    op->argl[1])) != NULL) {
			info_filter(f);
			result_scratch(r, RESULT_TEXT);
			return;
		}
		if (name_is(op->argv[1], op->argl[1], "SEEND", 5))
			sec = SECTION_SEEND;
	} else
		for (int i = 1; i < op->argc; i++)
			sec |= redis_section(op->argv[i], op->argl[i]) |
			    (name_is(op->argv[i], op->argl[i], "SEEND", 5) ?
			    SECTION_SEEND : 0);
	for (size_t i = 0; i < NSECTIONS; i++) {
		if (!(sec & (1u << i)))
			continue;
		/* a blank line between sections, as Redis writes them */
		if (n++ > 0)
			buf_append(&result_buf, "\r\n", 2);
		sections[i].write(s->core);
	}
	/* nothing (an unknown word) is an empty string, as Redis answers an
	 * unknown section */
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
