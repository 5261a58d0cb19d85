/*
 * test_cluster - a cluster node's pieces (cluster.c): CRC16/XMODEM and
 * the key slot with hash tags, against what redis-server 7.0.15's
 * CLUSTER KEYSLOT answers; the node ID made once, kept in data_dir and
 * read back; a file that holds no ID refused and left as it is; the
 * announced address from announce or listen.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster.h"
#include "config.h"
#include "filter.h"
#include "tap.h"

static char dir[] = "/tmp/seend-cluster-XXXXXX";

static const struct {
	const char	*key;
	unsigned	 slot;
} slots[] = {
	/* CLUSTER KEYSLOT of redis-server 7.0.15 in cluster mode */
	{ "123456789", 12739 },
	{ "foo", 12182 },
	{ "bar", 5061 },
	{ "{user1000}.following", 3443 },
	{ "{user1000}.followers", 3443 },
	{ "foo{}{bar}", 8363 },
	{ "foo{{bar}}zap", 4015 },
	{ "foo{bar}{zap}", 5061 },
	{ "{", 4092 },
	{ "}", 12090 },
	{ "{}", 15257 },
	{ "a{b", 13340 },
	{ "a}b{c}", 7365 },
	{ "{a}", 15495 },
	{ "https://example.com/path?q=1", 1234 },
	{ "", 0 },
};

static struct config *
config_for(const char *extra)
{
	char text[1024];

	snprintf(text, sizeof(text), "[server]\ndata_dir = %s\n%s", dir,
	    extra);
	return config_load_string(text, "test", NULL);
}

/* CRC16/XMODEM a bit at a time: what every faster way must equal. */
static uint16_t
crc16_bits(const unsigned char *b, size_t len)
{
	uint16_t crc = 0;

	for (size_t i = 0; i < len; i++) {
		crc ^= (uint16_t)(b[i] << 8);
		for (int k = 0; k < 8; k++)
			crc = crc & 0x8000 ? (uint16_t)(crc << 1) ^ 0x1021 :
			    (uint16_t)(crc << 1);
	}
	return crc;
}

/* Redis's keyHashSlot, written plainly over crc16_bits. */
static unsigned
slot_ref(const unsigned char *k, size_t len)
{
	size_t s, e;

	for (s = 0; s < len && k[s] != '{'; s++)
		;
	if (s < len) {
		for (e = s + 1; e < len && k[e] != '}'; e++)
			;
		if (e < len && e != s + 1)
			return crc16_bits(k + s + 1, e - s - 1) &
			    (KEYSLOT_COUNT - 1);
	}
	return crc16_bits(k, len) & (KEYSLOT_COUNT - 1);
}

/* Every length to 300, random bytes, a "{" and a "}" now and then (a
 * long key with a tag leaves the folding path for the tag's CRC): the
 * tables and the folding (32 bytes and up, where the CPU has it) against
 * the bitwise CRC and Redis's slot. */
static void
crc16_every_length(void)
{
	unsigned char	 b[300];
	uint64_t	 x = 0x9e3779b97f4a7c15u;
	int		 bad_crc = 0, bad_slot = 0;

	for (size_t len = 0; len <= sizeof(b); len++)
		for (int round = 0; round < 20; round++) {
			unsigned want;

			for (size_t i = 0; i < len; i++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				b[i] = (unsigned char)(x >> 24);
				/* one round in four: a brace in ~16 bytes */
				if (round % 4 == 1 && (x >> 8) % 16 == 0)
					b[i] = (x >> 12) & 1 ? '{' : '}';
			}
			if (keyslot_crc16(b, len) != crc16_bits(b, len))
				bad_crc++;
			want = slot_ref(b, len);
			if (keyslot_of((const char *)b, len) != want)
				bad_slot++;
		}
	ok(bad_crc == 0, "CRC16 of 6,020 random keys of 0 to 300 bytes as "
	    "the bitwise CRC (%d differ)", bad_crc);
	ok(bad_slot == 0, "their slots as Redis's keyHashSlot, hash tags "
	    "included (%d differ)", bad_slot);
}

/* A partitioned filter's seed after a reset: the same for the same seed
 * (every node arrives at one), never the seed itself, of the partitioned
 * layout's low bits, and a chain that does not come back soon. A value
 * fixed here, so that a change of the derivation (nodes of two versions
 * would part) fails the test. */
static void
next_seed(void)
{
	uint64_t	 s = filter_new_seed(1), chain[64];
	int		 bad = 0;

	ok(filter_next_seed(s) == filter_next_seed(s) &&
	    filter_next_seed(s) != s, "the next seed of %016llx is one, and "
	    "not itself", (unsigned long long)s);
	chain[0] = 0x0123456789ab0000ULL | FILTER_SEED_SLOTS;
	for (int i = 1; i < 64; i++) {
		chain[i] = filter_next_seed(chain[i - 1]);
		bad += (chain[i] & 0xffff) != FILTER_SEED_SLOTS;
		for (int j = 0; j < i; j++)
			bad += chain[j] == chain[i];
	}
	ok(bad == 0, "64 resets: 64 seeds, each of the partitioned layout "
	    "(%d wrong)", bad);
	ok(chain[1] == 0x1f6c5d16831f5107ULL, "the next of %016llx is %016llx",
	    (unsigned long long)chain[0], (unsigned long long)chain[1]);
}

