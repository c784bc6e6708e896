"""The OpDefs of every op flowtrain registers, against TF's own registry: each must exist in TF
with the same input and output args (names, types, type/number attrs, refs), attrs TF knows
with the same types and allowed values TF allows, defaults equal to TF's, and no attr TF needs
without a default that flowtrain does not have. Prints every mismatch beyond the KNOWN ones
(each with its reason), exits 1 if any.

  check_op_defs.py --ops DIR/ops.pb
"""

from tensorflow.core.framework import op_def_pb2
from tensorflow.python.framework import op_def_registry

import interop_common as ic

# Known differences, each with why it stands; any other mismatch fails. Flowtrain's graphs
# that use these ops (or these dtypes) do not load into TF.
KNOWN = {
    # flowtrain's own ops, used only on request.
    "RandomOpStates: TF has no such op":
        "exact resume (ops::MakeSaveableRandomOpStates), opt-in",
    "RestoreRandomOpStates: TF has no such op":
        "exact resume (ops::MakeSaveableRandomOpStates), opt-in",
    # Kernels beyond TF's: graphs in these dtypes are flowtrain's only (gradient checks in double).
    "Conv2DBackpropFilter: attr T: allows [3] that TF does not": "int32 kernel",
    "FusedBatchNormV3: attr T: allows [2] that TF does not": "double kernel",
    "FusedBatchNormV3: attr U: allows [2] that TF does not": "double kernel",
    "FusedBatchNormGradV3: attr T: allows [2] that TF does not": "double kernel",
    "FusedBatchNormGradV3: attr U: allows [2] that TF does not": "double kernel",
    # TF types `scale` float; flowtrain types it U so that the double kernel works. The same
    # for U=float, the only U TF allows.
    "FusedBatchNormGradV3: input_arg:": "scale typed U (float in TF)",
    # Statefulness is not written into NodeDefs; TF uses its own registry's.
    "TFRecordDataset: is_stateful False, TF's True": "not serialized",
    "TensorSliceDataset: is_stateful False, TF's True": "not serialized",
    "RangeDataset: is_stateful False, TF's True": "not serialized",
    "TextLineDataset: is_stateful False, TF's True": "not serialized",
    "FixedLengthRecordDatasetV2: is_stateful False, TF's True": "not serialized",
    # Iterator state is a string (flowtrain's own encoding), a variant in TF: checkpoints that
    # save an iterator are flowtrain's only.
    "SerializeIterator: output_arg:": "string iterator state",
    "DeserializeIterator: input_arg:": "string iterator state",
}


def known(problem):
    return any(problem.startswith(k) for k in KNOWN)


def arg_signature(arg):
    return (arg.name, arg.type, arg.type_attr, arg.number_attr, arg.type_list_attr, arg.is_ref)


def compare(ours, theirs):
    problems = []
    for kind in ("input_arg", "output_arg"):
        a = [arg_signature(x) for x in getattr(ours, kind)]
        b = [arg_signature(x) for x in getattr(theirs, kind)]
        if a != b:
            problems.append("%s: flowtrain %s, TF %s" % (kind, a, b))
    tf_attrs = {a.name: a for a in theirs.attr}
    our_attrs = {a.name: a for a in ours.attr}
    for name, attr in our_attrs.items():
        if name not in tf_attrs:
            problems.append("attr %s: TF's op has no such attr" % name)
            continue
        t = tf_attrs[name]
        if attr.type != t.type:
            problems.append("attr %s: type %s, TF's %s" % (name, attr.type, t.type))
        if attr.HasField("default_value") and t.HasField("default_value") and attr.default_value != t.default_value:
            problems.append("attr %s: default %s, TF's %s" % (
                name, str(attr.default_value).strip(), str(t.default_value).strip()))
        if attr.HasField("default_value") and not t.HasField("default_value"):
            problems.append("attr %s: flowtrain has a default (%s), TF requires a value" % (
                name, str(attr.default_value).strip()))
        if t.HasField("allowed_values") and attr.HasField("allowed_values"):
            ours_allowed = set(attr.allowed_values.list.type) | set(attr.allowed_values.list.s)
            tf_allowed = set(t.allowed_values.list.type) | set(t.allowed_values.list.s)
            if not ours_allowed <= tf_allowed:
                problems.append("attr %s: allows %s that TF does not" % (name, sorted(ours_allowed - tf_allowed)))
    for name, t in tf_attrs.items():
        if name not in our_attrs and not t.HasField("default_value"):
            problems.append("attr %s: TF requires it, flowtrain's op lacks it" % name)
    if ours.is_stateful != theirs.is_stateful:
        problems.append("is_stateful %s, TF's %s" % (ours.is_stateful, theirs.is_stateful))
    return problems


def main():
    args = ic.parse_flags("ops")
    ops = op_def_pb2.OpList()
    with open(args.ops, "rb") as f:
        ops.ParseFromString(f.read())
    problems = []
    for op in ops.op:
        theirs = op_def_registry.get(op.name)
        if theirs is None:
            problems.append("%s: TF has no such op" % op.name)
            continue
        problems.extend("%s: %s" % (op.name, p) for p in compare(op, theirs))
    report = [p for p in problems if not known(p)]
    print("compared %d ops with TF's registry: %d known differences" % (len(ops.op), len(problems) - len(report)))
    unused = [k for k in KNOWN if not any(p.startswith(k) for p in problems)]
    if unused:
        report.append("known differences no longer seen (remove them from KNOWN): %s" % unused)
    if report:
        ic.fail("%d mismatches:\n  %s" % (len(report), "\n  ".join(report)))


if __name__ == "__main__":
    ic.run(main)
