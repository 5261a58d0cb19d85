/*
 * fuzz_cluster_move.c - libFuzzer target for the pauses of a hand-over of
 * slots kept in data_dir (cluster_handoff.c's cluster_handoff_load, the file
 * CLUSTER_HANDOFF_FILE): the input written there and read at a node's
 * start, by a node that holds a small map.
 *
 * Reading any bytes must never crash, leak or read out of bounds. It
 * gives 0 with at most CLUSTER_HANDOFF_MAX ranges, first <= last < 16384,
 * each to a node ID, and serve[] the map's owner[] with the node's own
 * slots of those ranges CLUSTER_PAUSED; or -1 with the file's line that
 * cannot be used, no pauses and serve[] as it was. What was read, written
 * back as handoff_save writes it, reads back the same; a node that holds
 * no map reads the same pauses.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "cluster_map.h"
#include "cluster_handoff.h"
#include "log.h"

#define P1	"1111111111111111111111111111111111111111"
#define P2	"2222222222222222222222222222222222222222"
#define R1	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

/* this node is P1 (index 0); slots 16001..16383 are nobody's */
static const char map_text[] =
	CLUSTER_MAP_MAGIC "\n"
	"epoch 3\n"
	"seed 0123456789abcdef\n"
	"node " P1 " 10.0.0.1 7001 0 -\n"
	"node " P2 " 10.0.0.2 7002 0 -\n"
	"node " R1 " 10.0.0.3 7003 0 " P1 "\n"
	"slots " P1 " 0-8191 10000\n"
	"slots " P2 " 8192-9999 10001-16000\n";

static char			 dir[] = "/tmp/seend-fuzz-handoff-XXXXXX";
static char			 path[sizeof(dir) + sizeof(CLUSTER_HANDOFF_FILE)];
static struct cluster_map	 map;
static int			 ready;

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
cleanup(void)
{
	unlink(path);
	rmdir(dir);
	cluster_map_free(&map);
}

static void
setup(void)
{
	char err[512];

	log_set_level(LOG_LEVEL_ERROR);	/* no warning per input */
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		abort();
	}
	snprintf(path, sizeof(path), "%s/%s", dir, CLUSTER_HANDOFF_FILE);
	if (cluster_map_parse(map_text, strlen(map_text), &map, err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "the target's map is refused: %s\n", err);
		abort();
	}
	atexit(cleanup);
	ready = 1;
}

/* The file in dir holds exactly p's n bytes. */
static void
put(const void *p, size_t n)
{
	const char	*q = p;
	int		 fd;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600)) == -1) {
		perror(path);
		abort();
	}
	while (n > 0) {
		ssize_t w = write(fd, q, n);

		if (w <= 0) {
			perror(path);
			abort();
		}
		q += w;
		n -= (size_t)w;
	}
	close(fd);
}

/* A node of the map (with_map) or of no map, as cluster_open makes it. */
static struct cluster *
node(int with_map)
{
	struct cluster *c = calloc(1, sizeof(*c));

	if (c == NULL)
		abort();
	memcpy(c->myid, P1, sizeof(P1));
	if (with_map) {
		c->map = &map;
		c->me = 0;
		cluster_serve_update(c);
		c->owner = c->serve;
	}
	return c;
}

static int
same_pauses(const struct cluster *a, const struct cluster *b)
{
	if (a->nhandoffs != b->nhandoffs)
		return 0;
	for (size_t i = 0; i < a->nhandoffs; i++)
		if (a->handoffs[i].first != b->handoffs[i].first ||
		    a->handoffs[i].last != b->handoffs[i].last ||
		    strcmp(a->handoffs[i].to, b->handoffs[i].to) != 0)
			return 0;
	return 1;
}

/* A refusal: -1, no pauses, the line named (1 .. the lines there are). */
static void
check_refused(const struct cluster *c, const char *err, const uint8_t *data,
    size_t size)
{
	const char	*at = strstr(err, CLUSTER_HANDOFF_FILE ": line ");
	long		 line, lines = 1;

	if (c->nhandoffs != 0) {
		fprintf(stderr, "refused with %zu pauses\n", c->nhandoffs);
		abort();
	}
	/* a file that is not text lines at all is refused whole */
	if (at == NULL && strstr(err, CLUSTER_HANDOFF_FILE ": not a hand-over "
	    "file") != NULL)
		return;
	if (at == NULL) {
		fprintf(stderr, "refusal without its line: %s\n", err);
		abort();
	}
	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';
	line = strtol(at + strlen(CLUSTER_HANDOFF_FILE ": line "), NULL, 10);
	if (line < 1 || line > lines) {
		fprintf(stderr, "refusal names line %ld of %ld: %s\n", line,
		    lines, err);
		abort();
	}
}

