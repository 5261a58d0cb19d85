"""
A cluster of nodes (issue 33, step 2): the map. (Being written.)
"""
from seendtest import *

if __name__ == "__main__":
    run_tests()
