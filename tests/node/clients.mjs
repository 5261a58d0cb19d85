// Runs one Node.js Redis client against one server and prints what the
// client library returned for each step, as one JSON object on stdout:
//
//   node clients.mjs '{"client": "node-redis", "resp": 3, "port": 6379,
//                      "mode": "main", "bloom": true, "batch": 10000}'
//
// client: "node-redis" (npm redis 5) or "ioredis" (ioredis 5, RESP2 only);
// resp: 2 or 3 (node-redis; with 2, hello: true sends HELLO 2 as
// createClient({ RESP: 2 }) does, else the default: no HELLO); mode: "main" (the commands a URL dedup does,
// side by side) or "auth" (the server wants password "token"); bloom: also
// the BF.* steps (seend: redis-server has no RedisBloom).
//
// Each step's result is {"ok": value} or {"err": {"name", "message"}};
// values are JSON with Map/Buffer/BigInt/Set spelled out so that nothing a
// client returns is lost in the comparison. tests/integration/
// test_node_clients.py compares seend's results with redis-server's.
//
// Nothing here waits forever: every step has its own deadline and a
// watchdog ends the process, printing what it has, whatever happens.
import { createClient } from 'redis';
import Redis from 'ioredis';

const cfg = JSON.parse(process.argv[2]);
const STEP_MS = cfg.step_ms ?? 10000;
const TOTAL_MS = cfg.total_ms ?? 40000;
const steps = [];
let done = false;

function wire(v) {
    if (v === null || v === undefined) return v ?? null;
    if (typeof v === 'bigint') return { bigint: v.toString() };
    if (typeof v === 'number' && !Number.isFinite(v)) return { number: String(v) };
    if (Buffer.isBuffer(v)) return { buffer: v.toString('latin1') };
    if (v instanceof Error) return { err: errOf(v) };
    if (v instanceof Map) return { map: [...v].map(([k, x]) => [wire(k), wire(x)]) };
    if (v instanceof Set) return { set: [...v].map(wire) };
    if (Array.isArray(v)) return v.map(wire);
    if (typeof v === 'object') {
        const o = {};
        for (const k of Object.keys(v)) o[k] = wire(v[k]);
        return { object: o };
    }
    return v;
}

function errOf(e) {
    return { name: e?.constructor?.name ?? typeof e, message: String(e?.message ?? e) };
}

function finish(code) {
    if (done) return;
    done = true;
    process.stdout.write(JSON.stringify({ steps }) + '\n', () => process.exit(code));
}

setTimeout(() => {
    steps.push(['watchdog', { err: { name: 'Timeout', message: `the run took over ${TOTAL_MS} ms` } }]);
    finish(3);
}, TOTAL_MS).unref();

function deadline(p, ms = STEP_MS) {
    let timer;
    return Promise.race([
        p,
        new Promise((_, reject) => {
            timer = setTimeout(() => {
                const e = new Error(`no answer within ${ms} ms`);
                e.name = 'Timeout';
                reject(e);
            }, ms);
        }),
    ]).finally(() => clearTimeout(timer));
}

// step(name, fn): runs fn() under a deadline and records its value or error
async function step(name, fn, ms) {
    try {
        steps.push([name, { ok: wire(await deadline(Promise.resolve().then(fn), ms)) }]);
    } catch (e) {
        steps.push([name, { err: errOf(e) }]);
    }
}

// ---- the two libraries behind one small face ----

function nodeRedis(opts) {
    const c = createClient({
        socket: {
            host: '127.0.0.1', port: cfg.port,
            connectTimeout: 5000,
            reconnectStrategy: false,
        },
        // RESP 2 is node-redis's default: no HELLO unless RESP is given
        ...(cfg.resp === 3 || cfg.hello ? { RESP: cfg.resp } : {}),
        ...opts,
    });
    // without a listener an 'error' event would end the process
    c.on('error', () => {});
    return {
        lib: c,
        connect: () => c.connect().then(() => 'connected'),
        close: () => c.destroy(),
        send: (args) => c.sendCommand(args),
        ping: () => c.ping(),
        setnx: (k, v) => c.setNX(k, v),
        setNX: (k, v) => c.set(k, v, { condition: 'NX' }),
        get: (k) => c.get(k),
        mget: (ks) => c.mGet(ks),
        exists: (ks) => c.exists(ks),
        sadd: (k, ms) => c.sAdd(k, ms),
        sismember: (k, m) => c.sIsMember(k, m),
        smismember: (k, ms) => c.smIsMember(k, ms),
        scard: (k) => c.sCard(k),
        del: (ks) => c.del(ks),
        // auto-pipelining: commands issued in one tick go out together
        batchAuto: (k, ms) => Promise.all(ms.map((m) => c.sAdd(k, m))),
        // an explicit batch without MULTI/EXEC
        batchExplicit: (k, ms) => {
            const b = c.multi();
            for (const m of ms) b.sAdd(k, m);
            return b.execAsPipeline();
        },
    };
}

