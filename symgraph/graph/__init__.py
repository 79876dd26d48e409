"""The graph core: nodes and their order, shape/type inference, the plan, the JSON format.

Nothing here knows NDArray, Symbol or any operator: nodes hold operator objects and the
passes call only the hooks declared on :class:`symgraph.opdef.Operator`.

:mod:`.nodes`
    frozen :class:`~.nodes.Node` objects and the iterative topological order.
:mod:`.infer`
    shape and type inference (forward and backward sweeps to a fixed point).
:mod:`.plan`
    a bound graph compiled once: backward steps, liveness, storage, generated code.
:mod:`.json_format`
    MXNet's symbol JSON, read (with the upgrades of older files) and written.
"""
from .nodes import (Node, topo_order, aux_variable_ids, TYPE_CODE,  # noqa: F401
                    parse_shape_attr, dtype_from_attr, variable_name_clash)
