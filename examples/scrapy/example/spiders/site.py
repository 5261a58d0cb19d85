"""Follows every link of one site; run several at once against one seend."""
from urllib.parse import urlsplit

import scrapy


class SiteSpider(scrapy.Spider):
    """scrapy crawl site -a start=URL [-a start=URL2 ...comma-separated]"""

    name = "site"

    def __init__(self, start: str = "http://127.0.0.1:8000/", **kw):
        super().__init__(**kw)
        self.starts = [u for u in start.split(",") if u]
        self.allowed_domains = sorted({urlsplit(u).hostname for u in self.starts})

    def start_requests(self):
        # not dont_filter (Scrapy's default start requests are): the start
        # URLs go through seend too, so that processes sharing it may start
        # on the same page and still fetch it once
        for u in self.starts:
            yield scrapy.Request(u)

    def parse(self, response):
        yield {"url": response.url,
               "title": response.css("title::text").get()}
        yield from response.follow_all(css="a")
