"""flowtrain's learning-rate schedules in TF: TF imports flowtrain's GraphDef of every schedule
over a `step` placeholder and evaluates each at the steps of expected.json; each must equal
flowtrain's own values and the values of TF's tf.compat.v1.train function built with the same
arguments (the configurations below, by the node names the C++ test gives them), within 2e-6
relative or 1e-7 absolute: a millionth of the initial rates, because TF's float kernels round
an ulp differently from flowtrain's (RealDiv by a scalar), which shows where 1 - step /
decay_steps cancels (polynomial_decay at step 99 of 100: 5e-6 relative).

  check_learning_rate_decay.py --graph DIR/schedules.pb --expected DIR/expected.json
"""

import numpy as np
import tensorflow as tf

import interop_common as ic

v1 = tf.compat.v1

# name -> TF's own schedule of the step tensor, as the C++ test configures flowtrain's.
SCHEDULES = {
    "exponential": lambda s: v1.train.exponential_decay(0.1, s, 10, 0.5),
    "exponential_stairs": lambda s: v1.train.exponential_decay(0.1, s, 10, 0.5, staircase=True),
    "natural": lambda s: v1.train.natural_exp_decay(0.1, s, 10, 0.5),
    "natural_stairs": lambda s: v1.train.natural_exp_decay(0.1, s, 10, 0.5, staircase=True),
    "inverse": lambda s: v1.train.inverse_time_decay(0.1, s, 10, 0.5),
    "inverse_stairs": lambda s: v1.train.inverse_time_decay(0.1, s, 10, 0.5, staircase=True),
    "polynomial": lambda s: v1.train.polynomial_decay(0.1, s, 100),
    "polynomial_power": lambda s: v1.train.polynomial_decay(0.1, s, 100, 0.01, power=2.0),
    "polynomial_cycle": lambda s: v1.train.polynomial_decay(0.1, s, 100, 0.01, power=0.5, cycle=True),
    "cosine": lambda s: v1.train.cosine_decay(0.1, s, 100, alpha=0.1),
    "restarts": lambda s: v1.train.cosine_decay_restarts(0.1, s, 10),
    "restarts_equal": lambda s: v1.train.cosine_decay_restarts(0.2, s, 10, t_mul=1.0, m_mul=0.5, alpha=0.1),
    "restarts_tmul3": lambda s: v1.train.cosine_decay_restarts(0.1, s, 7, t_mul=3.0, m_mul=0.9, alpha=0.05),
    "linear_cosine": lambda s: v1.train.linear_cosine_decay(0.1, s, 100),
    "linear_cosine_periods": lambda s: v1.train.linear_cosine_decay(0.1, s, 100, num_periods=2.0, alpha=0.1,
                                                                    beta=0.01),
    "noisy_quiet": lambda s: v1.train.noisy_linear_cosine_decay(0.1, s, 100, initial_variance=0.0),
    "piecewise": lambda s: v1.train.piecewise_constant(s, [np.int64(10), np.int64(50)], [0.1, 0.05, 0.01]),
}

# cosine_decay's last multiply is unnamed in TF, so it is the scope's Mul_3 (flowtrain's too).
TENSOR_NAMES = {"cosine": "cosine/Mul_3:0"}


def evaluate(graph, step, outputs, steps):
    with v1.Session(graph=graph) as sess:
        return {name: np.array([sess.run(t, {step: at}) for at in steps], dtype=np.float32)
                for name, t in outputs.items()}


def main():
    args = ic.parse_flags("graph", "expected")
    expected = ic.load_tensors(args.expected)
    steps = [int(s) for s in expected.pop("steps")]
    if sorted(expected) != sorted(SCHEDULES):
        ic.fail("flowtrain wrote schedules %s, the checker knows %s" % (sorted(expected), sorted(SCHEDULES)))
    v1.disable_eager_execution()

    graph_def = v1.GraphDef()
    with open(args.graph, "rb") as f:
        graph_def.ParseFromString(f.read())
    with tf.Graph().as_default() as imported:
        try:
            v1.import_graph_def(graph_def, name="")
        except Exception as e:
            ic.fail("import_graph_def failed: %s: %s" % (type(e).__name__, e))
        ours = {name: imported.get_tensor_by_name(TENSOR_NAMES.get(name, name + ":0")) for name in SCHEDULES}
        tf_runs_ours = evaluate(imported, imported.get_tensor_by_name("step:0"), ours, steps)

    with tf.Graph().as_default() as own:
        step = v1.placeholder(tf.int64, [], name="step")
        tfs = evaluate(own, step, {name: build(step) for name, build in SCHEDULES.items()}, steps)

    for name in SCHEDULES:
        for what, values in (("TF running flowtrain's graph", tf_runs_ours[name]), ("TF's own schedule", tfs[name])):
            close = np.isclose(values, expected[name], rtol=2e-6, atol=1e-7)
            if not close.all():
                at = int(np.argmin(close))
                ic.fail("%s: %s gives %r at step %d, flowtrain %r" % (name, what, float(values[at]), steps[at],
                                                                      float(expected[name][at])))
    print("%d schedules agree at %d steps" % (len(SCHEDULES), len(steps)))


if __name__ == "__main__":
    ic.run(main)
