"""
Failover of a cluster's shard by Redis Sentinel (issue 33, step 5). (Being
written.)
"""
from seendtest import *

if __name__ == "__main__":
    run()