function ioRedis(opts) {
    const c = new Redis({
        host: '127.0.0.1', port: cfg.port,
        lazyConnect: true,
        connectTimeout: 5000,
        commandTimeout: STEP_MS,
        retryStrategy: () => null,
        maxRetriesPerRequest: 0,
        enableOfflineQueue: true,
        ...opts,
    });
    c.on('error', () => {});
    const pipe = (ms, add) => {
        const p = c.pipeline();
        for (const m of ms) add(p, m);
        // [[err, value], ...]: a failed command is an error, not a value
        return p.exec().then((rs) => rs.map(([e, v]) => (e ? Promise.reject(e) : v)))
            .then((vs) => Promise.all(vs));
    };
    return {
        lib: c,
        connect: () => c.connect().then(() => 'connected'),
        close: () => c.disconnect(),
        send: ([cmd, ...args]) => c.call(cmd, ...args),
        ping: () => c.ping(),
        setnx: (k, v) => c.setnx(k, v),
        setNX: (k, v) => c.set(k, v, 'NX'),
        get: (k) => c.get(k),
        mget: (ks) => c.mget(ks),
        exists: (ks) => c.exists(ks),
        sadd: (k, ms) => c.sadd(k, ms),
        sismember: (k, m) => c.sismember(k, m),
        smismember: (k, ms) => c.smismember(k, ms),
        scard: (k) => c.scard(k),
        del: (ks) => c.del(ks),
        batchAuto: (k, ms) => Promise.all(ms.map((m) => c.sadd(k, m))),
        batchExplicit: (k, ms) => pipe(ms, (p, m) => p.sadd(k, m)),
    };
}

function open(opts = {}) {
    if (cfg.client === 'node-redis') return nodeRedis(opts);
    if (cfg.client === 'ioredis') return ioRedis(opts);
    throw new Error('unknown client ' + cfg.client);
}

// "1" and "0" per answer: 10k answers in one short string
const bits = (rs) => rs.map((r) => (r === 1 ? '1' : r === 0 ? '0' : JSON.stringify(wire(r)))).join('');

const U = 'https://node.example/';

