/*
 * fuzz_cluster_map.c - libFuzzer target for the cluster's map
 * (cluster_map.c): CLUSTER SETMAP's argument and data_dir/cluster-map.
 *
 * Parsing any bytes must never crash, leak or read out of bounds; it
 * either gives a map or refuses with "line N: ..." (or the size limit).
 * A map's canonical text must parse again into a map of the same text,
 * equal to the first by cluster_map_compare: every node that formats a
 * map it took hands on a text the others take, and two nodes that hold
 * one map agree that it is the same.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_map.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cluster_map	 m, again, copy;
	char			 err[1024], *text, *text2;
	size_t			 len, len2;

	err[0] = '\0';
	if (cluster_map_parse((const char *)data, size, &m, err,
	    sizeof(err)) == -1) {
		if (m.nodes != NULL || m.nnodes != 0)
			abort();
		if (strncmp(err, "line ", 5) != 0 &&
		    strstr(err, "longer than") == NULL &&
		    strcmp(err, "out of memory") != 0) {
			fprintf(stderr, "refusal without its line: %s\n", err);
			abort();
		}
		return 0;
	}
	for (size_t i = 1; i < m.nnodes; i++)
		if (strcmp(m.nodes[i - 1].id, m.nodes[i].id) >= 0)
			abort();
	if ((text = cluster_map_format(&m, &len)) == NULL)
		abort();
	if (strlen(text) != len || len > CLUSTER_MAP_MAX_TEXT)
		abort();
	if (cluster_map_parse(text, len, &again, err, sizeof(err)) == -1) {
		fprintf(stderr, "the canonical text is refused: %s\n%s", err,
		    text);
		abort();
	}
	if ((text2 = cluster_map_format(&again, &len2)) == NULL)
		abort();
	if (len2 != len || memcmp(text, text2, len) != 0) {
		fprintf(stderr, "formats differently:\n%s---\n%s", text,
		    text2);
		abort();
	}
	if (cluster_map_compare(&m, &again) != 0 ||
	    cluster_map_compare(&again, &m) != 0 ||
	    memcmp(m.owner, again.owner, sizeof(m.owner)) != 0)
		abort();
	for (size_t i = 0; i < m.nnodes; i++)
		if (cluster_map_find(&m, m.nodes[i].id) != (int)i ||
		    (m.nodes[i].primary >= 0 &&
		    m.nodes[m.nodes[i].primary].primary != -1) ||
		    (i < 16 && m.nodes[i].primary >= 0 &&
		    cluster_map_slots_of(&m, (int)i) != 0))
			abort();
	if (cluster_map_copy(&copy, &m) == -1)
		abort();
	if (cluster_map_compare(&copy, &m) != 0)
		abort();
	cluster_map_free(&copy);
	free(text2);
	free(text);
	cluster_map_free(&again);
	cluster_map_free(&m);
	return 0;
}
