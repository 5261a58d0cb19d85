/*
 * test_cluster_map - the cluster's map (cluster_map.c): a map of three
 * primaries and three replicas parsed and formatted back byte for byte;
 * the canonical form of lines out of order, ranges split and "\r\n"
 * ends; every refusal naming its line; the order of two maps (epoch,
 * then text, the same both ways round); find, slots_of, unowned slots;
 * the seed line (parsed, formatted after the epoch, absent: 0, refused,
 * part of the order); the file kept in data_dir, missing (0) and
 * damaged (-1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster_map.h"
#include "tap.h"

#define P1	"1111111111111111111111111111111111111111"
#define P2	"2222222222222222222222222222222222222222"
#define P3	"3333333333333333333333333333333333333333"
#define R1	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define R2	"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define R3	"cccccccccccccccccccccccccccccccccccccccc"
#define HEAD	CLUSTER_MAP_MAGIC "\nepoch 7\n"

static const char canonical[] =
	HEAD
	"node " P1 " 10.0.0.1 7001 0 -\n"
	"node " P2 " 10.0.0.2 7002 7102 -\n"
	"node " P3 " ::1 7003 0 -\n"
	"node " R1 " 10.0.0.4 7004 0 " P1 "\n"
	"node " R2 " host.example 7005 0 " P2 "\n"
	"node " R3 " 10.0.0.6 65535 65535 " P3 "\n"
	"slots " P1 " 0-5460 9000\n"
	"slots " P2 " 5461-8999 9001-10922\n"
	"slots " P3 " 10923-16383\n";

/* the same map: lines out of order, ranges split, "\r\n" ends */
static const char unordered[] =
	CLUSTER_MAP_MAGIC "\r\n"
	"slots " P3 " 10923-16383\r\n"
	"node " R3 " 10.0.0.6 65535 65535 " P3 "\n"
	"slots " P2 " 9001-10000 5461-8999\n"
	"node " P3 " ::1 7003 0 -\n"
	"node " R1 " 10.0.0.4 7004 0 " P1 "\n"
	"epoch 7\r\n"
	"slots " P1 " 9000 101-5460 0-100\n"
	"node " P2 " 10.0.0.2 7002 7102 -\n"
	"slots " P2 " 10001-10922\n"
	"node " R2 " host.example 7005 0 " P2 "\n"
	"node " P1 " 10.0.0.1 7001 0 -\n";

/* a seed with a leading zero and every hex letter */
#define SEED	"0123456789abcdef"

#define NUL_TEXT	HEAD "node " P1 " h\0 1 0 -\n"
#define ONE	HEAD "node " P1 " h 1 0 -\n"

