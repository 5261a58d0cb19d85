// Records URLs through a Redis Cluster client pointed at one node, and
// prints what happened as one JSON object on stdout:
//
//   node cluster.mjs '{"client": "ioredis", "port": 6379, "n": 20000,
//                      "prefix": "a", "resp": 2, "total_ms": 40000}'
//
// client: "ioredis" (ioredis 5's Cluster) or "node-redis" (npm redis 5's
// createCluster; resp 2 or 3). SETNX of n URLs (batches of 1000 in
// flight), then again, then GET of each: "first" counts the URLs answered
// new the first time, "again" those answered new the second time (0 if
// every URL was kept), "got" the GETs answered "1". tests/integration/
// test_cluster_one.py runs it (seend with [cluster] enabled = on); the
// runner is cluster-runner.mjs's.
import { isNew, runner } from './cluster-runner.mjs';

const { cfg, out, batches, connect, run } = runner('p', 40000);

run(async () => {
    const c = await connect(cfg.port);
    out.first = (await batches(c.setnx)).filter(isNew).length;
    out.again = (await batches(c.setnx)).filter(isNew).length;
    out.got = (await batches(c.get)).filter((v) => v === '1').length;
    await c.close();
});
