/*
 * pubsub.h - the channels and patterns sessions listen to (SUBSCRIBE,
 * PSUBSCRIBE), and PUBLISH's delivery to every listener on this instance,
 * as Redis does it: enough of pub/sub for Redis Sentinel's
 * __sentinel__:hello channel and for clients of it.
 *
 * One registry for the process (one event loop): channels by name in a
 * hash table, patterns in a list. A message is written into each
 * listener's replies through its session_ops push (the connection bounds
 * what a listener that never reads may hold, and drops it past that).
 * Nothing here calls up: the commands (cmd_pubsub.c) call it, and a
 * session's subscriptions go with it (command_session_end).
 */
#ifndef SEEND_PUBSUB_H
#define SEEND_PUBSUB_H

#include <stddef.h>

struct session;

/* Subscribes s to a channel (pattern 0) or a pattern (1): 1 it is new,
 * 0 s already had it, -1 out of memory. s->nsubs counts both kinds. */
int		 pubsub_subscribe(struct session *, const char *name, size_t len,
		    int pattern);
/* Unsubscribes: 1 s had it, 0 it had not. */
int		 pubsub_unsubscribe(struct session *, const char *name,
		    size_t len, int pattern);
/* The i-th channel (or pattern) s listens to, last first, or NULL: what
 * UNSUBSCRIBE without arguments goes through. */
const char	*pubsub_session_name(const struct session *, int pattern,
		    size_t i, size_t *len);
/* Delivers msg on channel to every subscriber of it and of a pattern
 * matching it ("message", "pmessage"; a push in RESP3); returns how many
 * received it, as PUBLISH answers. */
long long	 pubsub_publish(const char *channel, size_t chlen,
		    const char *msg, size_t msglen);
/* s's subscriptions go (its connection closes). */
void		 pubsub_session_end(struct session *);
/* Redis's glob (stringmatchlen): *, ?, [a-z], [^...], \x. */
int		 pubsub_match(const char *pat, size_t plen, const char *s,
		    size_t slen);

#endif