static const struct {
	const char	*text;
	size_t		 len;		/* 0: strlen */
	const char	*why;
} bad[] = {
	{ "", 0, "line 1: not a seend cluster map" },
	{ "seend-cluster-map 2\nepoch 1\n", 0,
	  "line 1: not a seend cluster map" },
	{ "seend-cluster-map 1 \nepoch 1\n", 0,
	  "line 1: not a seend cluster map" },
	{ HEAD "node 111111111111111111111111111111111111111G h 1 0 -\n", 0,
	  "line 3: node id is not 40 lower-case hex digits" },
	{ HEAD "node AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA h 1 0 -\n", 0,
	  "line 3: node id is not 40 lower-case hex digits" },
	{ HEAD "node 11111 h 1 0 -\n", 0,
	  "line 3: node id is not 40 lower-case hex digits" },
	{ ONE "slots " P1 " 0-3 x\n", 0, "line 4: slots are" },
	{ ONE "node " P2 " h 2 0 -\nslots " P1 " 0-5\nslots " P2 " 6 5\n", 0,
	  "line 6: slot 5 given twice" },
	{ ONE "slots " P1 " 5 5\n", 0, "line 4: slot 5 given twice" },
	{ ONE "slots " P1 " 5-4\n", 0, "line 4: slot range 5-4 runs backwards" },
	{ ONE "slots " P1 " 16384\n", 0, "line 4: slots are" },
	{ ONE "slots " P1 " 0-16384\n", 0, "line 4: slots are" },
	{ ONE "slots " P1 " -5\n", 0, "line 4: slots are" },
	{ ONE "slots " P1 " 05\n", 0, "line 4: slots are" },
	{ ONE "slots " P1 "\n", 0, "line 4: a slots line is" },
	{ ONE "slots " P1 " 1  2\n", 0, "line 4: two spaces" },
	{ ONE "slots " P1 " 1 \n", 0, "line 4: two spaces" },
	{ CLUSTER_MAP_MAGIC "\nepoch 0\n", 0,
	  "line 2: epoch must be 1..9223372036854775807" },
	{ CLUSTER_MAP_MAGIC "\nepoch 9223372036854775808\n", 0,
	  "line 2: epoch must be 1..9223372036854775807" },
	{ CLUSTER_MAP_MAGIC "\nepoch 99999999999999999999999\n", 0,
	  "line 2: epoch must be 1..9223372036854775807" },
	{ CLUSTER_MAP_MAGIC "\nepoch +1\n", 0, "line 2: epoch must be" },
	{ CLUSTER_MAP_MAGIC "\nepoch -1\n", 0, "line 2: epoch must be" },
	{ CLUSTER_MAP_MAGIC "\nepoch 01\n", 0, "line 2: epoch must be" },
	{ CLUSTER_MAP_MAGIC "\nepoch\n", 0, "line 2: epoch must be" },
	{ CLUSTER_MAP_MAGIC "\nepoch 1 2\n", 0, "line 2: epoch must be" },
	{ ONE "epoch 8\n", 0, "line 4: epoch given twice (also on line 2)" },
	{ CLUSTER_MAP_MAGIC "\nnode " P1 " h 1 0 -\n", 0,
	  "line 3: the map ends with no epoch line" },
	{ HEAD, 0, "line 3: the map names no node" },
	{ ONE "slots " P2 " 0-10\n", 0,
	  "line 4: slots of unknown node " P2 },
	{ ONE "node " R1 " h 1 0 " P1 "\nslots " R1 " 7\n", 0,
	  "line 5: slots given to replica " R1 },
	{ ONE "node " R1 " h 1 0 " P2 "\n", 0,
	  "line 4: replica " R1 " names unknown primary " P2 },
	{ ONE "node " R1 " h 1 0 " P1 "\nnode " R2 " h 1 0 " R1 "\n", 0,
	  "line 5: a replica's primary must be a primary" },
	{ ONE "node " R1 " h 1 0 " R1 "\n", 0,
	  "line 4: node " R1 " names itself as its primary" },
	{ ONE "node " P1 " g 2 0 -\n", 0,
	  "line 4: node " P1 " given twice (also on line 3)" },
	{ HEAD "node " P1 " 1234567890123456789012345678901234567890123456789"
	  "01234567890123456789012345678901234567890123456789012345678901234"
	  "56789012345678901234567890123456789012345678901234567890123456789"
	  "01234567890123456789012345678901234567890123456789012345678901234"
	  "56789012345678901234567890 1 0 -\n", 0,
	  "line 3: host is longer than 255 bytes" },
	{ HEAD "node " P1 " h\001st 1 0 -\n", 0,
	  "line 3: a control character (0x01)" },
	{ HEAD "node " P1 " h\tst 1 0 -\n", 0,
	  "line 3: a control character (0x09)" },
	{ HEAD "node " P1 " h\303\251 1 0 -\n", 0,
	  "line 3: host has a byte outside ASCII" },
	{ HEAD "node " P1 " h 0 0 -\n", 0, "line 3: port must be 1..65535" },
	{ HEAD "node " P1 " h 65536 0 -\n", 0,
	  "line 3: port must be 1..65535" },
	{ HEAD "node " P1 " h +80 0 -\n", 0, "line 3: port must be" },
	{ HEAD "node " P1 " h 080 0 -\n", 0, "line 3: port must be" },
	{ HEAD "node " P1 " h 1 65536 -\n", 0,
	  "line 3: tls-port must be 0 (none) or 1..65535" },
	{ HEAD "node " P1 " h 1 -1 -\n", 0, "line 3: tls-port must be" },
	{ HEAD "node " P1 " h 1 0 x\n", 0, "line 3: primary is neither" },
	{ HEAD "node " P1 " h 1 0\n", 0, "line 3: a node line is" },
	{ HEAD "node " P1 " h 1 0 - x\n", 0, "line 3: a node line is" },
	{ HEAD "node " P1 "  h 1 0 -\n", 0, "line 3: a node line is" },
	{ HEAD "node\n", 0, "line 3: a node line is" },
	{ HEAD " node " P1 " h 1 0 -\n", 0, "line 3: a space at the start" },
	{ HEAD "\n", 0, "line 3: an empty line" },
	{ HEAD "\r\n", 0, "line 3: an empty line" },
	{ HEAD "nodes " P1 " h 1 0 -\n", 0,
	  "line 3: not an epoch, seed, node or slots line" },
	{ HEAD "node " P1 " h 1 0 -", 0, "line 3: no newline at the end" },
	{ HEAD "node " P1 " h 1 0 -\r", 0, "line 3: no newline at the end" },
	{ HEAD "node " P1 " h 1 0 -\r\r\n", 0,
	  "line 3: a control character (0x0d)" },
	{ NUL_TEXT, sizeof(NUL_TEXT) - 1, "line 3: a NUL byte" },
	{ HEAD "seed " SEED "\nseed " SEED "\n", 0,
	  "line 4: seed given twice (also on line 3)" },
	{ HEAD "seed " SEED "\nnode " P1 " h 1 0 -\nseed 1111111111111111\n",
	  0, "line 5: seed given twice (also on line 3)" },
	{ HEAD "seed 0123456789abcde\n", 0,
	  "line 3: seed must be 16 lower-case hex digits" },
	{ HEAD "seed 0123456789abcdef0\n", 0,
	  "line 3: seed must be 16 lower-case hex digits" },
	{ ONE "seed 0123456789ABCDEF\n", 0,
	  "line 4: seed must be 16 lower-case hex digits" },
	{ ONE "seed 0123456789abcdeF\n", 0,
	  "line 4: seed must be 16 lower-case hex digits" },
	{ ONE "seed 0123456789abcdeg\n", 0,
	  "line 4: seed must be 16 lower-case hex digits" },
	{ ONE "seed 0x23456789abcdef\n", 0,
	  "line 4: seed must be 16 lower-case hex digits" },
	{ ONE "seed -123456789abcdef\n", 0,
	  "line 4: seed must be 16 lower-case hex digits" },
	{ ONE "seed\n", 0, "line 4: seed must be 16 lower-case hex digits" },
	{ ONE "seed \n", 0, "line 4: seed must be 16 lower-case hex digits" },
	{ ONE "seed  " SEED "\n", 0,
	  "line 4: seed must be 16 lower-case hex digits" },
	{ ONE "seed " SEED " \n", 0,
	  "line 4: seed must be 16 lower-case hex digits" },
	{ ONE "seed " SEED " 1\n", 0,
	  "line 4: seed must be 16 lower-case hex digits" },
	{ ONE "seed 0000000000000000\n", 0, "line 4: seed must not be zero" },
	{ HEAD "seed 0000000000000000\nnode " P1 " h 1 0 -\n", 0,
	  "line 3: seed must not be zero" },
};

