"""flowtrain's conds, cases and while loops against TF's control flow v1: builds PROGRAM in TF
(tf.compat.v1, v2 control flow disabled), then checks flowtrain's GraphDef DIR/PROGRAM.pb
holds the same nodes (name, op, data inputs in order, control inputs, and the frame_name,
is_constant, parallel_iterations and _class attrs), and that TF running it computes what TF's
own graph computes for several inputs (1e-5 relative), gradients included ("grad" lines of
DIR/PROGRAM.fetches; gradient nodes are compared by value only: their names differ by design,
except, for while_grad, the gradient loops' own nodes, which must have TF's names and ops).

  check_control_flow.py --dir DIR --program cond|while|case|nested|cond_grad|while_grad
  check_control_flow.py --dir DIR --program contexts

"contexts" checks DIR/contexts.meta instead: its cond_context and while_context collections
must equal TF's, and TF must differentiate through the cond and loop of the imported graph
(which needs those contexts) to the gradients of its own graph.
"""

import numpy as np
import tensorflow as tf

import interop_common as ic

v1 = tf.compat.v1

# Inputs fed to "x:0" per program.
INPUTS = {
    "cond": [np.float32(v) for v in (-2.0, 0.5, 2.0, 4.0)],
    "while": [np.float32(v) for v in (-1.5, 0.5, 1.5, 3.0)],
    "case": [np.float32(v) for v in (-3.0, 0.25, 0.99, 1.0, 7.0)],
    "nested": [np.float32(v) for v in (-2.0, 0.5, 1.5, 3.0)],
    "cond_grad": [np.array(v, np.float32) for v in ([1, 2, 3, 4], [-1, -2, 0.5, 0], [0.3, -4, 2, 1])],
    "while_grad": [np.float32(v) for v in (-1.2, 0.3, 0.9, 1.1)],
}


def build_cond():
    x = v1.placeholder(tf.float32, [], name="x")
    y = tf.constant(3.0, name="y")
    v1.cond(tf.greater(x, tf.constant(0.0, name="zero")), lambda: tf.add(tf.square(x), y, name="add"),
            lambda: tf.negative(x))
    v1.cond(tf.less(x, y), lambda: [tf.multiply(x, y, name="mul"), tf.constant(1.0, name="one")],
            lambda: [x, tf.constant(0.0, name="z")])
    return []


def build_while():
    x = v1.placeholder(tf.float32, [], name="x")
    i0 = tf.constant(0, name="i0")
    v1.while_loop(lambda i, s: tf.less(i, tf.constant(5, name="five")),
                  lambda i, s: (tf.add(i, tf.constant(1, name="one"), name="Add"), tf.multiply(s, x, name="Mul")),
                  [i0, x])
    v1.while_loop(lambda s: tf.less(s, tf.constant(100.0, name="hundred")),
                  lambda s: tf.multiply(s, tf.constant(2.0, name="two"), name="Mul"), [x],
                  maximum_iterations=tf.constant(3, name="three"))
    return []


def build_case():
    x = v1.placeholder(tf.float32, [], name="x")
    below0 = tf.less(x, tf.constant(0.0, name="z0"), name="Less")
    below1 = tf.less(x, tf.constant(1.0, name="z1"), name="Less")
    v1.case([(below0, lambda: tf.constant(-1.0, name="m1")), (below1, lambda: tf.constant(0.5, name="h"))],
            default=lambda: tf.constant(1.0, name="d"))
    return []


def build_nested():
    x = v1.placeholder(tf.float32, [], name="x")
    i0 = tf.constant(0, name="i0")
    # A cond in a loop body, reading a loop variable and a tensor from outside the loop.
    v1.while_loop(lambda i, s: tf.less(i, tf.constant(4, name="four")),
                  lambda i, s: (tf.add(i, tf.constant(1, name="one"), name="Add"),
                                v1.cond(tf.less(s, tf.constant(10.0, name="ten")),
                                        lambda: tf.multiply(s, x, name="Mul"),
                                        lambda: tf.subtract(s, tf.constant(1.0, name="onef"), name="Sub"))),
                  [i0, x])
    # A loop in a cond branch, reading x from outside both.
    v1.cond(tf.greater(x, tf.constant(0.0, name="zero")),
            lambda: v1.while_loop(lambda s: tf.less(s, tf.constant(50.0, name="fifty")),
                                  lambda s: tf.add(s, x, name="Add"), [x]),
            lambda: tf.negative(x))
    return []


def build_cond_grad():
    x = v1.placeholder(tf.float32, [4], name="x")
    w = v1.Variable([0.5, -0.2, 0.1, 0.3], name="w")
    s = tf.reduce_sum(tf.multiply(x, w, name="mul"), name="Sum")
    c = v1.cond(tf.greater(s, tf.constant(0.0, name="zero")), lambda: tf.square(s), lambda: tf.negative(s))
    return v1.gradients(c, [w, x])


