/*
 * cluster_map.c - the cluster's map; see cluster_map.h. (Being written.)
 */
#include <stdlib.h>
#include <string.h>

#include "cluster_map.h"
