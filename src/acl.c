/*
 * acl.c - users as Redis 6+ ACLs: the catalog of commands and their
 * categories, the users and their rules, the users file, the ACL LOG.
 * See acl.h. The rules, their errors and the way a user is described
 * (ACL LIST, ACL SAVE) follow Redis 7.0's acl.c.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "acl.h"
#include "command_docs.h"
#include "fileio.h"
#include "log.h"

int		 acl_limits;
static struct acl_user default_user;
struct acl_user	*acl_default = &default_user;

/* ---- categories ---- */

static const char *const cat_names[ACL_NCATS] = {
	"keyspace", "read", "write", "set", "sortedset", "list", "hash",
	"string", "bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin",
	"fast", "slow", "blocking", "dangerous", "connection", "transaction",
	"scripting", "bloom", "cuckoo",
};

#define CAT(c)	(1u << (c))

int
acl_category(const char *name, size_t len)
{
	for (int i = 0; i < ACL_NCATS; i++)
		if (strlen(cat_names[i]) == len &&
		    strncasecmp(cat_names[i], name, len) == 0)
			return i;
	return -1;
}

const char *
acl_category_name(int cat)
{
	return cat >= 0 && cat < ACL_NCATS ? cat_names[cat] : "?";
}

/* ---- the catalog ---- */

struct catalog_cmd {
	char		 name[COMMAND_DOCS_NAME_MAX * 2 + 2];
	uint32_t	 cats;
	int		 parent;	/* -1: a command */
	int		 nsubs;		/* subcommands, right after it */
	int		 first, last, step;
	int		 keyflags;	/* ACL_KEY_* */
};

/* the last bit is +@all's own ("future commands") */
static struct catalog_cmd	catalog[ACL_CMD_MAX - 1];
static int			ncatalog;

/* Line commands as their RESP twins (INTERFACE.md). */
static const struct {
	const char	*name, *twin;
} twins[] = {
	{ "seen", "setnx" }, { "check", "exists" }, { "forget", "cf.del" },
	{ "filters", "info" }, { "reset", "del" },
};

/* Commands seend answers that COMMAND INFO does not carry: Redis's
 * categories for them. */
static const struct {
	const char	*name;
	uint32_t	 cats;
} fixed[] = {
	{ "save", CAT(ACL_CAT_ADMIN) | CAT(ACL_CAT_SLOW) |
	    CAT(ACL_CAT_DANGEROUS) },
	{ "replconf", CAT(ACL_CAT_ADMIN) | CAT(ACL_CAT_SLOW) |
	    CAT(ACL_CAT_DANGEROUS) },
	{ "psync", CAT(ACL_CAT_ADMIN) | CAT(ACL_CAT_SLOW) |
	    CAT(ACL_CAT_DANGEROUS) },
};

/* seend's own commands that need more than their flags give: MERGE
 * rewrites a filter from others, as Redis's RESTORE or MIGRATE do. */
static const struct {
	const char	*name;
	uint32_t	 cats;
} extra[] = {
	{ "merge", CAT(ACL_CAT_KEYSPACE) | CAT(ACL_CAT_ADMIN) |
	    CAT(ACL_CAT_DANGEROUS) },
};

/* A reader of the RESP3 bytes of a COMMAND INFO entry. */
struct rd {
	const char	*p, *end;
};

/* One header: its type and number (or, for '+', its text). */
static int
rd_head(struct rd *r, char *type, long long *n, const char **text,
    size_t *tlen)
{
	const char *eol;

	if (r->p >= r->end)
		return -1;
	*type = *r->p++;
	if ((eol = memchr(r->p, '\r', (size_t)(r->end - r->p))) == NULL ||
	    eol + 1 >= r->end)
		return -1;
	*text = r->p;
	*tlen = (size_t)(eol - r->p);
	*n = 0;
	if (*type != '+' && *type != '-' && *type != ',' && *type != '#' &&
	    *type != '_')
		*n = strtoll(r->p, NULL, 10);
	r->p = eol + 2;
	if (*type == '$') {
		if (*n < 0 || *n > r->end - r->p)
			return -1;
		*text = r->p;
		*tlen = (size_t)*n;
		r->p += *n + 2;
	}
	return 0;
}

static int
rd_skip(struct rd *r, int depth)
{
	const char	*t;
	size_t		 tl;
	long long	 n;
	char		 type;

	if (depth > 16 || rd_head(r, &type, &n, &t, &tl) == -1)
		return -1;
	if (type == '%')
		n *= 2;
	if (type == '*' || type == '~' || type == '%' || type == '>')
		for (long long i = 0; i < n; i++)
			if (rd_skip(r, depth + 1) == -1)
				return -1;
	return 0;
}

static int
rd_int(struct rd *r, int *v)
{
	const char	*t;
	size_t		 tl;
	long long	 n;
	char		 type;

	if (rd_head(r, &type, &n, &t, &tl) == -1 || type != ':')
		return -1;
	*v = (int)n;
	return 0;
}

/* A set of simple strings: each one passed to fn. */
static int
rd_words(struct rd *r, void (*fn)(const char *, size_t, void *), void *arg)
{
	const char	*t;
	size_t		 tl;
	long long	 n;
	char		 type;

	if (rd_head(r, &type, &n, &t, &tl) == -1 || (type != '~' &&
	    type != '*'))
		return -1;
	for (long long i = 0, m; i < n; i++) {
		if (rd_head(r, &type, &m, &t, &tl) == -1)
			return -1;
		if (type == '+' || type == '$')
			fn(t, tl, arg);
	}
	return 0;
}

static int
word_is(const char *t, size_t tl, const char *w)
{
	return strlen(w) == tl && strncasecmp(t, w, tl) == 0;
}

static void
on_flag(const char *t, size_t tl, void *arg)
{
	uint32_t *implicit = arg;

	if (word_is(t, tl, "write"))
		*implicit |= CAT(ACL_CAT_WRITE);
	else if (word_is(t, tl, "readonly"))
		*implicit |= CAT(ACL_CAT_READ);
	else if (word_is(t, tl, "admin"))
		*implicit |= CAT(ACL_CAT_ADMIN) | CAT(ACL_CAT_DANGEROUS);
	else if (word_is(t, tl, "pubsub"))
		*implicit |= CAT(ACL_CAT_PUBSUB);
	else if (word_is(t, tl, "fast"))
		*implicit |= CAT(ACL_CAT_FAST);
}

static void
on_category(const char *t, size_t tl, void *arg)
{
	uint32_t	*cats = arg;
	int		 c;

	if (tl > 1 && t[0] == '@' && (c = acl_category(t + 1, tl - 1)) >= 0)
		*cats |= CAT(c);
}

static void
on_keyflag(const char *t, size_t tl, void *arg)
{
	int *flags = arg;

	if (word_is(t, tl, "access"))
		*flags |= ACL_KEY_READ;
	else if (word_is(t, tl, "insert") || word_is(t, tl, "delete") ||
	    word_is(t, tl, "update"))
		*flags |= ACL_KEY_WRITE;
}

