# SPDX-License-Identifier: BSD-3-Clause
"""The part of ComIn's C interface (comin.h, ComIn 0.3) that bench/python_reference_plugin.py
uses, called through ctypes from a script that bench/python_adapter.c runs inside a ComIn host.

The functions come from the libcomin.so.0 the host has loaded (finecast's or ComIn's own).
Arrays are handed out as numpy views of the host's memory, in ICON's Fortran order: a 2-D field
is (nproma, nblks), a cell index array (nproma, nblks, 3), as in Fortran.
"""
import ctypes
import sys
import traceback

import numpy as np

_lib = ctypes.CDLL("libcomin.so.0", mode=ctypes.RTLD_GLOBAL)

COMIN_MAX_LEN_VAR_NAME = 64
COMIN_MAX_LEN_EP_NAME = 32
COMIN_FLAG_READ = 1 << 1
COMIN_FLAG_WRITE = 1 << 2
COMIN_ZAXIS_2D = 1


class VarDescriptor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * (COMIN_MAX_LEN_VAR_NAME + 1)), ("id", ctypes.c_int)]


def descriptor(name, jg):
    return VarDescriptor(name.encode(), jg)


_CALLBACK = ctypes.CFUNCTYPE(None)
_lib.comin_callback_register.argtypes = [ctypes.c_int, _CALLBACK]
_lib.comin_callback_get_ep_name.argtypes = [ctypes.c_int, ctypes.c_char_p]
_lib.comin_parallel_get_host_mpi_comm.restype = ctypes.c_int
_lib.comin_var_request_add.argtypes = [VarDescriptor, ctypes.c_bool]
_lib.comin_metadata_set_integer.argtypes = [VarDescriptor, ctypes.c_char_p, ctypes.c_int]
_lib.comin_var_get.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int), VarDescriptor, ctypes.c_int]
_lib.comin_var_get.restype = ctypes.c_void_p
_lib.comin_var_get_ptr_double.argtypes = [ctypes.c_void_p]
_lib.comin_var_get_ptr_double.restype = ctypes.POINTER(ctypes.c_double)
_lib.comin_var_get_shape.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
_lib.comin_plugin_finish.argtypes = [ctypes.c_char_p, ctypes.c_char_p]


def _entry_points():
    """ComIn's entry points by name, as comin_callback_get_ep_name gives them (1 .. EP_DESTRUCTOR)."""
    eps, buf = {}, ctypes.create_string_buffer(COMIN_MAX_LEN_EP_NAME + 1)
    for ep in range(1, 100):
        _lib.comin_callback_get_ep_name(ep, buf)
        name = buf.value.decode().strip()
        eps[name] = ep
        if name == "EP_DESTRUCTOR":
            return eps
    raise RuntimeError("comin_callback_get_ep_name never named EP_DESTRUCTOR")


EP = _entry_points()
_registered = []  # the ctypes function pointers must live as long as the host may call them


def finish(routine, text):
    """comin_plugin_finish: ComIn stops the run (MPI_Abort)."""
    _lib.comin_plugin_finish(routine.encode(), text.encode())


def register_callback(ep_name):
    """Decorator: the function becomes the plugin's callback at that entry point. An exception in
    it stops the run through comin_plugin_finish, naming the entry point, after its traceback."""
    def wrap(fn):
        def call():
            try:
                fn()
            except BaseException:  # ctypes would print it and let the host go on
                traceback.print_exc(file=sys.stderr)
                sys.stderr.flush()
                finish(fn.__name__, f"Python exception at {ep_name} (traceback above)")
        ptr = _CALLBACK(call)
        _registered.append(ptr)
        _lib.comin_callback_register(EP[ep_name], ptr)
        return fn
    return wrap


def host_mpi_comm():
    """The host's communicator as a Fortran handle (mpi4py: MPI.Comm.f2py)."""
    return _lib.comin_parallel_get_host_mpi_comm()


def var_request_add(name, jg, exclusive=False):
    _lib.comin_var_request_add(descriptor(name, jg), exclusive)


def metadata_set_integer(name, jg, key, value):
    _lib.comin_metadata_set_integer(descriptor(name, jg), key.encode(), value)


def var_get(ep_names, name, jg, flag):
    """A variable's array (doubles) as a numpy view of the host's memory, Fortran order, 5-D."""
    context = (ctypes.c_int * len(ep_names))(*[EP[e] for e in ep_names])
    handle = _lib.comin_var_get(len(ep_names), context, descriptor(name, jg), flag)
    if not handle:
        raise RuntimeError(f"comin_var_get gave no handle for {name} (domain {jg})")
    shape = (ctypes.c_int * 5)()
    _lib.comin_var_get_shape(handle, shape)
    ptr = _lib.comin_var_get_ptr_double(handle)
    n = int(np.prod(list(shape)))
    return np.ctypeslib.as_array(ptr, shape=(n,)).reshape(tuple(shape), order="F")


def _domain_array(prop, jg, ctype, ndims):
    fn = getattr(_lib, "comin_descrdata_get_domain_" + prop)
    fn.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.POINTER(ctype)), ctypes.POINTER(ctypes.c_int)]
    data, shape = ctypes.POINTER(ctype)(), (ctypes.c_int * 3)()
    fn(jg, ctypes.byref(data), shape)
    if not data:
        raise RuntimeError(f"comin_descrdata_get_domain_{prop} gave no data")
    dims = tuple(shape[:ndims])
    return np.ctypeslib.as_array(data, shape=(int(np.prod(dims)),)).reshape(dims, order="F")


def cells_int(prop, jg, ndims):
    """comin_descrdata_get_domain_cells_<prop> of int: glb_index (1-D), decomp_domain (2-D), ..."""
    return _domain_array("cells_" + prop, jg, ctypes.c_int, ndims)


def cells_double(prop, jg, ndims):
    """comin_descrdata_get_domain_cells_<prop> of double: clon, clat, area (2-D)."""
    return _domain_array("cells_" + prop, jg, ctypes.c_double, ndims)

