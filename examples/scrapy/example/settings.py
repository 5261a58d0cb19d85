# A Scrapy project whose duplicate filter is a shared seend.
BOT_NAME = "example"
SPIDER_MODULES = ["example.spiders"]
NEWSPIDER_MODULE = "example.spiders"

# --- seend: these three lines are all it takes ---
DUPEFILTER_CLASS = "seend.scrapy.DupeFilter"
SPIDER_MIDDLEWARES = {"seend.scrapy.SeenMiddleware": 100}
SEEND_ADDRESS = "127.0.0.1:6874"

# Every process of one crawl must compute the same request fingerprints.
REQUEST_FINGERPRINTER_IMPLEMENTATION = "2.7"

# Optional (see python/README.md):
# SEEND_FILTER = "crawl"        # a named filter instead of routing
# SEEND_KEY = "url"             # send request.url (host routing, normalize)
# SEEND_TOKEN = "secret"        # the server's auth_token
# SEEND_FAIL_OPEN = False       # True: seend down -> requests count as new

ROBOTSTXT_OBEY = True
TELNETCONSOLE_ENABLED = False
CONCURRENT_REQUESTS = 16
