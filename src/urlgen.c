/*
 * urlgen.c - realistic benchmark URLs; see urlgen.h.
 *
 * Every choice comes from a splitmix64 stream seeded by (seed, index), so no
 * state is shared and any URL can be made on its own. Hosts come from a
 * virtual set of URLGEN_HOSTS names, each itself derived from (seed, host
 * number); the host number is drawn log-uniformly, which gives the 1/rank
 * (Zipf) popularity seen in crawl logs.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "urlgen.h"

#define URLGEN_HOSTS	50000
#define ID_BITS		40
#define ID_MASK		((1ULL << ID_BITS) - 1)

static const char *const words[] = {
	"about", "account", "news", "blog", "article", "story", "world",
	"sports", "business", "tech", "science", "health", "travel", "food",
	"video", "photos", "gallery", "review", "reviews", "product",
	"products", "shop", "store", "category", "tag", "tags", "author",
	"user", "users", "profile", "search", "help", "support", "docs",
	"wiki", "forum", "thread", "post", "posts", "page", "pages", "archive",
	"events", "music", "movies", "games", "books", "education", "jobs",
	"careers", "press", "media", "download", "downloads", "release",
	"releases", "project", "projects", "open", "source", "data", "report",
	"market", "finance", "money", "politics", "opinion", "culture",
	"style", "fashion", "home", "garden", "auto", "cars", "real",
	"estate", "local", "national", "international", "weather", "climate",
	"energy", "china", "europe", "africa", "asia", "america", "london",
	"paris", "berlin", "tokyo", "city", "state", "league", "football",
	"soccer", "tennis", "golf", "olympics", "election", "covid",
	"vaccine", "market", "stock", "crypto", "bitcoin", "startup", "cloud",
	"security", "privacy", "linux", "android", "apple", "google",
	"windows", "mobile", "phone", "laptop", "camera", "deal", "deals",
	"sale", "coupon", "guide", "how", "to", "best", "top", "new",
	"latest", "first", "last", "year", "week", "day", "live", "update",
	"first", "look", "inside", "why", "what", "when", "the", "of", "and",
	"for", "with", "in", "on", "a", "is", "are", "after", "over", "under",
	"big", "small", "green", "red", "blue", "black", "white", "free",
	"easy", "quick", "simple", "recipe", "recipes", "chicken", "pasta",
	"coffee", "wine", "beer", "hotel", "hotels", "flights", "beach",
	"mountain", "river", "lake", "park", "museum", "art", "design",
	"photo", "image", "images", "static", "assets", "content", "en",
	"de", "fr", "es", "us", "uk", "index", "view", "detail", "details",
	"item", "items", "listing", "listings", "catalog", "collections",
	"shoes", "dress", "jacket", "watch", "kids", "women", "men", "baby",
};
#define NWORDS	(sizeof(words) / sizeof(words[0]))

static const char *const subdomains[] = {
	"blog", "news", "m", "shop", "en", "de", "support", "docs", "forum",
	"store", "mail", "static", "cdn", "api", "app", "community",
};
#define NSUBDOMAINS	(sizeof(subdomains) / sizeof(subdomains[0]))

/* Roughly the shares of the web: .com first, then a long tail. */
static const char *const tlds[] = {
	"com", "com", "com", "com", "com", "com", "com", "com", "com", "com",
	"org", "org", "net", "net", "de", "co.uk", "io", "fr", "jp", "ru",
	"info", "edu", "nl", "it", "com.br", "ca", "au", "es", "pl", "in",
};
#define NTLDS	(sizeof(tlds) / sizeof(tlds[0]))

static const char *const query_keys[] = {
	"utm_source", "utm_medium", "utm_campaign", "ref", "page", "sort",
	"lang", "q", "id", "session", "color", "size", "variant", "from",
};
#define NQUERY_KEYS	(sizeof(query_keys) / sizeof(query_keys[0]))

static uint64_t
splitmix64(uint64_t *s)
{
	uint64_t	 z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t
below(uint64_t *s, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)splitmix64(s) * n) >> 64);
}

/* Percent chance. */
static int
chance(uint64_t *s, unsigned pct)
{
	return below(s, 100) < pct;
}

/* A bounded writer: keeps counting past cap so the caller learns the
 * length, as snprintf does. */
struct out {
	char	*buf;
	size_t	 cap;
	size_t	 len;
};

static void
put(struct out *o, const char *s, size_t n)
{
	if (o->len < o->cap) {
		size_t	 room = o->cap - o->len;

		memcpy(o->buf + o->len, s, n < room ? n : room);
	}
	o->len += n;
}

