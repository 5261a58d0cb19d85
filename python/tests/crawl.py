"""
crawl - one Scrapy crawl of a test site, run as its own process.

    /usr/bin/python3 crawl.py RESULT.json START_URL [START_URL...] \
        [-s NAME=VALUE ...]

Settings given with -s are JSON values when they parse as JSON, else text.
The spider follows every link; its start requests go through the dupefilter
(they are not dont_filter), so that several processes sharing one seend can
start anywhere.  RESULT.json gets the crawl's final stats, or the error that
stopped it from starting.
"""
import json
import sys

import scrapy
from scrapy.crawler import CrawlerProcess


class SiteSpider(scrapy.Spider):
    name = "site"
    allowed_domains = ["127.0.0.1"]

    def __init__(self, starts=(), **kw):
        super().__init__(**kw)
        self.starts = list(starts)

    def start_requests(self):
        for u in self.starts:
            yield scrapy.Request(u)

    def parse(self, response):
        yield {"url": response.url}
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href)


BASE = {
    "LOG_LEVEL": "INFO",
    "TELNETCONSOLE_ENABLED": False,
    "ROBOTSTXT_OBEY": False,
    "COOKIES_ENABLED": False,
    "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
    "RETRY_ENABLED": False,
    "DUPEFILTER_CLASS": "seend.scrapy.DupeFilter",
    "SPIDER_MIDDLEWARES": {"seend.scrapy.SeenMiddleware": 100},
}


def main(argv):
    out, rest = argv[0], argv[1:]
    starts, settings = [], dict(BASE)
    while rest:
        a = rest.pop(0)
        if a == "-s":
            name, _, value = rest.pop(0).partition("=")
            try:
                settings[name] = json.loads(value)
            except ValueError:
                settings[name] = value
        else:
            starts.append(a)
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(SiteSpider)
    result = {}

    def done(outcome):
        result["stats"] = crawler.stats.get_stats()
        if hasattr(outcome, "getErrorMessage"):
            result["error"] = outcome.getErrorMessage()
        return None

    process.crawl(crawler, starts=starts).addBoth(done)
    process.start()
    with open(out, "w") as f:
        json.dump(result, f, default=str)
    return 0 if "error" not in result else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