def build_while_grad():
    x = v1.placeholder(tf.float32, [], name="x")
    i0 = tf.constant(0, name="i0")

    def next_i(i):
        return tf.add(i, tf.constant(1, name="one"), name="Add")

    a = v1.while_loop(lambda i, s: tf.less(i, tf.constant(3, name="three")),
                      lambda i, s: (next_i(i), tf.add(tf.multiply(s, tf.constant(0.9, name="decay"), name="Mul"), x,
                                                      name="Add_1")),
                      [i0, tf.constant(1.0, name="acc0")])
    b = v1.while_loop(lambda i, s: tf.less(i, tf.constant(3, name="three")),
                      lambda i, s: (next_i(i), tf.multiply(s, s, name="Mul")), [i0, x])
    e = tf.exp(x, name="Exp")
    c = v1.while_loop(lambda i, s: tf.less(i, tf.constant(4, name="four")),
                      lambda i, s: (next_i(i), v1.cond(tf.less(i, tf.constant(2, name="two")),
                                                       lambda: tf.multiply(s, e, name="Mul"),
                                                       lambda: tf.add(tf.sin(s, name="Sin"), x, name="Add"))),
                      [i0, x])
    m = v1.while_loop(lambda s: tf.less(s, tf.constant(1000.0, name="big")), lambda s: tf.multiply(s, x, name="Mul"),
                      [tf.constant(1.5, name="m0")], maximum_iterations=tf.constant(4, name="limit"))
    n = v1.while_loop(lambda i, s: tf.less(i, tf.constant(2, name="two")),
                      lambda i, s: (next_i(i), tf.sin(v1.while_loop(
                          lambda j, u: tf.less(j, tf.constant(3, name="three")),
                          lambda j, u: (next_i(j), tf.multiply(u, x, name="Mul")),
                          [tf.constant(0, name="j0"), s])[1], name="Sin")),
                      [i0, x])
    return [v1.gradients(y, [x])[0] for y in (a[1], b[1], c[1], m, n[1])]


# The gradient loops' own nodes, which flowtrain names as TF does: counters, b_exit, b_switch,
# b_acc, and the stacks with their pushes, pops and b_sync triggers (named after the gradient
# op that first needs the forward value). A loop's one "f_sync" trigger is named after the
# first gradient op in a cond that needs one, which depends on the order the ops are
# differentiated in (TF's queue, flowtrain's reverse creation order): it may differ.
LOOP_GRAD_NODE = ("f_count", "b_count", "b_exit", "b_switch", "b_acc", "f_acc", "StackPushV2", "StackPopV2",
                  "f_sync", "b_sync")


def compare_gradient_names(tf_def, ft_def):
    def nodes(graph_def):
        return {n.name: n.op for n in graph_def.node
                if n.name.startswith("gradients") and any(k in n.name.split("/")[-1] for k in LOOP_GRAD_NODE)}
    want, have = nodes(tf_def), nodes(ft_def)
    core = [n for n in want if not n.endswith("f_sync")]
    problems = ["%s: TF has %s, flowtrain %s" % (n, want[n], have.get(n)) for n in core if have.get(n) != want[n]]
    problems += ["%s (%s): not in TF's graph" % (n, have[n]) for n in have if n not in want and not n.endswith("f_sync")]
    if problems:
        ic.fail("gradient loop nodes differ from TF's:\n  %s" % "\n  ".join(problems))
    for name in sorted(set(want) ^ set(have)):
        print("  %s's %s has no namesake in the other graph" % ("TF" if name in want else "flowtrain", name))
    return len(core), len(want)


def build_contexts():
    x = v1.placeholder(tf.float32, [], name="x")
    y = tf.constant(3.0, name="y")
    c = v1.cond(tf.greater(x, tf.constant(0.0, name="zero")), lambda: tf.add(tf.square(x), y, name="add"),
                lambda: tf.negative(x))
    w = v1.while_loop(lambda s: tf.less(s, tf.constant(100.0, name="hundred")),
                      lambda s: tf.multiply(s, x, name="Mul"), [x], maximum_iterations=tf.constant(3, name="three"))
    return c, w


def check_contexts(args):
    from tensorflow.core.protobuf import control_flow_pb2
    with tf.Graph().as_default() as tf_graph:
        c, w = build_contexts()
        tf_meta = v1.train.export_meta_graph()
        tf_grads = v1.gradients([c, w], [tf_graph.get_tensor_by_name("x:0")])
    ft_meta = v1.MetaGraphDef()
    with open(args.dir + "/contexts.meta", "rb") as f:
        ft_meta.ParseFromString(f.read())
    for key, proto in (("cond_context", control_flow_pb2.CondContextDef),
                       ("while_context", control_flow_pb2.WhileContextDef)):
        def parse(meta):
            out = []
            for b in meta.collection_def[key].bytes_list.value:
                d = proto()
                d.ParseFromString(b)
                out.append(d)
            return out
        want, have = parse(tf_meta), parse(ft_meta)
        if want != have:
            ic.fail("collection %s differs:\nTF's: %s\nflowtrain's: %s" % (key, want, have))
    with tf.Graph().as_default() as ft_graph:
        v1.train.import_meta_graph(ft_meta)
        x = ft_graph.get_tensor_by_name("x:0")
        ft_grads = v1.gradients([ft_graph.get_tensor_by_name("cond/Merge:0"),
                                 ft_graph.get_tensor_by_name("while/Exit_1:0")], [x])
    tf_sess, ft_sess = v1.Session(graph=tf_graph), v1.Session(graph=ft_graph)
    for value in (-2.0, 0.5, 2.0, 4.0):
        want = tf_sess.run(tf_grads, {"x:0": value})
        have = ft_sess.run(ft_grads, {"x:0": value})
        if not np.allclose(have, want, rtol=1e-5):
            ic.fail("x=%s: TF's gradients of the imported graph are %s, of its own %s" % (value, have, want))
    print("contexts: cond_context and while_context as TF's; TF's gradients through them equal its own")


