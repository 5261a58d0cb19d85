#!/usr/bin/python3
"""
scrapy_crawl - how long one Scrapy crawl of a local site takes with
Scrapy's in-memory RFPDupeFilter, with seend's DupeFilter alone (one round
trip per request: "unbatched") and with SeenMiddleware in front of it (one
round trip per response: "batched").  A benchmark, not a test.

    /usr/bin/python3 bench/scrapy_crawl.py [--seend build/src/seend]
        [--pages 2000] [--links 50] [--runs 3] [--configs rfp,unbatched,batched]

The site (served from this process, on 127.0.0.1) has PAGES pages, each
with LINKS distinct links (plus a link to the next page); every link goes
through the dupefilter, so a crawl schedules about PAGES * LINKS requests,
of which PAGES are new.  Each configuration runs RUNS times, interleaved;
the median of Scrapy's elapsed_time_seconds is reported.  --configs picks
some of them (rfp is always run: it is the reference), so that more runs
of the two that the goal compares fit in the same time.
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(TOP, "python", "tests")
sys.path.insert(0, TESTS)
from website import Site  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_client import free_port, machine, wait_port  # noqa: E402

SHORT = {"rfp": "RFPDupeFilter (in memory)",
         "unbatched": "seend DupeFilter, unbatched",
         "batched": "seend DupeFilter + SeenMiddleware"}
CONFIGS = {
    "RFPDupeFilter (in memory)": {
        "DUPEFILTER_CLASS": "scrapy.dupefilters.RFPDupeFilter",
        "SPIDER_MIDDLEWARES": {"seend.scrapy.SeenMiddleware": None}},
    "seend DupeFilter, unbatched": {
        "SPIDER_MIDDLEWARES": {"seend.scrapy.SeenMiddleware": None}},
    "seend DupeFilter + SeenMiddleware": {},
}


def crawl(tmp, site, settings, tag):
    out = os.path.join(tmp, tag + ".json")
    args = [sys.executable, os.path.join(TESTS, "crawl.py"), out, site.url(0)]
    for k, v in settings.items():
        args += ["-s", "%s=%s" % (k, json.dumps(v))]
    env = dict(os.environ, PYTHONPATH=os.path.join(TOP, "python"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    with open(out) as f:
        stats = json.load(f)["stats"]
    return stats, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seend", default=os.path.join(TOP, "build", "src", "seend"))
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--links", type=int, default=50)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--configs", default="rfp,unbatched,batched")
    args = ap.parse_args()
    wanted = {SHORT[c] for c in args.configs.split(",")} | {SHORT["rfp"]}
    for name in list(CONFIGS):
        if name not in wanted:
            del CONFIGS[name]
    tmp = tempfile.mkdtemp(prefix="seend-scrapybench-")
    sp = None
    try:
        port = free_port()
        conf = os.path.join(tmp, "seend.conf")
        with open(conf, "w") as f:
            f.write("[server]\nlisten = 127.0.0.1:%d\ndata_dir = %s\n"
                    "snapshot_interval = 0\nlog_level = warn\n"
                    % (port, tmp))
            for i in range(args.runs * len(CONFIGS)):
                f.write("[filter.run%d]\ncapacity = %d\nerror_rate = 0.001\n"
                        % (i, args.pages * 2))
        sp = subprocess.Popen([args.seend, "-c", conf])
        wait_port(port, sp, "seend")
        print("machine: " + machine())
        print("command: " + " ".join([os.path.basename(sys.executable)] + sys.argv))
        times = {name: [] for name in CONFIGS}
        cpus = {name: [] for name in CONFIGS}
        info = {}
        n = 0
        with Site(pages=args.pages, fanout=args.links - 2, repeat=1,
                  offsite=False) as site:
            for run in range(args.runs):
                for name, extra in CONFIGS.items():
                    site.hits.clear()
                    settings = {"SEEND_ADDRESS": "127.0.0.1:%d" % port,
                                "SEEND_FILTER": "run%d" % n,
                                "LOG_LEVEL": "WARNING"}
                    settings.update(extra)
                    n += 1
                    stats, cpu = crawl(tmp, site, settings, "c%d" % n)
                    fetched = stats.get("response_received_count", 0)
                    if fetched != args.pages or max(site.page_hits().values()) != 1:
                        sys.exit("%s: fetched %d pages of %d" % (name, fetched, args.pages))
                    times[name].append(stats["elapsed_time_seconds"])
                    cpus[name].append(cpu)
                    info[name] = stats
        reqs = info["RFPDupeFilter (in memory)"].get("dupefilter/filtered", 0) + args.pages
        print("%d pages, %d links each: %d requests through the dupefilter, "
              "%d runs each (median)" % (args.pages, args.links, reqs, args.runs))
        base = statistics.median(times["RFPDupeFilter (in memory)"])
        cbase = statistics.median(cpus["RFPDupeFilter (in memory)"])
        print("%-36s %8s %8s %8s %8s %8s" % ("", "crawl s", "vs RFP", "CPU s",
                                             "vs RFP", "us/req"))
        for name in CONFIGS:
            m = statistics.median(times[name])
            c = statistics.median(cpus[name])
            print("%-36s %8.2f %+7.1f%% %8.2f %+7.1f%% %8.2f"
                  % (name, m, (m / base - 1) * 100, c, (c / cbase - 1) * 100,
                     (c - cbase) / reqs * 1e6))
        print("(crawl s: Scrapy's elapsed_time_seconds; CPU s: the crawling "
              "process's user+system time; us/req: extra CPU per request)")
        for name in CONFIGS:
            s = info[name]
            trips = s.get("seend/round_trips", 0)
            wait = s.get("seend/wait_ms", 0.0)
            print("%s: crawl s %s, CPU s %s; seend/batched %s, seend/direct %s,"
                  " %d round trips, %.0f ms waiting on seend (%.2f us a request)"
                  % (name, ["%.2f" % x for x in times[name]],
                     ["%.2f" % x for x in cpus[name]],
                     s.get("seend/batched", 0), s.get("seend/direct", 0),
                     trips, wait, wait * 1e3 / reqs))
    finally:
        if sp is not None:
            sp.terminate()
            sp.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
