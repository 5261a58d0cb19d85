// Several Redis Cluster clients race to record one list of URLs on a seend
// cluster of several primaries, and what happened is printed as one JSON
// object on stdout:
//
//   node cluster-map.mjs '{"client": "ioredis", "ports": [7001, 7002],
//                          "n": 20000, "clients": 4, "prefix": "a",
//                          "resp": 2, "total_ms": 120000}'
//
// client: "ioredis" (ioredis 5's Cluster) or "node-redis" (npm redis 5's
// createCluster; resp 2 or 3), each seeded with the first port only (it
// finds the other nodes in CLUSTER SLOTS). "clients" such clients SETNX
// the same n URLs at once (batches of 1000 in flight each): "twice"
// counts the URLs answered new by more than one of them (0 if a URL is
// new exactly once), "never" those answered new by none (a Bloom filter's
// false positives); then one client SETNXs them again ("again": answered
// new a second time) and GETs each ("got": answered "1").
// tests/integration/test_cluster_map.py runs it; the runner is
// cluster-runner.mjs's.
import { isNew, runner } from './cluster-runner.mjs';

const { cfg, out, batches, connect, run } = runner('c', 120000);

run(async () => {
    const cs = [];
    for (let i = 0; i < (cfg.clients ?? 4); i++)
        cs.push(await connect(cfg.ports[0]));
    const replies = await Promise.all(cs.map((c) => batches(c.setnx)));
    const ones = new Array(cfg.n).fill(0);
    for (const rs of replies)
        rs.forEach((v, i) => { if (isNew(v)) ones[i]++; });
    out.twice = ones.filter((x) => x > 1).length;
    out.never = ones.filter((x) => x === 0).length;
    out.again = (await batches(cs[1 % cs.length].setnx)).filter(isNew).length;
    out.got = (await batches(cs[0].get)).filter((v) => v === '1').length;
    for (const c of cs)
        await c.close();
});
