/*
 * main.c - command line, start-up order, and exit.
 *
 * Start-up order matters: the config is validated whole, then every filter's
 * snapshot is loaded and verified, and only then do the listeners open, so a
 * client never talks to a half-loaded server.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "cluster.h"
#include "cluster_handoff.h"
#include "cluster_move.h"
#include "config.h"
#include "log.h"
#include "journal.h"
#include "keyspace.h"
#include "merge.h"
#include "notify.h"
#include "persist.h"
#include "registry.h"
#include "role.h"
#include "server.h"
#include "snapshot.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0.1.0"
#endif
#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif

static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: seend [-t] [-c file]\n"
	    "       seend --inspect snapshot-file\n"
	    "\n"
	    "  -c, --config FILE     config file (default %s/seend.conf)\n"
	    "  -t, --test-config     check the config and exit: 0 valid, 1 not\n"
	    "      --inspect FILE    verify a snapshot file and print its header\n"
	    "  -V, --version         print the version and exit\n"
	    "  -h, --help            this text\n", SYSCONFDIR);
}

static int
load_config(const char *path, struct config **out)
{
	struct config_errors errs = { 0 };

	if ((*out = config_load(path, &errs)) != NULL)
		return 0;
	for (size_t i = 0; i < errs.n; i++)
		fprintf(stderr, "%s\n", errs.msgs[i]);
	config_errors_free(&errs);
	return -1;
}

/*
 * --inspect: the operator's view of a snapshot that the daemon refused or is
 * about to load. Reads only; exits 0 if the file is whole.
 */
static int
inspect(const char *path)
{
	struct snapshot_header	 h;
	char			 err[512];
	int			 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		fprintf(stderr, "seend: %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (snapshot_verify_fd(fd, &h, err, sizeof(err)) == -1) {
		fprintf(stderr, "seend: %s: %s\n", path, err);
		close(fd);
		return 1;
	}
	close(fd);
	printf("file %s\nstatus ok (checksum verified)\nversion %u\n"
	    "type %s\nlayout %u\n", path, h.version, h.cuckoo ? "cuckoo" :
	    "bloom", h.layout);
	if (h.cuckoo)
		/* a table's shape is per slice; its bytes are what follows */
		printf("bytes %llu\njournal_seq %llu\njournal_offset %llu\n"
		    "max_iterations %u\nforgotten %llu\n",
		    (unsigned long long)h.array_bytes,
		    (unsigned long long)h.jseq, (unsigned long long)h.joff,
		    h.max_kicks, (unsigned long long)h.forgotten);
	else
		printf("nblocks %llu\nbytes %llu\nhashes %u\nbits_set %llu\n"
		    "fill_ratio %.6f\n", (unsigned long long)h.nblocks,
		    (unsigned long long)h.nblocks * BLOOM_BLOCK_BYTES, h.hashes,
		    (unsigned long long)h.bits_set, h.nblocks ?
		    (double)h.bits_set / ((double)h.nblocks *
		    BLOOM_BLOCK_BITS) : 0.0);
	printf("seed %016llx\ncapacity %llu\nerror_rate %g\ncount %llu\n"
	    "created %llu\nslices %u\ngrowth %u\nexpire_ms %llu\n",
	    (unsigned long long)h.seed, (unsigned long long)h.capacity,
	    h.error_rate, (unsigned long long)h.count,
	    (unsigned long long)h.created, h.nslices, h.growth,
	    (unsigned long long)h.expire_ms);
	return 0;
}