/* The key specs' flags, all of them together. */
static int
rd_keyspecs(struct rd *r, int *flags)
{
	const char	*t;
	size_t		 tl;
	long long	 n, m;
	char		 type;

	if (rd_head(r, &type, &n, &t, &tl) == -1 || (type != '*' &&
	    type != '~'))
		return -1;
	for (long long i = 0; i < n; i++) {
		if (rd_head(r, &type, &m, &t, &tl) == -1 || type != '%')
			return -1;
		for (long long j = 0, k; j < m; j++) {
			if (rd_head(r, &type, &k, &t, &tl) == -1)
				return -1;
			if ((type == '$' || type == '+') &&
			    word_is(t, tl, "flags")) {
				if (rd_words(r, on_keyflag, flags) == -1)
					return -1;
			} else if (rd_skip(r, 0) == -1)
				return -1;
		}
	}
	return 0;
}

/*
 * One COMMAND INFO entry (the array of 10) into the catalog as lname (or
 * its own name), with its subcommands after it. Returns its bit or -1.
 */
static int
catalog_entry(struct rd *r, int parent, const char *lname, const char *prefix)
{
	struct catalog_cmd	*c;
	const char		*t;
	size_t			 tl;
	long long		 n, nsubs;
	uint32_t		 implicit = 0, cats = 0;
	char			 type;
	int			 id, arity;

	if (ncatalog >= ACL_CMD_MAX - 1 ||
	    rd_head(r, &type, &n, &t, &tl) == -1 || type != '*' || n != 10 ||
	    rd_head(r, &type, &n, &t, &tl) == -1 || type != '$' ||
	    tl >= sizeof(c->name))
		return -1;
	id = ncatalog++;
	c = &catalog[id];
	memset(c, 0, sizeof(*c));
	c->parent = parent;
	snprintf(c->name, sizeof(c->name), "%s", lname != NULL ? lname : "");
	if (lname == NULL)
		snprintf(c->name, sizeof(c->name), "%.*s", (int)tl, t);
	for (char *q = c->name; *q; q++)
		*q = (char)tolower((unsigned char)*q);
	if (rd_int(r, &arity) == -1 || rd_words(r, on_flag, &implicit) == -1 ||
	    rd_int(r, &c->first) == -1 || rd_int(r, &c->last) == -1 ||
	    rd_int(r, &c->step) == -1 || rd_words(r, on_category, &cats) == -1 ||
	    rd_skip(r, 0) == -1 || rd_keyspecs(r, &c->keyflags) == -1)
		goto bad;
	/* Redis 7.0 lists a command's categories, implicit ones included;
	 * a module command has none: it gets its flags' as Redis gives
	 * one since 7.2, and its module's */
	if (cats == 0) {
		cats = implicit;
		if (!(cats & CAT(ACL_CAT_FAST)))
			cats |= CAT(ACL_CAT_SLOW);
		if (strncmp(c->name, "bf.", 3) == 0 ||
		    strncmp(prefix, "bf.", 3) == 0)
			cats |= CAT(ACL_CAT_BLOOM);
		if (strncmp(c->name, "cf.", 3) == 0 ||
		    strncmp(prefix, "cf.", 3) == 0)
			cats |= CAT(ACL_CAT_CUCKOO);
	}
	c->cats = cats;
	if (rd_head(r, &type, &nsubs, &t, &tl) == -1 || (type != '*' &&
	    type != '~'))
		goto bad;
	for (long long i = 0; i < nsubs; i++) {
		if (parent >= 0 || catalog_entry(r, id, NULL, prefix) == -1)
			goto bad;
		catalog[id].nsubs++;
	}
	return id;
bad:
	log_warn("acl: COMMAND INFO entry of %s not understood", c->name);
	ncatalog = id;
	return -1;
}

static int
catalog_find(const char *name, size_t len)
{
	for (int i = 0; i < ncatalog; i++)
		if (strlen(catalog[i].name) == len &&
		    strncasecmp(catalog[i].name, name, len) == 0)
			return i;
	return -1;
}

int
acl_catalog_add(const char *lname)
{
	const char	*docname = lname, *info;
	size_t		 infol;
	struct rd	 r;
	int		 id;

	if ((id = catalog_find(lname, strlen(lname))) >= 0)
		return id;
	for (size_t i = 0; i < sizeof(twins) / sizeof(twins[0]); i++)
		if (strcmp(twins[i].name, lname) == 0)
			docname = twins[i].twin;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (strcmp(fixed[i].name, lname) == 0)
			docname = NULL;
	info = docname != NULL ? command_docs_info(docname, strlen(docname),
	    &infol) : NULL;
	if (info != NULL) {
		r.p = info;
		r.end = info + infol;
		id = catalog_entry(&r, -1, lname, docname);
		/* a twin's subcommands are not its own */
		if (id >= 0 && docname != lname) {
			ncatalog = id + 1;
			catalog[id].nsubs = 0;
		}
		if (id >= 0) {
			for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]);
			    i++)
				if (strcmp(extra[i].name, lname) == 0)
					catalog[id].cats |= extra[i].cats;
			return id;
		}
	}
	if (ncatalog >= ACL_CMD_MAX - 1)
		return -1;
	id = ncatalog++;
	memset(&catalog[id], 0, sizeof(catalog[id]));
	snprintf(catalog[id].name, sizeof(catalog[id].name), "%s", lname);
	catalog[id].parent = -1;
	catalog[id].cats = CAT(ACL_CAT_SLOW);
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (strcmp(fixed[i].name, lname) == 0)
			catalog[id].cats = fixed[i].cats;
	return id;
}

int
acl_catalog_sub(int id, const char *sub, size_t len)
{
	size_t pl;

	if (id < 0 || id >= ncatalog)
		return -1;
	pl = strlen(catalog[id].name);
	for (int i = id + 1; i <= id + catalog[id].nsubs; i++)
		if (strlen(catalog[i].name) == pl + 1 + len &&
		    strncasecmp(catalog[i].name + pl + 1, sub, len) == 0)
			return i;
	return -1;
}

int
acl_catalog_container(int id)
{
	return id >= 0 && id < ncatalog && catalog[id].nsubs > 0;
}

const char *
acl_catalog_name(int id)
{
	return id >= 0 && id < ncatalog ? catalog[id].name : "?";
}

int
acl_catalog_keys(int id, int *first, int *last, int *step)
{
	const struct catalog_cmd *c;

	if (id < 0 || id >= ncatalog || catalog[id].first <= 0)
		return -1;
	c = &catalog[id];
	*first = c->first;
	*last = c->last;
	*step = c->step > 0 ? c->step : 1;
	/* a key spec that neither reads nor writes (EXISTS's RO): any
	 * pattern serves, as in Redis */
	return c->keyflags;
}

int
acl_catalog_in(int id, int cat)
{
	return id >= 0 && id < ncatalog && (catalog[id].cats & CAT(cat));
}

int
acl_catalog_count(void)
{
	return ncatalog;
}

/* ---- users ---- */

static struct acl_user	**users;
static size_t		  nusers, capusers;
static int		  token_enforced;	/* auth_token is set */

static void
bit_set(struct acl_user *u, int id, int v)
{
	if (id < 0 || id >= ACL_CMD_MAX)
		return;
	if (v)
		u->allowed[id >> 6] |= (uint64_t)1 << (id & 63);
	else {
		u->allowed[id >> 6] &= ~((uint64_t)1 << (id & 63));
		u->flags &= ~ACL_USER_ALLCOMMANDS;
	}
}

