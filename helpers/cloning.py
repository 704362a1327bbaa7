"""Copy a graph-mode network, with variables of its own: what ``graph_editor.copy`` did.

``tf.contrib.graph_editor`` is gone. When all you have of a network is its
input and output tensors (the function that built it is lost), the way that
works today is:

1. cut the graph at the inputs and keep the ops the outputs need
   (``graph_util.extract_sub_graph``), the variables' initializers included;
2. give every variable handle a ``shared_name`` of its own: an imported
   ``VarHandleOp`` keeps its original ``shared_name``, so without this the
   copy silently reads and writes the ORIGINAL's weights;
3. import the result under a new scope with ``import_graph_def``, feeding
   ``input_map`` with the tensors the copy should read;
4. rebuild real ``tf.Variable`` objects from ``VariableDef`` protos and
   register them in the ``GLOBAL_VARIABLES`` (and ``TRAINABLE_VARIABLES``)
   collections, so ``global_variables_initializer`` and ``Saver`` see them.

``clone_subgraph`` does the four steps, for resource variables (what TF 2.x
makes) and reference variables (``VariableV2``: TF 1.x graphs, or
``use_resource=False``) alike. Only resource variables need step 2: a reference
variable is found by its op name, which the import scope changes, so TF 1.x
copies were independent without it. ``initializer_ops`` finds the initializers
from the graph alone, when the ``tf.Variable`` objects are lost too. In TF2 code
you do not need any of this: ``keras.models.clone_model(model)`` (then ``set_weights`` if the copy
should start from the same values), or call the builder again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import tensorflow as tf

from helpers.errors import StructureMismatchError, first_line
from helpers.metagraph import VARIABLE_OPS, ScopeError, checked_scope

__all__ = [
    "ClonedSubgraph",
    "clone_subgraph",
    "give_own_shared_names",
    "initializer_ops",
    "rebuild_variables",
]

_V1 = tf.compat.v1
_GLOBAL = _V1.GraphKeys.GLOBAL_VARIABLES
_LOCAL = _V1.GraphKeys.LOCAL_VARIABLES
_TRAINABLE = _V1.GraphKeys.TRAINABLE_VARIABLES
_FLAG = "PlaceholderWithDefault"  # tf.compat.v1.placeholder_with_default: is_training, keep_prob


@dataclasses.dataclass(frozen=True)
class ClonedSubgraph:
    """What ``clone_subgraph`` made.

    Attributes:
        outputs: the copy's output tensors, in the order of the ``outputs`` given.
        inputs: the tensors the copy reads, in the order of the ``inputs`` given
            (the replacements, or the copy's own new placeholders).
        variables: the copy's ``tf.Variable`` objects, independent of the original's.
        source_variables: the original variables, in the same order as ``variables``.
        initializer: one op that initializes every variable of the copy.
        scope: the name scope the copy lives under (the ``scope`` given).
        shared: the original's ``placeholder_with_default`` flags (``is_training``,
            ``keep_prob``) the copy reads as they are, not copied: feeding one
            switches the original and the copy alike. Empty when there are none.
    """

    outputs: list[tf.Tensor]
    inputs: list[tf.Tensor]
    variables: list[tf.Variable]
    source_variables: list[tf.Variable]
    initializer: tf.Operation
    scope: str
    shared: list[tf.Tensor] = dataclasses.field(default_factory=list)


def give_own_shared_names(graph_def: tf.compat.v1.GraphDef, scope: str) -> tf.compat.v1.GraphDef:
    """Return a copy of ``graph_def`` whose variable handles will not alias the originals.

    A resource variable is found at run time by its ``shared_name``, and
    importing a node under a new scope does not change that attribute. This
    sets it to the name the node will have after ``import_graph_def(...,
    name=scope)``. Other stateful ops with a ``shared_name`` (tables, queues)
    get the same treatment. The input is not modified.

    Example:
        >>> g = tf.Graph()
        >>> with g.as_default():
        ...     v = tf.compat.v1.get_variable("w", [2], initializer=tf.zeros_initializer())
        >>> fixed = give_own_shared_names(g.as_graph_def(), "copy")
        >>> [n.attr["shared_name"].s for n in fixed.node if n.op == "VarHandleOp"]
        [b'copy/w']
    """
    scope = checked_scope(scope)
    if not isinstance(graph_def, tf.compat.v1.GraphDef):
        raise StructureMismatchError(f"expected a GraphDef, got {type(graph_def).__name__}")
    fixed = tf.compat.v1.GraphDef()
    fixed.CopyFrom(graph_def)
    for node in fixed.node:
        named = "shared_name" in node.attr and node.attr["shared_name"].s
        if node.op == "VarHandleOp" or named:
            node.attr["shared_name"].s = f"{scope}/{node.name}".encode()
    return fixed


def rebuild_variables(
    originals: Sequence[tf.Variable], scope: str, graph: tf.Graph | None = None
) -> list[tf.Variable]:
    """Make ``tf.Variable`` objects for variables imported under ``scope``.

    ``import_graph_def`` copies a variable's ops but not its Python object, so
    nothing in the collections knows the copy exists. Each original's
    ``VariableDef`` names its ops; ``import_scope`` prefixes those names, and
    ``tf.compat.v1.Variable(variable_def=...)`` wraps the existing ops. The
    new variables are added to ``GLOBAL_VARIABLES`` (``LOCAL_VARIABLES`` for a
    local original) and, for trainable originals, ``TRAINABLE_VARIABLES``.

    Example:
        >>> g = tf.Graph()
        >>> with g.as_default():
        ...     v = tf.compat.v1.get_variable("w", [2], initializer=tf.zeros_initializer())
        ...     names = ["w/Assign", "w/Read/ReadVariableOp"]
        ...     sub = tf.compat.v1.graph_util.extract_sub_graph(g.as_graph_def(), names)
        ...     _ = tf.compat.v1.import_graph_def(give_own_shared_names(sub, "copy"), name="copy")
        ...     [copy] = rebuild_variables([v], "copy")
        >>> copy.name, len(g.get_collection("variables"))
        ('copy/w:0', 2)
    """
    graph = graph or _V1.get_default_graph()
    scope = checked_scope(scope)
    strays = [type(v).__name__ for v in originals if not isinstance(v, tf.Variable)]
    if strays:
        raise StructureMismatchError(f"originals must be tf.Variable objects, got {strays}")
    local_names = {v.name for v in graph.get_collection(_LOCAL)}
    rebuilt = []
    with graph.as_default():
        for original in originals:
            try:
                proto = original.to_proto()
                # a reference variable (VariableV2) must be wrapped as one: use_resource=False
                copy = _V1.Variable(variable_def=proto, import_scope=scope, use_resource=proto.is_resource or False)
            except (KeyError, ValueError) as error:
                missing = f"no {error}" if isinstance(error, KeyError) else f"a problem: {first_line(error)}"
                raise StructureMismatchError(
                    f"cannot rebuild {original.name!r} under {scope!r}: the graph has {missing}; "
                    "import the variable's initializer and read ops too"
                ) from None
            graph.add_to_collection(_LOCAL if original.name in local_names else _GLOBAL, copy)
            if original.trainable:
                graph.add_to_collection(_TRAINABLE, copy)
            rebuilt.append(copy)
    return rebuilt


def clone_subgraph(
    outputs: tf.Tensor | Sequence[tf.Tensor],
    inputs: tf.Tensor | Sequence[tf.Tensor],
    replacements: Sequence[tf.Tensor] | Mapping[tf.Tensor, tf.Tensor] | None = None,
    scope: str = "copy",
) -> ClonedSubgraph:
    """Copy the ops between ``inputs`` and ``outputs`` under ``scope``, with new variables.

    The copy reads ``replacements`` (one per input, same order, or a dict
    ``{input: replacement}``) where the original read ``inputs``; with
    ``replacements=None`` it gets placeholders of its own (``result.inputs``).
    Every variable the outputs read is copied with its initializer, made
    independent of the original (its own ``shared_name``) and registered in
    the collections. The copy starts from the same initial values as the
    original would (random initializers keep their seeds); run
    ``result.initializer``, or ``global_variables_initializer()``, before use.

    Flags made with ``tf.compat.v1.placeholder_with_default`` (``is_training``,
    ``keep_prob``: they switch dropout or batch-norm branches) are never
    silently duplicated. One the outputs read but that is not among
    ``inputs`` is SHARED: the copy reads the original's flag, so feeding it
    switches both networks (``result.shared`` lists such flags). To switch
    the copy on its own, list the flag among ``inputs``: with a replacement
    (``tf.constant(False)``, a placeholder of yours) the copy reads that; with
    ``None`` it gets a ``placeholder_with_default`` of its own, with the same
    default, in ``result.inputs``.

    ``scope`` must be free: when the graph already uses it (or a name
    differing only in case, or a ``name_scope`` is open), TensorFlow would put
    the copy in ``scope_1``; that is refused rather than done silently.

    Raises:
        ScopeError: ``scope`` is empty, not a valid name, or taken.
        StructureMismatchError: an argument is not a graph tensor, tensors
            from different graphs, an output that does not depend on any
            input, an input no output uses, an output that also depends on a
            placeholder not listed among the inputs, a variable without a
            ``tf.Variable`` in the collections, or a replacement whose dtype
            or shape does not fit its input.

    Example:
        >>> g = tf.Graph()
        >>> with g.as_default():
        ...     x = tf.compat.v1.placeholder(tf.float32, [None, 2], name="x")
        ...     w = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.ones_initializer())
        ...     y = tf.matmul(x, w, name="y")
        ...     copy = clone_subgraph(y, x, None, scope="copy")
        ...     with tf.compat.v1.Session() as sess:
        ...         sess.run(tf.compat.v1.global_variables_initializer())
        ...         _ = sess.run(w.assign([[5.0], [5.0]]))
        ...         original, cloned = sess.run([y, copy.outputs[0]], {x: [[1, 1]], copy.inputs[0]: [[1, 1]]})
        >>> [v.name for v in copy.variables], original.tolist(), cloned.tolist()
        (['copy/w:0'], [[10.0]], [[2.0]])

    A flag is shared unless it is among the inputs:

        >>> with g.as_default():
        ...     train = tf.compat.v1.placeholder_with_default(False, [], name="is_training")
        ...     z = tf.where(train, 0.5 * y, y, name="dropout_like")
        ...     both = clone_subgraph(z, x, None, scope="both")
        ...     own = clone_subgraph(z, [x, train], None, scope="own")
        >>> [t.name for t in both.shared], [t.name for t in own.inputs], own.shared
        (['is_training:0'], ['own/x_input:0', 'own/is_training_input:0'], [])
    """
    outputs = _tensor_list(outputs, "outputs")
    inputs = _tensor_list(inputs, "inputs")
    replacements = _replacement_list(replacements, inputs)
    graph = outputs[0].graph
    _require_one_graph(graph, outputs, inputs, [r for r in replacements if r is not None])
    for original, replacement in zip(inputs, replacements):
        if replacement is not None:
            _require_fits(original, replacement)
    scope = checked_scope(scope)
    landing = graph.unique_name(scope, mark_as_used=False)
    if landing != scope:
        raise ScopeError(
            f"copying under {scope!r} would land in {landing!r}: that name (or one differing only in "
            "case) is taken in this graph, or a name_scope is open. Pick a new scope."
        )

    own_flags = {t.name for t, r in zip(inputs, replacements) if r is None and t.op.type == _FLAG}
    graph_def, stand_ins = _cut_at_inputs(graph.as_graph_def(), inputs, own_flags)
    input_names = [t.name for t in inputs]
    # Flags (placeholder_with_default) the outputs read, not among the inputs: shared, never copied.
    shared = _flags_read(graph, graph_def, outputs, input_names, stand_ins)
    if shared:
        graph_def, stand_ins = _cut_at_inputs(graph.as_graph_def(), inputs + shared, own_flags)
    for output in outputs:
        if output.name in input_names:
            continue
        needed = _node_names(tf.compat.v1.graph_util.extract_sub_graph(graph_def, [output.op.name]))
        if not needed & set(stand_ins.values()):
            raise StructureMismatchError(
                f"output {output.name!r} does not depend on any of the inputs "
                f"{input_names}: there is nothing to replace (check the tensors you passed)"
            )
    forward = tf.compat.v1.graph_util.extract_sub_graph(
        graph_def, [o.op.name for o in outputs if o.name not in input_names]
    )
    forward_names = _node_names(forward)
    output_names = {o.name for o in outputs}
    unused = [name for name in input_names if stand_ins[name] not in forward_names and name not in output_names]
    if unused:
        raise StructureMismatchError(f"no output depends on the inputs {unused}: leave them out of inputs")
    stray = sorted(n.name + ":0" for n in forward.node if n.op == "Placeholder" and n.name not in stand_ins.values())
    if stray:
        raise StructureMismatchError(
            f"the outputs also depend on the placeholders {stray}, which are not among the inputs: "
            "add them to inputs (a replacement may be the same tensor, to share it)"
        )

    originals = _variables_read(graph, forward)
    extra = []
    for variable in originals:
        proto = variable.to_proto()
        extra += [proto.initializer_name, proto.snapshot_name.split(":")[0]]
    sub = tf.compat.v1.graph_util.extract_sub_graph(graph_def, sorted(forward_names) + extra)

    with graph.as_default(), graph.name_scope(None):
        unique_scope = scope
        input_map = {
            stand_ins[t.name] + ":0": r
            for t, r in zip(inputs + shared, replacements + shared) if r is not None
        }
        wanted = [o.op.name for o in outputs if o.name not in input_names]
        imported = tf.compat.v1.import_graph_def(
            give_own_shared_names(sub, unique_scope),
            input_map=input_map,
            return_elements=[o.name for o in outputs if o.name not in input_names]
            + [stand_ins[name] + ":0" for name in input_names],
            name=unique_scope,
        )
        copied_outputs, own_inputs = imported[: len(wanted)], imported[len(wanted):]
        new_inputs = [r if r is not None else own for r, own in zip(replacements, own_inputs)]
        by_input = dict(zip(input_names, new_inputs))
        copied = iter(copied_outputs)
        new_outputs = [by_input[o.name] if o.name in by_input else next(copied) for o in outputs]
        variables = rebuild_variables(originals, unique_scope, graph)
        with graph.name_scope(unique_scope + "/"):
            initializer = tf.group(*[v.initializer for v in variables], name="initializer")
    return ClonedSubgraph(new_outputs, new_inputs, variables, originals, initializer, unique_scope, shared)


def _tensor_list(value, what: str) -> list[tf.Tensor]:
    try:
        tensors = [value] if isinstance(value, tf.Tensor) else list(value)
    except TypeError:
        raise StructureMismatchError(f"{what} must be a tf.Tensor or a list of them, got {type(value).__name__}") from None
    if not tensors:
        raise StructureMismatchError(f"{what} is empty: pass at least one tensor")
    for tensor in tensors:
        if not isinstance(tensor, tf.Tensor):
            raise StructureMismatchError(f"{what} must hold tf.Tensor objects, got {type(tensor).__name__}")
        if not tf.is_symbolic_tensor(tensor):
            raise StructureMismatchError(
                f"{what} holds an eager tensor: clone_subgraph copies graph-mode networks; "
                "in TF2 code use keras.models.clone_model or call the builder again"
            )
    return tensors


def _replacement_list(replacements, inputs: list[tf.Tensor]) -> list[tf.Tensor | None]:
    if replacements is None:
        return [None] * len(inputs)
    if isinstance(replacements, Mapping):
        by_name = {key.name: value for key, value in replacements.items()}
        unknown = sorted(set(by_name) - {t.name for t in inputs})
        if unknown:
            raise StructureMismatchError(f"replacements given for tensors that are not inputs: {unknown}")
        chosen = [by_name.get(t.name) for t in inputs]
    else:
        try:
            chosen = [replacements] if isinstance(replacements, tf.Tensor) else list(replacements)
        except TypeError:
            raise StructureMismatchError(
                f"replacements must be tensors (a list, or a dict {{input: tensor}}), got {type(replacements).__name__}"
            ) from None
        if len(chosen) != len(inputs):
            raise StructureMismatchError(f"{len(inputs)} inputs but {len(chosen)} replacements: give one per input")
    for tensor in chosen:
        if tensor is not None and not isinstance(tensor, tf.Tensor):
            raise StructureMismatchError(f"replacements must be tf.Tensor objects, got {type(tensor).__name__}")
    return chosen


def _require_one_graph(graph: tf.Graph, *groups: list[tf.Tensor]) -> None:
    for group in groups:
        for tensor in group:
            if tensor.graph is not graph:
                raise StructureMismatchError(f"{tensor.name!r} belongs to another graph than the outputs")


def _require_fits(original: tf.Tensor, replacement: tf.Tensor) -> None:
    if replacement.dtype.base_dtype != original.dtype.base_dtype:
        raise StructureMismatchError(
            f"replacement {replacement.name!r} for input {original.name!r} has dtype "
            f"{replacement.dtype.name}, the input is {original.dtype.name}"
        )
    if not replacement.shape.is_compatible_with(original.shape):
        raise StructureMismatchError(
            f"replacement {replacement.name!r} for input {original.name!r} has shape "
            f"{replacement.shape}, which does not fit the input's {original.shape}"
        )


def _flags_read(graph: tf.Graph, graph_def, outputs, input_names, stand_ins) -> list[tf.Tensor]:
    """The ``placeholder_with_default`` tensors the outputs read that are not among the inputs."""
    wanted = [o.op.name for o in outputs if o.name not in input_names]
    if not wanted:
        return []
    forward = tf.compat.v1.graph_util.extract_sub_graph(graph_def, wanted)
    own = set(stand_ins.values())
    return [graph.get_tensor_by_name(node.name + ":0")
            for node in forward.node if node.op == _FLAG and node.name not in own]


def _cut_at_inputs(
    graph_def, inputs: list[tf.Tensor], own_flags: set[str] = frozenset()
) -> tuple[tf.compat.v1.GraphDef, dict[str, str]]:
    """Rewire every consumer of an input to a stand-in placeholder.

    Afterwards ``extract_sub_graph`` stops at the inputs: nothing upstream of
    them is copied. The stand-in of an input named in ``own_flags`` (a
    ``placeholder_with_default`` the copy gets its own of) is a
    ``PlaceholderWithDefault`` reading the same default. Returns the new
    GraphDef and ``{input name: stand-in op name}``.
    """
    cut = tf.compat.v1.GraphDef()
    cut.CopyFrom(graph_def)
    taken = _node_names(cut)
    by_name = {node.name: node for node in graph_def.node}
    stand_ins: dict[str, str] = {}
    input_ops = {t.op.name for t in inputs}
    for tensor in inputs:
        name = tensor.op.name if tensor.value_index == 0 else f"{tensor.op.name}_{tensor.value_index}"
        name = f"{name}_input"
        while name in taken:
            name += "_"
        taken.add(name)
        stand_ins[tensor.name] = name
        if tensor.name in own_flags:
            node = cut.node.add(name=name, op=_FLAG, input=by_name[tensor.op.name].input[:1])
        else:
            node = cut.node.add(name=name, op="Placeholder")
        node.attr["dtype"].type = tensor.dtype.as_datatype_enum
        node.attr["shape"].shape.CopyFrom(tensor.shape.as_proto())
    for node in cut.node:
        rewired = []
        for source in node.input:
            if source.startswith("^"):
                if source[1:] not in input_ops:
                    rewired.append(source)
                continue
            op_name, _, index = source.partition(":")
            rewired.append(stand_ins.get(f"{op_name}:{index or 0}", source))
        del node.input[:]
        node.input.extend(rewired)
    return cut, stand_ins


def _node_names(graph_def) -> set[str]:
    return {node.name for node in graph_def.node}


def _variables_read(graph: tf.Graph, sub) -> list[tf.Variable]:
    handles = {node.name for node in sub.node if node.op in VARIABLE_OPS}
    known: dict[str, tf.Variable] = {}
    for variable in graph.get_collection(_GLOBAL) + graph.get_collection(_LOCAL):
        known.setdefault(variable.op.name, variable)
    orphans = sorted(handles - set(known))
    if orphans:
        raise StructureMismatchError(
            f"the variables {orphans} have no tf.Variable in the GLOBAL_VARIABLES or "
            "LOCAL_VARIABLES collection: initializer_ops(graph) finds their initializers from the "
            "graph alone, to run or to rebuild them"
        )
    return [variable for name, variable in known.items() if name in handles]  # creation order


def initializer_ops(graph: tf.Graph | None = None, names: Sequence[str] | None = None) -> dict[str, tf.Operation]:
    """Find each variable's initializer op from the graph alone, without its ``tf.Variable`` object.

    What was left after ``graph_editor.copy``: variable ops nobody holds a
    Python object for. Creating a variable adds an assign op that takes the
    variable op as its first input and the initial value as its second: an
    ``AssignVariableOp`` (resource variables) or an ``Assign`` (reference
    variables), named ``<variable>/Assign``. ``names`` picks variable ops
    (default: every one in ``graph``); the result maps each to its initializer.

    Raises ``StructureMismatchError`` naming every variable op with no such
    initializer (or an unknown name).

    Example:
        >>> with tf.Graph().as_default() as g:
        ...     w = tf.compat.v1.get_variable("w", [2], initializer=tf.ones_initializer())
        ...     old = tf.compat.v1.get_variable("old", [2], use_resource=False)
        >>> {name: op.name for name, op in initializer_ops(g).items()}
        {'w': 'w/Assign', 'old': 'old/Assign'}
    """
    graph = graph or _V1.get_default_graph()
    if not isinstance(graph, tf.Graph):
        raise StructureMismatchError(f"expected a tf.Graph, got {type(graph).__name__}")
    variables = [op for op in graph.get_operations() if op.type in VARIABLE_OPS]
    wanted = [op.name for op in variables] if names is None else [str(n).split(":")[0] for n in names]
    unknown = sorted(set(wanted) - {op.name for op in variables})
    if unknown:
        raise StructureMismatchError(f"no variable ops named {unknown} in the graph")
    found: dict[str, tf.Operation] = {}
    for op in graph.get_operations():
        if op.type in ("AssignVariableOp", "Assign") and op.inputs:
            target = op.inputs[0].op.name
            if target in wanted and (target not in found or op.name == f"{target}/Assign"):
                found[target] = op
    missing = [name for name in wanted if name not in found]
    if missing:
        raise StructureMismatchError(f"the variables {missing} have no initializer (assign) op in the graph")
    return {name: found[name] for name in wanted}
