/*
 * merge.h - MERGE's work on filters: the union of some filters' keys in
 * another, a step at a time (cmd_merge.c runs the steps, one per loop
 * turn, so a merge of big filters never stalls the loop).
 *
 * Bloom filters cannot list their keys, but their bits can be OR-ed: a
 * slice of a source whose seed, blocks, hashes (and, in a window, period
 * start) are those of a slice of the destination - copies of one dump, or
 * filters made from one - is OR-ed into it; any other is copied into a
 * new merged slice of the destination (filter.h: read-only, asked with
 * its own seed's hash of the key). A destination the merge creates takes
 * the first source's own slices as its own. Every target, new or not, is
 * OR-ed into (a new one starts empty), so the order of the work does not
 * matter. The sources' slices are held from the plan on: the merge sees
 * each source as it was then, plus any key that arrives meanwhile.
 */
#ifndef SEEND_MERGE_H
#define SEEND_MERGE_H

#include <stddef.h>
#include <stdint.h>

struct filter;
struct merge;

/*
 * Plans merging srcs into dst. fresh: dst was made for this merge (no
 * slice, srcs[0]'s seed and settings) and takes srcs[0]'s own slices as
 * its own. The caller has checked that the sources' windows and
 * normalize are dst's. Allocates the new slices now (max_memory holds).
 * NULL with a message in err; refused if a source is partitioned by
 * slot (slot_major) and dst not, or the reverse: their bits are laid out
 * differently.
 */
struct merge	*merge_plan(struct filter *dst, int fresh,
		    struct filter *const *srcs, size_t nsrcs, char *err,
		    size_t errlen);
/* Up to budget more bytes of OR; 1 once everything is done. */
int		 merge_step(struct merge *, size_t budget);
/* Tests: a step ORs at most this many bytes (0: no bound; set from
 * SEEND_FAULT_MERGE_STEP in main.c), so that a merge lasts long enough
 * to be caught under way. */
extern size_t	 merge_fault_step_limit;
/*
 * Makes the work dst's: new slices attached, counts added (an upper
 * bound where sources overlap), dst's head looked at again (a fixed
 * filter pushed past its capacity is full). -1 with a message if dst
 * was emptied meanwhile (RESET, DEL): nothing is attached then.
 */
int		 merge_finish(struct merge *, char *err, size_t errlen);
void		 merge_free(struct merge *);
/* The destination, and the bytes the merge ORs in all. */
struct filter	*merge_dst(const struct merge *);
uint64_t	 merge_bytes(const struct merge *);

#endif