static int
parse(const char *text, struct cluster_map *m, char *err, size_t errlen)
{
	return cluster_map_parse(text, strlen(text), m, err, errlen);
}

static void
test_round_trip(void)
{
	struct cluster_map	 m, m2;
	char			 err[512], *t;
	size_t			 len;
	int			 r;

	r = parse(canonical, &m, err, sizeof(err));
	ok(r == 0, "the canonical map parses%s%s", r ? ": " : "",
	    r ? err : "");
	if (r != 0)
		return;
	ok(m.epoch == 7 && m.nnodes == 6, "epoch 7, 6 nodes");
	ok(strcmp(m.nodes[0].id, P1) == 0 && strcmp(m.nodes[5].id, R3) == 0,
	    "nodes ascending by id");
	ok(strcmp(m.nodes[2].host, "::1") == 0 && m.nodes[2].port == 7003 &&
	    m.nodes[1].tls_port == 7102 && m.nodes[5].port == 65535 &&
	    m.nodes[5].tls_port == 65535, "hosts and ports");
	ok(m.nodes[0].primary == -1 && m.nodes[3].primary == 0 &&
	    m.nodes[4].primary == 1 && m.nodes[5].primary == 2,
	    "each replica's primary index");
	ok(m.owner[0] == 0 && m.owner[5460] == 0 && m.owner[5461] == 1 &&
	    m.owner[9000] == 0 && m.owner[9001] == 1 && m.owner[16383] == 2,
	    "slot owners");
	t = cluster_map_format(&m, &len);
	ok(t != NULL && len == strlen(canonical) &&
	    strcmp(t, canonical) == 0, "formats back byte for byte");
	if (t != NULL && strcmp(t, canonical) != 0)
		diag("got:\n%s", t);
	free(t);

	ok(cluster_map_find(&m, P2) == 1 && cluster_map_find(&m, R3) == 5 &&
	    cluster_map_find(&m, P1) == 0, "find");
	ok(cluster_map_find(&m, "0000000000000000000000000000000000000000")
	    == -1 && cluster_map_find(&m,
	    "ffffffffffffffffffffffffffffffffffffffff") == -1,
	    "find of an unknown id: -1");
	ok(cluster_map_slots_of(&m, 0) == 5462 &&
	    cluster_map_slots_of(&m, 1) == 5461 &&
	    cluster_map_slots_of(&m, 2) == 5461, "slots_of the primaries");
	ok(cluster_map_slots_of(&m, 3) == 0 && cluster_map_slots_of(&m, -1)
	    == 0 && cluster_map_slots_of(&m, 6) == 0,
	    "slots_of a replica, and of no node: 0");

	ok(cluster_map_copy(&m2, &m) == 0 && m2.nodes != m.nodes &&
	    cluster_map_compare(&m, &m2) == 0, "a copy compares equal");
	cluster_map_free(&m2);
	ok(m2.nodes == NULL && m2.nnodes == 0, "free empties the map");
	cluster_map_free(&m);
}

