/*
 * cmd_keyspace.c - filter names as Redis keys: DEL, UNLINK, TYPE, KEYS,
 * SCAN, the EXPIRE family, and the line protocol's RESET.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"
#include "config.h"
#include "filter.h"
#include "handler.h"
#include "log.h"
#include "persist.h"
#include "registry.h"
#include "resp.h"
#include "saver.h"
#include "server.h"
#include "snapshot.h"

/*
 * DEL f ...: drops runtime filters and their snapshot files; :n dropped.
 * A filter from the config file among them is an error, and nothing is
 * dropped.
 */
void
cmd_del(struct conn *c, struct op *op, struct result *r)
{
	struct registry	*reg = c->srv->reg;
	struct filter	*f;
	char		 path[4096];
	long long	 n = 0;

	for (int i = 1; i < op->argc; i++) {
		f = registry_find(reg, op->argv[i], op->argl[i]);
		if (f != NULL && !f->runtime) {
			result_error(r, "ERR", "filter %s is in the config file: "
			    "remove its section and reload to drop it",
			    f->name);
			return;
		}
	}
	for (int i = 1; i < op->argc; i++) {
		if ((f = registry_find(reg, op->argv[i], op->argl[i])) == NULL)
			continue;
		registry_remove(reg, f);
		f->deleted = 1;
		if (snapshot_path(path, sizeof(path), c->srv->cfg->data_dir,
		    f->name) == 0 && unlink(path) == -1 && errno != ENOENT)
			log_warn("filter %s: cannot remove %s: %s", f->name,
			    path, strerror(errno));
		log_info("filter %s dropped by client %llu (%s)", f->name,
		    (unsigned long long)c->id, c->peer);
		filter_unref(f);
		n++;
	}
	result_int(r, n);
}