static int
bit_get(const struct acl_user *u, int id)
{
	return (int)((u->allowed[id >> 6] >> (id & 63)) & 1);
}

/* A command and its subcommands (Redis's ACLChangeSelectorPerm). */
static void
change_perm(struct acl_user *u, int id, int v)
{
	bit_set(u, id, v);
	for (int i = id + 1; i <= id + catalog[id].nsubs; i++)
		bit_set(u, i, v);
}

static void
change_category(struct acl_user *u, int cat, int v)
{
	for (int i = 0; i < ncatalog; i++)
		if (catalog[i].cats & CAT(cat))
			change_perm(u, i, v);
}

static void
patterns_free(struct acl_pattern *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(p[i].text);
	free(p);
}

static void
user_clear(struct acl_user *u)
{
	free(u->pass);
	u->pass = NULL;
	u->npass = 0;
	patterns_free(u->keys, u->nkeys);
	u->keys = NULL;
	u->nkeys = 0;
	patterns_free(u->chans, u->nchans);
	u->chans = NULL;
	u->nchans = 0;
}

static struct acl_user *
user_new(const char *name, size_t len)
{
	struct acl_user *u;

	if ((u = calloc(1, sizeof(*u))) == NULL ||
	    (u->name = malloc(len + 1)) == NULL) {
		free(u);
		return NULL;
	}
	memcpy(u->name, name, len);
	u->name[len] = '\0';
	u->namelen = len;
	u->refs = 1;
	/* Redis's new user: off, no password, keys, channels or commands
	 * (acl-pubsub-default is resetchannels) */
	return u;
}

static void
user_free(struct acl_user *u)
{
	if (u == NULL || u == &default_user)
		return;
	user_clear(u);
	free(u->name);
	free(u);
}

static int
patterns_copy(struct acl_pattern **dst, const struct acl_pattern *src,
    size_t n)
{
	*dst = NULL;
	if (n == 0)
		return 0;
	if ((*dst = calloc(n, sizeof(**dst))) == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (((*dst)[i].text = malloc(src[i].len + 1)) == NULL) {
			patterns_free(*dst, i);
			*dst = NULL;
			return -1;
		}
		memcpy((*dst)[i].text, src[i].text, src[i].len + 1);
		(*dst)[i].len = src[i].len;
		(*dst)[i].flags = src[i].flags;
	}
	return 0;
}

/* dst's rules become src's (its name and references stay). */
static int
user_copy(struct acl_user *dst, const struct acl_user *src)
{
	struct acl_pattern	*keys, *chans;
	unsigned char		(*pass)[32] = NULL;
	unsigned		 gone = dst->flags & ACL_USER_GONE;

	if (src->npass > 0 && (pass = malloc(src->npass * 32)) == NULL)
		return -1;
	if (patterns_copy(&keys, src->keys, src->nkeys) == -1) {
		free(pass);
		return -1;
	}
	if (patterns_copy(&chans, src->chans, src->nchans) == -1) {
		free(pass);
		patterns_free(keys, src->nkeys);
		return -1;
	}
	if (pass != NULL)
		memcpy(pass, src->pass, src->npass * 32);
	user_clear(dst);
	dst->pass = pass;
	dst->npass = src->npass;
	dst->keys = keys;
	dst->nkeys = src->nkeys;
	dst->chans = chans;
	dst->nchans = src->nchans;
	dst->flags = (src->flags & ~ACL_USER_GONE) | gone;
	memcpy(dst->allowed, src->allowed, sizeof(dst->allowed));
	return 0;
}