static void
test_canonical(void)
{
	struct cluster_map	 m;
	char			 err[512], *t;
	int			 r;

	r = parse(unordered, &m, err, sizeof(err));
	ok(r == 0, "lines out of order, ranges split, \\r\\n parse%s%s",
	    r ? ": " : "", r ? err : "");
	if (r != 0)
		return;
	t = cluster_map_format(&m, NULL);
	ok(t != NULL && strcmp(t, canonical) == 0,
	    "... and format canonically");
	if (t != NULL && strcmp(t, canonical) != 0)
		diag("got:\n%s", t);
	free(t);
	cluster_map_free(&m);

	r = parse(ONE "slots " P1 " 7 5-6 9-9 11 10 100-16383\n", &m, err,
	    sizeof(err));
	t = r == 0 ? cluster_map_format(&m, NULL) : NULL;
	ok(t != NULL && strcmp(t, ONE "slots " P1 " 5-7 9-11 100-16383\n")
	    == 0, "ranges merged, single slots as \"a\"");
	ok(r == 0 && m.owner[0] == CLUSTER_NO_NODE && m.owner[8] ==
	    CLUSTER_NO_NODE && m.owner[99] == CLUSTER_NO_NODE &&
	    m.owner[5] == 0 && m.owner[16383] == 0,
	    "CLUSTER_NO_NODE for unowned slots");
	free(t);
	cluster_map_free(&m);

	r = parse(ONE, &m, err, sizeof(err));
	t = r == 0 ? cluster_map_format(&m, NULL) : NULL;
	ok(t != NULL && strcmp(t, ONE) == 0 &&
	    cluster_map_slots_of(&m, 0) == 0,
	    "a map with no slots has no slots line");
	free(t);
	cluster_map_free(&m);
}

static void
test_errors(void)
{
	struct cluster_map	 m;
	char			 err[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t	 len = bad[i].len ? bad[i].len : strlen(bad[i].text);
		int	 r;

		memset(err, 0, sizeof(err));
		m.nnodes = 99;
		r = cluster_map_parse(bad[i].text, len, &m, err, sizeof(err));
		ok(r == -1 && strncmp(err, bad[i].why, strlen(bad[i].why)) == 0
		    && m.nodes == NULL && m.nnodes == 0,
		    "refused: %s", bad[i].why);
		if (r != -1 || strncmp(err, bad[i].why, strlen(bad[i].why)))
			diag("got %d \"%s\"", r, err);
		if (r == 0)
			cluster_map_free(&m);
	}
}

