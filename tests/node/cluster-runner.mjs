// What cluster.mjs and cluster-map.mjs share: the JSON argument, a Redis
// Cluster client of either library connected to one seed node, SETNX or
// GET of the run's URLs in batches, and the one JSON object printed at
// the end (with "error" when something failed, and exit status 1, or 3
// when the run took over total_ms).
//
//   import { runner } from './cluster-runner.mjs';
//   const r = runner('p', 40000);    // URLs https://<prefix>.example/p/<i>
//   r.run(async () => {
//       const c = await r.connect(r.cfg.port);
//       r.out.first = (await r.batches(c.setnx)).filter(isNew).length;
//       await c.close();
//   });
//
// cfg (process.argv[2]): client "ioredis" (ioredis 5's Cluster) or
// "node-redis" (npm redis 5's createCluster; resp 2 or 3), n URLs, their
// prefix, total_ms; the script's own fields besides.
import { createCluster } from 'redis';
import Redis from 'ioredis';

// A SETNX reply that says new, from either library.
export const isNew = (v) => v === 1 || v === true;

// The run of one script: its cfg and out, and what it needs to talk to
// the cluster. path: the URLs' first path segment; totalMs: the time
// limit when cfg has none.
export function runner(path, totalMs) {
    const cfg = JSON.parse(process.argv[2]);
    const out = { client: cfg.client };
    let done = false;

    function finish(code) {
        if (done) return;
        done = true;
        process.stdout.write(JSON.stringify(out) + '\n',
            () => process.exit(code));
    }

    setTimeout(() => {
        out.error = `the run took over ${cfg.total_ms ?? totalMs} ms`;
        finish(3);
    }, cfg.total_ms ?? totalMs).unref();

    const url = (i) => `https://${cfg.prefix}.example/${path}/${i}`;

    // fn(url) of every URL, 1000 in flight at a time: the replies, in
    // order.
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

    // One cluster client seeded with the node at port (it finds the
    // others in CLUSTER SLOTS), connected: { setnx, get, close }. An
    // error node-redis reports later is kept in out.error.
    async function connect(port) {
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

    // Runs main, then prints out: status 0, or 1 with out.error.
    function run(main) {
        main().then(() => finish(out.error ? 1 : 0), (e) => {
            out.error = String(e?.stack ?? e);
            finish(1);
        });
    }

    return { cfg, out, batches, connect, run };
}