async function main() {
    const c = open();
    await step('connect', () => c.connect());
    await step('PING', () => c.ping());
    await step('PING msg', () => c.send(['PING', 'hello']));
    await step('ECHO', () => c.send(['ECHO', 'x y']));
    await step('CLIENT SETNAME', () => c.send(['CLIENT', 'SETNAME', 'node-test']));
    await step('CLIENT GETNAME', () => c.send(['CLIENT', 'GETNAME']));
    await step('SELECT 0', () => c.send(['SELECT', '0']));

    // URL keys: SETNX, SET NX, GET, MGET, EXISTS
    await step('SETNX new', () => c.setnx(U + 'a', '1'));
    await step('SETNX seen', () => c.setnx(U + 'a', '1'));
    await step('SET NX new', () => c.setNX(U + 'b', '1'));
    await step('SET NX seen', () => c.setNX(U + 'b', '1'));
    await step('SET NX seen (SETNX key)', () => c.setNX(U + 'a', '1'));
    await step('GET seen', () => c.get(U + 'a'));
    await step('GET not seen', () => c.get(U + 'nope'));
    await step('MGET', () => c.mget([U + 'a', U + 'nope', U + 'b']));
    await step('EXISTS one', () => c.exists([U + 'a']));
    await step('EXISTS many', () => c.exists([U + 'a', U + 'nope', U + 'b', U + 'a']));
    await step('EXISTS none', () => c.exists([U + 'nope']));
    // URLs with what clients might mangle: query, fragment, spaces, UTF-8
    const odd = U + 'p?q=a b&r=%20#frag';
    const utf = 'https://bücher.example/straße';
    await step('SETNX odd', () => c.setnx(odd, '1'));
    await step('SETNX utf-8', () => c.setnx(utf, '1'));
    await step('EXISTS odd, utf-8', () => c.exists([odd, utf]));
    await step('GET utf-8', () => c.get(utf));

    // a set (a filter in seend)
    const f = 'crawl';
    await step('SADD', () => c.sadd(f, ['a', 'b', 'a']));
    await step('SADD again', () => c.sadd(f, ['a', 'c']));
    await step('SISMEMBER yes', () => c.sismember(f, 'a'));
    await step('SISMEMBER no', () => c.sismember(f, 'z'));
    await step('SMISMEMBER', () => c.smismember(f, ['a', 'z', 'c']));
    await step('SMISMEMBER missing set', () => c.smismember('nofilter', ['a']));
    await step('SCARD', () => c.scard(f));
    await step('SCARD missing set', () => c.scard('nofilter'));

    // errors come back as errors, and the connection goes on
    await step('unknown command', () => c.send(['NOSUCHCMD', 'a', 'b']));
    await step('wrong arity', () => c.send(['SCARD']));
    await step('PING after errors', () => c.ping());

    // 10k SADDs in flight at once (auto-pipelined), then as one explicit
    // batch; members repeat so that the answers are not all 1
    const n = cfg.batch ?? 10000;
    const ms = Array.from({ length: n }, (_, i) => 'm' + (i % Math.ceil(n * 0.7)));
    const ms2 = Array.from({ length: n }, (_, i) => 'm' + (n - i));
    await step('batch auto', async () => bits(await c.batchAuto('batch', ms)), 30000);
    await step('batch explicit', async () => bits(await c.batchExplicit('batch', ms2)), 30000);
    await step('SCARD batch', () => c.scard('batch'));
    await step('SMISMEMBER batch', () => c.smismember('batch', ['m0', 'm' + n, 'm' + (n + 1)]));

    // DEL of sets (filters)
    await step('DEL', () => c.del([f]));
    await step('DEL again', () => c.del([f]));
    await step('DEL two', () => c.del(['batch', 'nofilter']));
    await step('SCARD deleted', () => c.scard(f));
    await step('SISMEMBER deleted', () => c.sismember(f, 'a'));

    if (cfg.bloom) {
        // RedisBloom's commands, as any command is sent...
        await step('BF.RESERVE', () => c.send(['BF.RESERVE', 'bf', '0.01', '1000']));
        await step('BF.ADD new', () => c.send(['BF.ADD', 'bf', 'x']));
        await step('BF.ADD seen', () => c.send(['BF.ADD', 'bf', 'x']));
        await step('BF.EXISTS yes', () => c.send(['BF.EXISTS', 'bf', 'x']));
        await step('BF.EXISTS no', () => c.send(['BF.EXISTS', 'bf', 'y']));
        await step('BF.MADD', () => c.send(['BF.MADD', 'bf', 'x', 'y', 'z', 'y']));
        await step('BF.MEXISTS', () => c.send(['BF.MEXISTS', 'bf', 'x', 'q', 'z']));
        await step('BF.CARD', () => c.send(['BF.CARD', 'bf']));
        await step('BF.INFO', () => c.send(['BF.INFO', 'bf']));
        await step('BF.INFO missing', () => c.send(['BF.INFO', 'nobf']));
        await step('BF.ADD auto-create', () => c.send(['BF.ADD', 'bf2', 'x']));
        await step('BF.INFO auto-created', () => c.send(['BF.INFO', 'bf2']));
        // ...and through node-redis's own RedisBloom API (client.bf.*)
        if (cfg.client === 'node-redis') {
            const bf = c.lib.bf;
            await step('bf.reserve', () => bf.reserve('tbf', 0.001, 5000, { EXPANSION: 4 }));
            await step('bf.add new', () => bf.add('tbf', 'x'));
            await step('bf.add seen', () => bf.add('tbf', 'x'));
            await step('bf.exists yes', () => bf.exists('tbf', 'x'));
            await step('bf.exists no', () => bf.exists('tbf', 'y'));
            await step('bf.mAdd', () => bf.mAdd('tbf', ['x', 'y', 'z']));
            await step('bf.mExists', () => bf.mExists('tbf', ['x', 'q', 'z']));
            await step('bf.card', () => bf.card('tbf'));
            await step('bf.info', () => bf.info('tbf'));
        }
        await step('PING after BF', () => c.ping());
    }
    await step('close', () => c.close());
}

// With a password on the server: the wrong one, none, the right one.
async function auth() {
    const pw = cfg.password;
    const bad = open({ password: pw + 'x' });
    await step('connect wrong password', () => bad.connect());
    if (cfg.client === 'ioredis') {
        // ioredis connects whatever AUTH answered; the next command says
        await step('PING wrong password', () => bad.ping());
    }
    await step('close wrong password', () => bad.close());

    const none = open();
    await step('connect no password', () => none.connect());
    await step('PING no password', () => none.ping());
    await step('SETNX no password', () => none.setnx(U + 'auth', '1'));
    await step('close no password', () => none.close());

    const good = open({ password: pw });
    await step('connect password', () => good.connect());
    await step('PING password', () => good.ping());
    await step('SETNX password new', () => good.setnx(U + 'auth', '1'));
    await step('SETNX password seen', () => good.setnx(U + 'auth', '1'));
    await step('SADD password', () => good.sadd('authset', ['a', 'a', 'b']));
    await step('close password', () => good.close());

    const user = open({ username: 'default', password: pw });
    await step('connect user default', () => user.connect());
    await step('EXISTS user default', () => user.exists([U + 'auth']));
    await step('close user default', () => user.close());
}

try {
    if (cfg.mode === 'auth') await auth();
    else await main();
    finish(0);
} catch (e) {
    steps.push(['uncaught', { err: errOf(e) }]);
    finish(2);
}