/* A map of n nodes, n > CLUSTER_MAP_MAX_NODES refused. */
static void
test_limits(void)
{
	struct cluster_map	 m;
	char			 err[512], *text, *p;
	size_t			 cap = 64 + 1001 * 80;
	int			 r;

	text = malloc(cap);
	p = text + sprintf(text, "%s", HEAD);
	for (int i = 0; i < CLUSTER_MAP_MAX_NODES; i++)
		p += sprintf(p, "node %040x h 1 0 -\n", i);
	r = cluster_map_parse(text, (size_t)(p - text), &m, err, sizeof(err));
	ok(r == 0 && m.nnodes == CLUSTER_MAP_MAX_NODES,
	    "%d nodes parse", CLUSTER_MAP_MAX_NODES);
	cluster_map_free(&m);
	p += sprintf(p, "node %040x h 1 0 -\n", CLUSTER_MAP_MAX_NODES);
	r = cluster_map_parse(text, (size_t)(p - text), &m, err, sizeof(err));
	ok(r == -1 && strcmp(err, "line 1003: more than 1000 nodes") == 0,
	    "one more is refused: %s", err);
	free(text);

	text = calloc(1, CLUSTER_MAP_MAX_TEXT + 1);
	memcpy(text, ONE, strlen(ONE));
	r = cluster_map_parse(text, CLUSTER_MAP_MAX_TEXT + 1, &m, err,
	    sizeof(err));
	ok(r == -1 && strstr(err, "longer than") != NULL,
	    "a text longer than CLUSTER_MAP_MAX_TEXT: %s", err);
	free(text);

	/* every slot a range of its own, alternating owners: the longest
	 * slots lines */
	{
		size_t	 tl = 64 + 2 * 48 + 2 * 100 + CLUSTER_SLOTS * 7;
		char	*q, *t;
		size_t	 len;

		text = malloc(tl);
		q = text + sprintf(text, "%snode %s h 1 0 -\nnode %s h 1 0 -\n",
		    HEAD, P1, P2);
		for (int who = 0; who < 2; who++) {
			q += sprintf(q, "slots %s", who ? P2 : P1);
			for (int s = who; s < CLUSTER_SLOTS; s += 2)
				q += sprintf(q, " %d", s);
			*q++ = '\n';
		}
		r = cluster_map_parse(text, (size_t)(q - text), &m, err,
		    sizeof(err));
		t = r == 0 ? cluster_map_format(&m, &len) : NULL;
		ok(t != NULL && len == (size_t)(q - text) &&
		    memcmp(t, text, len) == 0,
		    "16384 single slots, alternating: round trip");
		free(t);
		cluster_map_free(&m);
		free(text);
	}
}

static void
test_compare(void)
{
	struct cluster_map	 a, b, c;
	char			 err[512];

	parse(ONE "slots " P1 " 0-10\n", &a, err, sizeof(err));
	parse(ONE "slots " P1 " 0-9\n", &b, err, sizeof(err));
	parse(CLUSTER_MAP_MAGIC "\nepoch 8\nnode " P1 " h 1 0 -\n", &c, err,
	    sizeof(err));
	ok(cluster_map_compare(&c, &a) > 0 && cluster_map_compare(&a, &c) < 0,
	    "the higher epoch wins, whatever the text");
	ok(cluster_map_compare(&a, &b) != 0 &&
	    cluster_map_compare(&a, &b) == -cluster_map_compare(&b, &a),
	    "same epoch: ordered by text, the same both ways round");
	/* "0-10\n" > "0-9\n" bytewise? '1' < '9': b wins */
	ok(cluster_map_compare(&b, &a) > 0, "the greater text wins");
	ok(cluster_map_compare(&a, &a) == 0, "a map against itself: 0");
	cluster_map_free(&a);
	cluster_map_free(&b);

	/* one text a prefix of the other: the longer wins */
	parse(ONE, &a, err, sizeof(err));
	parse(ONE "slots " P1 " 0\n", &b, err, sizeof(err));
	ok(cluster_map_compare(&b, &a) > 0 && cluster_map_compare(&a, &b) < 0,
	    "a text that extends the other wins");
	cluster_map_free(&a);
	cluster_map_free(&b);
	cluster_map_free(&c);
}

/*
 * The seed line: parsed into m.seed (all 64 bits), formatted right after
 * the epoch line as 16 lower-case digits whatever line it was on, absent
 * 0 and no line; a copy, a save and a load keep it; two maps that differ
 * only in it are different maps, ordered the same both ways round.
 */
