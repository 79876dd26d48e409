"""Optional native CPU backends reached through ctypes (no compiled code of symgraph's own).

:mod:`symgraph.backend.onednn` binds oneDNN 3.x's C API. Operators never import this
package: they ask :func:`symgraph.opdef.cpu_backend` for the backend (None where the library
cannot be loaded) and keep NumPy as the reference and the fallback.
"""