BUILDERS = {"cond": build_cond, "while": build_while, "case": build_case, "nested": build_nested,
            "cond_grad": build_cond_grad, "while_grad": build_while_grad}


def node_summary(node):
    data = [i for i in node.input if not i.startswith("^")]
    control = sorted(i for i in node.input if i.startswith("^"))
    attrs = {}
    for key in ("frame_name", "is_constant", "parallel_iterations"):
        if key in node.attr:
            attrs[key] = str(node.attr[key]).strip()
    if "_class" in node.attr:
        attrs["_class"] = sorted(s.decode() for s in node.attr["_class"].list.s)
    return (node.op, data, control, attrs)


def compare_structure(tf_def, ft_def, skip_prefix):
    def nodes(graph_def):
        return {n.name: node_summary(n) for n in graph_def.node if not n.name.startswith(skip_prefix)}
    want, have = nodes(tf_def), nodes(ft_def)
    problems = []
    for name in sorted(set(want) | set(have)):
        if name not in have:
            problems.append("missing %s: TF has %s" % (name, want[name]))
        elif name not in want:
            problems.append("extra %s: %s (not in TF's graph)" % (name, have[name]))
        elif want[name] != have[name]:
            problems.append("%s differs: TF %s, flowtrain %s" % (name, want[name], have[name]))
    if problems:
        ic.fail("%d node(s) differ from TF's:\n  %s" % (len(problems), "\n  ".join(problems)))
    return len(want)


def main():
    args = ic.parse_flags("dir", "program")
    v1.disable_v2_behavior()
    v1.disable_control_flow_v2()
    if args.program == "contexts":
        check_contexts(args)
        return
    prefix = "%s/%s" % (args.dir, args.program)
    ft_def = tf.compat.v1.GraphDef()
    with open(prefix + ".pb", "rb") as f:
        ft_def.ParseFromString(f.read())
    fetches, grads = [], []
    with open(prefix + ".fetches") as f:
        for line in f:
            kind, name = line.split()
            (fetches if kind == "fetch" else grads).append(name)

    with tf.Graph().as_default() as tf_graph:
        tf_grads = BUILDERS[args.program]()
        tf_def = tf_graph.as_graph_def()
        init = v1.global_variables_initializer()
    if len(tf_grads) != len(grads):
        ic.fail("flowtrain exported %d gradients, TF computes %d" % (len(grads), len(tf_grads)))
    compared = compare_structure(tf_def, ft_def, "gradients")
    if args.program == "while_grad":
        core, total = compare_gradient_names(tf_def, ft_def)
        print("while_grad: %d of TF's %d gradient-loop nodes (counters, stacks, b_exit, b_switch, b_acc) as TF's "
              "(name and op)" % (core, total))

    with tf.Graph().as_default() as ft_graph:
        try:
            tf.compat.v1.import_graph_def(ft_def, name="")
        except Exception as e:  # TF's own words say what it could not import
            ic.fail("import_graph_def failed: %s: %s" % (type(e).__name__, e))
        ft_init = [ft_graph.get_operation_by_name(n.name) for n in ft_def.node if n.name.endswith("/Assign")]

    tf_sess = v1.Session(graph=tf_graph)
    ft_sess = v1.Session(graph=ft_graph)
    tf_sess.run(init)
    if ft_init:
        ft_sess.run(ft_init)
    tf_fetches = [tf_graph.get_tensor_by_name(n) for n in fetches] + list(tf_grads)
    ft_fetches = [ft_graph.get_tensor_by_name(n) for n in fetches + grads]
    for x in INPUTS[args.program]:
        want = tf_sess.run(tf_fetches, {"x:0": x})
        have = ft_sess.run(ft_fetches, {"x:0": x})
        for name, w, h in zip(fetches + grads, want, have):
            if not np.allclose(h, w, rtol=1e-5, atol=1e-6):
                ic.fail("x=%s: %s is %s in TF running flowtrain's graph, %s in TF's own" % (x, name, h, w))
    print("%s: %d nodes as TF's; %d fetches and %d gradients equal TF's for %d inputs" %
          (args.program, compared, len(fetches), len(grads), len(INPUTS[args.program])))


if __name__ == "__main__":
    ic.run(main)