static void
test_seed(void)
{
	static const char seeded[] =
	    HEAD "seed " SEED "\n"
	    "node " P1 " h 1 0 -\n"
	    "node " R1 " h 2 0 " P1 "\n"
	    "slots " P1 " 0-16383\n";
	/* the same map, the seed line last and "\r\n" ends */
	static const char seed_last[] =
	    CLUSTER_MAP_MAGIC "\r\n"
	    "node " R1 " h 2 0 " P1 "\r\n"
	    "epoch 7\r\n"
	    "slots " P1 " 0-16383\r\n"
	    "node " P1 " h 1 0 -\r\n"
	    "seed " SEED "\r\n";
	static const char seed_first[] =
	    CLUSTER_MAP_MAGIC "\n"
	    "seed " SEED "\n"
	    "slots " P1 " 0-16383\n"
	    "node " R1 " h 2 0 " P1 "\n"
	    "node " P1 " h 1 0 -\n"
	    "epoch 7\n";
	static const char unseeded[] =
	    HEAD
	    "node " P1 " h 1 0 -\n"
	    "node " R1 " h 2 0 " P1 "\n"
	    "slots " P1 " 0-16383\n";
	struct cluster_map	 m, m2, m3;
	char			 err[1024], *t;
	char			 dir[] = "/tmp/seend-cluster-seed-XXXXXX";
	int			 r;

	r = parse(seeded, &m, err, sizeof(err));
	ok(r == 0 && m.seed == 0x0123456789abcdefULL && m.epoch == 7 &&
	    m.nnodes == 2, "seed " SEED " parses into m.seed%s%s",
	    r ? ": " : "", r ? err : "");
	if (r != 0)
		return;
	t = cluster_map_format(&m, NULL);
	ok(t != NULL && strcmp(t, seeded) == 0,
	    "formats back byte for byte: \"seed %%016llx\" after the epoch");
	if (t != NULL && strcmp(t, seeded) != 0)
		diag("got:\n%s", t);
	free(t);

	r = parse(seed_last, &m2, err, sizeof(err));
	t = r == 0 ? cluster_map_format(&m2, NULL) : NULL;
	ok(t != NULL && m2.seed == m.seed && strcmp(t, seeded) == 0,
	    "the seed line last, \"\\r\\n\" ends: the same seed, formatted "
	    "after the epoch%s%s", r ? ": " : "", r ? err : "");
	free(t);
	ok(r == 0 && cluster_map_compare(&m, &m2) == 0 &&
	    cluster_map_compare(&m2, &m) == 0, "... and the same map");
	if (r == 0)
		cluster_map_free(&m2);
	r = parse(seed_first, &m2, err, sizeof(err));
	t = r == 0 ? cluster_map_format(&m2, NULL) : NULL;
	ok(t != NULL && m2.seed == m.seed && strcmp(t, seeded) == 0,
	    "the seed line before the epoch's: formatted after it%s%s",
	    r ? ": " : "", r ? err : "");
	free(t);
	if (r == 0)
		cluster_map_free(&m2);

	/* all 64 bits, and the zeros in front kept */
	r = parse(HEAD "seed ffffffffffffffff\nnode " P1 " h 1 0 -\n", &m2,
	    err, sizeof(err));
	t = r == 0 ? cluster_map_format(&m2, NULL) : NULL;
	ok(t != NULL && m2.seed == UINT64_MAX && strcmp(t, HEAD
	    "seed ffffffffffffffff\nnode " P1 " h 1 0 -\n") == 0,
	    "seed ffffffffffffffff: every bit, and back");
	free(t);
	if (r == 0)
		cluster_map_free(&m2);
	r = parse(HEAD "seed 0000000000000001\nnode " P1 " h 1 0 -\n", &m2,
	    err, sizeof(err));
	t = r == 0 ? cluster_map_format(&m2, NULL) : NULL;
	ok(t != NULL && m2.seed == 1 && strcmp(t, HEAD
	    "seed 0000000000000001\nnode " P1 " h 1 0 -\n") == 0,
	    "seed 0000000000000001: 1, formatted with its 15 zeros");
	free(t);
	if (r == 0)
		cluster_map_free(&m2);

	/* none */
	r = parse(unseeded, &m2, err, sizeof(err));
	t = r == 0 ? cluster_map_format(&m2, NULL) : NULL;
	ok(t != NULL && m2.seed == 0 && strcmp(t, unseeded) == 0 &&
	    strstr(t, "seed") == NULL, "no seed line: seed 0, and none "
	    "formatted");
	free(t);

	/* differing only in the seed */
	ok(r == 0 && cluster_map_compare(&m, &m2) != 0 &&
	    cluster_map_compare(&m, &m2) == -cluster_map_compare(&m2, &m),
	    "a map with a seed and the same without: different maps, the "
	    "same order both ways round");
	if (r == 0)
		cluster_map_free(&m2);
	r = parse(HEAD "seed 0123456789abcdee\n"
	    "node " P1 " h 1 0 -\n"
	    "node " R1 " h 2 0 " P1 "\n"
	    "slots " P1 " 0-16383\n", &m2, err, sizeof(err));
	ok(r == 0 && cluster_map_compare(&m, &m2) > 0 &&
	    cluster_map_compare(&m2, &m) < 0,
	    "two seeds, the rest the same: different maps, the greater "
	    "seed's text wins both ways round");
	if (r == 0)
		cluster_map_free(&m2);

	/* kept by a copy, a save and a load */
	ok(cluster_map_copy(&m2, &m) == 0 && m2.seed == m.seed &&
	    cluster_map_compare(&m2, &m) == 0, "a copy keeps the seed");
	cluster_map_free(&m2);
	if (mkdtemp(dir) == NULL) {
		ok(0, "mkdtemp");
	} else {
		r = cluster_map_save(dir, &m, err, sizeof(err)) == 0 ?
		    cluster_map_load(dir, &m3, err, sizeof(err)) : -1;
		ok(r == 1 && m3.seed == m.seed &&
		    cluster_map_compare(&m3, &m) == 0,
		    "saved and loaded: the same seed (%d)", r);
		if (r == 1)
			cluster_map_free(&m3);
		snprintf(err, sizeof(err), "%s/%s", dir, CLUSTER_MAP_FILE);
		unlink(err);
		rmdir(dir);
	}
	cluster_map_free(&m);
}

