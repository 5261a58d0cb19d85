/*
 * peer.c - passing the cluster's map on; see peer.h. (Being written.)
 */
#include "peer.h"

void
peer_map_changed(struct core *core)
{
	(void)core;
}

void
peer_tick(struct core *core)
{
	(void)core;
}

void
peer_shutdown(struct core *core)
{
	(void)core;
}
