/*
 * metrics.h - the Prometheus endpoint (metrics_listen): GET /metrics in
 * the text exposition format 0.0.4, served by libevent's evhttp on the
 * daemon's own event loop.
 *
 * The page is built from counters the server already keeps; a scrape reads
 * them and writes text into an evbuffer, and never waits on anything, so it
 * cannot stall the clients served on the same loop.
 */
#ifndef SEEND_METRICS_H
#define SEEND_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <openssl/types.h>

struct core;
struct event_base;
struct filter;
struct metrics;

/* What a scrape reports about one filter. */
struct filter_figures {
	uint64_t	keys;		/* keys recorded (answered new) */
	uint64_t	capacity;
	double		error_rate;	/* the target */
	uint64_t	bytes;		/* of its bits */
	double		fill_ratio;	/* bits set / bits; a cuckoo
					   filter's slots in use / slots */
	double		fp_rate;	/* estimated from the fill */
	unsigned	slices;
	int		dirty;
	time_t		last_save;	/* 0 = never */
	double		last_save_secs;
	uint64_t	saves_ok, saves_failed;
	uint64_t	seen_new, seen_old, checks;
	uint64_t	forgotten;	/* a cuckoo filter's FORGETs */
};

/*
 * The one place that knows how a filter is laid out, for metrics and for
 * anything else that wants a filter's health in plain numbers.
 */
void		 metrics_filter_figures(const struct filter *,
		    struct filter_figures *);

/*
 * Listens on spec ("host:port" or "[v6]:port") and serves srv's figures,
 * over TLS (metrics_tls) with the context *tls holds when each client
 * comes, if tls is not NULL. Returns NULL after logging why (the address
 * cannot be bound).
 */
struct metrics	*metrics_open(struct event_base *, struct core *,
		    const char *spec, SSL_CTX *const *tls);
void		 metrics_free(struct metrics *);
/* The address it listens on, as configured. */
const char	*metrics_spec(const struct metrics *);

/* The page itself, appended to out (an evbuffer); for tests and the
 * handler. Returns 0, or -1 if out of memory. */
struct evbuffer;
int		 metrics_render(struct core *, struct evbuffer *out);

#endif
