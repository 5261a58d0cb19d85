/*
 * pubsub.c - channels, patterns and their listeners (see pubsub.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "pubsub.h"
#include "resp.h"
#include "session.h"

/* A channel or a pattern, and the sessions listening to it. */
struct channel {
	struct channel	 *next;		/* hash chain, or the pattern list */
	struct session	**subs;
	size_t		  n, cap;
	int		  pattern;
	size_t		  len;
	char		  name[];
};

/* What one session listens to, in subscription order. */
struct pubsub_subs {
	struct channel	**ch;
	size_t		  n, cap;
};

static struct channel	**table;	/* channels by name */
static size_t		  nbuckets, nchannels;
static struct channel	 *patterns;
/* a message as RESP2 and RESP3 listeners get it */
static struct buf	  scratch[2];

static uint64_t
name_hash(const char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* The head of the list name belongs in (NULL: no table yet). */
static struct channel **
head_of(const char *name, size_t len, int pattern)
{
	if (pattern)
		return &patterns;
	if (nbuckets == 0)
		return NULL;
	return &table[name_hash(name, len) & (nbuckets - 1)];
}

static struct channel *
find(const char *name, size_t len, int pattern)
{
	struct channel **h = head_of(name, len, pattern), *c;

	for (c = h ? *h : NULL; c != NULL; c = c->next)
		if (c->len == len && memcmp(c->name, name, len) == 0)
			return c;
	return NULL;
}

/* Doubles the table when it holds as many channels as buckets. */
static int
grow(void)
{
	size_t		  n = nbuckets ? nbuckets * 2 : 16;
	struct channel	**t, *c, *next;

	if ((t = calloc(n, sizeof(*t))) == NULL)
		return -1;
	for (size_t i = 0; i < nbuckets; i++)
		for (c = table[i]; c != NULL; c = next) {
			uint64_t b = name_hash(c->name, c->len) & (n - 1);

			next = c->next;
			c->next = t[b];
			t[b] = c;
		}
	free(table);
	table = t;
	nbuckets = n;
	return 0;
}

static struct channel *
create(const char *name, size_t len, int pattern)
{
	struct channel **h, *c;

	if (!pattern && nchannels >= nbuckets && grow() == -1 && nbuckets == 0)
		return NULL;
	if ((c = calloc(1, sizeof(*c) + len + 1)) == NULL)
		return NULL;
	memcpy(c->name, name, len);
	c->len = len;
	c->pattern = pattern;
	h = head_of(name, len, pattern);
	c->next = *h;
	*h = c;
	if (!pattern)
		nchannels++;
	return c;
}

static void
destroy(struct channel *c)
{
	struct channel **pp = head_of(c->name, c->len, c->pattern);

	for (; *pp != NULL; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	if (!c->pattern)
		nchannels--;
	free(c->subs);
	free(c);
}

/* Grows an array of n elements of size sz to hold one more. */
static int
room(void **a, size_t *cap, size_t n, size_t sz)
{
	size_t	 ncap;
	void	*p;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 4;
	if ((p = realloc(*a, ncap * sz)) == NULL)
		return -1;
	*a = p;
	*cap = ncap;
	return 0;
}

/* Whether s listens to c: the shorter of the two lists is searched. */
static int
listens(const struct session *s, const struct channel *c)
{
	const struct pubsub_subs *ps = s->subs;

	if (ps == NULL)
		return 0;
	if (c->n <= ps->n) {
		for (size_t i = 0; i < c->n; i++)
			if (c->subs[i] == s)
				return 1;
		return 0;
	}
	for (size_t i = 0; i < ps->n; i++)
		if (ps->ch[i] == c)
			return 1;
	return 0;
}

int
pubsub_subscribe(struct session *s, const char *name, size_t len, int pattern)
{
	struct pubsub_subs	*ps = s->subs;
	struct channel		*c = find(name, len, pattern);
	int			 made = 0;

	if (c != NULL && listens(s, c))
		return 0;
	if (ps == NULL && (ps = s->subs = calloc(1, sizeof(*ps))) == NULL)
		return -1;
	if (c == NULL) {
		if ((c = create(name, len, pattern)) == NULL)
			return -1;
		made = 1;
	}
	if (room((void **)&c->subs, &c->cap, c->n, sizeof(*c->subs)) == -1 ||
	    room((void **)&ps->ch, &ps->cap, ps->n, sizeof(*ps->ch)) == -1) {
		if (made)
			destroy(c);
		return -1;
	}
	c->subs[c->n++] = s;
	ps->ch[ps->n++] = c;
	s->nsubs++;
	return 1;
}

/* Takes s off c (which it listens to; c goes with its last listener) and
 * c off s's i-th place. */
static void
drop(struct session *s, struct channel *c, size_t i)
{
	struct pubsub_subs *ps = s->subs;

	for (size_t k = 0; k < c->n; k++)
		if (c->subs[k] == s) {
			c->subs[k] = c->subs[--c->n];
			break;
		}
	/* in order: UNSUBSCRIBE without arguments answers in it */
	memmove(&ps->ch[i], &ps->ch[i + 1], (ps->n - i - 1) * sizeof(*ps->ch));
	ps->n--;
	s->nsubs--;
	if (c->n == 0)
		destroy(c);
}

int
pubsub_unsubscribe(struct session *s, const char *name, size_t len,
    int pattern)
{
	struct pubsub_subs	*ps = s->subs;
	struct channel		*c = find(name, len, pattern);

	if (c == NULL || ps == NULL)
		return 0;
	/* the last one first: UNSUBSCRIBE without arguments takes them
	 * from the end, each in O(1) on this side */
	for (size_t i = ps->n; i-- > 0;)
		if (ps->ch[i] == c) {
			drop(s, c, i);
			return 1;
		}
	return 0;
}

const char *
pubsub_session_name(const struct session *s, int pattern, size_t i,
    size_t *len)
{
	const struct pubsub_subs *ps = s->subs;

	if (ps == NULL)
		return NULL;
	for (size_t k = ps->n; k-- > 0;)
		if (ps->ch[k]->pattern == pattern && i-- == 0) {
			*len = ps->ch[k]->len;
			return ps->ch[k]->name;
		}
	return NULL;
}

void
pubsub_session_end(struct session *s)
{
	struct pubsub_subs *ps = s->subs;

	if (ps == NULL)
		return;
	while (ps->n > 0)
		drop(s, ps->ch[ps->n - 1], ps->n - 1);
	free(ps->ch);
	free(ps);
	s->subs = NULL;
	if (nchannels == 0 && nbuckets > 0) {
		free(table);
		table = NULL;
		nbuckets = 0;
	}
}

/* A [...] class at *pp (on its '['), against ch; *pp goes past it. */
static int
match_class(const char **pp, const char *pe, char ch)
{
	const char	*p = *pp + 1;
	int		 not = 0, hit = 0;

	if (p < pe && *p == '^') {
		not = 1;
		p++;
	}
	for (; p < pe && *p != ']'; p++) {
		if (*p == '\\' && p + 1 < pe) {
			p++;
			hit |= *p == ch;
		} else if (p + 2 < pe && p[1] == '-') {
			unsigned char a = (unsigned char)p[0];
			unsigned char b = (unsigned char)p[2];
			unsigned char c = (unsigned char)ch;

			if (a > b) {
				unsigned char t = a;

				a = b;
				b = t;
			}
			hit |= c >= a && c <= b;
			p += 2;
		} else
			hit |= *p == ch;
	}
	*pp = p < pe ? p + 1 : pe;
	return not ? !hit : hit;
}

int
pubsub_match(const char *p, size_t plen, const char *s, size_t slen)
{
	const char *pe = p + plen, *se = s + slen;
	const char *star = NULL, *back = NULL;

	/* one star to go back to is enough: a later star only ever needs
	 * what the earlier one left */
	while (s < se) {
		if (p < pe && *p == '*') {
			while (p < pe && *p == '*')
				p++;
			if (p == pe)
				return 1;
			star = p;
			back = s;
			continue;
		}
		if (p < pe) {
			const char	*q = p;
			int		 ok;

			if (*q == '?') {
				ok = 1;
				q++;
			} else if (*q == '[')
				ok = match_class(&q, pe, *s);
			else {
				if (*q == '\\' && q + 1 < pe)
					q++;
				ok = *q == *s;
				q++;
			}
			if (ok) {
				p = q;
				s++;
				continue;
			}
		}
		if (star == NULL)
			return 0;
		p = star;
		s = ++back;
	}
	while (p < pe && *p == '*')
		p++;
	return p == pe;
}

/* A message's bytes for a listener of this protocol, built on first use:
 * ["message", channel, msg] or ["pmessage", pattern, channel, msg]. */
static const struct buf *
message(struct buf *b, int resp3, const struct channel *pat,
    const char *ch, size_t chl, const char *msg, size_t msgl)
{
	int bad;

	if (buf_used(b) > 0)
		return b;
	bad = buf_append(b, resp3 ? ">" : "*", 1);
	if (pat != NULL)
		bad |= buf_append(b, "4\r\n", 3) |
		    resp_add_bulk(b, "pmessage", 8) |
		    resp_add_bulk(b, pat->name, pat->len);
	else
		bad |= buf_append(b, "3\r\n", 3) |
		    resp_add_bulk(b, "message", 7);
	bad |= resp_add_bulk(b, ch, chl) | resp_add_bulk(b, msg, msgl);
	if (bad)	/* out of memory: nothing is sent */
		buf_consume(b, buf_used(b));
	return b;
}

/* Pushes the message to c's listeners; returns how many. */
static long long
deliver(const struct channel *c, const struct channel *pat, const char *ch,
    size_t chl, const char *msg, size_t msgl)
{
	struct buf		*m = scratch;
	long long		 n = 0;

	buf_consume(&m[0], buf_used(&m[0]));
	buf_consume(&m[1], buf_used(&m[1]));
	for (size_t i = 0; i < c->n; i++) {
		struct session		*s = c->subs[i];
		const struct buf	*b = message(&m[s->resp3], s->resp3, pat,
		    ch, chl, msg, msgl);

		if (s->ops != NULL && buf_used(b) > 0)
			s->ops->push(s, buf_head(b), buf_used(b));
		n++;
	}
	return n;
}

long long
pubsub_publish(const char *ch, size_t chl, const char *msg, size_t msgl)
{
	const struct channel	*c = find(ch, chl, 0);
	long long		 n = 0;

	if (c != NULL)
		n += deliver(c, NULL, ch, chl, msg, msgl);
	for (c = patterns; c != NULL; c = c->next)
		if (pubsub_match(c->name, c->len, ch, chl))
			n += deliver(c, c, ch, chl, msg, msgl);
	for (int i = 0; i < 2; i++) {	/* a big message's room goes */
		buf_consume(&scratch[i], buf_used(&scratch[i]));
		buf_shrink(&scratch[i], 65536);
	}
	return n;
}