static void
puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void
putnum(struct out *o, uint64_t v)
{
	char	 tmp[24];
	int	 i = (int)sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	put(o, tmp + i, sizeof(tmp) - (size_t)i);
}

static void
putword(struct out *o, uint64_t *s)
{
	puts_(o, words[below(s, NWORDS)]);
}

/* Host number h of the virtual host set: "www.greenriver.com" and the like. */
static void
puthost(struct out *o, uint64_t seed, uint64_t h)
{
	uint64_t	 s = seed ^ (h * 0xd6e8feb86659fd93ULL) ^
			    0x686f737473ULL;	/* "hosts" */
	uint64_t	 r = below(&s, 100);

	if (r < 45)
		puts_(o, "www.");
	else if (r < 70) {
		puts_(o, subdomains[below(&s, NSUBDOMAINS)]);
		put(o, ".", 1);
	}
	putword(o, &s);
	r = below(&s, 100);
	if (r < 40)
		putword(o, &s);
	else if (r < 55) {
		put(o, "-", 1);
		putword(o, &s);
	} else if (r < 70)
		putnum(o, below(&s, 1000));
	/* The host number keeps names distinct where words repeat. */
	if (h >= 2000)
		putnum(o, h);
	put(o, ".", 1);
	puts_(o, tlds[below(&s, NTLDS)]);
}

/* A bijection on ID_BITS bits: the document id that makes URLs distinct. */
static uint64_t
doc_id(uint64_t seed, uint64_t index)
{
	uint64_t	 x = (index ^ seed) & ID_MASK;

	x = (x * 0x9e3779b97f4a7c15ULL) & ID_MASK;
	x ^= x >> 17;
	x = (x * 0xbf58476d1ce4e5b9ULL) & ID_MASK;
	x ^= x >> 19;
	/* Keep ids 6 to 13 digits, like real ones, without breaking the
	 * bijection: shift the range rather than fold it. */
	return x + 100000;
}

/*
 * The last path segment carries the id in one of four shapes. Words hold no
 * digits, so the id can always be read back from the trailing digits of the
 * segment, which is why two indices never give the same URL.
 */
static void
putleaf(struct out *o, uint64_t *s, uint64_t id)
{
	uint64_t	 r = below(s, 100), n;

	if (r < 35) {
		n = 2 + below(s, 5);
		while (n-- > 0) {
			putword(o, s);
			put(o, "-", 1);
		}
		putnum(o, id);
	} else if (r < 55)
		putnum(o, id);
	else if (r < 80) {
		n = 2 + below(s, 4);
		while (n-- > 0) {
			putword(o, s);
			put(o, "-", 1);
		}
		putnum(o, id);
		puts_(o, ".html");
	} else {
		putnum(o, id);
		puts_(o, chance(s, 50) ? ".html" : ".php");
	}
}

size_t
urlgen_url(uint64_t seed, uint64_t index, char *buf, size_t cap)
{
	struct out	 o = { buf, cap > 0 ? cap - 1 : 0, 0 };
	uint64_t	 s = seed ^ (index * 0xff51afd7ed558ccdULL);
	uint64_t	 h, nseg, r, i;
	double		 u;

	splitmix64(&s);
	puts_(&o, chance(&s, 85) ? "https://" : "http://");
	/* log-uniform over [1, HOSTS + 1): P(h) ~ 1/h */
	u = (double)(splitmix64(&s) >> 11) * 0x1.0p-53;
	h = (uint64_t)exp(u * log((double)URLGEN_HOSTS + 1.0)) - 1;
	if (h >= URLGEN_HOSTS)
		h = URLGEN_HOSTS - 1;
	puthost(&o, seed, h);

	r = below(&s, 100);
	nseg = r < 10 ? 0 : r < 40 ? 1 : r < 75 ? 2 : 3;
	for (i = 0; i < nseg; i++) {
		put(&o, "/", 1);
		if (chance(&s, 15))
			putnum(&o, 2000 + below(&s, 26));
		else
			putword(&o, &s);
	}
	put(&o, "/", 1);
	putleaf(&o, &s, doc_id(seed, index));

	if (chance(&s, 50)) {
		nseg = 1 + below(&s, 3);
		for (i = 0; i < nseg; i++) {
			put(&o, i == 0 ? "?" : "&", 1);
			puts_(&o, query_keys[below(&s, NQUERY_KEYS)]);
			put(&o, "=", 1);
			if (chance(&s, 50))
				putword(&o, &s);
			else
				putnum(&o, below(&s, 100000));
		}
	}
	if (cap > 0)
		buf[o.len < o.cap ? o.len : o.cap] = '\0';
	return o.len;
}