int
main(void)
{
	struct config	*cfg;
	struct cluster	*c, *c2;
	char		 err[1024], path[600], id[CLUSTER_ID_LEN + 1];
	FILE		*fp;

	ok(keyslot_crc16("123456789", 9) == 0x31c3,
	    "CRC16/XMODEM of \"123456789\" is 0x31c3");
	crc16_every_length();
	next_seed();
	for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++)
		ok(keyslot_of(slots[i].key, strlen(slots[i].key)) ==
		    slots[i].slot, "KEYSLOT \"%s\" is %u (got %u)",
		    slots[i].key, slots[i].slot,
		    keyslot_of(slots[i].key, strlen(slots[i].key)));
	/* long keys with a tag: the folding path must see the "{" */
	{
		const char *k1 = "{user1000}aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
		const char *k2 = "https://example.com/a/very/long/path?q={x}";

		ok(keyslot_of(k1, strlen(k1)) == keyslot_of("user1000", 8),
		    "a %zu-byte key's tag {user1000} routes it", strlen(k1));
		ok(keyslot_of(k2, strlen(k2)) == keyslot_of("x", 1),
		    "a tag near the end of a %zu-byte key routes it",
		    strlen(k2));
	}
	/* bytes past a NUL count: the key is what the client sent */
	ok(keyslot_of("a\0b", 3) != keyslot_of("a", 1),
	    "a key's bytes after a NUL count");
	ok(cluster_id_valid("0123456789abcdef0123456789abcdef01234567", 40),
	    "40 lower-case hex digits are a node ID");
	ok(!cluster_id_valid("0123456789ABCDEF0123456789abcdef01234567", 40),
	    "upper case is not");
	ok(!cluster_id_valid("0123456789abcdef", 16), "16 digits are not");

	if (mkdtemp(dir) == NULL)
		return 1;
	cfg = config_for("listen = 127.0.0.1:7001\n[cluster]\nenabled = on\n");
	ok(cfg != NULL && cfg->cluster_enabled, "[cluster] enabled = on");
	c = cluster_open(cfg, err, sizeof(err));
	ok(c != NULL && cluster_id_valid(c->myid, strlen(c->myid)),
	    "a first start makes an ID (%s)", c ? c->myid : err);
	ok(c != NULL && strcmp(c->host, "127.0.0.1") == 0 && c->port == 7001,
	    "announced at listen's address");
	snprintf(path, sizeof(path), "%s/%s", dir, CLUSTER_ID_FILE);
	fp = fopen(path, "r");
	ok(fp != NULL && fgets(id, sizeof(id), fp) != NULL && c != NULL &&
	    strcmp(id, c->myid) == 0, "the ID is in data_dir/%s",
	    CLUSTER_ID_FILE);
	if (fp != NULL)
		fclose(fp);
	c2 = cluster_open(cfg, err, sizeof(err));
	ok(c != NULL && c2 != NULL && strcmp(c->myid, c2->myid) == 0,
	    "the next start reads the same ID");
	cluster_free(c2);
	config_free(cfg);

	cfg = config_for("listen = 0.0.0.0:7002\n[cluster]\nenabled = on\n");
	c2 = cluster_open(cfg, err, sizeof(err));
	ok(c2 != NULL && c2->host[0] == '\0' && c2->port == 7002,
	    "a wildcard listen announces no host, as Redis");
	cluster_free(c2);
	config_free(cfg);
	cfg = config_for("[cluster]\nenabled = on\nannounce = [::1]:7003\n");
	c2 = cluster_open(cfg, err, sizeof(err));
	ok(c2 != NULL && strcmp(c2->host, "::1") == 0 && c2->port == 7003,
	    "announce wins over listen");
	cluster_free(c2);
	config_free(cfg);
	ok(config_for("[cluster]\nannounce = nope\n") == NULL,
	    "a bad announce is a config error");
	ok(config_for("[cluster]\nenabled = maybe\n") == NULL,
	    "enabled takes on or off");
	ok(config_for("[cluster]\nfoo = 1\n") == NULL,
	    "an unknown [cluster] key is an error");

	cfg = config_for("");
	ok(cfg != NULL && !cfg->cluster_enabled, "cluster mode is off by "
	    "default");
	fp = fopen(path, "w");
	fputs("not an id\n", fp);
	fclose(fp);
	c2 = cluster_open(cfg, err, sizeof(err));
	ok(c2 == NULL && strstr(err, "holds no cluster node ID") != NULL,
	    "a damaged ID file is refused: %s", err);
	fp = fopen(path, "r");
	ok(fp != NULL && fgets(id, sizeof(id), fp) != NULL &&
	    strncmp(id, "not an id", 9) == 0, "and left as it is");
	if (fp != NULL)
		fclose(fp);
	config_free(cfg);
	cluster_free(c);
	unlink(path);
	rmdir(dir);
	return done_testing();
}