/* A load: the ranges sound, serve[] what they and the map say. */
static void
check_loaded(const struct cluster *c, const uint8_t *data, size_t size)
{
	static int	 over[CLUSTER_SLOTS + 1];
	size_t		 ml = strlen(CLUSTER_HANDOFF_MAGIC);
	int		 n = 0;

	if (c->nhandoffs > CLUSTER_HANDOFF_MAX)
		abort();
	/* taken: the first line is the magic, every line ends in "\n",
	 * and no NUL byte is anywhere (an empty or zeroed file is damage) */
	if (size <= ml || memcmp(data, CLUSTER_HANDOFF_MAGIC, ml) != 0 ||
	    data[ml] != '\n' || data[size - 1] != '\n' ||
	    memchr(data, '\0', size) != NULL) {
		fprintf(stderr, "taken without its first line, a last "
		    "newline, or with a NUL byte\n");
		abort();
	}
	for (size_t i = 0; i < c->nhandoffs; i++) {
		const struct cluster_handoff *h = &c->handoffs[i];

		if (h->first > h->last || h->last >= CLUSTER_SLOTS ||
		    strnlen(h->to, sizeof(h->to)) != CLUSTER_ID_LEN ||
		    !cluster_id_valid(h->to, CLUSTER_ID_LEN)) {
			fprintf(stderr, "range %zu: %u..%u to %.41s\n", i,
			    h->first, h->last, h->to);
			abort();
		}
	}
	if (c->map == NULL)
		return;
	/* the ranges over each slot: +1 at first, -1 after last */
	memset(over, 0, sizeof(over));
	for (size_t i = 0; i < c->nhandoffs; i++) {
		over[c->handoffs[i].first]++;
		over[c->handoffs[i].last + 1]--;
	}
	for (unsigned s = 0; s < CLUSTER_SLOTS; s++) {
		uint16_t want = c->map->owner[s];

		n += over[s];
		if (want == c->me && n > 0)
			want = CLUSTER_PAUSED;
		if (c->serve[s] != want) {
			fprintf(stderr, "slot %u: serve %u, not %u\n", s,
			    c->serve[s], want);
			abort();
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cluster	*c, *bare, *again;
	char		 err[1024], *text;
	size_t		 len = 0;
	int		 rc;

	if (!ready)
		setup();
	c = node(1);
	bare = node(0);
	/* a load replaces what a node held before */
	bare->nhandoffs = CLUSTER_HANDOFF_MAX;
	put(data, size);

	err[0] = '\0';
	rc = cluster_handoff_load(c, dir, err, sizeof(err));
	if (rc != 0 && rc != -1)
		abort();
	if (rc == -1) {
		check_refused(c, err, data, size);
		if (memcmp(c->serve, map.owner, sizeof(c->serve)) != 0)
			abort();
	} else
		check_loaded(c, data, size);

	/* the same file, for a node of no map */
	err[0] = '\0';
	if (cluster_handoff_load(bare, dir, err, sizeof(err)) != rc ||
	    !same_pauses(c, bare))
		abort();
	if (rc == -1)
		check_refused(bare, err, data, size);
	else
		check_loaded(bare, data, size);

	/* what was read, written back as handoff_save does, reads back */
	if (rc == 0) {
		size_t cap = 64 + c->nhandoffs * (CLUSTER_ID_LEN + 16);

		if ((text = malloc(cap)) == NULL)
			abort();
		len = (size_t)snprintf(text, cap, "%s\n",
		    CLUSTER_HANDOFF_MAGIC);
		for (size_t i = 0; i < c->nhandoffs; i++)
			len += (size_t)snprintf(text + len, cap - len,
			    "%u %u %s\n", c->handoffs[i].first,
			    c->handoffs[i].last, c->handoffs[i].to);
		if (len >= cap)
			abort();
		put(text, len);
		free(text);
		again = node(1);
		if (cluster_handoff_load(again, dir, err, sizeof(err)) != 0) {
			fprintf(stderr, "the pauses as saved are refused: %s\n",
			    err);
			abort();
		}
		if (!same_pauses(c, again) ||
		    memcmp(c->serve, again->serve, sizeof(c->serve)) != 0) {
			fprintf(stderr, "the pauses read back differ\n");
			abort();
		}
		free(again);
	}
	free(bare);
	free(c);
	return 0;
}