static void
test_file(void)
{
	char			 dir[] = "/tmp/seend-cluster-map-XXXXXX";
	char			 err[1024], path[600], *t;
	struct cluster_map	 m, m2;
	FILE			*fp;
	int			 r;

	if (mkdtemp(dir) == NULL) {
		ok(0, "mkdtemp");
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, CLUSTER_MAP_FILE);
	m2.nnodes = 5;
	ok(cluster_map_load(dir, &m2, err, sizeof(err)) == 0 &&
	    m2.nnodes == 0 && m2.nodes == NULL, "no file: 0, an empty map");

	parse(canonical, &m, err, sizeof(err));
	r = cluster_map_save(dir, &m, err, sizeof(err));
	ok(r == 0, "save%s%s", r ? ": " : "", r ? err : "");
	r = cluster_map_load(dir, &m2, err, sizeof(err));
	ok(r == 1 && cluster_map_compare(&m, &m2) == 0,
	    "load reads back the map saved (%d)", r);
	t = r == 1 ? cluster_map_format(&m2, NULL) : NULL;
	ok(t != NULL && strcmp(t, canonical) == 0, "... as its text");
	free(t);
	cluster_map_free(&m2);
	cluster_map_free(&m);
	snprintf(err, sizeof(err), "%s/.%s.tmp", dir, CLUSTER_MAP_FILE);
	ok(access(err, F_OK) == -1, "no temporary file left");

	/* a torn file: the last line cut */
	fp = fopen(path, "w");
	fwrite(canonical, 1, strlen(canonical) - 5, fp);
	fclose(fp);
	r = cluster_map_load(dir, &m2, err, sizeof(err));
	ok(r == -1 && strstr(err, "cluster-map: line 11: ") != NULL &&
	    m2.nodes == NULL, "a damaged file: -1 (%s)", err);

	fp = fopen(path, "w");
	fputs(HEAD "node " P1 " h 1 0 -\nslots " P2 " 1\n", fp);
	fclose(fp);
	r = cluster_map_load(dir, &m2, err, sizeof(err));
	ok(r == -1 && strstr(err, "cluster-map: line 4: slots of unknown") !=
	    NULL, "a file that does not parse: -1 (%s)", err);

	unlink(path);
	rmdir(dir);
	ok(cluster_map_save(dir, &m, err, sizeof(err)) == -1 && err[0] != '\0',
	    "save into a missing directory: -1 (%s)", err);
}

int
main(void)
{
	test_round_trip();
	test_canonical();
	test_errors();
	test_limits();
	test_compare();
	test_seed();
	test_file();
	return done_testing();
}
