"""src/ keeps to one stack of layers (tools/check-layers), and the checker
does catch what it is there for: on small made-up source trees, an include
of a higher layer's header, a call into a higher layer by its module
prefix, and a circle within one layer. No daemon is started."""
from seendtest import *

CHECKER = os.path.join(SRCDIR, "tools", "check-layers")


def check(*args):
    """Runs tools/check-layers; returns (exit status, stdout + stderr)."""
    p = subprocess.run([sys.executable, CHECKER] + list(args),
                       capture_output=True, text=True, errors="replace",
                       timeout=60 * SLOW)
    return p.returncode, p.stdout + p.stderr


def tree(t, files):
    """A made-up src/ under the test's directory: {name: text}."""
    src = t.path("src")
    os.makedirs(src, exist_ok=True)
    for name, text in files.items():
        with open(os.path.join(src, name), "w") as f:
            f.write(text)
    return src


# A small tree that keeps to the stack: main (10) -> server (9) -> conn (8)
# -> persist (6) -> registry (4) -> filter (2) -> log (0). Each test below
# adds one thing that breaks it.
CLEAN = {
    "log.h": "void\tlog_info(const char *fmt, ...);\n",
    "log.c": '#include "log.h"\nvoid log_info(const char *fmt, ...) {}\n',
    "filter.h": '#include "log.h"\nint\tfilter_seen(const char *);\n',
    "filter.c": ('#include "filter.h"\n'
                 'int filter_seen(const char *k) { log_info("%s", k); '
                 'return 0; }\n'),
    "registry.h": '#include "filter.h"\nint\tregistry_find(const char *);\n',
    "registry.c": ('#include "registry.h"\n'
                   "int registry_find(const char *k)\n"
                   "{\n\treturn filter_seen(k);\n}\n"),
    "persist.h": "struct server;\nvoid\tpersist_tick(struct server *);\n",
    "persist.c": ('#include "persist.h"\n#include "registry.h"\n'
                  "void persist_tick(struct server *s)\n"
                  "{\n\t(void)s;\n\tregistry_find(\"x\");\n}\n"),
    "conn.h": ("struct server;\n"
               "void\tconn_release_turn(struct server *, int hold);\n"),
    "conn.c": ('#include "conn.h"\n#include "persist.h"\n'
               "void conn_release_turn(struct server *s, int hold)\n"
               "{\n\t(void)hold;\n\tpersist_tick(s);\n}\n"),
    "server.h": ("struct server { int dirty; };\n"
                 "void\tserver_snapshot_dirty(struct server *, int all);\n"),
    "server.c": ('#include "server.h"\n#include "conn.h"\n'
                 "void server_snapshot_dirty(struct server *s, int all)\n"
                 "{\n\ts->dirty = all;\n\tconn_release_turn(s, 0);\n}\n"),
    "main.c": ('#include "server.h"\n'
               "int main(void)\n{\n\tstruct server s;\n"
               "\tserver_snapshot_dirty(&s, 1);\n\treturn 0;\n}\n"),
}


@test
def the_source_tree_keeps_to_one_stack(t):
    src = os.path.join(SRCDIR, "src")
    t.ok(os.path.isfile(CHECKER), "%s exists" % CHECKER)
    rc, out = check("--src", src)
    t.eq(rc, 0, "tools/check-layers exit status; it says:\n" + out)
    t.contains(out, "check-layers: ok", "summary")


@test
def a_tree_that_keeps_to_the_stack_passes(t):
    rc, out = check("--src", tree(t, CLEAN))
    t.eq(rc, 0, "exit status; output:\n" + out)
    t.contains(out, "check-layers: ok", "summary")
    rc, out = check("--src", tree(t, CLEAN), "--graph")
    t.eq(rc, 0, "--graph exit status; output:\n" + out)
    for edge in ("main \u2192 server", "server \u2192 conn",
                 "conn \u2192 persist", "persist \u2192 registry"):
        t.contains(out, edge, "--graph")


