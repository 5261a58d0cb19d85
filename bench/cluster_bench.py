#!/usr/bin/python3
"""Three seend nodes behind redis-py RedisCluster and behind twemproxy (filled in next)."""
