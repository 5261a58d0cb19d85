/*
 * prebuild.h - a reload's new filters, loaded or created on a thread of
 * their own, so that reading a snapshot or mapping a 1e9-key filter never
 * stalls the event loop (issue 13, point 5).
 *
 * The loop hands over the new config and the filter configs it lacks; the
 * thread opens each one (filter_open: its snapshot, else a new empty
 * filter) and tells the loop through a pipe; the loop then builds the
 * registry from the running filters plus these, which costs no I/O.
 */
#ifndef SEEND_PREBUILD_H
#define SEEND_PREBUILD_H

#include <pthread.h>
#include <stddef.h>

struct event_base;
struct config;
struct filter;
struct filter_config;

struct prebuild {
	struct config		*cfg;		/* the new config, owned */
	const struct filter_config **todo;	/* into cfg */
	size_t			 ntodo;
	struct filter		**made;		/* one per todo, once done */
	size_t			 nmade;
	int			 failed;
	char			 err[512];
	double			 secs;
	/* internal */
	void			(*done)(struct prebuild *, void *);
	void			*arg;
	int			 pipe[2];
	struct event		*ev;
	pthread_t		 thread;
	int			 joined;
};

/*
 * Starts opening todo's filters (pointers into cfg, which it takes) on a
 * thread; done(pb, arg) runs on the loop once they are all open or one
 * failed. Returns NULL (cfg not taken) if no thread can be started.
 */
struct prebuild	*prebuild_start(struct event_base *, struct config *cfg,
		    const struct filter_config **todo, size_t ntodo,
		    void (*done)(struct prebuild *, void *), void *arg);
/* Waits for the thread, drops the filters made (the registry holds its
 * own references) and the config unless taken (set pb->cfg = NULL). */
void		 prebuild_free(struct prebuild *);

#endif