@test
def an_include_of_a_higher_layer_header_is_caught(t):
    files = dict(CLEAN)
    # filter (2) includes config.h (3): a layer up
    files["config.h"] = "struct config { int capacity; };\n"
    files["filter.h"] = ('#include "log.h"\n/* the settings */\n'
                         '#include "config.h"\n'
                         "int\tfilter_seen(const char *);\n")
    rc, out = check("--src", tree(t, files))
    t.eq(rc, 1, "exit status; output:\n" + out)
    t.contains(out, "src/filter.h:3: filter includes config.h of config "
               "(layer 2 includes layer 3)", "the violation")
    t.contains(out, "1 violation ", "summary")


@test
def a_call_into_a_higher_layer_by_its_prefix_is_caught(t):
    files = dict(CLEAN)
    # persist (6) calls server_snapshot_dirty (server, 9) through a
    # declaration of its own, without including server.h ...
    files["persist.c"] = (
        '#include "persist.h"\n#include "registry.h"\n'
        "void server_snapshot_dirty(struct server *, int);\n"
        "/* server_snapshot_dirty(s, 1) in a comment is no call */\n"
        "static void server_local_helper(void) {}\n"
        "void persist_tick(struct server *s)\n"
        "{\n"
        '\tregistry_find("server_snapshot_dirty(s, 0)");\n'
        "\tserver_local_helper();\n"
        "\tserver_snapshot_dirty(s, 1);\n"     # line 10
        "\tserver_snapshot_dirty(s, 0);\n"
        "}\n")
    rc, out = check("--src", tree(t, files))
    t.eq(rc, 1, "exit status; output:\n" + out)
    t.contains(out, "src/persist.c:10: persist calls server_snapshot_dirty() "
               "[and 1 more call] of server (layer 6 calls layer 9)",
               "the violation")
    # a static helper that only shares the prefix, a comment and a string
    # are no calls; and persist -> server closes the circle server -> conn
    # -> persist -> server
    t.ok("server_local_helper" not in out, "the helper is no call: " + out)
    t.ok("src/persist.c:3:" not in out and "src/persist.c:4:" not in out
         and "src/persist.c:8:" not in out,
         "declarations, comments and strings are no calls: " + out)
    t.contains(out, "circle through an edge that points up", "the circle")
    t.contains(out, "2 violations (0 includes, 1 calls, 1 circles",
               "summary")


@test
def a_circle_within_one_layer_is_caught(t):
    files = dict(CLEAN)
    # conn and metrics are both layer 8: either may use the other, not both
    files["metrics.h"] = "struct server;\nvoid\tmetrics_render(void);\n"
    files["metrics.c"] = ('#include "metrics.h"\n#include "conn.h"\n'
                          "void metrics_render(void)\n"
                          "{\n\tconn_release_turn(0, 1);\n}\n")
    files["conn.c"] = ('#include "conn.h"\n#include "persist.h"\n'
                       '#include "metrics.h"\n'
                       "void conn_release_turn(struct server *s, int hold)\n"
                       "{\n\t(void)hold;\n\tpersist_tick(s);\n}\n")
    rc, out = check("--src", tree(t, files))
    t.eq(rc, 1, "exit status; output:\n" + out)
    t.contains(out, "circle within layer 8: conn \u2192 metrics \u2192 conn",
               "the circle")
    t.contains(out, "src/conn.c:3:", "where")
    t.contains(out, "1 violation ", "summary")
    t.ok("layer 8 includes" not in out and "layer 8 calls" not in out,
         "no layer violation, only the circle: " + out)


@test
def a_module_without_a_layer_is_caught(t):
    files = dict(CLEAN)
    files["gadget.c"] = '#include "log.h"\nvoid gadget(void) {}\n'
    rc, out = check("--src", tree(t, files))
    t.eq(rc, 1, "exit status; output:\n" + out)
    t.contains(out, "src/gadget.c: module gadget has no layer: add it to "
               "tools/check-layers", "the error")


if __name__ == "__main__":
    run()