static double
elapsed(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) +
	    (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static void
log_filters(const struct registry *reg)
{
	for (size_t i = 0; i < reg->nfilters; i++) {
		const struct filter *f = reg->filters[i];

		log_info("%sfilter %s: capacity %llu, error_rate %g, growth %u, "
		    "expire %llds, %llu bytes in %zu slice(s), %llu keys%s",
		    filter_is_cuckoo(f) ? "cuckoo " : "", f->name,
		    (unsigned long long)f->capacity, f->error_rate,
		    f->growth, (long long)(f->expire_ms / 1000),
		    (unsigned long long)filter_bytes(f), f->nslices,
		    (unsigned long long)filter_count(f),
		    f->loaded_at ? " (from snapshot)" : " (new)");
	}
}

static void
warn_line(const char *msg)
{
	log_warn("%s", msg);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config",	 required_argument, NULL, 'c' },
		{ "test-config", no_argument,	    NULL, 't' },
		{ "version",	 no_argument,	    NULL, 'V' },
		{ "help",	 no_argument,	    NULL, 'h' },
		{ "inspect",	 required_argument, NULL, 'I' },
		{ NULL, 0, NULL, 0 }
	};
	const char	*path = SYSCONFDIR "/seend.conf";
	struct server	 srv;
	struct timespec	 t0;
	char		 err[1024];
	int		 ch, test_only = 0, status;
	const char	*fault;

	log_init("seend");
	while ((ch = getopt_long(argc, argv, "c:tVh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 't':
			test_only = 1;
			break;
		case 'V':
			printf("seend %s\n", PACKAGE_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		case 'I':
			return inspect(optarg);
		default:
			usage(stderr);
			return 1;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 1;
	}
	memset(&srv, 0, sizeof(srv));
	if (load_config(path, &srv.core.cfg) == -1) {
		if (test_only)
			fprintf(stderr, "seend: %s: invalid\n", path);
		return 1;
	}
	if (test_only) {
		printf("seend: %s: ok (%zu filter(s))\n", path,
		    srv.core.cfg->nfilters);
		config_free(srv.core.cfg);
		return 0;
	}
	log_set_level(srv.core.cfg->log_level);
	if ((fault = getenv("SEEND_FAULT_WRITE_LIMIT")) != NULL)
		snapshot_fault_write_limit = strtoull(fault, NULL, 10);
	snapshot_fault_hold = getenv("SEEND_FAULT_HOLD_SNAPSHOT");
	if ((fault = getenv("SEEND_FAULT_JOURNAL_LIMIT")) != NULL)
		journal_fault_write_limit = strtoull(fault, NULL, 10);
	if ((fault = getenv("SEEND_FAULT_MERGE_STEP")) != NULL)
		merge_fault_step_limit = strtoull(fault, NULL, 10);
	if ((fault = getenv("SEEND_FAULT_MOVE_NAMED_MAX")) != NULL &&
	    strtoull(fault, NULL, 10) < CLUSTER_MOVE_WHOLE_MAX)
		cluster_move_whole_max = strtoull(fault, NULL, 10);
	signal(SIGPIPE, SIG_IGN);
	srv.config_path = (char *)path;
	log_info("seend %s starting, config %s", PACKAGE_VERSION, path);
	server_ensure_data_dir(srv.core.cfg->data_dir);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	filter_memory_limit = srv.core.cfg->max_memory;
	/* the cluster node before the filters: a partitioned filter's part
	 * is full at the share of the slots the node's map gives its shard,
	 * and the journal's replay must grow it where the live node did */
	if (srv.core.cfg->cluster_enabled && ((srv.core.cluster =
	    cluster_open(srv.core.cfg, err, sizeof(err))) == NULL ||
	    /* and the slots it was handing over when it stopped */
	    cluster_handoff_load(srv.core.cluster, srv.core.cfg->data_dir,
	    err, sizeof(err)) == -1)) {
		log_error("cluster: %s", err);
		cluster_free(srv.core.cluster);
		config_free(srv.core.cfg);
		return 1;
	}
	if ((srv.core.reg = registry_build(srv.core.cfg, NULL, NULL, err,
	    sizeof(err))) == NULL ||
	    /* runtime filters (BF.RESERVE, SADD...) come back from the
	     * snapshots no section names */
	    registry_load_runtime(srv.core.reg, srv.core.cfg, warn_line, err,
	    sizeof(err)) == -1) {
		registry_free(srv.core.reg);
		log_error("%s", err);
		log_error("not starting: the snapshot is left as it is; see "
		    "seend(8), SNAPSHOTS, for what to do");
		cluster_free(srv.core.cluster);
		config_free(srv.core.cfg);
		return 1;
	}
	/* EXPIRE deadlines: a filter past its own is dropped before the
	 * journal is replayed */
	if (keyspace_load(&srv.core) == -1) {
		registry_free(srv.core.reg);
		cluster_free(srv.core.cluster);
		config_free(srv.core.cfg);
		return 1;
	}
	log_filters(srv.core.reg);
	log_info("filters loaded in %.3f s", elapsed(&t0));
	/* a cluster node's partitioned filters hold only its shard's slots
	 * from here on: what a snapshot holds of others goes, before the
	 * replay refills the parts (cluster_move.h) */
	if (srv.core.cluster != NULL)
		srv.core.cluster->replica_start =
		    role_starts_replica(srv.core.cfg);
	cluster_move_apply(&srv.core);
	/* the journal's keys on top of the snapshots, before listening */
	if (persist_open(&srv.core) == -1) {
		registry_free(srv.core.reg);
		cluster_free(srv.core.cluster);
		config_free(srv.core.cfg);
		return 1;
	}

	if ((srv.base = event_base_new()) == NULL)
		fatal("cannot create the event loop");
	if (server_start(&srv) == -1) {
		persist_abort(&srv.core);
		server_free(&srv);
		event_base_free(srv.base);
		return 1;
	}
	persist_start(&srv.core);
	notify_send("READY=1\nSTATUS=serving %zu filter(s)\nMAINPID=%ld",
	    srv.core.reg->nfilters, (long)getpid());
	log_info("ready");
	status = server_run(&srv);
	server_free(&srv);
	event_base_free(srv.base);
	libevent_global_shutdown();
	log_info("stopped%s", status ? " (a final snapshot failed)" : "");
	return status;
}
