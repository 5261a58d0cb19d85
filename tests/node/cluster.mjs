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
// test_cluster_one.py runs it (seend with [cluster] enabled = on).
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
}, cfg.total_ms ?? 40000).unref();

const url = (i) => `https://${cfg.prefix}.example/p/${i}`;
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

async function main() {
    let c, setnx, get, close;
    if (cfg.client === 'ioredis') {
        c = new Redis.Cluster([{ host: '127.0.0.1', port: cfg.port }],
            { enableReadyCheck: true, slotsRefreshTimeout: 5000 });
        setnx = (k) => c.setnx(k, '1');
        get = (k) => c.get(k);
        close = () => c.quit();
        await new Promise((ok, no) => { c.once('ready', ok); c.once('error', no); });
    } else {
        c = createCluster({
            rootNodes: [{ url: `redis://127.0.0.1:${cfg.port}` }],
            RESP: cfg.resp ?? 2,
        });
        c.on('error', (e) => { out.error = String(e?.message ?? e); });
        await c.connect();
        setnx = (k) => c.setNX(k, '1');
        get = (k) => c.get(k);
        close = () => c.close ? c.close() : c.quit();
    }
    out.first = (await batches(setnx)).filter(isNew).length;
    out.again = (await batches(setnx)).filter(isNew).length;
    out.got = (await batches(get)).filter((v) => v === '1').length;
    await close();
}

main().then(() => finish(0), (e) => {
    out.error = String(e?.stack ?? e);
    finish(1);
});