void
acl_hash_hex(const void *p, size_t len, char out[65])
{
	static const char	 hex[] = "0123456789abcdef";
	unsigned char		 md[32];
	unsigned int		 mdl = 0;

	if (EVP_Digest(p, len, md, &mdl, EVP_sha256(), NULL) != 1)
		memset(md, 0, sizeof(md));
	for (int i = 0; i < 32; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[64] = '\0';
}

static void
hash_raw(const void *p, size_t len, unsigned char md[32])
{
	unsigned int mdl = 0;

	if (EVP_Digest(p, len, md, &mdl, EVP_sha256(), NULL) != 1)
		memset(md, 0, 32);
}

/* #<64 lower case hex digits> (Redis's ACLCheckPasswordHash). */
static int
hash_parse(const char *p, size_t len, unsigned char md[32])
{
	if (len != 64)
		return -1;
	for (size_t i = 0; i < 64; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' &&
		    p[i] <= 'f')))
			return -1;
	for (int i = 0; i < 32; i++) {
		int hi = p[2 * i] <= '9' ? p[2 * i] - '0' : p[2 * i] - 'a' + 10;
		int lo = p[2 * i + 1] <= '9' ? p[2 * i + 1] - '0' :
		    p[2 * i + 1] - 'a' + 10;

		md[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

static int
pass_add(struct acl_user *u, const unsigned char md[32])
{
	unsigned char (*np)[32];

	for (size_t i = 0; i < u->npass; i++)
		if (memcmp(u->pass[i], md, 32) == 0)
			return 0;
	if ((np = realloc(u->pass, (u->npass + 1) * 32)) == NULL)
		return -1;
	u->pass = np;
	memcpy(u->pass[u->npass++], md, 32);
	return 0;
}

/* Redis's ACLStringHasSpaces: no white space, no NUL. */
static int
has_spaces(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (isspace((unsigned char)s[i]) || s[i] == '\0')
			return 1;
	return 0;
}

static int
pattern_add(struct acl_pattern **list, size_t *n, const char *p, size_t len,
    int flags)
{
	struct acl_pattern *nl;

	for (size_t i = 0; i < *n; i++)
		if ((*list)[i].len == len && memcmp((*list)[i].text, p, len) ==
		    0) {
			(*list)[i].flags |= flags;
			return 0;
		}
	if ((nl = realloc(*list, (*n + 1) * sizeof(**list))) == NULL)
		return -1;
	*list = nl;
	if ((nl[*n].text = malloc(len + 1)) == NULL)
		return -1;
	memcpy(nl[*n].text, p, len);
	nl[*n].text[len] = '\0';
	nl[*n].len = len;
	nl[*n].flags = flags;
	(*n)++;
	return 0;
}

/* Errors as Redis's ACLSetUserStringError words them. */
#define E_FORMAT	"Wrong format"
#define E_NOENT		"Unknown command or category name in ACL"
#define E_INVAL		"Syntax error"
#define E_EXIST		"Adding a pattern after the * pattern (or the " \
	"'allkeys' flag) is not valid and does not have any effect. Try " \
	"'resetkeys' to start with an empty list of patterns"
#define E_ISDIR		"Adding a pattern after the * pattern (or the " \
	"'allchannels' flag) is not valid and does not have any effect. Try " \
	"'resetchannels' to start with an empty list of channels"
#define E_NODEV		"The password you are trying to remove from the user " \
	"does not exist"
#define E_BADMSG	"The password hash must be exactly 64 characters and " \
	"contain only lowercase hexadecimal characters"
#define E_CHILD		"Allowing first-arg of a subcommand is not supported"

static int
fail(char *err, size_t errlen, const char *why)
{
	if (errlen > 0)
		snprintf(err, errlen, "%s", why);
	return -1;
}

static int
op_is(const char *op, size_t len, const char *w)
{
	return strlen(w) == len && strncasecmp(op, w, len) == 0;
}

/* +cmd, -cmd, +cmd|sub. */
static int
apply_command(struct acl_user *u, const char *op, size_t len, char *err,
    size_t errlen)
{
	const char	*name = op + 1, *bar;
	size_t		 nl = len - 1;
	int		 id, v = op[0] == '+';

	bar = memrchr(name, '|', nl);
	if (bar == NULL) {
		if ((id = catalog_find(name, nl)) < 0)
			return fail(err, errlen, E_NOENT);
		change_perm(u, id, v);
		return 0;
	}
	if (!v) {
		/* Redis 7.0: -cmd|sub is a subcommand's own bit */
		if ((id = catalog_find(name, nl)) < 0)
			return fail(err, errlen, E_NOENT);
		change_perm(u, id, 0);
		return 0;
	}
	if ((id = catalog_find(name, (size_t)(bar - name))) < 0)
		return fail(err, errlen, E_NOENT);
	if (catalog[id].parent >= 0)
		return fail(err, errlen, E_CHILD);
	if (bar + 1 == name + nl)
		return fail(err, errlen, E_INVAL);
	if (catalog[id].nsubs == 0)
		/* a first argument of a command without subcommands
		 * (+select|0): Redis keeps it aside, deprecated; seend has no
		 * such command worth it */
		return fail(err, errlen, E_INVAL);
	if ((id = catalog_find(name, nl)) < 0)
		return fail(err, errlen, E_NOENT);
	change_perm(u, id, 1);
	return 0;
}

int
acl_user_apply(struct acl_user *u, const char *op, size_t len, char *err,
    size_t errlen)
{
	unsigned char	 md[32];
	int		 flags, c;
	size_t		 off;

	if (len == 0)
		return 0;
	if (op_is(op, len, "on"))
		u->flags |= ACL_USER_ON;
	else if (op_is(op, len, "off"))
		u->flags &= ~ACL_USER_ON;
	else if (op_is(op, len, "skip-sanitize-payload")) {
		u->flags |= ACL_USER_SKIP_SANITIZE;
		u->flags &= ~ACL_USER_SANITIZE;
	} else if (op_is(op, len, "sanitize-payload")) {
		u->flags &= ~ACL_USER_SKIP_SANITIZE;
		u->flags |= ACL_USER_SANITIZE;
	} else if (op_is(op, len, "nopass")) {
		u->flags |= ACL_USER_NOPASS;
		free(u->pass);
		u->pass = NULL;
		u->npass = 0;
	} else if (op_is(op, len, "resetpass")) {
		u->flags &= ~ACL_USER_NOPASS;
		free(u->pass);
		u->pass = NULL;
		u->npass = 0;
	} else if (op[0] == '>' || op[0] == '#') {
		if (op[0] == '>')
			hash_raw(op + 1, len - 1, md);
		else if (hash_parse(op + 1, len - 1, md) == -1)
			return fail(err, errlen, E_BADMSG);
		if (pass_add(u, md) == -1)
			return fail(err, errlen, "out of memory");
		u->flags &= ~ACL_USER_NOPASS;
	} else if (op[0] == '<' || op[0] == '!') {
		size_t i;

		if (op[0] == '<')
			hash_raw(op + 1, len - 1, md);
		else if (hash_parse(op + 1, len - 1, md) == -1)
			return fail(err, errlen, E_BADMSG);
		for (i = 0; i < u->npass && memcmp(u->pass[i], md, 32) != 0; i++)
			;
		if (i == u->npass)
			return fail(err, errlen, E_NODEV);
		memmove(u->pass[i], u->pass[i + 1], (u->npass - i - 1) * 32);
		u->npass--;
	} else if (op[0] == '(' && op[len - 1] == ')') {
		/* Redis 7's selectors: not served */
		return fail(err, errlen, E_INVAL);
	} else if (op_is(op, len, "clearselectors")) {
		return 0;
	} else if (op_is(op, len, "reset")) {
		u->flags &= ~(ACL_USER_NOPASS | ACL_USER_ALLKEYS |
		    ACL_USER_ALLCHANNELS | ACL_USER_ON | ACL_USER_SKIP_SANITIZE);
		u->flags |= ACL_USER_SANITIZE;
		user_clear(u);
		memset(u->allowed, 0, sizeof(u->allowed));
		u->flags &= ~ACL_USER_ALLCOMMANDS;
	} else if (op_is(op, len, "allkeys") || op_is(op, len, "~*")) {
		u->flags |= ACL_USER_ALLKEYS;
		patterns_free(u->keys, u->nkeys);
		u->keys = NULL;
		u->nkeys = 0;
	} else if (op_is(op, len, "resetkeys")) {
		u->flags &= ~ACL_USER_ALLKEYS;
		patterns_free(u->keys, u->nkeys);
		u->keys = NULL;
		u->nkeys = 0;
	} else if (op_is(op, len, "allchannels") || op_is(op, len, "&*")) {
		u->flags |= ACL_USER_ALLCHANNELS;
		patterns_free(u->chans, u->nchans);
		u->chans = NULL;
		u->nchans = 0;
	} else if (op_is(op, len, "resetchannels")) {
		u->flags &= ~ACL_USER_ALLCHANNELS;
		patterns_free(u->chans, u->nchans);
		u->chans = NULL;
		u->nchans = 0;
	} else if (op_is(op, len, "allcommands") || op_is(op, len, "+@all")) {
		memset(u->allowed, 0xff, sizeof(u->allowed));
		u->flags |= ACL_USER_ALLCOMMANDS;
	} else if (op_is(op, len, "nocommands") || op_is(op, len, "-@all")) {
		memset(u->allowed, 0, sizeof(u->allowed));
		u->flags &= ~ACL_USER_ALLCOMMANDS;
	} else if (op[0] == '~' || op[0] == '%') {
		if (u->flags & ACL_USER_ALLKEYS)
			return fail(err, errlen, E_EXIST);
		flags = 0;
		off = 1;
		if (op[0] == '%') {
			for (; off < len; off++) {
				c = toupper((unsigned char)op[off]);
				if (c == 'R' && !(flags & ACL_KEY_READ))
					flags |= ACL_KEY_READ;
				else if (c == 'W' && !(flags & ACL_KEY_WRITE))
					flags |= ACL_KEY_WRITE;
				else if (op[off] == '~') {
					off++;
					break;
				} else
					return fail(err, errlen, E_INVAL);
			}
		} else
			flags = ACL_KEY_READ | ACL_KEY_WRITE;
		if (has_spaces(op + off, len - off))
			return fail(err, errlen, E_INVAL);
		if (pattern_add(&u->keys, &u->nkeys, op + off, len - off,
		    flags) == -1)
			return fail(err, errlen, "out of memory");
		u->flags &= ~ACL_USER_ALLKEYS;
	} else if (op[0] == '&') {
		if (u->flags & ACL_USER_ALLCHANNELS)
			return fail(err, errlen, E_ISDIR);
		if (has_spaces(op + 1, len - 1))
			return fail(err, errlen, E_INVAL);
		if (pattern_add(&u->chans, &u->nchans, op + 1, len - 1, 0) ==
		    -1)
			return fail(err, errlen, "out of memory");
		u->flags &= ~ACL_USER_ALLCHANNELS;
	} else if ((op[0] == '+' || op[0] == '-') && len >= 2 &&
	    op[1] == '@') {
		if ((c = acl_category(op + 2, len - 2)) < 0)
			return fail(err, errlen, E_NOENT);
		change_category(u, c, op[0] == '+');
	} else if ((op[0] == '+' || op[0] == '-') && len >= 2) {
		return apply_command(u, op, len, err, errlen);
	} else
		return fail(err, errlen, E_INVAL);
	return 0;
}

/* ---- the set ---- */

static int
name_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	return c != 0 ? c : (al > bl) - (al < bl);
}

/* Where name is, or would go, in users. */
static size_t
users_pos(const char *name, size_t len, int *found)
{
	size_t lo = 0, hi = nusers;

	*found = 0;
	while (lo < hi) {
		size_t	 mid = (lo + hi) / 2;
		int	 c = name_cmp(users[mid]->name, users[mid]->namelen, name,
			    len);

		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int
users_insert(struct acl_user *u)
{
	size_t	 pos;
	int	 found;

	pos = users_pos(u->name, u->namelen, &found);
	if (found)
		return -1;
	if (nusers == capusers) {
		size_t			 ncap = capusers ? 2 * capusers : 8;
		struct acl_user		**nu = realloc(users, ncap *
					    sizeof(*nu));

		if (nu == NULL)
			return -1;
		users = nu;
		capusers = ncap;
	}
	memmove(users + pos + 1, users + pos, (nusers - pos) * sizeof(*users));
	users[pos] = u;
	nusers++;
	return 0;
}

static void
users_remove(size_t pos)
{
	memmove(users + pos, users + pos + 1, (nusers - pos - 1) *
	    sizeof(*users));
	nusers--;
}

/* The default user before any definition: Redis's ACLCreateDefaultUser. */
static void
default_rules(struct acl_user *u)
{
	user_clear(u);
	memset(u->allowed, 0xff, sizeof(u->allowed));
	u->flags = ACL_USER_ON | ACL_USER_NOPASS | ACL_USER_ALLKEYS |
	    ACL_USER_ALLCHANNELS | ACL_USER_ALLCOMMANDS;
}

static void
limits_update(void)
{
	int limited = 0;

	for (size_t i = 0; i < nusers; i++)
		if (!acl_user_unrestricted(users[i]))
			limited = 1;
	/* the default user wants a password no auth_token asks for */
	if (!token_enforced && !acl_default_open())
		limited = 1;
	acl_limits = limited;
}

static void
users_ready(void)
{
	if (default_user.name != NULL)
		return;
	default_user.name = strdup("default");
	default_user.namelen = 7;
	default_user.refs = 1;
	default_rules(&default_user);
	if (default_user.name == NULL || users_insert(&default_user) == -1)
		fatal("acl: out of memory");
}

int
acl_default_open(void)
{
	return (default_user.flags & (ACL_USER_ON | ACL_USER_NOPASS)) ==
	    (ACL_USER_ON | ACL_USER_NOPASS) || default_user.name == NULL;
}

int
acl_default_needs_auth(void)
{
	return !token_enforced && !acl_default_open();
}

struct acl_user *
acl_find(const char *name, size_t len)
{
	size_t	 pos;
	int	 found;

	users_ready();
	pos = users_pos(name, len, &found);
	return found ? users[pos] : NULL;
}

size_t
acl_count(void)
{
	users_ready();
	return nusers;
}

struct acl_user *
acl_at(size_t i)
{
	return i < nusers ? users[i] : NULL;
}

void
acl_ref(struct acl_user *u)
{
	u->refs++;
}

void
acl_unref(struct acl_user *u)
{
	if (u != NULL && --u->refs == 0)
		user_free(u);
}

struct acl_user *
acl_login(const char *name, size_t len, const char *pass, size_t passlen)
{
	struct acl_user	*u = acl_find(name, len);
	unsigned char	 md[32];
	int		 ok = 0;

	if (u == NULL || !(u->flags & ACL_USER_ON))
		return NULL;
	if (!(u->flags & ACL_USER_NOPASS)) {
		hash_raw(pass, passlen, md);
		/* every password compared, each in constant time */
		for (size_t i = 0; i < u->npass; i++)
			ok |= CRYPTO_memcmp(u->pass[i], md, 32) == 0;
		OPENSSL_cleanse(md, sizeof(md));
		if (!ok)
			return NULL;
	}
	acl_ref(u);
	return u;
}

/* Redis's stringmatchlen (no nocase): *, ?, [a-z], [^...], \x. */
static int
glob(const char *p, size_t pl, const char *s, size_t sl, int depth)
{
	if (depth > 64)
		return 0;
	while (pl > 0) {
		switch (*p) {
		case '*':
			while (pl > 1 && p[1] == '*') {
				p++;
				pl--;
			}
			if (pl == 1)
				return 1;
			for (size_t i = 0; i <= sl; i++)
				if (glob(p + 1, pl - 1, s + i, sl - i, depth + 1))
					return 1;
			return 0;
		case '?':
			if (sl == 0)
				return 0;
			s++;
			sl--;
			p++;
			pl--;
			break;
		case '[': {
			int not, match = 0;

			if (sl == 0)
				return 0;
			p++;
			pl--;
			not = pl > 0 && *p == '^';
			if (not) {
				p++;
				pl--;
			}
			while (pl > 0 && *p != ']') {
				if (*p == '\\' && pl >= 2) {
					p++;
					pl--;
					match |= *p == *s;
				} else if (pl >= 3 && p[1] == '-') {
					unsigned char a = (unsigned char)p[0];
					unsigned char b = (unsigned char)p[2];
					unsigned char c = (unsigned char)*s;

					if (a > b) {
						unsigned char t = a;

						a = b;
						b = t;
					}
					match |= c >= a && c <= b;
					p += 2;
					pl -= 2;
				} else
					match |= *p == *s;
				p++;
				pl--;
			}
			if (pl > 0) {	/* the ']' */
				p++;
				pl--;
			}
			if (not)
				match = !match;
			if (!match)
				return 0;
			s++;
			sl--;
			break;
		}
		case '\\':
			if (pl >= 2) {
				p++;
				pl--;
			}
			/* FALLTHROUGH */
		default:
			if (sl == 0 || *p != *s)
				return 0;
			s++;
			sl--;
			p++;
			pl--;
			break;
		}
	}
	return sl == 0;
}

int
acl_user_key(const struct acl_user *u, const char *key, size_t len, int flags)
{
	if (u->flags & ACL_USER_ALLKEYS)
		return 1;
	for (size_t i = 0; i < u->nkeys; i++) {
		if ((u->keys[i].flags & flags) != flags)
			continue;
		if (glob(u->keys[i].text, u->keys[i].len, key, len, 0))
			return 1;
	}
	return 0;
}

int
acl_user_all_keys(const struct acl_user *u, int flags)
{
	if (u->flags & ACL_USER_ALLKEYS)
		return 1;
	for (size_t i = 0; i < u->nkeys; i++)
		if ((u->keys[i].flags & flags) == flags &&
		    u->keys[i].len == 1 && u->keys[i].text[0] == '*')
			return 1;
	return 0;
}

int
acl_user_channel(const struct acl_user *u, const char *ch, size_t len,
    int is_pattern)
{
	if (u->flags & ACL_USER_ALLCHANNELS)
		return 1;
	for (size_t i = 0; i < u->nchans; i++) {
		const struct acl_pattern *p = &u->chans[i];

		if (is_pattern ? p->len == len && memcmp(p->text, ch, len) == 0 :
		    glob(p->text, p->len, ch, len, 0))
			return 1;
	}
	return 0;
}

/* ---- describing a user (ACL LIST, ACL SAVE, ACL GETUSER) ---- */

struct out {
	char	*p;
	size_t	 len, cap;
};

static void
put(struct out *o, const char *s, size_t n)
{
	if (o->cap == 0)
		return;
	for (size_t i = 0; i < n && o->len + 1 < o->cap; i++)
		o->p[o->len++] = s[i];
	o->p[o->len] = '\0';
}

static void
puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void
count_category(const struct acl_user *u, int cat, unsigned long *on,
    unsigned long *off)
{
	*on = *off = 0;
	for (int i = 0; i < ncatalog; i++)
		if (catalog[i].cats & CAT(cat)) {
			if (bit_get(u, i))
				(*on)++;
			else
				(*off)++;
		}
}

/* Redis's ACLDescribeSelectorCommandRules: +@all or -@all, the
 * categories that best fit, then single commands. */
static void
describe_commands(const struct acl_user *u, struct out *o)
{
	struct acl_user	 fake, temp;
	char		 applied[ACL_NCATS] = { 0 };
	int		 additive;
	size_t		 start = o->len;

	memset(&fake, 0, sizeof(fake));
	memset(&temp, 0, sizeof(temp));
	if (bit_get(u, ACL_CMD_MAX - 1)) {
		additive = 0;
		puts_(o, "+@all ");
		memset(fake.allowed, 0xff, sizeof(fake.allowed));
	} else {
		additive = 1;
		puts_(o, "-@all ");
	}
	memcpy(temp.allowed, u->allowed, sizeof(temp.allowed));
	for (;;) {
		unsigned long	 mindiff = ULONG_MAX, maxsame = 0;
		int		 best = -1;

		for (int j = 0; j < ACL_NCATS; j++) {
			unsigned long on, off, diff, same;

			if (applied[j])
				continue;
			count_category(&temp, j, &on, &off);
			diff = additive ? off : on;
			same = additive ? on : off;
			if (same > diff && (diff < mindiff ||
			    (diff == mindiff && same > maxsame))) {
				best = j;
				mindiff = diff;
				maxsame = same;
			}
		}
		if (best == -1)
			break;
		puts_(o, additive ? "+@" : "-@");
		puts_(o, cat_names[best]);
		puts_(o, " ");
		change_category(&fake, best, additive);
		change_category(&temp, best, !additive);
		applied[best] = 1;
	}
	for (int i = 0; i < ncatalog; i++) {
		int ub = bit_get(u, i);

		if (ub != bit_get(&fake, i)) {
			puts_(o, ub ? "+" : "-");
			puts_(o, catalog[i].name);
			puts_(o, " ");
			change_perm(&fake, i, ub);
		}
	}
	/* the trailing space */
	if (o->len > start && o->cap > 0) {
		o->len--;
		o->p[o->len] = '\0';
	}
}

static void
put_pattern(struct out *o, const struct acl_pattern *p)
{
	if (p->flags == (ACL_KEY_READ | ACL_KEY_WRITE))
		puts_(o, "~");
	else if (p->flags == ACL_KEY_READ)
		puts_(o, "%R~");
	else
		puts_(o, "%W~");
	put(o, p->text, p->len);
}

size_t
acl_describe_commands(const struct acl_user *u, char *out, size_t outlen)
{
	struct out o = { out, 0, outlen };

	if (outlen > 0)
		out[0] = '\0';
	describe_commands(u, &o);
	return o.len;
}

size_t
acl_describe(const struct acl_user *u, char *out, size_t outlen)
{
	struct out	 o = { out, 0, outlen };
	char		 hex[65];

	if (outlen > 0)
		out[0] = '\0';
	puts_(&o, u->flags & ACL_USER_ON ? "on " : "off ");
	if (u->flags & ACL_USER_NOPASS)
		puts_(&o, "nopass ");
	if (u->flags & ACL_USER_SKIP_SANITIZE)
		puts_(&o, "skip-sanitize-payload ");
	if (u->flags & ACL_USER_SANITIZE)
		puts_(&o, "sanitize-payload ");
	for (size_t i = 0; i < u->npass; i++) {
		static const char x[] = "0123456789abcdef";

		for (int j = 0; j < 32; j++) {
			hex[2 * j] = x[u->pass[i][j] >> 4];
			hex[2 * j + 1] = x[u->pass[i][j] & 15];
		}
		puts_(&o, "#");
		put(&o, hex, 64);
		puts_(&o, " ");
	}
	if (u->flags & ACL_USER_ALLKEYS)
		puts_(&o, "~* ");
	else
		for (size_t i = 0; i < u->nkeys; i++) {
			put_pattern(&o, &u->keys[i]);
			puts_(&o, " ");
		}
	if (u->flags & ACL_USER_ALLCHANNELS)
		puts_(&o, "&* ");
	else {
		puts_(&o, "resetchannels ");
		for (size_t i = 0; i < u->nchans; i++) {
			puts_(&o, "&");
			put(&o, u->chans[i].text, u->chans[i].len);
			puts_(&o, " ");
		}
	}
	describe_commands(u, &o);
	return o.len;
}

/* ---- SETUSER, DELUSER ---- */

int
acl_setuser(const char *name, size_t len, const char **ops,
    const size_t *lens, int nops, char *err, size_t errlen)
{
	struct acl_user	*u, *tmp;
	char		 why[300];

	users_ready();
	if ((tmp = user_new(name, len)) == NULL)
		return fail(err, errlen, "out of memory");
	u = acl_find(name, len);
	if (u != NULL && user_copy(tmp, u) == -1) {
		user_free(tmp);
		return fail(err, errlen, "out of memory");
	}
	for (int i = 0; i < nops; i++)
		if (acl_user_apply(tmp, ops[i], lens[i], why, sizeof(why)) ==
		    -1) {
			snprintf(err, errlen, "Error in ACL SETUSER modifier "
			    "'%.*s': %s", (int)(lens[i] < 128 ? lens[i] : 128),
			    ops[i], why);
			user_free(tmp);
			return -1;
		}
	if (u == NULL) {
		if (users_insert(tmp) == -1) {
			user_free(tmp);
			return fail(err, errlen, "out of memory");
		}
	} else {
		if (user_copy(u, tmp) == -1) {
			user_free(tmp);
			return fail(err, errlen, "out of memory");
		}
		user_free(tmp);
	}
	limits_update();
	return 0;
}

int
acl_deluser(const char *name, size_t len)
{
	struct acl_user	*u;
	size_t		 pos;
	int		 found;

	users_ready();
	pos = users_pos(name, len, &found);
	if (!found || users[pos] == &default_user)
		return 0;
	u = users[pos];
	users_remove(pos);
	u->flags |= ACL_USER_GONE;
	acl_unref(u);
	limits_update();
	return 1;
}

/* ---- the users file ---- */

struct errs {
	char	*p;
	size_t	 len, cap;
};

static void
errs_add(struct errs *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
errs_add(struct errs *e, const char *fmt, ...)
{
	va_list	 ap;
	int	 n;

	if (e->cap == 0 || e->len + 1 >= e->cap)
		return;
	va_start(ap, fmt);
	n = vsnprintf(e->p + e->len, e->cap - e->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		e->len += (size_t)n < e->cap - e->len ? (size_t)n :
		    e->cap - e->len - 1;
}

static void
list_free(struct acl_user **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		user_free(list[i]);
	free(list);
}

static int
trim_char(char c, const char *set)
{
	return c != '\0' && strchr(set, c) != NULL;
}

/*
 * Parses a users file's text into *list (fresh users, sorted as they come),
 * as Redis's ACLLoadFromFile: lines split on '\n' and trimmed, blank ones
 * skipped, each "user <name> rule..." with its words split on single
 * spaces. Returns the number of errors (their text in e).
 */
static int
parse_text(const char *text, size_t len, const char *fname,
    struct acl_user ***listp, size_t *np, struct errs *e)
{
	struct acl_user	**list = NULL;
	size_t		  n = 0, cap = 0, start = 0;
	int		  nerr = 0, line = 0;
	char		  why[300];

	while (start <= len) {
		const char	*l = text + start, *nl;
		size_t		 ll, w0, wl, pos;
		struct acl_user	*u;
		int		 syntax = 0;

		nl = memchr(l, '\n', len - start);
		ll = nl != NULL ? (size_t)(nl - l) : len - start;
		start += ll + 1;
		line++;
		while (ll > 0 && trim_char(l[0], " \t\r\n")) {
			l++;
			ll--;
		}
		while (ll > 0 && trim_char(l[ll - 1], " \t\r\n"))
			ll--;
		if (ll == 0)
			continue;
		/* the first word: "user" (case matters, as in Redis) */
		for (wl = 0; wl < ll && l[wl] != ' '; wl++)
			;
		pos = wl < ll ? wl + 1 : ll;
		for (w0 = pos; pos < ll && l[pos] != ' '; pos++)
			;
		if (wl != 4 || memcmp(l, "user", 4) != 0 || w0 >= ll) {
			errs_add(e, "%s:%d should start with user keyword "
			    "followed by the username. ", fname, line);
			nerr++;
			continue;
		}
		/* the name: l[w0, pos) */
		if (has_spaces(l + w0, pos - w0)) {
			errs_add(e, "'%s:%d: username '%.*s' contains invalid "
			    "characters. ", fname, line, (int)(pos - w0),
			    l + w0);
			nerr++;
			continue;
		}
		u = NULL;
		for (size_t i = 0; i < n; i++)
			if (list[i]->namelen == pos - w0 &&
			    memcmp(list[i]->name, l + w0, pos - w0) == 0)
				u = list[i];
		if (u != NULL) {
			errs_add(e, "WARNING: Duplicate user '%.*s' found on "
			    "line %d. ", (int)(pos - w0), l + w0, line);
			nerr++;
			continue;
		}
		if ((u = user_new(l + w0, pos - w0)) == NULL) {
			errs_add(e, "%s:%d: out of memory. ", fname, line);
			nerr++;
			continue;
		}
		if (n == cap) {
			size_t			 ncap = cap ? 2 * cap : 8;
			struct acl_user		**nlist = realloc(list, ncap *
						    sizeof(*nlist));

			if (nlist == NULL) {
				user_free(u);
				errs_add(e, "%s:%d: out of memory. ", fname,
				    line);
				nerr++;
				continue;
			}
			list = nlist;
			cap = ncap;
		}
		list[n++] = u;
		/* the rules, one per space (two spaces: an empty rule, which
		 * does nothing) */
		while (pos < ll) {
			size_t	 b = ++pos, bl;
			char	 op[1024];

			while (pos < ll && l[pos] != ' ')
				pos++;
			bl = pos - b;
			/* Redis trims each rule of "\t\r\n" */
			while (bl > 0 && trim_char(l[b], "\t\r\n")) {
				b++;
				bl--;
			}
			while (bl > 0 && trim_char(l[b + bl - 1], "\t\r\n"))
				bl--;
			if (acl_user_apply(u, l + b, bl, why, sizeof(why)) == 0)
				continue;
			snprintf(op, sizeof(op), "%.*s", (int)(bl < 512 ? bl :
			    512), l + b);
			if (strcmp(why, E_NOENT) == 0) {
				errs_add(e, "%s:%d: Error in applying operation "
				    "'%s': %s. ", fname, line, op, why);
				nerr++;
			} else if (!syntax) {
				errs_add(e, "%s:%d: %s. ", fname, line, why);
				nerr++;
				syntax = 1;
			}
		}
	}
	*listp = list;
	*np = n;
	return nerr;
}

/* A file's text, whole (NUL-terminated); NULL with errno set. */
static char *
read_text(const char *path, size_t *len)
{
	FILE	*fp;
	char	*text = NULL, *nt;
	size_t	 cap = 0, n = 0, got;

	if ((fp = fopen(path, "r")) == NULL)
		return NULL;
	for (;;) {
		if (n + 4096 + 1 > cap) {
			cap = cap ? 2 * cap : 8192;
			if (cap > ((size_t)64 << 20) ||
			    (nt = realloc(text, cap)) == NULL) {
				free(text);
				fclose(fp);
				errno = ENOMEM;
				return NULL;
			}
			text = nt;
		}
		got = fread(text + n, 1, 4096, fp);
		n += got;
		if (got < 4096)
			break;
	}
	if (ferror(fp)) {
		free(text);
		fclose(fp);
		errno = EIO;
		return NULL;
	}
	fclose(fp);
	text[n] = '\0';
	*len = n;
	return text;
}

int
acl_check_text(const char *text, size_t len, const char *name, char *err,
    size_t errlen)
{
	struct errs	 e = { err, 0, errlen };
	struct acl_user	**list;
	size_t		 n;
	int		 nerr;

	if (errlen > 0)
		err[0] = '\0';
	nerr = parse_text(text, len, name, &list, &n, &e);
	list_free(list, n);
	return nerr > 0 ? -1 : 0;
}

int
acl_configure(const char *path, const char *auth_token, char *err,
    size_t errlen)
{
	struct errs	 e = { err, 0, errlen };
	size_t		 len = 0;
	char		*text;
	int		 rc;

	if (errlen > 0)
		err[0] = '\0';
	if (path == NULL)
		return acl_configure_text(NULL, 0, NULL, auth_token, err, errlen);
	if ((text = read_text(path, &len)) == NULL) {
		errs_add(&e, "Error loading ACLs, opening file '%s': %s", path,
		    strerror(errno));
		return -1;
	}
	rc = acl_configure_text(text, len, path, auth_token, err, errlen);
	free(text);
	return rc;
}

int
acl_configure_text(const char *text, size_t len, const char *name,
    const char *auth_token, char *err, size_t errlen)
{
	struct errs	 e = { err, 0, errlen };
	struct acl_user	**list = NULL, *def = NULL;
	size_t		 n = 0;
	int		 nerr = 0;
	char		 why[300];

	users_ready();
	if (errlen > 0)
		err[0] = '\0';
	if (text != NULL) {
		nerr = parse_text(text, len, name, &list, &n, &e);
		if (nerr > 0) {
			errs_add(&e, "WARNING: ACL errors detected, no change "
			    "to the previously active ACL rules was performed");
			list_free(list, n);
			return -1;
		}
	}
	/* the default user: the file's, else Redis's, with auth_token as
	 * its password */
	for (size_t i = 0; i < n; i++)
		if (list[i]->namelen == 7 && memcmp(list[i]->name, "default",
		    7) == 0)
			def = list[i];
	if (def == NULL)
		default_rules(&default_user);
	else if (user_copy(&default_user, def) == -1) {
		list_free(list, n);
		return fail(err, errlen, "out of memory");
	}
	if (auth_token != NULL) {
		char *op;

		(void)acl_user_apply(&default_user, "resetpass", 9, why,
		    sizeof(why));
		if ((op = malloc(strlen(auth_token) + 2)) != NULL) {
			op[0] = '>';
			memcpy(op + 1, auth_token, strlen(auth_token) + 1);
			(void)acl_user_apply(&default_user, op, strlen(op), why,
			    sizeof(why));
			OPENSSL_cleanse(op, strlen(op));
			free(op);
		}
	}
	token_enforced = auth_token != NULL;
	/* users gone from the definition */
	for (size_t i = 0; i < nusers; ) {
		struct acl_user	*u = users[i];
		int		 kept = u == &default_user;

		for (size_t j = 0; j < n && !kept; j++)
			kept = list[j]->namelen == u->namelen &&
			    memcmp(list[j]->name, u->name, u->namelen) == 0;
		if (kept) {
			i++;
			continue;
		}
		users_remove(i);
		u->flags |= ACL_USER_GONE;
		acl_unref(u);
	}
	/* kept ones updated in place, new ones added */
	for (size_t j = 0; j < n; j++) {
		struct acl_user *u;

		if (list[j] == def)
			continue;
		if ((u = acl_find(list[j]->name, list[j]->namelen)) != NULL) {
			if (user_copy(u, list[j]) == -1)
				log_error("acl: out of memory updating user %s",
				    u->name);
			continue;
		}
		if (users_insert(list[j]) == 0)
			list[j] = NULL;
	}
	list_free(list, n);
	limits_update();
	return 0;
}

int
acl_save(const char *path, char *err, size_t errlen)
{
	char		*tmp, *dir, *slash, *line;
	size_t		 linecap = 65536;
	int		 fd;
	FILE		*fp;

	users_ready();
	if ((tmp = malloc(strlen(path) + 32)) == NULL ||
	    (dir = strdup(path)) == NULL || (line = malloc(linecap)) == NULL) {
		free(tmp);
		return fail(err, errlen, "out of memory");
	}
	snprintf(tmp, strlen(path) + 32, "%s.tmp-%d", path, (int)getpid());
	if ((slash = strrchr(dir, '/')) == NULL)
		snprintf(dir, strlen(path) + 1, ".");
	else if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) ==
	    -1 || (fp = fdopen(fd, "w")) == NULL) {
		snprintf(err, errlen, "cannot create %s: %s", tmp,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		goto fail;
	}
	for (size_t i = 0; i < nusers; i++) {
		acl_describe(users[i], line, linecap);
		fprintf(fp, "user %s %s\n", users[i]->name, line);
	}
	if (fflush(fp) != 0 || fsync(fd) == -1) {
		snprintf(err, errlen, "cannot write %s: %s", tmp,
		    strerror(errno));
		fclose(fp);
		unlink(tmp);
		goto fail;
	}
	if (fclose(fp) != 0) {
		snprintf(err, errlen, "cannot write %s: %s", tmp,
		    strerror(errno));
		unlink(tmp);
		goto fail;
	}
	if (fileio_commit(tmp, path, dir, err, errlen) == -1)
		goto fail;
	free(tmp);
	free(dir);
	free(line);
	return 0;
fail:
	free(tmp);
	free(dir);
	free(line);
	return -1;
}

/* ---- ACL LOG ---- */

static struct acl_log_entry	log_entries[ACL_LOG_MAX];
static size_t			nlog;

int64_t
acl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
entry_free(struct acl_log_entry *e)
{
	free(e->object);
	free(e->username);
	free(e->cinfo);
	memset(e, 0, sizeof(*e));
}

static char *
dup_bytes(const char *p, size_t n)
{
	char *d = malloc(n + 1);

	if (d != NULL) {
		memcpy(d, p, n);
		d[n] = '\0';
	}
	return d;
}

void
acl_log_add(int reason, int multi, const char *object, size_t objlen,
    const char *user, size_t userlen, const char *cinfo)
{
	struct acl_log_entry	 e;
	int64_t			 now = acl_now_ms();

	/* one like it in the last ten, within a minute: counted there */
	for (size_t i = 0; i < nlog && i < 10; i++) {
		struct acl_log_entry *m = &log_entries[i];
		int64_t d = now - m->ctime_ms;

		if (m->reason != reason || m->multi != multi || d > 60000 ||
		    d < -60000 || m->objlen != objlen || m->userlen != userlen ||
		    memcmp(m->object, object, objlen) != 0 ||
		    memcmp(m->username, user, userlen) != 0)
			continue;
		e = *m;
		e.count++;
		e.ctime_ms = now;
		free(e.cinfo);
		e.cinfo = strdup(cinfo);
		memmove(log_entries + 1, log_entries, i * sizeof(e));
		log_entries[0] = e;
		return;
	}
	memset(&e, 0, sizeof(e));
	e.count = 1;
	e.reason = reason;
	e.multi = multi;
	e.object = dup_bytes(object, objlen);
	e.objlen = objlen;
	e.username = dup_bytes(user, userlen);
	e.userlen = userlen;
	e.ctime_ms = now;
	e.cinfo = strdup(cinfo);
	if (e.object == NULL || e.username == NULL || e.cinfo == NULL) {
		entry_free(&e);
		return;
	}
	if (nlog == ACL_LOG_MAX)
		entry_free(&log_entries[--nlog]);
	memmove(log_entries + 1, log_entries, nlog * sizeof(e));
	log_entries[0] = e;
	nlog++;
}

size_t
acl_log_count(void)
{
	return nlog;
}

const struct acl_log_entry *
acl_log_at(size_t i)
{
	return i < nlog ? &log_entries[i] : NULL;
}

void
acl_log_reset(void)
{
	for (size_t i = 0; i < nlog; i++)
		entry_free(&log_entries[i]);
	nlog = 0;
}
