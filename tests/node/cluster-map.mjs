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
// tests/integration/test_cluster_map.py runs it.
import { createCluster } from 'redis';
import Redis from 'ioredis';

const cfg = JSON.parse(process.argv[2]);
const out = { client: cfg.client };
let done = false;

function finish(code) {
    if (done) return;
    done = true;
    process.stdout.write(JSON.stringify(out) + '\n', () => process.exit(code));
}

setTimeout(() => {
    out.error = `the run took over ${cfg.total_ms} ms`;
    finish(3);
}, cfg.total_ms ?? 120000).unref();

const url = (i) => `https://${cfg.prefix}.example/c/${i}`;
const isNew = (v) => v === 1 || v === true;

async function batches(fn) {
    const res = [];
    for (let i = 0; i < cfg.n; i += 1000) {
        const jobs = [];
        for (let j = i; j < Math.min(i + 1000, cfg.n); j++)
            jobs.push(fn(url(j)));
        res.push(...await Promise.all(jobs));
    }
    return res;
}

// One cluster client: { setnx, get, close }, connected.
async function connect() {
    const port = cfg.ports[0];
    if (cfg.client === 'ioredis') {
        const c = new Redis.Cluster([{ host: '127.0.0.1', port }],
            { enableReadyCheck: true, slotsRefreshTimeout: 5000 });
        await new Promise((ok, no) => {
            c.once('ready', ok);
            c.once('error', no);
        });
        return {
            setnx: (k) => c.setnx(k, '1'),
            get: (k) => c.get(k),
            close: () => c.quit(),
        };
    }
    const c = createCluster({
        rootNodes: [{ url: `redis://127.0.0.1:${port}` }],
        RESP: cfg.resp ?? 2,
    });
    c.on('error', (e) => { out.error = String(e?.message ?? e); });
    await c.connect();
    return {
        setnx: (k) => c.setNX(k, '1'),
        get: (k) => c.get(k),
        close: () => (c.close ? c.close() : c.quit()),
    };
}

async function main() {
    const cs = [];
    for (let i = 0; i < (cfg.clients ?? 4); i++)
        cs.push(await connect());
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
}

main().then(() => finish(out.error ? 1 : 0), (e) => {
    out.error = String(e?.stack ?? e);
    finish(1);
});
