"""Every command of the protocol, against a real seend over TCP."""
from seendtest import *


@test
def seen_answers_0_for_a_new_key_then_1(t):
    with Server(t) as s:
        c = s.client()
        t.eq(c.cmd("SEEN https://example.com/"), "0")
        t.eq(c.cmd("SEEN https://example.com/"), "1")


if __name__ == "__main__":
    run()
