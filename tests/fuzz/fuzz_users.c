/*
 * fuzz_users.c - libFuzzer target for the users file (acl.c, Redis's ACL
 * file syntax).
 *
 * The input is a users file's text. Loading it must never crash, leak or
 * read out of bounds; it either loads or fails with errors that name the
 * file ("fuzz.acl:LINE: ..." or Redis's duplicate-user warning). What
 * loaded, described as ACL LIST describes it, must load again and be
 * described the same: ACL SAVE's output is always a file seend (and
 * Redis) reads back.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl.h"
#include "command_docs.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define LIST_MAX	(1 << 20)

/* Every user as ACL LIST gives it, one line each; NULL if out of room. */
static char *
listing(size_t *len)
{
	char	*out = malloc(LIST_MAX), line[65536];
	size_t	 n = 0;

	if (out == NULL)
		abort();
	for (size_t i = 0; i < acl_count(); i++) {
		const struct acl_user	*u = acl_at(i);
		int			 k;

		acl_describe(u, line, sizeof(line));
		k = snprintf(out + n, LIST_MAX - n, "user %.*s %s\n",
		    (int)u->namelen, u->name, line);
		if (k < 0 || (size_t)k >= LIST_MAX - n) {
			free(out);
			return NULL;
		}
		n += (size_t)k;
	}
	*len = n;
	return out;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int	 ready;
	char		 err[8192], *first, *second;
	size_t		 flen, slen;

	if (!ready) {
		/* the catalog as the server fills it: every command of the
		 * COMMAND INFO table, and the line protocol's */
		for (size_t i = 0; command_docs_name(i) != NULL; i++)
			(void)acl_catalog_add(command_docs_name(i));
		(void)acl_catalog_add("seen");
		(void)acl_catalog_add("check");
		ready = 1;
	}
	if (acl_configure_text((const char *)data, size, "fuzz.acl", NULL, err,
	    sizeof(err)) == -1) {
		if (strncmp(err, "fuzz.acl:", 9) != 0 &&
		    strncmp(err, "'fuzz.acl:", 10) != 0 &&
		    strncmp(err, "WARNING: Duplicate user", 23) != 0)
			abort();
		return 0;
	}
	/* names with a NUL or a space cannot be listed back (Redis's own
	 * files cannot hold them either) */
	for (size_t i = 0; i < acl_count(); i++)
		if (memchr(acl_at(i)->name, '\0', acl_at(i)->namelen) != NULL ||
		    acl_at(i)->namelen == 0)
			return 0;
	if ((first = listing(&flen)) == NULL)
		return 0;
	if (acl_configure_text(first, flen, "fuzz.acl", NULL, err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "listing does not load: %s\n%s", err, first);
		abort();
	}
	if ((second = listing(&slen)) == NULL || slen != flen ||
	    memcmp(first, second, flen) != 0) {
		fprintf(stderr, "listing changed:\n%s---\n%s", first,
		    second ? second : "(none)");
		abort();
	}
	free(first);
	free(second);
	return 0;
}
